"""The importers against every real recording in the shared corpus.

Expected figures come from the table in the corpus's SOURCES.md (its "steps"
column), parsed here, so the bar is the corpus's own description; the few
places where a file holds more than that column says are listed in
``BEYOND_SOURCES`` with the reason.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
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
    # The session ends on `taskkill //F //IM node.exe`, which killed the agent (see ANSWERED_NOWHERE).
    "claude-code-transcript/LilLeapo__cccc_clash_test/df44d492-9cf5-4fb3-9c52-1c367b25e4e7.jsonl": 1,
}
"""Files that end on a call the recording never answered.

pr-52-log.txt is not here although SOURCES.md calls its last call interrupted: the result is in
the log, with a control character mangled into an invalid JSON escape; the log reader repairs it.
mini-swe-agent runs end on the submit call, answered by the final ``exit`` message (the submission).
"""

ANSWERED_NOWHERE = {
    # The call is `taskkill //F //IM node.exe` (twice, and a third time at the end): on Windows that kills the
    # VS Code extension's own node process, so no result was ever written; the person reopened the session.
    "claude-code-transcript/LilLeapo__cccc_clash_test/df44d492-9cf5-4fb3-9c52-1c367b25e4e7.jsonl": 2,
    # Lines 426-427: a response (thinking + Write) abandoned two hours before line 428 retried it from the same
    # parent; the importer keeps a rewound branch in place (file order, no re-walk of the parentUuid tree).
    "claude-code-transcript/procrypto__Personal_AI_Infrastructure/c81f7dde-166c-4b18-9461-b3c5321d29a4.jsonl": 1,
}
"""Files with calls left unanswered mid-session (nothing in the file answers them): with :data:`UNANSWERED`,
the only validate() violations allowed."""

COPIED_CALLS = {
    # Reopened twice in the VS Code extension: lines 136-275 write lines 1-134 again (41 calls) under one stamp;
    # then lines 284-287 write lines 277-280 again as a second branch after the person's "？" (1 call).
    "claude-code-transcript/LilLeapo__cccc_clash_test/df44d492-9cf5-4fb3-9c52-1c367b25e4e7.jsonl": 42,
    # Reopened: lines 44-88 write lines 1-43 again (13 calls).
    "claude-code-transcript/LilLeapo__cccc_clash_test/f84b640b-c091-44bf-9464-71a557d19a1d.jsonl": 13,
}
"""Calls the steps column counts twice: a reopened session wrote them into the file again; the importer reads
them once (``skipped["resumed copy"]``)."""

BEYOND_SOURCES = {
    # SOURCES.md counts the first `codex exec` run only (6 commands + 3 file changes = 9); the log
    # holds a second run (the auto-restart to commit leftovers) with 7 more commands.
    "hive-mind-solve-logs/original-solve-log.txt": {"conversations": 2, "calls": 16, "first_conversation_calls": 9},
}


def _sources_rows(corpus: Path) -> dict[str, dict[str, str]]:
    """``{relative file: {column: cell}}`` from the SOURCES.md table."""
    rows = [line for line in (corpus / "SOURCES.md").read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in rows[0].split("|")]
    table = {}
    for row in rows[2:]:
        cells = dict(zip(header, (cell.strip() for cell in row.split("|")), strict=True))
        table[cells["file (relative to this dir)"].strip("`")] = cells
    return table


def _number(pattern: str, text: str) -> int:
    match = re.search(pattern, text)
    assert match, f"no {pattern!r} in {text!r}"
    return int(match.group(1).replace(",", ""))


ROWS = _sources_rows(CORPUS) if (CORPUS / "SOURCES.md").exists() else {}
TABLE = {name: row["steps"] for name, row in ROWS.items()}
"""``{relative file: steps cell}``."""
_loaded: dict[str, list[Conversation]] = {}


def _load(corpus: Path, name: str) -> list[Conversation]:
    if name not in _loaded:
        _loaded[name] = load(corpus / name)
    return _loaded[name]


def _calls(conversations: list[Conversation]) -> int:
    return sum(len(item.tool_calls) for c in conversations for item in c)


def unanswered(name: str) -> int:
    """Calls of a file no result answers: a recording cut off at the end, or left mid-session."""
    return UNANSWERED.get(name, 0) + ANSWERED_NOWHERE.get(name, 0)


def subagent_calls(name: str) -> int:
    """Tool calls of sub-agent sidechains, which the steps column of a Claude Code row leaves out: the row's
    notes give them ("... with N sub-agent tool calls"); without that note there are none."""
    match = re.search(r"([\d,]+) sub-agent tool calls", ROWS[name]["model / notes"])
    return int(match.group(1).replace(",", "")) if match else 0


def expected_calls(name: str) -> int:
    """Every tool call the importer should find in a file, per the corpus description."""
    steps = TABLE[name]
    if name in BEYOND_SOURCES:
        return BEYOND_SOURCES[name]["calls"]
    if "applied edits" in steps:  # aider: every applied edit is a tool call
        return _number(r"(\d+) applied edits", steps)
    return _number(r"([\d,]+) tool calls", steps) + subagent_calls(name) - COPIED_CALLS.get(name, 0)


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
    if "applied edits" in steps:  # aider: user turns (or messages) / sessions / applied edits
        users = sum(item.role == "user" for c in conversations for item in c)
        assert users == _number(r"(\d+) user (?:turns|messages)", steps)
        assert len(conversations) == _number(r"(\d+) sessions", steps)
    elif name in BEYOND_SOURCES:
        beyond = BEYOND_SOURCES[name]
        assert _number(r"([\d,]+) tool calls", steps) == beyond["first_conversation_calls"]
        assert _calls(conversations[:1]) == beyond["first_conversation_calls"]
        assert len(conversations) == beyond["conversations"]
    else:  # a Claude Code row counts the main chain; its notes count the sub-agent sidechains
        sidechains = [c for c in conversations if c.header.meta.get("sidechain")]
        assert _calls(sidechains) == subagent_calls(name)
        assert calls - _calls(sidechains) == _number(r"([\d,]+) tool calls", steps) - COPIED_CALLS.get(name, 0)
        assert (name in COPIED_CALLS) == ("resumed copy" in conversations[0].header.meta.get("skipped", {}))
        described = re.search(r"contextfold: (\d+) conversations", ROWS[name]["model / notes"])
        assert described is None or len(conversations) == int(described.group(1))
    assert calls == expected_calls(name)
    assert results == calls - unanswered(name)


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
    assert len(violations) == unanswered(name), [str(v) for _, v in violations]
    assert {v.kind for _, v in violations} <= {"unanswered_call"}
    ends = [(c, v) for c, v in violations if all(item.role == "tool" for item in c.items[v.index + 1 :])]
    assert len(ends) == UNANSWERED.get(name, 0)  # the calls of a cut-off file are in its last round
    for conversation, violation in ends:
        last_call = [call for item in conversation for call in item.tool_calls][-1]
        assert violation.call_id == last_call.id


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
    """Every response the model gave has its reported usage; a message Claude Code wrote in the model's place
    (an API error, "No response requested.") made no request and has none."""
    for conversation in _load(corpus_dir, name):
        written = [item for item in conversation if item.role == "assistant"]
        responses = [item for item in written if item.meta.get("model") != "<synthetic>"]
        assert responses and all("usage" in item.meta for item in responses)
        assert not any("usage" in item.meta for item in written if item not in responses)
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


ONE_WRITE = 0.01
"""Seconds over which one batch of records written together is stamped."""


def copy_stamp(name: str, main: Conversation) -> float | None:
    """The time a resumed session was re-stamped with, where the corpus says the file is one.

    Claude Code 1.0.8x, resuming a session ("starts from a continuation summary" in the row's notes), writes
    the records it carries over in one go, stamped with the resume's time (within :data:`ONE_WRITE` of each
    other; the person's prompts keep the time they were typed): that is no item's own time. Anywhere else no
    stamp is set aside.
    """
    if "starts from a continuation summary" not in ROWS[name]["model / notes"]:
        return None
    stamps = Counter(item.timestamp for item in main if item.timestamp is not None)
    stamp, count = stamps.most_common(1)[0]
    assert count > len(main) / 2  # most items: far more than any instant a session writes itself
    return stamp


@pytest.mark.parametrize("name", sorted(TABLE))
def test_timestamps_never_go_back(corpus_dir: Path, name: str) -> None:
    """What the model wrote and what the tools returned is never stamped before what came earlier; the
    person's own lines can be: Claude Code stamps a prompt or a local command (``/compact``, ``/clear``, its
    caveat) when it was typed, and writes it after what it waited for (the compaction's summary, the records
    of a resumed session), yet never before the model's reply the person had seen."""
    conversations = _load(corpus_dir, name)
    resumed = copy_stamp(name, conversations[0])  # the main conversation: sidechains are written as they run
    for conversation in conversations:
        latest = seen = float("-inf")  # the latest time of any item; of any model output
        called_at: dict[str, float] = {}
        for index, item in enumerate(conversation):
            if item.timestamp is None or (resumed is not None and abs(item.timestamp - resumed) <= ONE_WRITE):
                continue
            if item.role == "user":
                assert item.timestamp >= seen, (index, seen - item.timestamp)
            elif item.tool_result is not None:  # results of a round are written as they finish, after their call
                assert item.timestamp >= called_at[item.tool_result.call_id], index
            else:
                assert item.timestamp >= latest, (index, latest - item.timestamp)
                called_at.update((call.id, item.timestamp) for call in item.tool_calls)
                seen = item.timestamp
            latest = max(latest, item.timestamp)


def test_loading_is_deterministic(corpus_dir: Path) -> None:
    again = {name: load(corpus_dir / name) for name in TABLE}
    for name, conversations in again.items():
        assert conversations == _load(corpus_dir, name)


def test_stream_json_sessions_and_subagents(corpus_dir: Path) -> None:
    conversations = _load(corpus_dir, "hive-mind-solve-logs/pr49-run2-log.txt")
    main, restart, subagent = conversations  # the sessions first (the N-th session is conversation N), then subagents
    assert [c.header.meta.get("subagent", False) for c in conversations] == [False, False, True]
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
