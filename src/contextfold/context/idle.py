"""Idle compaction: a session left idle compacts just before its prompt cache expires, when that pays.

A summary written while the cache is warm reads the prompt at a tenth of the
input price; once the cache has expired, the next request writes the whole
prompt again at more than the input price. Claude Code compacts an idle
session just before its cache expires for that reason. Here, with
``Policy.idle_compaction`` (off by default, in ``contextfold chat`` too:
on the recorded sessions it costs less and loses recall, see the README;
``chat --idle-compaction`` turns it on), :meth:`IdleWatch.due_at` says when: ``Policy.cache_ttl_s``
after the last request, less ``Policy.idle_compaction_margin_s`` (the
lifetime the provider reported for its last cache write when it says, as
Anthropic's usage does, unless the caller chose one: :func:`lifetime_in_effect`;
:func:`cache_lifetime_s` reads a model's default from the price table). At that time the loop calls
:meth:`~contextfold.Context.compact_if_idle`, which compacts only when the
agent's turn is over and :func:`~contextfold.pipeline.economics.idle_verdict`
says a warm summary now costs less than the cold prompt it spares (the
prompt the next request would send otherwise: the old outputs cleared,
which a cold cache makes free). Each idle
period is decided once, whatever the answer; the decision is an ``idle`` event
with its figures. Nothing here reads a wall clock: the Context's ``clock`` is
the time (a replay's is the recording's).
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..conversation import Conversation, reproducible_ids
from ..errors import UnknownModel
from ..events import Event
from ..limits import model_prices
from ..pipeline.base import Budget, Policy
from ..pipeline.economics import idle_verdict, re_read_usd
from ..pipeline.running import run_stages
from ..pipeline.stages.summarize import plan
from ..pipeline.step import FORCED, Occasion, Steward, ends_at_boundary
from ..summarizers.prompts import STRUCTURED, riding_instruction

STAGE = "idle"
IDLE = Occasion(edits=False, summary=FORCED, automatic=True, sends=False)
"""An idle compaction: a summary whatever the trigger (the economics decided it first), nothing sent."""
CACHE_LIFETIME_S = {"5m": 300.0, "1h": 3_600.0, "in_memory": 300.0, "24h": 86_400.0}
"""How long each of the price table's cache lifetimes keeps a prefix (OpenAI's in-memory cache: at least 5 minutes)."""


DEFAULT_CACHE_TTL_S = Policy().cache_ttl_s
"""``Policy.cache_ttl_s`` when the caller left it: a guess, which the lifetime a provider reports replaces."""


def lifetime_in_effect(policy: Policy, observed_s: float | None) -> Policy:
    """``policy`` with the cache lifetime the provider reported for its last write (``observed_s``,
    :attr:`~contextfold.usage.Usage.cache_write_ttl_s`: a session that writes 1-hour entries is not cold after 5
    minutes), unless the caller chose one: a ``cache_ttl_s`` other than the default is a choice, and stays."""
    if observed_s is None or observed_s == policy.cache_ttl_s or policy.cache_ttl_s != DEFAULT_CACHE_TTL_S:
        return policy
    return replace(policy, cache_ttl_s=observed_s)


def cache_lifetime_s(model: str | None) -> float | None:
    """How long ``model``'s prompt cache keeps a prefix by default, from the price table (``None``: not known)."""
    try:
        return CACHE_LIFETIME_S.get(model_prices(model).default_ttl) if model else None
    except UnknownModel:
        return None


class IdleWatch:
    """When a session's idle compaction is due, and whether it pays (see the module docstring)."""

    def __init__(self) -> None:
        self._decided_after: float | None = None  # the request whose idle period was decided
        self._active: list[int] = []  # requests sent between idle periods so far
        self._requests_then = 0  # requests sent when the last idle period was decided

    def due_at(self, policy: Policy, last_request_s: float | None) -> float | None:
        """When the idle compaction after the request sent at ``last_request_s`` is due (``None``: off, no request
        yet, or decided already)."""
        if not policy.idle_compaction or last_request_s is None or last_request_s == self._decided_after:
            return None
        return last_request_s + max(policy.cache_ttl_s - policy.idle_compaction_margin_s, 0.0)

    def decide(self, view: Conversation, budget: Budget, steward: Steward, last_request_s: float | None,
               now_s: float | None) -> Event | None:
        """At ``now_s``: ``None`` when no idle compaction is due now; else the decision, an event whose action is
        ``compacting`` (it pays) or ``deferred`` (why not). Either way this idle period is decided."""
        due = self.due_at(budget.policy, last_request_s)
        if due is None or now_s is None or now_s < due:
            return None
        self._decided_after = last_request_s
        self._active.append(budget.requests_sent - self._requests_then)
        self._requests_then = budget.requests_sent
        if now_s - (last_request_s or now_s) > budget.policy.cache_ttl_s:
            return Event(STAGE, "deferred", detail="the cache has expired already: the next request compacts if due")
        if not ends_at_boundary(view):
            return Event(STAGE, "deferred", detail="the agent's turn is not over (a call waits for its result)")
        after = _summarized(view, budget, steward)
        if after is None:
            return Event(STAGE, "deferred", detail="nothing to summarize yet")
        # the next request finds the cache cold (any saving pays) and opens the person's next turn (nothing of
        # this one is spared as current)
        nothing_current = replace(budget.policy, spare_current_turn=False)
        cold, _ = run_stages(view, replace(budget, idle_s=math.inf, policy=nothing_current), steward.pipeline.batch)
        active = max(1, round(sum(self._active) / len(self._active)))  # what a summary now serves, on average
        verdict = idle_verdict(budget.count(view), budget.count(cold), *after, budget, active,
                               _instruction_tokens(budget, after[1]))
        return Event(STAGE, "compacting" if verdict.pays else "deferred", tokens_before=budget.count(view),
                     tokens_after=verdict.rewritten_tokens, detail=f"idle before the cache expires: {verdict.describe()}")


def _summarized(view: Conversation, budget: Budget, steward: Steward) -> tuple[int, int, float] | None:
    """What the summary would leave: the request's tokens, the summary's, and the price of re-reading what it drops
    (:func:`~contextfold.pipeline.economics.re_read_usd`); ``None`` when there is nothing to summarize.

    An offline summarizer's summary takes milliseconds: it is made, and measured (what it restores included). A
    model's would cost the call being decided on: its plan is measured instead, the summary at its target."""
    if getattr(budget.summarizer, "offline", False):
        with reproducible_ids("idle compaction trial"):  # its items are thrown away: a replay's own ids stay as they were
            after, events, _ = steward.make_summary(view, budget, IDLE, budget.trigger_tokens)
        if not any(event.stage == "summarize" and event.action == "summarized" for event in events):
            return None
        kept = {id(item) for item in view.items}
        written = sum(budget.count_item(item) for item in after.items if id(item) not in kept and item.provenance.summary)
        return budget.count(after), written, re_read_usd(view, after, budget)
    planned = plan(view, budget)
    if planned is None:
        return None
    span = {id(item) for item in planned.span}
    remaining = view.with_items(item for item in view.items if id(item) not in span)
    return budget.count(remaining) + planned.target, planned.target, re_read_usd(view, remaining, budget)


def _instruction_tokens(budget: Budget, summary_tokens: int) -> int:
    """The summarizer's instruction after the cached prompt, as a model summarizer riding the cache words it."""
    count = budget.count_text
    instruction = riding_instruction(STRUCTURED, summary_tokens, None, 1, 0, history_tools=True)
    return count(instruction) if count is not None else 0
