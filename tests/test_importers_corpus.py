"""The importers against every real recording in the shared corpus.

Expected figures come from the table in the corpus's SOURCES.md (its "steps"
column), parsed here, so the bar is the corpus's own description; the few
places where a file holds more than that column says are listed in
``BEYOND_SOURCES`` with the reason.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from conftest import CORPUS

from contextfold.conversation import Conversation
from contextfold.importers import FORMATS, detect, load

FORMAT_BY_FOLDER = {
    "mini-swe-agent": "mini-swe-agent",
    "live-swe-agent": "mini-swe-agent",
    "swe-agent": "swe-agent",
    "moatless-tools": "moatless",
    "openhands-sdk": "openhands",
    "tau-bench": "tau-bench",
    "claude-code-transcript": "claude-code",
    "codex-tui": "codex-tui",
    "aider": "aider",
}
LOG_FORMATS = {
    "pr-52-log.txt": "claude-stream-json",
    "pr49-run2-log.txt": "claude-stream-json",
    "session-1-log.txt": "claude-stream-json",
    "original-solve-log.txt": "codex-exec",
}

UNANSWERED = {
    # The log ends inside the tool_result event of the last Read call (a base64 screenshot cut off).
    "hive-mind-solve-logs/pr49-run2-log.txt": 1,
    # The event list ends on an ActionEvent (browser_click) whose observation was never recorded.
    "openhands-sdk/traj_safety-unauth-discount.json": 1,
}
"""Files that end on a call the recording never answered: the only validate() violations allowed.

pr-52-log.txt is not here although SOURCES.md calls its last call interrupted: the result is in
the log, with a control character mangled into an invalid JSON escape; the log reader repairs it.
mini-swe-agent runs end on the submit call, answered by the final ``exit`` message (the submission).
"""

BEYOND_SOURCES = {
    # SOURCES.md counts the first `codex exec` run only (6 commands + 3 file changes = 9); the log
    # holds a second run (the auto-restart to commit leftovers) with 7 more commands.
    "hive-mind-solve-logs/original-solve-log.txt": {"conversations": 2, "calls": 16, "first_conversation_calls": 9},
}


def _sources_table(corpus: Path) -> dict[str, str]:
    """``{relative file: steps cell}`` from the SOURCES.md table."""
    rows = [line for line in (corpus / "SOURCES.md").read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in rows[0].split("|")]
    file_col, steps_col = header.index("file (relative to this dir)"), header.index("steps")
    table = {}
    for row in rows[2:]:
        cells = [cell.strip() for cell in row.split("|")]
        table[cells[file_col].strip("`")] = cells[steps_col]
    return table


def _number(pattern: str, text: str) -> int:
    match = re.search(pattern, text)
    assert match, f"no {pattern!r} in {text!r}"
    return int(match.group(1).replace(",", ""))


TABLE = _sources_table(CORPUS) if (CORPUS / "SOURCES.md").exists() else {}
_loaded: dict[str, list[Conversation]] = {}


def _load(corpus: Path, name: str) -> list[Conversation]:
    if name not in _loaded:
        _loaded[name] = load(corpus / name)
    return _loaded[name]


def _calls(conversations: list[Conversation]) -> int:
    return sum(len(item.tool_calls) for c in conversations for item in c)


def _results(conversations: list[Conversation]) -> int:
    return sum(item.role == "tool" for c in conversations for item in c)


def test_the_table_lists_every_file(corpus_dir: Path) -> None:
    on_disk = {str(p.relative_to(corpus_dir)) for p in corpus_dir.rglob("*") if p.is_file() and p.name != "SOURCES.md"}
    assert on_disk == set(TABLE)


@pytest.mark.parametrize("name", sorted(TABLE))
def test_detects_the_format(corpus_dir: Path, name: str) -> None:
    folder, filename = name.split("/")[0], Path(name).name
    expected = LOG_FORMATS.get(filename, FORMAT_BY_FOLDER.get(folder))
    assert detect(corpus_dir / name) == expected
    assert expected in FORMATS


@pytest.mark.parametrize("name", sorted(TABLE))
def test_step_counts_match_sources(corpus_dir: Path, name: str) -> None:
    conversations = _load(corpus_dir, name)
    steps = TABLE[name]
    calls, results = _calls(conversations), _results(conversations)
    if "user turns" in steps:  # aider: user turns / sessions / applied edits
        assert sum(item.role == "user" for c in conversations for item in c) == _number(r"(\d+) user turns", steps)
        assert len(conversations) == _number(r"(\d+) sessions", steps)
        assert calls == _number(r"(\d+) applied edits", steps)
    elif name in BEYOND_SOURCES:
        beyond = BEYOND_SOURCES[name]
        assert _number(r"([\d,]+) tool calls", steps) == beyond["first_conversation_calls"]
        assert _calls(conversations[:1]) == beyond["first_conversation_calls"]
        assert (len(conversations), calls) == (beyond["conversations"], beyond["calls"])
    else:
        assert calls == _number(r"([\d,]+) tool calls", steps)
    assert results == calls - UNANSWERED.get(name, 0)


def test_tau_bench_has_every_trajectory_and_message(corpus_dir: Path) -> None:
    name = "tau-bench/gpt-4o-airline.json"
    conversations = _load(corpus_dir, name)
    steps = TABLE[name]
    assert len(conversations) == _number(r"(\d+) trajectories", steps) == 200
    assert _calls(conversations) == _number(r"([\d,]+) tool calls", steps) == 1164
    messages = sum(len(c) + len(c.header.system) for c in conversations)
    assert messages == _number(r"([\d,]+) messages", steps)
    assert {c.header.meta["trial"] for c in conversations} == {0, 1, 2, 3}


@pytest.mark.parametrize("name", sorted(TABLE))
def test_conversations_are_valid_but_for_recorded_dangling_calls(corpus_dir: Path, name: str) -> None:
    conversations = _load(corpus_dir, name)
    violations = [(c, v) for c in conversations for v in c.validate()]
    assert len(violations) == UNANSWERED.get(name, 0), [str(v) for _, v in violations]
    for conversation, violation in violations:
        last_call = [call for item in conversation for call in item.tool_calls][-1]
        assert (violation.kind, violation.call_id) == ("unanswered_call", last_call.id)
        assert all(item.role == "tool" for item in conversation.items[violation.index + 1 :])  # the last round


USAGE_FILES = [
    name
    for name in TABLE
    if name.split("/")[0] in ("mini-swe-agent", "live-swe-agent", "claude-code-transcript", "codex-tui")
    or name
    in (
        "hive-mind-solve-logs/pr-52-log.txt",
        "hive-mind-solve-logs/pr49-run2-log.txt",
        "hive-mind-solve-logs/session-1-log.txt",
    )
]


@pytest.mark.parametrize("name", sorted(USAGE_FILES))
def test_recorded_usage_is_on_every_response(corpus_dir: Path, name: str) -> None:
    for conversation in _load(corpus_dir, name):
        responses = [item for item in conversation if item.role == "assistant"]
        assert responses and all("usage" in item.meta for item in responses)
        prompts = [item.meta["usage"]["prompt_tokens"] for item in responses]
        for item in responses:
            usage = item.meta["usage"]
            assert usage["prompt_tokens"] > 0 and usage["output_tokens"] >= 0
            assert usage["cache_read_tokens"] + usage["cache_write_tokens"] <= usage["prompt_tokens"]
        # The context grows along an agent loop: the prompt almost never shrinks from one call to the next.
        growing = sum(later >= earlier for earlier, later in itertools.pairwise(prompts))
        assert growing >= 0.9 * (len(prompts) - 1)
        assert prompts[-1] > prompts[0] or len(prompts) == 1


def test_claude_code_keeps_one_usage_per_api_response(corpus_dir: Path) -> None:
    (conversation,) = _load(corpus_dir, "claude-code-transcript/python-to-rust-port/transcript.jsonl")
    responses = [item.meta["response_id"] for item in conversation if item.role == "assistant"]
    assert len(responses) == len(set(responses)) == 39  # 55 assistant records, 39 distinct message ids
    parallel = [item for item in conversation if len(item.tool_calls) > 1]
    assert len(parallel) == 2  # records 64-66 and 75-77 of the file: one text and two Bash calls each


@pytest.mark.parametrize("name", sorted(TABLE))
def test_timestamps_never_go_back(corpus_dir: Path, name: str) -> None:
    for conversation in _load(corpus_dir, name):
        times = [item.timestamp for item in conversation if item.timestamp is not None]
        assert times == sorted(times)


def test_loading_is_deterministic(corpus_dir: Path) -> None:
    again = {name: load(corpus_dir / name) for name in TABLE}
    for name, conversations in again.items():
        assert conversations == _load(corpus_dir, name)


def test_stream_json_sessions_and_subagents(corpus_dir: Path) -> None:
    conversations = _load(corpus_dir, "hive-mind-solve-logs/pr49-run2-log.txt")
    main, subagent, restart = conversations
    assert [c.header.meta.get("subagent", False) for c in conversations] == [False, True, False]
    assert main.header.system_text.startswith("You are an AI issue solver.")
    assert main[0].role == "user" and main[0].text.startswith("Issue to solve: https://github.com/")
    assert {spec.name for spec in main.header.tools} >= {"Bash", "Read", "Task"}
    parent = main.call(subagent.header.meta["parent_tool_use_id"])
    assert parent is not None and parent.name == "Task" and subagent[0].text == parent.arguments["prompt"]
    assert {item.meta.get("model") for item in subagent if item.role == "assistant"} == {"claude-haiku-4-5-20251001"}
    assert restart.header.meta["unparsed_lines"] == [5504]


def test_codex_tui_prompts_come_from_keystrokes(corpus_dir: Path) -> None:
    first, second = _load(corpus_dir, "codex-tui/binary-size-log.jsonl")
    assert [i.text for i in first if i.role == "user"] == ["complete the merge"]
    assert [i.text for i in second if i.role == "user"] == ["Why are the binaries produced by this project so large?"]
    assert first.header.meta["skipped"]["app_event"] > 10000
    assert first[-1].role == "assistant" and "merge conflict" in first[-1].text


def test_aider_edits_follow_the_reply_that_made_them(corpus_dir: Path) -> None:
    conversations = _load(corpus_dir, "aider/AFI-Protocol__afi-core/.aider.chat.history.md")
    paths = [call.arguments["path"] for c in conversations for item in c for call in item.tool_calls]
    assert paths[:2] == ["aider-afi.sh", "sync-afi.sh"]
    first_edit = next(item for c in conversations for item in c if item.tool_calls)
    assert "SEARCH" in first_edit.text
    assert conversations[0].header.meta["model"] == "gpt-4o"
