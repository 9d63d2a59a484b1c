"""compression: how much of its span a summary may take, from what the span holds.

A fixed share (a seventh) gives a span of directory listings and repeated
test output the same room as one full of edits and tracebacks. Here the
share follows the content: tokens of user messages, edits and failed calls
are *dense* (each line may be needed again), tokens of listings, searches
and outputs read again are *sparse*; everything else counts in between. The
share runs from :data:`MIN_SHARE` for a span of pure chatter to
:data:`MAX_SHARE` for one of pure edits and errors. What the summary leaves
out of the dense part, the survival check (:mod:`.stages.survival`) puts back in
the lines it stood in.

However sparse the span, what the agent continues from is kept whatever
the share: the extractive summary never drops the last error with its
frame, the test line or a changed path (its fixed parts), and the summarize
stage gives every summary at least ``MIN_SUMMARY_TOKENS``. A larger floor
(15 % of the room) bought nothing on the corpus replays: the lines the
agent goes on to use come back through the survival note, and a larger
summary made the next compaction come sooner.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..actions import EDIT, SEARCH, call_actions, failed, result_action
from ..conversation import Item
from ..readings import Key

MIN_SHARE = 0.015
MAX_SHARE = 0.05
"""Every token of a summary is paid three times: written at the output price, then read on every request
until the next compaction, then read again by the summarizer that folds it in. What the agent goes on to use
survives by reference (:mod:`.stages.survival`) rather than by length: on the corpus replays, summaries cut from
2-8 % of their span to 1.5-5 % kept the same forward-reference recall for about 1 % less cost at 32k."""
DENSE, MIDDLE, SPARSE = 1.0, 0.4, 0.0


_DENSITY: Key[float] = Key("density")


def density(item: Item) -> float:
    """How much of ``item`` a summary should keep, from 0 (listings, searches) to 1 (user words, edits, errors).

    Kept in ``item.readings``: every plan of a summary weighs its whole span (several times when the tail is
    chosen), and telling a failed output needs a search of its text."""
    known = item.readings.get(_DENSITY)
    if known is None:
        known = item.readings.set(_DENSITY, _density(item))
    return known


def _density(item: Item) -> float:
    if item.role == "user":
        return DENSE
    if item.role == "assistant":
        return DENSE if any(a.kind == EDIT for a in call_actions(item)) else MIDDLE
    result = item.tool_result
    if result is None:
        return MIDDLE
    action = result_action(item)
    kind = action.kind if action else None
    if failed(result.text, result.is_error, kind):
        return DENSE
    return SPARSE if kind == SEARCH else MIDDLE


def summary_share(span: Sequence[Item], count_item: Callable[[Item], int]) -> float:
    """The share of the span's tokens its summary may take (between :data:`MIN_SHARE` and :data:`MAX_SHARE`)."""
    total = weighted = 0.0
    for item in span:
        tokens = count_item(item)
        total += tokens
        weighted += tokens * density(item)
    dense = weighted / total if total else 0.0
    return MIN_SHARE + (MAX_SHARE - MIN_SHARE) * dense


def summary_target(span: Sequence[Item], count_item: Callable[[Item], int], room: int) -> int:
    """The tokens a summary of ``span`` may take: its share of the span, at most ``room``; the summarizer writes
    less when there is less to carry."""
    span_tokens = sum(count_item(item) for item in span)
    return min(room, int(span_tokens * summary_share(span, count_item)))
