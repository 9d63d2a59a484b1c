"""Persisted outputs against hostile ids and folders: nothing is written outside the results folder."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from contextfold import Context, Policy, private_files, Storage
from contextfold.conversation import Item, Text, ToolCall, ToolResult
from contextfold.pipeline.offload_store import save_output, saved_output

BIG = "B" * 250_000  # over the persist limit of a 200k window
ON_ARRIVAL = Policy(persist_whole_tail_fraction=0)  # an oversized output is saved as it arrives, never sent whole


def call_and_result(result_id: str, call_id: str = "c1") -> list[Item]:
    return [Item("user", (Text("run it"),), id="u0"),
            Item("assistant", (ToolCall(call_id, "bash", {"command": "cat big"}),), id="a1"),
            Item("tool", (ToolResult(call_id, BIG),), id=result_id)]


def every_file(root: Path) -> set[Path]:
    return {path for path in root.rglob("*") if not path.is_dir()}


@pytest.mark.parametrize("hostile", ["../escaped", "../../escaped", "/tmp/contextfold-absolute-escape", "a\x00b",
                                     "x" * 10_000, ".hidden", "sub/dir/name", "..", "é~ü", "\ud800"],
                         ids=["up", "up-up", "absolute", "nul", "10k", "hidden", "subdir", "dotdot", "tilde", "surrogate"])
def test_hostile_ids_are_saved_inside_the_results_folder_under_a_safe_name(tmp_path: Path, hostile: str) -> None:
    results = tmp_path / "box" / "results"
    context = Context(window_tokens=200_000, storage=Storage(results_dir=results), policy=ON_ARRIVAL)
    before = every_file(tmp_path)
    context.add(call_and_result(hostile))  # saved on arrival: the history keeps only the preview
    view = context.prepare_view()
    written = every_file(tmp_path) - before
    assert len(written) == 1 and next(iter(written)).parent == results
    saved = next(iter(written))
    assert saved.read_text() == BIG and len(saved.name) < 120 and stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert f"saved to {saved}" in view[2].text and saved_output(context.history[2]) == BIG  # no history tools offered
    assert not Path("/tmp/contextfold-absolute-escape.txt").exists()
    assert any(e.stage == "persist" and e.action == "persisted" for e in context.events)


def test_ids_keep_distinct_names_and_the_same_id_the_same_name() -> None:
    names = {private_files.safe_name(i, ".txt") for i in ["a", "../a", "/a", "a\x00", "A", "x" * 10_000, "x" * 10_001]}
    assert len(names) == 7 and private_files.safe_name("../a", ".txt") == private_files.safe_name("../a", ".txt")
    assert all("/" not in n and "\x00" not in n and not n.startswith(".") for n in names)


def test_a_link_planted_at_the_output_name_is_replaced_not_followed(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir(mode=0o700)
    target = tmp_path / "victim.txt"
    target.write_text("precious")
    target.chmod(0o644)
    (results / "out1.txt").symlink_to(target)
    path = save_output(results, "out1", BIG)
    assert path == results / "out1.txt" and not path.is_symlink() and path.read_text() == BIG
    assert target.read_text() == "precious" and stat.S_IMODE(target.stat().st_mode) == 0o644


def test_a_results_folder_that_is_a_link_is_refused_and_only_a_preview_is_kept(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "results").symlink_to(elsewhere)
    context = Context(window_tokens=200_000, storage=Storage(results_dir=tmp_path / "results"), policy=ON_ARRIVAL)
    context.add(call_and_result("r1"))
    view = context.prepare_view()
    assert list(elsewhere.iterdir()) == [] and len(view[2].text) < 4_000
    failed = [e for e in context.events if e.action == "disk_failed"]
    assert len(failed) == 1 and "symbolic link" in failed[0].detail


def test_a_results_folder_others_may_write_is_made_owner_only(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    results.chmod(0o777)
    save_output(results, "r1", BIG)
    assert stat.S_IMODE(results.stat().st_mode) == 0o700


def test_a_full_disk_leaves_no_empty_or_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write

    def write_some_then_fill_up(fd: int, data: bytes) -> int:
        if len(data) > 1_000:
            return real_write(fd, bytes(data[:1_000]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(private_files.os, "write", write_some_then_fill_up)
    results = tmp_path / "results"
    context = Context(window_tokens=200_000, storage=Storage(results_dir=results), policy=ON_ARRIVAL)
    context.add(call_and_result("r1"))
    view = context.prepare_view()
    assert list(results.iterdir()) == []
    assert {e.action for e in context.events if e.stage == "persist"} == {"persisted", "disk_failed"}
    assert "No space left" in view[2].text or len(view[2].text) < 4_000
    monkeypatch.undo()
    assert save_output(results, "r1", BIG).read_text() == BIG  # room again: it works
