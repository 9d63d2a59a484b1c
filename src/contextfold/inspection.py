"""What fills a conversation: items and tokens by kind and by tool, the largest items.

This is the model behind ``contextfold inspect``; it takes the per-item token
counter as an argument so that the same report works with the estimator or
an exact tokenizer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypedDict

from .conversation import Conversation, Item, JSONValue

LARGEST = 5
"""How many of the largest items the report lists."""


class LargestItem(TypedDict):
    """One of the largest items: its place and id, its kind, the tool whose result it is, its tokens and its
    first 80 characters on one line."""

    index: int
    id: str
    kind: str
    tool: str | None
    tokens: int
    preview: str


@dataclass
class Composition:
    """Counts of one conversation. Token figures come from the counter passed in."""

    items: int
    tool_calls: int
    tool_results: int
    error_results: int
    header_tokens: int
    unanswered_calls: int = 0
    """Tool calls no result in the conversation answers (a recording cut short, or a pairing the reader missed)."""
    items_by_kind: dict[str, int] = field(default_factory=dict)
    tokens_by_kind: dict[str, int] = field(default_factory=dict)
    calls_by_tool: dict[str, int] = field(default_factory=dict)
    tokens_by_tool: dict[str, int] = field(default_factory=dict)
    largest: list[LargestItem] = field(default_factory=list)
    skipped_records: dict[str, int] = field(default_factory=dict)
    """Records the importer left out by design, by type (``Header.meta["skipped"]``)."""
    unknown_records: dict[str, int] = field(default_factory=dict)
    """Records of types the importer does not know yet, skipped, by type (``Header.meta["unknown_records"]``)."""

    @property
    def total_tokens(self) -> int:
        return self.header_tokens + sum(self.tokens_by_kind.values())

    def to_dict(self) -> dict[str, JSONValue]:
        out = dict(self.__dict__)
        out["total_tokens"] = self.total_tokens
        return out


def _describe(index: int, item: Item, tokens: int) -> LargestItem:
    result = item.tool_result
    label = result.tool_name if result is not None else None
    preview = item.text.replace("\n", " ")[:80]
    return {"index": index, "id": item.id, "kind": item.kind, "tool": label, "tokens": tokens, "preview": preview}


def compose(conversation: Conversation, count_item: Callable[[Item], int], count_header: Callable[[Conversation], int]) -> Composition:
    """Tally ``conversation`` with ``count_item`` tokens per item."""
    items_by_kind: Counter[str] = Counter()
    tokens_by_kind: Counter[str] = Counter()
    calls_by_tool: Counter[str] = Counter()
    tokens_by_tool: Counter[str] = Counter()
    sized: list[tuple[int, int, Item]] = []
    called: set[str] = set()
    answered: set[str] = set()
    results = errors = 0
    for index, item in enumerate(conversation):
        tokens = count_item(item)
        items_by_kind[item.kind] += 1
        tokens_by_kind[item.kind] += tokens
        for call in item.tool_calls:
            calls_by_tool[call.name] += 1
            called.add(call.id)
        result = item.tool_result
        if result is not None:
            answered.add(result.call_id)
            results += 1
            errors += bool(result.is_error)
            tokens_by_tool[result.tool_name or "?"] += tokens
        sized.append((tokens, index, item))
    sized.sort(key=lambda t: (-t[0], t[1]))
    return Composition(
        items=len(conversation),
        tool_calls=sum(calls_by_tool.values()),
        tool_results=results,
        error_results=errors,
        header_tokens=count_header(conversation),
        unanswered_calls=len(called - answered),
        items_by_kind=dict(items_by_kind),
        tokens_by_kind=dict(tokens_by_kind),
        calls_by_tool=dict(calls_by_tool.most_common()),
        tokens_by_tool=dict(tokens_by_tool.most_common()),
        largest=[_describe(index, item, tokens) for tokens, index, item in sized[:LARGEST]],
        skipped_records=_counts(conversation.header.meta.get("skipped")),
        unknown_records=_counts(conversation.header.meta.get("unknown_records")),
    )


def _counts(value: object) -> dict[str, int]:
    """A ``{type: count}`` table from header meta (empty when the importer recorded none)."""
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, int)}
