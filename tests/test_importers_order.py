"""Putting records written out of order back in the order the model saw them (``importers/_order.py``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from contextfold.adapters.recorded import CHAT
from contextfold.importers._order import after_calls, after_parents


def chat(rounds: list[int]) -> list[tuple[str, object]]:
    """A chat in order: per round an assistant message making ``n`` calls, then their ``n`` results."""
    messages: list[tuple[str, object]] = [("$[0]", {"role": "user", "content": "go"})]
    for turn, calls in enumerate(rounds):
        ids = [f"c{turn}_{k}" for k in range(calls)]
        messages.append((f"a{turn}", {"role": "assistant", "tool_calls": [{"id": i} for i in ids]}))
        messages.extend((f"r{i}", {"role": "tool", "tool_call_id": i}) for i in ids)
    return messages


def answered_after_calls(messages: list[tuple[str, object]]) -> bool:
    called: set[str] = set()
    for _, message in messages:
        assert isinstance(message, dict)
        if message["role"] == "tool" and message["tool_call_id"] not in called:
            return False
        called.update(call["id"] for call in message.get("tool_calls", ()))
    return True


@given(st.lists(st.integers(0, 3), min_size=1, max_size=8), st.data())
def test_results_moved_ahead_of_their_calls_come_back_after_them(rounds: list[int], data: st.DataObject) -> None:
    """Whatever results a writer put up to three entries too early, each comes back after its call, nothing is lost
    or duplicated, and a file in order is returned as it is."""
    in_order = chat(rounds)
    assert after_calls(in_order, CHAT) == (in_order, 0)
    shuffled = list(in_order)
    results = [where for where, _ in in_order if where.startswith("r")]
    for moving in data.draw(st.lists(st.sampled_from(results), unique=True)) if results else ():
        at = [where for where, _ in shuffled].index(moving)
        shuffled.insert(max(1, at - data.draw(st.integers(1, 3))), shuffled.pop(at))
    fixed, moved = after_calls(shuffled, CHAT)
    assert sorted(map(str, fixed)) == sorted(map(str, in_order))
    assert answered_after_calls(fixed)
    assert (moved == 0) == answered_after_calls(shuffled)


def record(uuid: str, parent: str | None) -> tuple[int, dict[str, object]]:
    return int(uuid[1:]), {"uuid": uuid, "parentUuid": parent}


def test_a_chain_written_backwards_is_read_forwards() -> None:
    """Each record waits for its parent, and what waits for it comes right after it, in the order written."""
    records = [record("n1", None), record("n4", "n3"), record("n3", "n2"), record("n5", "n2"), record("n2", "n1")]
    fixed, moved = after_parents(records)
    assert [r["uuid"] for _, r in fixed] == ["n1", "n2", "n3", "n4", "n5"]
    assert moved == 3


def test_a_rewound_branch_keeps_its_place() -> None:
    """A record naming an earlier parent (another reply to the same prompt) is where it was written."""
    records = [record("n1", None), record("n2", "n1"), record("n3", "n2"), record("n4", "n1")]
    assert after_parents(records) == (records, 0)
