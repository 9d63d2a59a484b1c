"""The pairing rules every request keeps: each tool call answered by one result, right after its round.

A :class:`Round` is an assistant item with its tool calls and the items
answering them, the unit no stage splits. :class:`Validator` checks items one
at a time against the rules (a :class:`Violation` for each broken one), so a
growing conversation is validated in O(new items); ``Conversation.repair``
fixes what it finds (a :class:`Repair` for each change).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .blocks import ToolCall, ToolResult


class Paired(Protocol):
    """What the rules read of an item: its id, the result it holds, the calls it makes."""

    @property
    def id(self) -> str: ...

    @property
    def tool_result(self) -> ToolResult | None: ...

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]: ...


@dataclass(frozen=True, slots=True)
class Round:
    """An assistant item with tool calls and the items answering them.

    ``start`` is the assistant item's index; ``end`` is one past the last
    item of the round. Items in between that are not its results (an invalid
    conversation) are inside the span too, so cutting outside it is safe.
    """

    start: int
    end: int
    call_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Violation:
    """A rule the conversation breaks, with where."""

    kind: str  # unanswered_call | orphan_result | result_before_call | duplicate_id | duplicate_result | misplaced_result
    index: int
    detail: str
    call_id: str | None = None

    def __str__(self) -> str:
        return f"item {self.index}: {self.kind}: {self.detail}"


@dataclass(frozen=True, slots=True)
class Repair:
    """One change :meth:`Conversation.repair` made, with where (index before the change)."""

    action: str  # answered_call | dropped_result | moved_result | dropped_call | renamed_item
    index: int
    detail: str
    call_id: str | None = None


UNANSWERED_TEXT = "[contextfold: this tool call has no recorded result]"


class Validator:
    """Checks items one at a time, so a growing conversation is validated in O(new items).

    ``violations`` holds what was found so far; :meth:`open_violations` the
    calls of the last round still waiting for a result (not a fault while
    the agent is executing them, a fault in a request).
    """

    __slots__ = ("_answered", "_call_at", "_count", "_open", "_seen_items", "violations")

    def __init__(self) -> None:
        self.violations: list[Violation] = []
        self._seen_items: set[str] = set()
        self._call_at: dict[str, int] = {}
        self._answered: set[str] = set()
        self._open: dict[str, int] = {}  # calls of the current round awaiting results
        self._count = 0

    def feed(self, item: Paired) -> None:
        index = self._count
        self._count += 1
        found = self.violations
        if item.id in self._seen_items:
            found.append(Violation("duplicate_id", index, f"item id {item.id!r} is used twice"))
        self._seen_items.add(item.id)
        result = item.tool_result
        if result is not None:
            cid = result.call_id
            if cid in self._answered:
                found.append(Violation("duplicate_result", index, f"second result for call {cid!r}", cid))
            elif cid in self._open:
                self._answered.add(cid)
                del self._open[cid]
            elif cid in self._call_at:
                self._answered.add(cid)
                found.append(Violation("misplaced_result", index, f"result for call {cid!r} is not next to its call", cid))
            else:
                found.append(Violation("orphan_result", index, f"no call with id {cid!r}", cid))
            return
        # Any non-tool item closes the open round: what is still open is unanswered.
        found.extend(self.open_violations())
        self._open = {}
        for call in item.tool_calls:
            if call.id in self._call_at:
                found.append(Violation("duplicate_id", index, f"tool call id {call.id!r} is used twice", call.id))
                continue
            self._call_at[call.id] = index
            self._open[call.id] = index

    def open_violations(self) -> list[Violation]:
        return [Violation("unanswered_call", at, f"call {cid!r} has no result", cid) for cid, at in self._open.items()]
