"""Records written out of the order the model saw them, put back in it.

Claude Code from about 2.1.9x sometimes writes the user record holding a tool
result a few lines *before* the assistant record that made the call (both on
the main chain; the result's ``parentUuid`` names the call's record, and its
timestamp is the later one). Chat exports made from such files keep the same
order: a ``tool`` message before the assistant message whose ``tool_calls``
it answers. Read in file order, the result answers no call yet, and the file
was refused as broken although nothing is missing from it.

Both functions here only ever move an entry *later*, to just after the entry it
answers, and only when that entry is further down the same file: a file
written in order is returned unchanged, and a result that answers nothing
anywhere is left where it is, for the importer to judge (a chat log's is refused
with its position; Claude Code keeps it as an observation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from ..adapters.recorded import Shape

Record = TypeVar("Record", bound=Mapping[str, object])
Entry = TypeVar("Entry")


def after_parents(records: Sequence[tuple[int, Record]]) -> tuple[list[tuple[int, Record]], int]:
    """Claude Code ``(line, record)`` pairs with each record whose ``parentUuid`` names a record written after it
    moved to just after that record; and how many were moved. A parent comes before its child in the chat, so a
    child written first was written early, not branched (a rewound session's branches name earlier records)."""
    position: dict[str, int] = {}
    for at, (_, record) in enumerate(records):
        uuid = record.get("uuid")
        if isinstance(uuid, str):
            position.setdefault(uuid, at)
    waiting: dict[int, list[int]] = {}  # position of a parent written late -> positions of its children held back
    for at, (_, record) in enumerate(records):
        parent = record.get("parentUuid")
        if isinstance(parent, str) and position.get(parent, -1) > at:
            waiting.setdefault(position[parent], []).append(at)
    return _placed(records, waiting)


def after_calls(messages: Sequence[tuple[str, object]], shape: Shape) -> tuple[list[tuple[str, object]], int]:
    """A chat log's ``(where, message)`` pairs with each result that answers a call made only further down moved to
    just after the message making it; and how many were moved. The model made the call before it read the result,
    whatever order the file lists them in. ``shape`` says which calls a message makes and which it answers."""
    first_call: dict[str, int] = {}
    for at, (_, message) in enumerate(messages):
        for call_id in _calls(shape, message):
            first_call.setdefault(call_id, at)
    waiting: dict[int, list[int]] = {}
    called: set[str] = set()
    for at, (_, message) in enumerate(messages):
        answered = shape.call_answered(message) if isinstance(message, Mapping) else None
        if answered is not None and answered not in called and first_call.get(answered, -1) > at:
            waiting.setdefault(first_call[answered], []).append(at)
        called.update(_calls(shape, message))
    return _placed(messages, waiting)


def _placed(entries: Sequence[Entry], waiting: Mapping[int, list[int]]) -> tuple[list[Entry], int]:
    """``entries`` in their order, each held one (named in ``waiting``, by the position it waits for) right after
    the entry it waits for (and what waits for it after it in turn); and how many were held. Held entries wait
    only for later ones, so every one is placed exactly once."""
    held = {child for children in waiting.values() for child in children}
    order: list[Entry] = []
    for at in range(len(entries)):
        if at in held:
            continue
        stack = [at]
        while stack:
            current = stack.pop()
            order.append(entries[current])
            stack.extend(reversed(waiting.get(current, ())))
    return order, len(held)


def _calls(shape: Shape, message: object) -> list[str]:
    return shape.calls_made(message) if isinstance(message, Mapping) else []
