"""selective: per-kind rules that shed tokens, lowest priority first, until the target is met.

The last resort before (or instead of) a summary: each rule names a kind of
content and what may happen to it (DROP, TRUNCATE, or NONE), sparing the
newest ``keep_recent``. DROP removes thinking blocks; for the other kinds it
acts as TRUNCATE, because removing a tool result (or the text of a tool-call
turn) outright would split a round: images become a note, tool results a
placeholder, long assistant text its head and tail. Rules run in priority order, lowest first, and the
request is measured again after each; the stage stops as soon as it fits.
The system prompt, pinned items, summaries and the task are never touched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial

from ...conversation import Conversation, Image, Item, RedactedThinking, Text, Thinking
from ...events import Event
from ..base import NONE, Budget, Rule
from ..edits import MARK, compacted_by, head_tail, is_placeholder, latest_result_index
from ..task import task_index
from .clear import placeholder

STAGE = "selective"
ASSISTANT_TEXT_KEEP_CHARS = 600


def _without_thinking(item: Item) -> Item | None:
    blocks = tuple(b for b in item.blocks if not isinstance(b, (Thinking, RedactedThinking)))
    return None if len(blocks) == len(item.blocks) else replace(item, blocks=blocks, provenance=compacted_by(item, STAGE))


def _without_images(item: Item) -> Item | None:
    if item.role == "tool":
        result = item.tool_result
        if result is None or isinstance(result.content, str) or not any(isinstance(b, Image) for b in result.content):
            return None
        content = tuple(Text(f"{MARK}: image removed]") if isinstance(b, Image) else b for b in result.content)
        return replace(item, blocks=(replace(result, content=content),), provenance=compacted_by(item, STAGE))
    if not any(isinstance(b, Image) for b in item.blocks):
        return None
    blocks = tuple(Text(f"{MARK}: image removed]") if isinstance(b, Image) else b for b in item.blocks)
    return replace(item, blocks=blocks, provenance=compacted_by(item, STAGE))


def _shorter_text(item: Item) -> Item | None:
    if item.role != "assistant":
        return None
    blocks = tuple(
        Text(head_tail(b.text, ASSISTANT_TEXT_KEEP_CHARS // 2, ASSISTANT_TEXT_KEEP_CHARS // 2), b.extra)
        if isinstance(b, Text) and len(b.text) > ASSISTANT_TEXT_KEEP_CHARS
        else b
        for b in item.blocks
    )
    return None if blocks == item.blocks else replace(item, blocks=blocks, provenance=compacted_by(item, STAGE))


def _cleared(item: Item, budget: Budget) -> Item | None:
    return placeholder(item, budget.count_item(item), STAGE)


def _candidates(conversation: Conversation, rule: Rule, budget: Budget) -> Iterator[tuple[int, Callable[[], Item | None]]]:
    """Indices this rule may touch (oldest first, sparing the newest ``keep_recent``) and how."""
    if rule.action == NONE:
        return
    items = conversation.items
    latest = latest_result_index(items)
    change: Callable[[Item], Item | None]
    if rule.kind == "tool_result":
        indices = [i for i, it in enumerate(items) if it.role == "tool" and i != latest and not is_placeholder(it)]
        change = partial(_cleared, budget=budget)
    elif rule.kind == "thinking":
        indices = [i for i, it in enumerate(items) if any(isinstance(b, (Thinking, RedactedThinking)) for b in it.blocks)]
        change = _without_thinking
    elif rule.kind == "image":
        task = task_index(conversation)
        kinds = ("user", "tool_result", "assistant", "tool_call")
        indices = [i for i, it in enumerate(items) if i != task and it.kind in kinds]
        change = _without_images
    elif rule.kind == "assistant_text":
        indices = [i for i, it in enumerate(items) if it.role == "assistant"]
        change = _shorter_text
    else:
        return
    spared = len(indices) - rule.keep_recent
    for index in indices[: max(spared, 0)]:
        yield index, partial(change, items[index])


def selective(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
    """The rules in priority order until the request is at ``budget.target_tokens`` (else the trigger)."""
    target = budget.target_tokens if budget.target_tokens is not None else budget.trigger_tokens
    rules = budget.policy.selective_rules
    before = budget.count(conversation)
    if before <= target:
        return conversation, []
    events: list[Event] = []
    current, tokens = conversation, before
    for rule in sorted(rules, key=lambda r: r.priority):
        items = list(current.items)
        touched: list[str] = []
        for index, make in _candidates(current, rule, budget):
            changed = make()
            if changed is None:
                continue
            items[index] = changed
            touched.append(changed.id)
        if not touched:
            continue
        current = current.with_items(items)
        after = budget.count(current)
        events.append(Event(STAGE, f"{rule.action}:{rule.kind}", tuple(touched), tokens, after, f"priority {rule.priority}"))
        tokens = after
        if tokens <= target:
            break
    return current, events
