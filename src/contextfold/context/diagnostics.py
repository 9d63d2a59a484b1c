"""Cache misses the provider reports, beside the miss contextfold predicted for the same request.

With ``Context(cache_diagnostics=True)`` every request names the previous
reply (Anthropic's ``diagnostics.previous_message_id``, OpenAI's
``prompt_cache_options.comparison_response_id``) and the provider says whether,
and why, this request missed that one's cached prefix, and how many tokens it
missed. contextfold knows what it changed between the two requests: the
tokens of the earlier request after the first item the later one does not
repeat (all of it when the system prompt or tools changed) are the miss it
predicts. Each reported miss becomes an event holding both figures, and
:meth:`Context.stats <contextfold.context.Context.stats>` sums them, so a
miss contextfold did not cause (or did not see coming) stands out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..adapters.base import CacheMiss
from ..conversation import Conversation
from ..events import Event

STAGE = "cache"
ACTION = "miss_reported"


def predicted_miss(before: Conversation | None, now: Conversation, count: Callable[[Conversation], int]) -> int:
    """The tokens of ``before`` (the earlier request) that ``now`` does not repeat from its start."""
    if before is None:
        return 0
    if before.header != now.header:
        return count(before)
    shared = 0
    for old, new in zip(before.items, now.items):
        if old is not new and old != new:
            break
        shared += 1
    return count(before) - count(before.with_items(before.items[:shared]))


def miss_event(miss: CacheMiss, before: Conversation | None, now: Conversation,
               count: Callable[[Conversation], int]) -> Event:
    """The event of a miss the provider reported for ``now``, compared with ``before``, with contextfold's prediction."""
    predicted = predicted_miss(before, now, count)
    reported = "undiagnosed" if miss.missed_tokens is None else f"{miss.missed_tokens:,} tokens"
    data = {"reason": miss.reason, "reported_missed_tokens": miss.missed_tokens, "predicted_missed_tokens": predicted}
    return Event(STAGE, ACTION, detail=f"the provider reports a cache miss ({miss.reason}, {reported}); "
                                       f"contextfold predicted {predicted:,} tokens", data=data)


def totals(events: Iterable[Event]) -> Mapping[str, Any]:
    """Reported misses, and the missed tokens reported against those predicted for the same requests."""
    misses = [e for e in events if e.stage == STAGE and e.action == ACTION]
    diagnosed = [e for e in misses if e.data.get("reported_missed_tokens") is not None]
    return {"reported": len(misses),
            "reported_missed_tokens": sum(int(e.data["reported_missed_tokens"]) for e in diagnosed),
            "predicted_missed_tokens": sum(int(e.data["predicted_missed_tokens"]) for e in diagnosed)}
