"""When does changing the history pay for itself?

With prompt caching, the unchanged prefix of a request is read at a tenth of
the input price, and whatever follows the first changed item is written again
at 1.25 times it. An edit that saves ``saved`` tokens per request therefore
pays back ``saved * read_price`` on each later request, and costs, once,
rewriting everything after the first change at ``write_price - read_price``
more than reading it from the cache would have. It pays when, over the
requests still to come, the first outweighs the second. Those requests are
counted up to the next summary at most (it would remove the same tokens
anyway). When the cache has gone cold the whole prompt is written again, so
any saving pays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..conversation import Conversation
from .base import Budget, Event


@dataclass(frozen=True)
class Verdict:
    """The decision and its figures (tokens, and USD over the horizon)."""

    pays: bool
    saved_tokens: int
    rewritten_tokens: int
    horizon_requests: int
    benefit_usd: float
    cost_usd: float

    def describe(self) -> str:
        return (
            f"saves {self.saved_tokens:,} tokens/request over ~{self.horizon_requests} requests "
            f"(${self.benefit_usd:.4f}) against rewriting {self.rewritten_tokens:,} tokens (${self.cost_usd:.4f})"
        )


def first_change(before: Conversation, after: Conversation) -> int:
    """Index of the first item that differs (the cached prefix ends there)."""
    for index, (old, new) in enumerate(zip(before.items, after.items)):
        if old is not new and old != new:
            return index
    return min(len(before), len(after))


def verdict(before: Conversation, after: Conversation, budget: Budget) -> Verdict:
    """Whether replacing ``before`` by ``after`` pays."""
    prices = budget.policy.prices
    saved = budget.count(before) - budget.count(after)
    start = first_change(before, after)
    rewritten = sum(budget.count_item(item) for item in after.items[start:])
    horizon = budget.horizon_requests
    until_summary = budget.requests_until_trigger(budget.count(after))
    if until_summary is not None:
        horizon = max(1, min(horizon, round(until_summary)))
    benefit = saved * prices.cache_read_per_mtok * horizon / 1e6
    cost = 0.0 if budget.cache_cold else rewritten * (prices.cache_write_per_mtok - prices.cache_read_per_mtok) / 1e6
    return Verdict(saved > 0 and benefit > cost, saved, rewritten, horizon, benefit, cost)


def choose(
    before: Conversation, candidates: Sequence[tuple[Conversation, list[Event]]], budget: Budget
) -> tuple[Conversation, list[Event]]:
    """The candidate that saves the most over the requests to come, if it pays; else ``before``.

    The events are the chosen candidate's and an ``economics`` event with the
    figures, or only that event (``deferred``) when nothing pays.
    """
    if not candidates:
        return before, []
    priced = [(after, produced, verdict(before, after, budget)) for after, produced in candidates]
    chosen, produced, decision = max(priced, key=lambda option: option[2].benefit_usd - option[2].cost_usd)
    event = Event("economics", "applied" if decision.pays else "deferred", tokens_before=budget.count(before),
                  tokens_after=budget.count(chosen), detail=decision.describe())
    if not decision.pays:  # over the trigger, the summary that follows does better than an unpaid batch
        return before, [event]
    return chosen, [*produced, event]
