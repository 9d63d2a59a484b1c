"""Where to cut a conversation for a summary: pair-safe cut points and their scores.

A cut is only ever made between units (a round is one unit), so every call
stays with its result. Among the cut points that leave a tail within the
budget, the best is chosen by a few rules that make the summary and the tail
read naturally: a cut after a finished turn or before a new user message is
better, one after a long pause is better, one right after an unresolved error
is worse (the fix attempt would be separated from the failure), and one that
fills the tail budget well is better.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .actions import failed
from .conversation import Conversation, Item

PAUSE_S = 300.0
"""A gap between two items longer than this is a natural break."""


@dataclass(frozen=True)
class Cut:
    """The first index of the kept tail, its score, the tail's size and why it scored so."""

    index: int
    score: float
    tail_tokens: int
    reasons: tuple[str, ...]


def _score(items: list[Item], index: int, tail_tokens: int, target_tokens: int) -> tuple[float, tuple[str, ...]]:
    before, after = items[index - 1], items[index]
    score = 2.0 * (1.0 - abs(target_tokens - tail_tokens) / max(target_tokens, 1))
    reasons = [f"tail {tail_tokens:,} of {target_tokens:,} tokens"]
    if before.role == "assistant" and not before.tool_calls:
        score += 1.0
        reasons.append("after assistant text")
    elif before.role == "tool":
        score += 0.5
        reasons.append("after a completed tool round")
    if after.role == "user":
        score += 1.0
        reasons.append("before a user message")
    if before.timestamp is not None and after.timestamp is not None and after.timestamp - before.timestamp > PAUSE_S:
        score += 0.5
        reasons.append("after a pause")
    result = before.tool_result
    if result is not None and failed(result.text, result.is_error):
        score -= 2.0
        reasons.append("right after an error")
    return score, tuple(reasons)


def choose_cut(
    conversation: Conversation, *, start: int, tail_budget_tokens: int, count_item: Callable[[Item], int]
) -> Cut | None:
    """The best cut that summarizes at least one item after ``start`` and keeps at least the last unit.

    Candidates are unit starts after ``start`` whose tail fits ``tail_budget_tokens``;
    the last unit is always a candidate, even when it alone is over budget
    (the most recent output is never summarized away). ``None`` when there is
    nothing to summarize.
    """
    items = list(conversation.items)
    units = conversation.units()
    if not units:
        return None
    tails: list[tuple[int, int]] = []  # (unit start, tokens from there to the end)
    tokens = 0
    for unit_start, unit_end in reversed(units):
        tokens += sum(count_item(items[i]) for i in range(unit_start, unit_end))
        if unit_start <= start:
            break
        if tails and tokens > tail_budget_tokens:
            break
        tails.append((unit_start, tokens))
    best: Cut | None = None
    for index, tail_tokens in tails:
        score, reasons = _score(items, index, tail_tokens, tail_budget_tokens)
        if best is None or score > best.score:
            best = Cut(index, score, tail_tokens, reasons)
    return best
