"""The neutral model: structure (rounds, units), validate() and repair()."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import strategies as st
from sweeps import Sweep

from contextfold import conversation as c
from contextfold.adapters import to_anthropic
from contextfold.codec import conversation_from_dict, conversation_to_dict
from contextfold.conversation import Conversation, Item, Text, ToolCall, ToolResult
from contextfold.errors import InvalidContent, UnknownRole
from contextfold.folds import Fold
from contextfold.synthetic import generate_session


def call(cid: str, name: str = "bash", **args: object) -> ToolCall:
    return ToolCall(cid, name, args)


def test_tool_results_are_linked_to_their_calls() -> None:
    conv = Conversation([c.user("go"), c.assistant("", [call("a", "read_file", path="x.py")]), c.tool("a", "data")])
    result = conv[2].tool_result
    assert result is not None
    assert result.tool_name == "read_file"
    assert result.arguments == {"path": "x.py"}


def test_a_fold_reads_each_item_once_as_the_conversation_grows_and_a_copy_starts_afresh() -> None:
    read: list[str] = []

    def words(seen: list[str], index: int, item: Item) -> None:
        seen.append(f"{index}:{item.text}")
        read.append(item.text)

    fold = Fold("words", list, words)
    conv = Conversation([c.user("fix the parser"), c.assistant("reading it")])
    assert fold.of(conv) == ["0:fix the parser", "1:reading it"]
    conv.append(c.user("and the tests"))
    assert fold.of(conv) == ["0:fix the parser", "1:reading it", "2:and the tests"]
    assert fold.of(conv) == ["0:fix the parser", "1:reading it", "2:and the tests"]
    assert read == ["fix the parser", "reading it", "and the tests"]  # each item read once, not once per ask
    copy = conv.snapshot()
    copy.append(c.assistant("done"))
    assert fold.of(copy)[-1] == "3:done"
    assert fold.of(conv)[-1] == "2:and the tests"  # the copy's items never reach this one's state
    assert fold.of(conv.with_items(conv.items[1:])) == ["0:reading it", "1:and the tests"]


def test_item_rejects_unknown_role_and_misplaced_results() -> None:
    with pytest.raises(UnknownRole) as err:
        Item("robot", (Text("x"),))
    assert err.value.field == "role"
    with pytest.raises(InvalidContent):
        Item("user", (ToolResult("a", "x"),))
    with pytest.raises(InvalidContent):
        Item("tool", (Text("x"),))


def test_rounds_and_units_keep_parallel_calls_together() -> None:
    conv = Conversation([
        c.user("task"),
        c.assistant("two at once", [call("a"), call("b")]),
        c.tool("a", "1"),
        c.tool("b", "2"),
        c.assistant("done"),
    ])
    assert [(r.start, r.end, r.call_ids) for r in conv.rounds()] == [(1, 4, ("a", "b"))]
    assert conv.units() == [(0, 1), (1, 4), (4, 5)]


def test_a_round_that_begins_inside_another_and_ends_after_it_joins_its_unit() -> None:
    """Interleaved rounds (a recording with a late result): no cut may fall between a call and its result."""
    conv = Conversation([
        c.user("task"),
        c.assistant("", [call("a")]),
        c.assistant("", [call("b")]),
        c.tool("a", "1"),
        c.tool("b", "2"),
        c.user("next"),
    ])
    assert [(r.start, r.end) for r in conv.rounds()] == [(1, 4), (2, 5)]
    assert conv.units() == [(0, 1), (1, 5), (5, 6)]


def test_a_text_mode_command_and_the_output_sent_back_as_a_user_message_are_one_unit() -> None:
    """mini-swe-agent and SWE-agent run the fenced block of a reply and send its output back as a user message: that
    message answers the reply as a tool result answers its call, so no unit boundary falls between them. A message of
    the person after a command, and the format error answering a reply that ran nothing (no output to read without
    its command; a reply that ran nothing need not be kept for it), stay units of their own."""
    conv = Conversation([
        c.user("Fix the failing test in src/app.py"),
        c.assistant("THOUGHT: find it.\n\n```bash\ngrep -rn total src\n```"),
        c.user("<returncode>0</returncode>\n<output>\nsrc/app.py:1:def total():\n</output>"),
        c.assistant("THOUGHT: run the tests.\n\n```bash\npytest -x\n```"),
        c.user("The last command <command>pytest -x</command> timed out and has been killed."),
        c.assistant("DISCUSSION\nOpen the file.\n```bash\nopen src/app.py\n```"),
        c.user("OBSERVATION:\n[File: /repo/src/app.py (120 lines total)]"),
        c.assistant("```bash\nls\n```"),
        c.user("Also check the docs, please."),
        c.assistant("I will, after this."),
        c.user("Please always provide EXACTLY ONE action in triple backticks, found 0 actions."),
        c.assistant("Done."),
    ])
    assert conv.units() == [(0, 1), (1, 3), (3, 5), (5, 7), (7, 8), (8, 9), (9, 10), (10, 11), (11, 12)]


def test_validate_names_every_violation_with_its_position() -> None:
    conv = Conversation([
        c.user("task"),
        c.assistant("", [call("a"), call("b")]),
        c.tool("a", "1"),
        c.user("interrupt"),
        c.tool("b", "late"),
        c.tool("zz", "orphan"),
        c.tool("later", "too early"),
        c.assistant("", [call("later")]),
        c.tool("later", "ok"),
        c.tool("later", "again"),
        c.assistant("", [call("q")]),
    ])
    found = {(v.kind, v.index) for v in conv.validate()}
    assert found == {
        ("unanswered_call", 1),
        ("misplaced_result", 4),
        ("orphan_result", 5),
        ("result_before_call", 6),
        ("duplicate_result", 9),
        ("unanswered_call", 10),
    }


def test_validate_flags_duplicate_ids() -> None:
    item = c.user("same")
    conv = Conversation([item, item, c.assistant("", [call("x")]), c.tool("x", ""), c.assistant("", [call("x")])])
    kinds = [v.kind for v in conv.validate()]
    assert kinds.count("duplicate_id") == 2


def test_repair_fixes_both_directions_and_reports_each_change() -> None:
    conv = Conversation([
        c.user("task"),
        c.assistant("", [call("a"), call("b")]),
        c.tool("a", "1"),
        c.user("interrupt"),
        c.tool("b", "late"),
        c.tool("zz", "orphan"),
        c.assistant("", [call("q")]),
    ])
    fixed, repairs = conv.repair()
    assert fixed.validate() == []
    assert [(r.action, r.call_id) for r in repairs] == [
        ("moved_result", "b"),
        ("dropped_result", "zz"),
        ("answered_call", "q"),
    ]
    # The real late result is kept (moved), not replaced by a synthetic one.
    assert [i.text for i in fixed][:5] == ["task", "", "1", "late", "interrupt"]
    synthetic = fixed[-1].tool_result
    assert synthetic is not None and synthetic.is_error and synthetic.tool_name == "bash"


def test_repair_leaves_one_call_per_id_in_an_assistant_message() -> None:
    conv = Conversation([c.user("task"), c.assistant("two reads", [call("a", path="x"), call("a", path="y"), call("b")]),
                         c.tool("a", "x data"), c.tool("a", "y data"), c.tool("b", "b data")])
    fixed, repairs = conv.repair()
    assert fixed.validate() == []
    assert [b.arguments for b in fixed[1].tool_calls] == [{"path": "x"}, {}]
    assert [(r.action, r.call_id) for r in repairs] == [("dropped_call", "a"), ("dropped_result", "a")]
    sent = to_anthropic(fixed)["messages"][1]["content"]
    ids = [block["id"] for block in sent if block["type"] == "tool_use"]
    assert len(ids) == len(set(ids)) == 2


def test_repair_of_a_valid_conversation_changes_nothing() -> None:
    conv = generate_session(rounds=30, seed=3)
    fixed, repairs = conv.repair()
    assert repairs == []
    assert fixed == conv


def test_codec_round_trip_is_exact() -> None:
    conv = generate_session(rounds=20, seed=5)
    conv.append(Item("assistant", (c.Thinking("hmm", "sig"), c.RedactedThinking("xx"), c.Image(url="data:image/png;base64,AA"))))
    conv.append(c.tool("call_00001", (Text("part"), c.Image(data="AA", media_type="image/png")), is_error=True))
    restored = conversation_from_dict(json.loads(json.dumps(conversation_to_dict(conv))))
    assert restored == conv
    assert [i.id for i in restored] == [i.id for i in conv]


# A conversation scrambled at random: valid rounds, then items dropped, duplicated and shuffled locally.
_events = st.lists(st.sampled_from(["round1", "round2", "twin", "user", "text"]), min_size=1, max_size=12)


def repair_always_yields_a_valid_conversation(events: list[str], damage: list[tuple[str, int]]) -> None:
    items: list[Item] = [c.user("task")]
    n = 0
    for ev in events:
        if ev.startswith("round"):
            calls = [call(f"c{n + k}") for k in range(int(ev[-1]))]
            n += len(calls)
            items.append(c.assistant("", calls))
            items.extend(c.tool(x.id, f"out {x.id}") for x in calls)
        elif ev == "twin":  # one message with two calls sharing an id (fuzzed inputs have them)
            items.append(c.assistant("", [call(f"c{n}"), call(f"c{n}", flag=True)]))
            items.extend(c.tool(f"c{n}", f"out {k}") for k in range(2))
            n += 1
        elif ev == "user":
            items.append(c.user("more"))
        else:
            items.append(c.assistant("thinking aloud"))
    for action, at in damage:
        at %= len(items)
        if action == "drop" and len(items) > 1:
            items.pop(at)
        elif action == "dup":
            items.insert(at, items[at])
        elif action == "swap" and at + 1 < len(items):
            items[at], items[at + 1] = items[at + 1], items[at]
    conv = Conversation(items)
    fixed, repairs = conv.repair()
    assert fixed.validate() == []
    assert bool(repairs) == bool(conv.validate())
    # Non-tool items keep their order; only an item made of repeated tool calls may go.
    dropped = Counter(r.index for r in repairs if r.action == "dropped_call")
    kept = [i.text for k, i in enumerate(conv)
            if i.role != "tool" and not (dropped[k] == len(i.tool_calls) > 0 and not i.text)]
    assert [i.text for i in fixed if i.role != "tool"] == kept


test_repair_always_yields_a_valid_conversation, test_repair_always_yields_a_valid_conversation_sweep = Sweep(
    main=50, full=300).tests(repair_always_yields_a_valid_conversation, _events,
                             st.lists(st.tuples(st.sampled_from(["drop", "dup", "swap"]), st.integers(0, 40)), max_size=6))
