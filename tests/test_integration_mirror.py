"""The Mirror under every integration: only new messages are added, both kinds of prefix are followed, a rewrite restarts."""

from __future__ import annotations

from contextfold import Context
from contextfold.adapters.openai_responses import from_responses, to_responses
from contextfold.integrations.mirror import Mirror


def _mirror() -> Mirror:
    return Mirror(lambda: Context(window_tokens=16_000), lambda m, known: from_responses(m, known_call_ids=known),
                  to_responses)


def _round(n: int) -> list[dict]:
    return [
        {"type": "function_call", "call_id": f"c{n}", "name": "read", "arguments": f'{{"n": {n}}}'},
        # outputs large enough that a summary of them is smaller (a compact never returns a larger request)
        {"type": "function_call_output", "call_id": f"c{n}", "output": f"result {n}\n" + f"line {n} of the file\n" * 200},
    ]


TASK = [{"role": "user", "content": "read everything"}]


def test_a_framework_keeping_its_raw_history_adds_only_what_is_new() -> None:
    mirror = _mirror()
    assert mirror.prepare(TASK + _round(0)) == TASK + _round(0)
    assert mirror.prepare(TASK + _round(0) + _round(1)) == TASK + _round(0) + _round(1)
    assert (mirror.last_read, mirror.fresh) == (2, False)
    assert len(mirror.context.history) == 5


def test_a_framework_adopting_the_returned_view_continues_from_it() -> None:
    mirror = _mirror()
    for n in range(3):
        mirror.prepare(TASK + [item for k in range(n + 1) for item in _round(k)])
    mirror.context.compact()
    view = mirror.compacted(mirror.returned)
    assert len(view) < 7  # the task, a summary and the last round
    assert mirror.prepare(view + _round(3))[-2:] == _round(3)
    assert mirror.last_read == 2 and not any(e.action == "restarted" for e in mirror.events)


def test_a_history_that_does_not_continue_restarts_with_an_event() -> None:
    mirror = _mirror()
    mirror.prepare(TASK + _round(0))
    other = [{"role": "user", "content": "something else"}]
    assert mirror.prepare(other) == other
    assert mirror.fresh and len(mirror.context.history) == 1
    assert [e.action for e in mirror.events] == ["restarted"]
