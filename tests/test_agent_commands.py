"""``contextfold chat`` interactively (lines on stdin): the slash commands print what they promise.

The same session is tried in a real terminal by ``test_agent_tmux.py``;
this one runs everywhere, in-process.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from agent_session import SURVEY_ANSWER, PlannedSession, make_repository, survey_plan
from click.testing import CliRunner

from contextfold.cli import cli
from contextfold.stores.transcript import Transcript
from contextfold.testing.scripted import ScriptedModel

ENV = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": None, "COLUMNS": "200"}


def chat(root: Path, server: ScriptedModel, lines: list[str], *options: str) -> str:
    result = CliRunner().invoke(
        cli,
        [
            "chat",
            "--model",
            "claude-sonnet-4-6",
            "--base-url",
            server.base_url("anthropic"),
            "--window",
            "60000",
            "--cwd",
            str(root),
            *options,
        ],
        input="\n".join(lines) + "\n",
        env=ENV,
    )
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    make_repository(folder)
    return folder


def test_slash_commands_print_what_they_promise(root: Path) -> None:
    script = PlannedSession(main=survey_plan(), final=SURVEY_ANSWER)
    lines = [
        "Survey the modules and run the tests.",
        "y",
        "/context",
        "/compact focus on the failing test",
        "/cost",
        "/transcript",
        "/clear",
        "/context",
        "/compact",
        "/nonsense",
        "/help",
        "/exit",
    ]
    with ScriptedModel(script) as server:
        output = chat(root, server, lines)
    assert server.problems == [] and script.failures == []
    sections = [" ".join(text.split()) for text in re.split(r"^> (?=\S)", output, flags=re.MULTILINE)]
    turn, context, compacted, cost, where, cleared, empty, nothing, unknown, listed = sections[1:11]

    assert "run" in turn and "in the working folder? [y/N]" in turn  # asked before the shell command
    assert SURVEY_ANSWER in turn and re.search(r"context [\d,]+/60,000 tokens \(\d+%\)", turn)
    assert "last stage: none" in turn

    assert re.search(
        r"context [\d,]+ of 60,000 tokens \(\d+%\), compacts at 51,808", context
    )  # 60,000 - 8,192 for the reply: the default trigger, 90% of the window (54,000), never reaches into its room
    assert "█" in context and "░" in context
    for kind in ("header (system + tools)", "tool_result", "tool_call", "user", "free"):
        assert kind in context

    assert "summarize summarized: " in compacted and "items summarized" in compacted
    assert re.search(r"[\d,]+ tokens became a [\d,]+-token summary", compacted)
    assert "instructions: 'focus on the failing test'" in compacted
    assert "last stage: summarize" in compacted and "summaries in view: 1" in compacted

    assert "cost of 6 model calls" in cost
    for row in ("input, uncached", "cache reads", "cache writes", "output"):
        assert re.search(rf"{row}\s+[\d,]+\s+[\d.]+", cost)
    assert re.search(r"total \$\d+\.\d{4} \(\$\d+\.\d{4} without the prompt cache\)", cost)

    path = re.search(r"transcript: (\S+\.jsonl)", where)
    assert path and Path(path.group(1)).parent == root / ".contextfold"
    history = Transcript.load(path.group(1)).conversation
    assert len(history) == 1 + 6 + 9  # the task, six replies, nine results: all there after the summary

    assert "started a fresh context" in cleared
    assert "tool_result" not in empty and "header (system + tools)" in empty
    assert "nothing was compacted" in nothing
    assert "unknown command /nonsense" in unknown and "/compact [instructions] summarize" in listed


def test_a_declined_shell_command_reaches_the_model_as_an_error(root: Path) -> None:
    script = PlannedSession(main=survey_plan(), final=SURVEY_ANSWER)
    with ScriptedModel(script) as server:
        output = chat(root, server, ["Survey the modules and run the tests.", "n", "/exit"])
    assert SURVEY_ANSWER in output
    assert server.exchanges[-1].results == (
        f"bash failed: the user declined to run this command: {survey_plan()[-1].calls[0].arguments['command']}",
    )


def test_context_shows_the_last_compactions_receipt(root: Path) -> None:
    script = PlannedSession(main=survey_plan(), final=SURVEY_ANSWER)
    lines = ["Survey the modules and run the tests.", "y", "/context", "/compact", "/context", "/exit"]
    with ScriptedModel(script) as server:
        output = chat(root, server, lines)
    sections = re.split(r"^> (?=\S)", output, flags=re.MULTILINE)
    before, after = sections[2], sections[4]
    assert "last compaction" not in before, "nothing was compacted yet"
    assert "last compaction" in after and re.search(r"manual compaction \([^)]*summarize", after)
    assert re.search(r"summarized\s+\w+\s+[\d,]+ tok\s+read_history\(\"it_[0-9a-f]+\"\)", after)
    assert "checks: task ok" in after
