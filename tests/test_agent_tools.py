"""The agent's tools: confined to the working folder, the shell bounded, every refusal an error result that says why."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import anthropic
import pytest

from contextfold import Context, ToolCall
from contextfold.agent.loop import Agent
from contextfold.agent.tools import ToolError, Workspace
from contextfold.cli.chat import refuse_without_yes


class NoModel:
    """A model client for tests that only run tools; ``replies`` are answered in order."""

    provider = "anthropic"
    model = "claude-sonnet-4-6"
    request_errors: tuple[type[BaseException], ...] = ()
    api_errors: tuple[type[BaseException], ...] = ()

    def __init__(self, *replies: dict[str, Any]) -> None:
        self.replies = list(replies)

    def create(self, request: Any) -> Any:
        return anthropic.types.Message.model_validate(self.replies.pop(0))


def calling(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """An Anthropic reply making the tool ``calls`` (id, name, input)."""
    content = [{"type": "tool_use", "id": i, "name": name, "input": args} for i, name, args in calls]
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "tool_use",
            "content": content, "usage": {"input_tokens": 10, "output_tokens": 5}}


class Quiet:
    """A display that keeps the tool results it is shown, by agent."""

    def __init__(self) -> None:
        self.results: list[tuple[str, str]] = []

    def reply(self, *args: Any) -> None: ...

    def tool_result(self, agent: str, call: ToolCall, result: Any) -> None:
        self.results.append((agent, result.text))

    def event(self, *args: Any) -> None: ...


def agent_in(root: Path, approve=lambda command: True, model: NoModel | None = None) -> Agent:
    return Agent(Context(window_tokens=20_000), model or NoModel(), Workspace(root, approve), Quiet())


def run(agent: Agent, name: str, **arguments: Any) -> tuple[str, bool]:
    """The tool's result through the agent's executor: (text, is_error)."""
    result = agent.execute(agent.tools, ToolCall("toolu_1", name, arguments))
    return result.text, bool(result.is_error)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "a.py").write_text("x = 1\nx = 1\ny = 2\n")
    (tmp_path / "secret.txt").write_text("the secret\n")
    return folder


# ---------------------------------------------------------------------- the shell


def test_bash_runs_in_the_working_folder(root: Path) -> None:
    text, error = run(agent_in(root), "bash", command="pwd && touch made_here")
    assert not error and text.splitlines()[0] == str(root.resolve()) and text.endswith("[exit status 0]")
    assert (root / "made_here").exists()


def test_bash_is_killed_at_its_timeout_with_what_it_printed(root: Path) -> None:
    agent = agent_in(root)
    agent.workspace.bash_timeout_s = 0.5
    started = time.monotonic()
    text, error = run(agent, "bash", command="echo before; sleep 30 & echo $! > bg.pid; wait")
    assert time.monotonic() - started < 25  # not the 30 s the background sleep would hold it (generous: a loaded machine)
    assert error and "timed out after 0.5 s" in text and "before" in text
    background = int((root / "bg.pid").read_text())
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and _running(background):
        time.sleep(0.05)
    assert not _running(background)  # the whole process group went, not only the shell


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_bash_output_is_capped_head_and_tail(root: Path) -> None:
    agent = agent_in(root)
    agent.workspace.output_cap_chars = 1_000
    text, error = run(agent, "bash", command=f"{sys.executable} -c \"print('H' + 'x' * 100000 + 'T')\"")
    assert not error and len(text) < 1_200
    assert text.startswith("Hxx") and "T\n\n[exit status 0]" in text and "bytes cut: output capped at 1,000" in text


def test_a_declined_command_is_an_error_result_and_does_not_run(root: Path) -> None:
    asked: list[str] = []
    agent = agent_in(root, approve=lambda command: asked.append(command) or False)
    text, error = run(agent, "bash", command="touch should_not_exist")
    assert asked == ["touch should_not_exist"]
    assert error and "declined" in text and "touch should_not_exist" in text
    assert not (root / "should_not_exist").exists()


def test_without_yes_a_non_interactive_session_refuses_commands_saying_how_to_allow_them(root: Path) -> None:
    text, error = run(agent_in(root, approve=refuse_without_yes), "bash", command="touch nope")
    assert error and "--yes" in text and not (root / "nope").exists()


# ---------------------------------------------------------------------- the folder's edge


@pytest.mark.parametrize(
    "tool, arguments",
    [
        ("read_file", {"path": "../secret.txt"}),
        ("read_file", {"path": "/etc/passwd"}),
        ("write_file", {"path": "../escaped.txt", "content": "x"}),
        ("edit_file", {"path": "../secret.txt", "old_string": "the", "new_string": "a"}),
        ("list_files", {"path": ".."}),
        ("grep", {"pattern": "secret", "path": "../secret.txt"}),
    ],
)
def test_file_tools_refuse_paths_outside_the_folder(root: Path, tool: str, arguments: dict[str, Any]) -> None:
    text, error = run(agent_in(root), tool, **arguments)
    assert error and "outside the working folder" in text and repr(arguments["path"]) in text
    assert "the secret" not in text and not (root.parent / "escaped.txt").exists()
    assert (root.parent / "secret.txt").read_text() == "the secret\n"


def test_symlinks_do_not_lead_out(root: Path) -> None:
    (root / "link.txt").symlink_to(root.parent / "secret.txt")
    (root / "linked_dir").symlink_to(root.parent)
    (root / "dangling").symlink_to(root.parent / "created_outside.txt")
    agent = agent_in(root)
    for tool, arguments in [
        ("read_file", {"path": "link.txt"}),
        ("read_file", {"path": "linked_dir/secret.txt"}),
        ("write_file", {"path": "dangling", "content": "x"}),
    ]:
        text, error = run(agent, tool, **arguments)
        assert error and "outside the working folder" in text and arguments["path"] in text
    assert not (root.parent / "created_outside.txt").exists()
    listing, _ = run(agent, "list_files")
    found, _ = run(agent, "grep", pattern="secret")
    for text in (listing, found):
        assert "the secret" not in text and "link.txt" not in text and "3 link(s) leading outside" in text


def test_an_absolute_path_inside_the_folder_is_fine(root: Path) -> None:
    text, error = run(agent_in(root), "read_file", path=str(root / "a.py"))
    assert not error and "y = 2" in text


# ---------------------------------------------------------------------- the other tools


def test_edit_replaces_one_exact_occurrence_and_explains_otherwise(root: Path) -> None:
    agent = agent_in(root)
    assert run(agent, "edit_file", path="a.py", old_string="z = 3", new_string="") == (
        "edit_file failed: old_string was not found in a.py",
        True,
    )
    text, error = run(agent, "edit_file", path="a.py", old_string="x = 1", new_string="x = 0")
    assert error and "occurs 2 times" in text
    assert run(agent, "edit_file", path="a.py", old_string="y = 2", new_string="y = 3") == (
        "edited a.py: 1 replacement(s)",
        False,
    )
    assert run(agent, "edit_file", path="a.py", old_string="x = 1", new_string="x = 0", replace_all=True)[1] is False
    assert (root / "a.py").read_text() == "x = 0\nx = 0\ny = 3\n"


def test_read_file_pages_and_says_what_is_left(root: Path) -> None:
    (root / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    text, _ = run(agent_in(root), "read_file", path="long.txt", offset=3, limit=2)
    assert text == "     3\tline 3\n     4\tline 4\n[6 more line(s): read on with offset=5]"


def test_bad_arguments_and_unknown_tools_are_error_results(root: Path) -> None:
    agent = agent_in(root)
    text, error = run(agent, "read_file", file="a.py", offset="3")
    assert error and "unknown argument 'file'" in text and "missing argument 'path'" in text
    assert "'offset' must be of type integer" in text
    text, error = run(agent, "delete_everything")
    assert error and "there is no tool 'delete_everything'" in text and "read_file" in text
    text, error = run(agent, "todo", todos=[{"content": "x", "status": "done"}])
    assert error and "todo 0" in text


def test_todo_keeps_the_list_in_the_session(root: Path) -> None:
    agent = agent_in(root)
    text, _ = run(
        agent, "todo", todos=[{"content": "read", "status": "completed"}, {"content": "fix", "status": "pending"}]
    )
    assert text == "[x] read\n[ ] fix"
    assert agent.workspace.todos[1] == {"content": "fix", "status": "pending"}


def test_the_subagent_has_no_task_tool_and_its_failure_is_a_result(root: Path) -> None:
    agent = agent_in(root, model=NoModel(calling(("toolu_9", "task", {"prompt": "x"}))))
    agent.max_turns = 1
    text, error = run(agent, "task", prompt="look around")
    assert error and "the subagent gave no answer" in text
    no_task = "task failed: there is no tool 'task'; the tools are read_file, write_file, edit_file, list_files, grep, bash, todo, "
    no_task += "search_history, read_history, compact_context"
    assert agent.display.results == [("task-1", no_task)]
    assert len(agent.context.history) == 0  # what the subagent did stays in its own context


def test_an_interrupt_still_answers_every_call(root: Path) -> None:
    reply = calling(*((f"toolu_{n}", "bash", {"command": "true"}) for n in (1, 2)))

    def interrupt(command: str) -> bool:
        raise KeyboardInterrupt

    agent = agent_in(root, approve=interrupt, model=NoModel(reply))
    with pytest.raises(KeyboardInterrupt):
        agent.ask("run it")
    answered = [item.tool_result for item in agent.context.history if item.role == "tool"]
    assert [(r.call_id, r.is_error) for r in answered] == [("toolu_1", True), ("toolu_2", True)]  # type: ignore[union-attr]
    assert agent.context.prepare()["messages"]  # the conversation is valid for the next request


def test_workspace_root_is_resolved(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    workspace = Workspace(tmp_path / "alias", lambda command: True)
    assert workspace.root == (tmp_path / "real").resolve()
    with pytest.raises(ToolError):
        workspace.resolve(os.fspath(tmp_path / "alias" / ".." / "x"))
