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

Two more costs sit beside the rewrite. A summary is priced as the model
call that would write it (the request it replaces read as new input, the
summary written at the output price) when the summarizer is a model, and by
default for any summarizer (``Policy.price_summaries``), so the schedule is
the same whichever writes them. And forgetting is priced: an item removed
while the agent is still using what it holds (:mod:`.importance`: references
in it that the compacted request no longer carries) is likely to be read
again, a tool call and its output, which costs its tokens at the write
price. Where the history fits and is still in use, that keeps it. A summary
made below the trigger is charged besides for the far context it drops, used
now or not (``Policy.economic_summary_rereads``): the agent goes on to use
context no reference points at yet (the corpus's strict recall counts it), a
summary keeps only a fraction of it, and over the trigger the window forces
the loss anyway, so only below it is the loss a choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..conversation import Conversation, Item
from ..events import Event
from .base import Budget
from .importance import References, item_tokens

LOSS_WEIGHT_FOR_CERTAIN = 4.0
"""Lost references of this summed weight (say, a path used by four recent turns) make a re-read certain."""
RE_READ_CALL_TOKENS = 60
"""Output tokens of the call that reads something again."""


@dataclass(frozen=True)
class Verdict:
    """The decision and its figures (tokens, and USD over the horizon)."""

    pays: bool
    saved_tokens: int
    rewritten_tokens: int
    horizon_requests: int
    benefit_usd: float
    cost_usd: float
    summary_call_usd: float = 0.0
    re_read_usd: float = 0.0
    forgetting_usd: float = 0.0

    def describe(self) -> str:
        extra = f", a summarizer call (${self.summary_call_usd:.4f})" if self.summary_call_usd else ""
        extra += f", expected re-reads (${self.re_read_usd:.4f})" if self.re_read_usd else ""
        extra += f", the far context it drops (${self.forgetting_usd:.4f})" if self.forgetting_usd else ""
        return (
            f"saves {self.saved_tokens:,} tokens/request over ~{self.horizon_requests} requests "
            f"(${self.benefit_usd:.4f}) against rewriting {self.rewritten_tokens:,} tokens{extra} (${self.cost_usd:.4f} in all)"
        )


def first_change(before: Conversation, after: Conversation) -> int:
    """Index of the first item that differs (the cached prefix ends there)."""
    for index, (old, new) in enumerate(zip(before.items, after.items)):
        if old is not new and old != new:
            return index
    return min(len(before), len(after))


def verdict(before: Conversation, after: Conversation, budget: Budget) -> Verdict:
    """Whether replacing ``before`` by ``after`` pays."""
    prices = budget.policy.prices_in_effect
    saved = budget.count(before) - budget.count(after)
    start = first_change(before, after)
    rewritten = sum(budget.count_item(item) for item in after.items[start:])
    horizon = budget.horizon_requests
    until_summary = budget.requests_until_trigger(budget.count(after))
    if until_summary is not None:
        horizon = max(1, min(horizon, round(until_summary)))
    benefit = saved * prices.cache_read_per_mtok * horizon / 1e6
    cost = 0.0 if budget.cache_cold else rewritten * (prices.cache_write_per_mtok - prices.cache_read_per_mtok) / 1e6
    call = summary_call_usd(before, after, budget)
    re_read = re_read_usd(before, after, budget)
    forgetting = forgetting_usd(before, after, budget)
    cost += call + re_read + forgetting
    return Verdict(saved > 0 and benefit > cost, saved, rewritten, horizon, benefit, cost, call, re_read, forgetting)


def _new_items(before: Conversation, after: Conversation) -> list[Item]:
    kept = {id(item) for item in before.items}
    return [item for item in after.items if id(item) not in kept]


def summaries_priced(budget: Budget) -> bool:
    """Whether a summary is priced as the model call that would write it (a model writes it, or the policy says so)."""
    return budget.policy.price_summaries or not getattr(budget.summarizer, "offline", False)


def summary_call_usd(before: Conversation, after: Conversation, budget: Budget) -> float:
    """What a model would charge to write the summaries ``after`` adds: the request read, the summary written."""
    if not summaries_priced(budget):
        return 0.0
    written = sum(budget.count_item(item) for item in _new_items(before, after) if item.provenance.summary)
    if not written:
        return 0.0
    prices = budget.policy.prices_in_effect
    return (budget.count(before) * prices.cache_write_per_mtok + written * prices.output_per_mtok) / 1e6


def forgetting_usd(before: Conversation, after: Conversation, budget: Budget) -> float:
    """What a summary ``after`` adds loses: every token of the items it replaces, read again
    ``Policy.economic_summary_rereads`` times (written to the cache each time). 0 for an edit that adds no summary
    (clearing keeps a preview and the call, and the agent can read the output again from the path it names)."""
    rereads = budget.policy.economic_summary_rereads
    if not rereads or not any(item.provenance.summary for item in _new_items(before, after)):
        return 0.0
    remaining = {id(item) for item in after.items}
    dropped = sum(budget.count_item(item) for item in before.items if id(item) not in remaining)
    return rereads * dropped * budget.policy.prices_in_effect.cache_write_per_mtok / 1e6


def idle_verdict(tokens: int, cold_tokens: int, after_tokens: int, summary_tokens: int, re_read: float,
                 budget: Budget, active_requests: int | None = None, instruction_tokens: int = 0) -> Verdict:
    """Whether a summary written now, from a warm cache, pays against the request sent after the cache expired.

    The session is idle and its cache about to expire: the next request, whenever it comes, writes its whole
    prompt cold either way; without a summary that is ``cold_tokens`` (the request of ``tokens`` with the edits a
    cold cache makes pay). A summary now reads the ``tokens`` from the cache, writes the summarizer's
    ``instruction_tokens`` after them and answers ``summary_tokens`` (as a model riding the cache would); the
    next request then writes ``after_tokens``, and the requests after it read that many fewer, over the horizon
    (up to the next summary, as in :func:`verdict`, and at most ``active_requests``: the requests the session
    sends between idle periods, after which the cache is cold again and the edits a cold cache makes pay catch
    up). What it drops while still in use is ``re_read`` (:func:`re_read_usd`).
    """
    prices = budget.policy.prices_in_effect
    saved = cold_tokens - after_tokens
    horizon = budget.horizon_requests if active_requests is None else min(budget.horizon_requests, active_requests)
    until_summary = budget.requests_until_trigger(after_tokens)
    if until_summary is not None:
        horizon = max(1, min(horizon, round(until_summary)))
    benefit = saved * (prices.cache_write_per_mtok + prices.cache_read_per_mtok * (horizon - 1)) / 1e6
    call = ((tokens * prices.cache_read_per_mtok + instruction_tokens * prices.cache_write_per_mtok
             + summary_tokens * prices.output_per_mtok) / 1e6 if summaries_priced(budget) else 0.0)
    return Verdict(saved > 0 and benefit > call + re_read, saved, after_tokens, horizon, benefit, call + re_read,
                   call, re_read)


def re_read_usd(before: Conversation, after: Conversation, budget: Budget) -> float:
    """The expected price of reading again what ``after`` dropped while the agent still uses it.

    Each removed or shortened item is needed again with a likelihood that
    grows with the weight of the references it held that ``after`` no longer
    carries (:data:`LOSS_WEIGHT_FOR_CERTAIN` makes it certain); a re-read costs
    its tokens written to the cache again and a call of :data:`RE_READ_CALL_TOKENS`.
    """
    remaining = {id(item) for item in after.items}
    removed = [item for item in before.items if id(item) not in remaining]
    if not removed:
        return 0.0
    refs = References.of(before.items)
    present: set[str] = set().union(*(item_tokens(item) for item in after.items))
    prices = budget.policy.prices_in_effect
    total = 0.0
    for item in removed:
        lost = sum(refs.weight(t) for t in item_tokens(item) if t not in present)
        if lost <= 0:
            continue
        likelihood = min(1.0, lost / LOSS_WEIGHT_FOR_CERTAIN)
        tokens = budget.count_item(item)
        total += likelihood * (tokens * prices.cache_write_per_mtok + RE_READ_CALL_TOKENS * prices.output_per_mtok) / 1e6
    return total



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
