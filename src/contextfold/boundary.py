"""Where to cut a conversation for a summary: pair-safe cut points and their scores.

A cut is only ever made between units (a round is one unit), so every call
stays with its result. Among the cut points that leave a tail within the
budget, the best is chosen by a few rules that make the summary and the tail
read naturally: a cut after a finished turn or before a new user message is
better, one after a long pause is better, one where the topic changes (a
phrase that announces a switch, or a new set of files and tools in play) is
better, one right after an unresolved error is worse (the fix attempt would
be separated from the failure), and one that fills the tail budget well is
better. Summarizing at a change of topic keeps the tail about one thing and
lets the summary close the previous one. A harness's format error is not a
user message that opens a turn: the reply before it ran nothing, and the
loop goes on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .actions import call_actions, failed
from .conversation import Conversation, Item
from .reading import rejects_reply
from .readings import Key

PAUSE_S = 300.0
"""A gap between two items longer than this is a natural break."""
SWITCH_PHRASES = re.compile(
    r"\b(?:now let'?s|let'?s now|next task|next step is|switching to|switch to|moving on|on to the next|"
    r"new task|another task|turning to|now for the)\b",
    re.IGNORECASE,
)
"""Words with which a user or an agent announces that the work moves to something else."""
SWITCH_SCAN_CHARS = 400
"""Only the opening of a message is read for a switch phrase: it is announced first, not buried."""
FOCUS_TURNS = 4
"""Assistant turns on each side of a cut compared for the files and tools they use."""
FOCUS_SHIFT_MAX_OVERLAP = 0.2
"""The files and tools in play before and after a cut sharing at most this share of them: a new focus."""


@dataclass(frozen=True)
class Cut:
    """The first index of the kept tail, its score, the tail's size and why it scored so."""

    index: int
    score: float
    tail_tokens: int
    reasons: tuple[str, ...]


_FOCUS: Key[frozenset[str]] = Key("focus")


def focus(item: Item) -> frozenset[str]:
    """The files an assistant turn's calls touch and the tools (or programs) they run, once per item object."""
    found = item.readings.get(_FOCUS)
    if found is None:
        names: set[str] = set()
        for call, action in zip(item.tool_calls, call_actions(item)):
            names.update(action.paths)
            names.add(f"tool:{action.signature[0] if action.signature else call.name}")
        found = item.readings.set(_FOCUS, frozenset(names))
    return found


def focus_shift(items: Sequence[Item], index: int) -> bool:
    """Whether the files and tools of the turns after ``index`` are new, against those of the turns before it."""

    def gather(indices: range) -> set[str]:
        seen: set[str] = set()
        turns = 0
        for i in indices:
            if items[i].role == "assistant" and items[i].tool_calls:
                seen |= focus(items[i])
                turns += 1
                if turns == FOCUS_TURNS:
                    break
        return seen

    before, after = gather(range(index - 1, -1, -1)), gather(range(index, len(items)))
    if not before or not after:
        return False
    return len(before & after) <= FOCUS_SHIFT_MAX_OVERLAP * len(before | after)


def announces_switch(item: Item) -> bool:
    """A user or assistant message that opens with a switch of topic ("now let's", "next task", ...)."""
    return item.role in ("user", "assistant") and SWITCH_PHRASES.search(item.text[:SWITCH_SCAN_CHARS]) is not None


def _score(items: list[Item], index: int, tail_tokens: int, target_tokens: int) -> tuple[float, tuple[str, ...]]:
    before, after = items[index - 1], items[index]
    score = 2.0 * (1.0 - abs(target_tokens - tail_tokens) / max(target_tokens, 1))
    reasons = [f"tail {tail_tokens:,} of {target_tokens:,} tokens"]
    rejected = rejects_reply(after)  # a harness's format error: the reply ran nothing, the loop goes on
    if before.role == "assistant" and not before.tool_calls and not rejected:
        score += 1.0
        reasons.append("after assistant text")
    elif before.role == "tool":
        score += 0.5
        reasons.append("after a completed tool round")
    if after.role == "user" and not rejected:
        score += 1.0
        reasons.append("before a user message")
    if announces_switch(after):
        score += 1.0
        reasons.append("the topic switches")
    if focus_shift(items, index):
        score += 0.75
        reasons.append("new files and tools in play")
    if before.timestamp is not None and after.timestamp is not None and after.timestamp - before.timestamp > PAUSE_S:
        score += 0.5
        reasons.append("after a pause")
    result = before.tool_result
    if result is not None and failed(result.text, result.is_error):
        score -= 2.0
        reasons.append("right after an error")
    return score, tuple(reasons)


def choose_cut(
    conversation: Conversation,
    *,
    start: int,
    tail_budget_tokens: int,
    count_item: Callable[[Item], int],
    min_index: int | None = None,
    max_tail_items: int | None = None,
) -> Cut | None:
    """The best cut that summarizes at least one item after ``start`` and keeps at least the last unit.

    Candidates are unit starts after ``start`` (and at or after ``min_index``,
    so a summary covers enough to be worth it) whose tail fits
    ``tail_budget_tokens`` and ``max_tail_items``; the last unit is always a
    candidate, even when it alone is over budget (the most recent output is
    never summarized away). ``None`` when there is nothing to summarize.
    """
    items = list(conversation.items)
    units = conversation.units()
    if not units:
        return None
    lowest = max(start + 1, min_index or 0)
    tails: list[tuple[int, int]] = []  # (unit start, tokens from there to the end)
    tokens = 0
    for unit_start, unit_end in reversed(units):
        tokens += sum(count_item(items[i]) for i in range(unit_start, unit_end))
        if unit_start < lowest:
            break
        too_many = max_tail_items is not None and len(items) - unit_start > max_tail_items
        if tails and (tokens > tail_budget_tokens or too_many):
            break
        tails.append((unit_start, tokens))
    best: Cut | None = None
    for index, tail_tokens in tails:
        score, reasons = _score(items, index, tail_tokens, tail_budget_tokens)
        if best is None or score > best.score:
            best = Cut(index, score, tail_tokens, reasons)
    return best
