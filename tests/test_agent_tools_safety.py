"""The agent's tools against a hostile workspace: hard links, swaps after the check, FIFOs, catastrophic
patterns, the session's own folder and the provider keys in the environment."""

# ruff: noqa: F811 - ``root`` is the fixture of test_agent_tools, imported so both files share one working folder setup
from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from test_agent_tools import agent_in, root, run  # noqa: F401 - root is a fixture

from contextfold.agent.tools import ToolError, Workspace

GENEROUS_S = 30.0
"""Bound asserted on a tool limited to about 1 s: loose on purpose (a loaded machine); unbounded would hang."""


def test_a_hard_link_to_an_outside_file_is_never_written(root: Path) -> None:
    outside = root.parent / "outside.txt"
    outside.write_text("outside, untouched\n")
    os.link(outside, root / "hard.txt")
    agent = agent_in(root)
    for tool, arguments in [("write_file", {"path": "hard.txt", "content": "pwned"}),
                            ("edit_file", {"path": "hard.txt", "old_string": "outside", "new_string": "pwned"})]:
        text, error = run(agent, tool, **arguments)
        assert error and "2 hard links" in text
    assert outside.read_text() == "outside, untouched\n"


def test_a_folder_swapped_for_a_link_after_the_check_leads_nowhere(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "f.txt").write_text("inside\n")
    (root.parent / "f.txt").write_text("outside, untouched\n")
    workspace = Workspace(root, lambda command: True)
    checked = Workspace.resolve

    def check_then_swap(self: Workspace, path: str) -> Path:
        target = checked(self, path)  # the check passes on the real folder ...
        if (root / "sub").is_dir() and not (root / "sub").is_symlink():
            shutil.rmtree(root / "sub")  # ... and then the folder becomes a link leading out
            (root / "sub").symlink_to(root.parent)
        return target

    monkeypatch.setattr(Workspace, "resolve", check_then_swap)
    for call in (lambda: workspace.write_file("sub/f.txt", "pwned"), lambda: workspace.read_file("sub/f.txt"),
                 lambda: workspace.edit_file("sub/f.txt", "outside", "pwned")):
        with pytest.raises(ToolError, match="not a folder"):
            call()
        (root / "sub").unlink()
        (root / "sub").mkdir()
        (root / "sub" / "f.txt").write_text("inside\n")
    assert (root.parent / "f.txt").read_text() == "outside, untouched\n"


def test_racing_swaps_never_let_a_write_out(root: Path) -> None:
    """A thread keeps swapping a folder and a link to the outside while the tool writes through it."""
    victim = root.parent / "f.txt"
    victim.write_text("outside, untouched\n")
    workspace = Workspace(root, lambda command: True)
    stop = threading.Event()

    def swapper() -> None:
        name = root / "sub"
        while not stop.is_set():
            try:  # a real folder (inside) and a link leading outside take turns at the same name
                if name.is_symlink():
                    name.unlink()
                elif name.exists():
                    shutil.rmtree(name)
                name.mkdir()
                shutil.rmtree(name)
                name.symlink_to(root.parent)
            except OSError:
                pass  # the tool created or filled the folder meanwhile: next turn

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    try:
        for n in range(400):
            try:
                workspace.write_file("sub/f.txt", f"write {n}")
            except ToolError:
                pass
    finally:
        stop.set()
        thread.join(10)
    assert victim.read_text() == "outside, untouched\n"


def test_grep_stops_a_catastrophic_pattern_at_its_limit(root: Path) -> None:
    (root / "evil.txt").write_text("a" * 40 + "!\n")
    workspace = Workspace(root, lambda command: True, grep_timeout_s=1.0)
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"grep stopped after 1 s"):
        workspace.grep(r"(a+)+$")
    assert time.monotonic() - started < GENEROUS_S


def test_grep_and_read_skip_a_fifo_instead_of_blocking(root: Path) -> None:
    os.mkfifo(root / "pipe")
    workspace = Workspace(root, lambda command: True, grep_timeout_s=5.0)
    started = time.monotonic()
    assert "a.py:1: x = 1" in workspace.grep("x")
    with pytest.raises(ToolError, match="not a regular file"):
        workspace.read_file("pipe")
    with pytest.raises(ToolError, match="'pipe': (not a regular file|No such device)"):  # no reader: refused at open
        workspace.write_file("pipe", "x")
    assert time.monotonic() - started < GENEROUS_S


def test_grep_output_is_bounded(root: Path) -> None:
    (root / "minified.js").write_text(("var x=1;" * 200_000 + "\n") * 3 + "x\n" * 2_000)
    text = Workspace(root, lambda command: True).grep("x")
    assert len(text) < 25_000 and "more than 500 matches" in text


def test_the_session_folder_is_out_of_the_file_tools_reach(root: Path) -> None:
    session = root / ".contextfold"
    session.mkdir()
    (session / "s.jsonl").write_text("transcript\n")
    (root / "alias").symlink_to(session / "s.jsonl")
    agent = agent_in(root)
    for tool, arguments in [("write_file", {"path": ".contextfold/s.jsonl", "content": "x"}),
                            ("edit_file", {"path": ".contextfold/s.jsonl", "old_string": "t", "new_string": "x"}),
                            ("write_file", {"path": "alias", "content": "x"}),
                            ("read_file", {"path": ".contextfold/s.jsonl"})]:
        text, error = run(agent, tool, **arguments)
        assert error and "session's own folder" in text
    assert (session / "s.jsonl").read_text() == "transcript\n"


def test_the_shell_gets_no_provider_credentials(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = {"ANTHROPIC_API_KEY": "sk-ant-xyz", "OPENAI_API_KEY": "sk-openai", "AWS_SECRET_ACCESS_KEY": "aws-s",
               "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "GITHUB_TOKEN": "ghp_x", "MY_SERVICE_PASSWORD": "hunter2"}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("NOT_NAMED", "left-out")  # an allow-list: a variable not named there is not passed either
    text, error = run(agent_in(root), "bash", command="env")
    assert not error and "NOT_NAMED" not in text and "PATH=" in text
    assert not any(name in text or value in text for name, value in secrets.items())


def test_a_listing_stops_at_its_limit(root: Path) -> None:
    workspace = Workspace(root, lambda command: True, grep_timeout_s=-1.0)  # a limit already past: stops at once
    with pytest.raises(ToolError, match="took over -1 s"):
        workspace.list_files()


def test_a_hard_link_is_never_read_nor_searched(root: Path) -> None:
    """A hard link shares its contents with a file that may be outside, or the protected transcript: refused."""
    outside = root.parent / "secret.txt"
    outside.write_text("SECRET outside the working folder\n")
    os.link(outside, root / "hard.txt")
    session = root / ".contextfold"
    session.mkdir()
    (session / "s.jsonl").write_text("SECRET transcript\n")
    os.link(session / "s.jsonl", root / "transcript_alias.txt")
    workspace = Workspace(root, lambda command: True)
    for path in ("hard.txt", "transcript_alias.txt"):
        with pytest.raises(ToolError, match="2 hard links"):
            workspace.read_file(path)
        found = workspace.grep("SECRET", path=path)
        assert "secret" not in found.lower().replace("'secret'", "") and "hard link" in found
    found = workspace.grep("SECRET")
    assert "secret" not in found.lower().replace("'secret'", "") and "2 file(s) with more than one hard link" in found


def test_grep_never_reads_a_protected_folder_nor_follows_a_link_out(root: Path) -> None:
    (root / "state").mkdir()
    (root / "state" / "t.jsonl").write_text("SECRET transcript\n")
    outside = root.parent / "secret.txt"
    outside.write_text("SECRET outside\n")
    (root / "out_link.txt").symlink_to(outside)
    (root / "state_link.txt").symlink_to(root / "state" / "t.jsonl")
    workspace = Workspace(root, lambda command: True, protected=("state",))
    assert "SECRET transcript" not in workspace.grep("SECRET") and "SECRET outside" not in workspace.grep("SECRET")
    for path in ("state/t.jsonl", "state", "state_link.txt"):
        with pytest.raises(ToolError, match="session's own folder"):
            workspace.grep("SECRET", path=path)
        with pytest.raises(ToolError, match="session's own folder"):
            workspace.read_file(path)
    with pytest.raises(ToolError, match="outside the working folder"):
        workspace.read_file("out_link.txt")
    with pytest.raises(ToolError, match="outside the working folder"):
        workspace.grep("SECRET", path="out_link.txt")
