"""The one guarded path every entry point of a Context runs: fold in, land, decide, check, commit, count.

``prepare``, ``at_turn_boundary``, ``compact``, ``retry_request`` and
``settle`` are :class:`~contextfold.pipeline.step.Occasion` s of
:meth:`Step.run`: what other writers appended to the stored session is folded
in (:meth:`Journal.follow <.journal.Journal.follow>`), a finished background
summary is put in (:meth:`.background.Background.landing`), the pipeline
decides (:meth:`Steward.run <contextfold.pipeline.step.Steward.run>`, guarded:
a fault keeps the view the cheap stages left), the request is checked
(:mod:`contextfold.pipeline.invariants`), the view is committed (checkpointed
in the store against the view it was decided from), the request is counted,
and the events go out.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..adapters.base import CacheMiss
from ..conversation import Conversation, Summary
from ..errors import SummaryInProgress, ViewConflict
from ..events import Event
from ..pipeline import asked as asked_compaction
from ..pipeline.base import Budget, Policy
from ..pipeline.invariants import InvariantCheck
from ..pipeline.step import DUE, RETRY, Occasion
from ..usage import Usage
from . import diagnostics
from .background import Background, Job
from .idle import IDLE, IdleWatch, lifetime_in_effect
from .parts import Parts
from .sending import Sending

logger = logging.getLogger("contextfold.context")

MAX_VIEW_CONFLICTS = 8
"""How many times in a row a view change that another writer got in ahead of is re-decided before it is raised."""


class Step:
    """One session's step, and what it remembers between steps: the requests sent, the last one, when."""

    def __init__(self, parts: Parts, background: Background, sending: Sending) -> None:
        self._parts = parts
        self._background = background
        self._sending = sending
        self._check = InvariantCheck()
        self.interrupted: frozenset[str] = frozenset()  # calls open when the session was resumed
        self.requests = 0
        self.last_sent: Conversation | None = None
        self.sent_before: Conversation | None = None  # the request before the last: what a diagnosis compares with
        self.last_request_s: float | None = None
        self.reserved_tokens = 0  # the estimated size of what is attached to the last request (its reminders)
        self.asked = asked_compaction.Asked()  # a compaction the agent asked for (compact_context), until the next request
        self.idle = IdleWatch()  # when an idle session compacts before its cache expires (Policy.idle_compaction)
        self.observed_ttl_s: float | None = None  # the cache lifetime the provider last reported a write for

    def request(self, occasion: Occasion, provider: str | None, reminders: Sequence[str],
                first: Event | None = None) -> dict[str, Any]:
        """The request to send after ``occasion``, ``reminders`` attached (their room kept free of the window)."""
        texts, self.reserved_tokens = self._sending.reminders(reminders)
        view = self.run(occasion, first=first, reserve_tokens=self.reserved_tokens)[0]
        return self._sending.request(view, provider, texts)

    def run(self, occasion: Occasion, *, first: Event | None = None,
            **budget: Any) -> tuple[Conversation, list[Event]]:
        """The view this occasion leaves, and its events.

        A view change another writer got in ahead of is refused by the store
        (nothing written, nothing counted or emitted yet): the session is read
        again and the step decides afresh, up to :data:`MAX_VIEW_CONFLICTS`
        times, each refusal an event; then the conflict is raised. Above the
        hard level, the step waits for the background summary once (bounded by
        the summarizer's deadline), then decides afresh.
        """
        occasion, first, budget = self.asked.taken(occasion, first, budget)
        try:
            while True:
                decided = self._decide_and_commit(occasion, first, budget)
                if not isinstance(decided, Job):
                    return decided
                self._background.waited(decided, decided.wait(self._background.wait_bound()))
        finally:
            self._parts.flight.end_step()  # the summary lease, if this step took it (a background summary keeps it)
            self._background.end_step()

    def _decide_and_commit(self, occasion: Occasion, first: Event | None,
                           budget: dict[str, Any]) -> tuple[Conversation, list[Event]] | Job:
        """:meth:`run`'s loop: decide on the session as read now, until the store takes the view; or the
        background job to wait for, before anything is committed, when the view is above the hard level.

        A summary another worker was making (its lease, see :mod:`.single_flight`)
        is waited for once, then the session is read again and the step decides afresh.
        """
        parts, background = self._parts, self._background
        elsewhere_seen = False
        for attempt in range(MAX_VIEW_CONFLICTS + 1):
            parts.journal.follow(parts.timeline)
            base, landing, new_from = background.landing(occasion)
            defer = background.defer if occasion.summary == DUE and background.enabled else None
            # While a summary runs in the background no batch edit is priced: the summary rewrites the prefix
            # anyway, and an edit of its span would only get it discarded.
            deciding = replace(occasion, edits=False) if background.running else occasion
            view, events = parts.steward.run(base, self.budget(new_from=new_from, **budget), deciding, defer,
                                             parts.consent)
            if background.wait_for is not None:  # nothing decided here is kept: the step decides afresh after waiting
                return self._waiting(background.wait_for)
            if view is not parts.timeline.view:
                try:  # a view change holds the lease too, so it cannot overtake another worker's summary
                    parts.flight.take()
                except SummaryInProgress as busy:
                    if elsewhere_seen and occasion is not RETRY:  # waited once: keep the view, change it next step
                        view, events, landing = parts.timeline.view, [e for e in events if not e.items], []
                    events.append(Event("summarize", "elsewhere", detail=str(busy)))
            if not elsewhere_seen and any(e.stage == "summarize" and e.action == "elsewhere" for e in events):
                elsewhere_seen = True
                parts.emit([e for e in events if e.stage == "summarize" and e.action == "elsewhere"])
                continue
            events = [*([first] if first is not None else []), *landing, *events]
            if occasion.sends:
                view, repaired = self._check.ready(view, self.interrupted)
                events.extend(repaired)
            try:
                self.commit(view)
            except ViewConflict as conflict:
                parts.emit([Event("store", "conflict", detail=str(conflict))])
                if attempt == MAX_VIEW_CONFLICTS:
                    raise
                continue
            if landing:
                background.finish()
            if occasion.sends:
                self._count_request(view, changed=any(e.items for e in events))
            parts.record(events)  # StoreUnavailable if the view or an event could not be made durable
            return view, events
        raise AssertionError("unreachable")

    def record_usage(self, usage: Usage) -> list[Event]:
        """What the provider reported for the last request anchors the count (of the view: the reminders sent
        with it are not part of it); a fall in cached tokens is a cache break naming the stage that caused it.
        The lifetime it reports for a cache write is the session's from now on (:func:`.idle.lifetime_in_effect`)."""
        if usage.cache_write_ttl_s is not None:
            self.observed_ttl_s = usage.cache_write_ttl_s
        if self.last_sent is not None:
            view_tokens = max(usage.prompt_tokens - self.reserved_tokens, 1) if usage.prompt_tokens > 0 else 0
            self._parts.counter.record_usage(replace(usage, prompt_tokens=view_tokens), self.last_sent)
        cache_break = self._parts.steward.cache_break(usage)
        return [cache_break] if cache_break is not None else []

    def stats(self, events: list[Event]) -> dict[str, Any]:
        """Figures for a status line or a report, ``events`` being the session's so far."""
        parts, view = self._parts, self._parts.timeline.view
        tokens = parts.counter.count(view)
        return {"session_id": parts.session_id, "requests": self.requests,
                "items_in_history": len(parts.timeline.history), "items_in_view": len(view), "tokens": tokens,
                "window_tokens": parts.window_tokens, "trigger_tokens": parts.trigger_tokens,
                "utilization": tokens / parts.window_tokens,
                "summaries": sum(1 for item in view if any(isinstance(b, Summary) for b in item.blocks)),
                "events": dict(Counter(f"{e.stage}:{e.action}" for e in events)),
                "tokens_saved": sum(max(e.saved_tokens, 0) for e in events if e.items),
                "cache_misses": dict(diagnostics.totals(events)), "consecutive_failures": parts.steward.failures,
                "breaker_open": parts.steward.breaker_open,
                "last_stage": next((e.stage for e in reversed(events) if e.items), None)}

    def cache_miss(self, miss: CacheMiss) -> Event:
        """The provider's report of a cache miss on the last request, beside the miss predicted from what changed
        since the request before it (:mod:`.diagnostics`)."""
        assert self.last_sent is not None
        return diagnostics.miss_event(miss, self.sent_before, self.last_sent, self._parts.counter.count)

    def resumed(self) -> None:
        """Note the calls of the resumed history without a result: the process that ran them is gone (a crash
        between the model's reply and its tools' results, or a transcript written before batches were atomic).
        Unless results for them are added, the next request answers them with an error result."""
        parts = self._parts
        open_calls = frozenset(v.call_id for v in parts.timeline.history.validate()
                               if v.kind == "unanswered_call" and v.call_id)
        if open_calls:
            named = ", ".join(sorted(open_calls))
            logger.warning("session %s resumed with %d tool call(s) never answered (%s); they get an error result "
                           "unless their results are added", parts.session_id, len(open_calls), named)
            parts.emit([Event("transcript", "interrupted",
                              detail=f"tool call(s) without a result when the session was resumed: {named}")])
        self.interrupted = open_calls

    def idle_compaction_at(self) -> float | None:
        """When to call :meth:`compact_if_idle` (see :meth:`Context.idle_compaction_at <contextfold.Context.idle_compaction_at>`)."""
        return self.idle.due_at(self.policy, self.last_request_s)

    @property
    def policy(self) -> Policy:
        """The session's policy, with the cache lifetime its provider reported (:func:`.idle.lifetime_in_effect`)."""
        return lifetime_in_effect(self._parts.policy, self.observed_ttl_s)

    def compact_if_idle(self) -> list[Event]:
        """Compact now if the session has been idle until :meth:`idle_compaction_at` and a summary from the warm
        cache costs less than the cold prompt it spares (:mod:`.idle`); the decision is an ``idle`` event."""
        parts = self._parts
        trial = replace(self.budget(), summarizer=parts.summarizer())  # a trial summary takes no lease: it is not kept
        decision = self.idle.decide(parts.timeline.view, trial, parts.steward, self.last_request_s, parts.clock())
        if decision is None:
            return []
        if decision.action != "compacting":
            parts.record([decision])
            return [decision]
        return self.run(IDLE, first=decision)[1]

    def _waiting(self, job: Job) -> Job:
        parts = self._parts
        bound = self._background.wait_bound()
        logger.info("session %s: the view is above the hard level (%d tokens): waiting for the background "
                    "summary%s", parts.session_id, parts.hard_tokens, f" up to {bound:g} s" if bound else "")
        parts.emit([Event("summarize", "waiting", detail=f"the view is above the hard level "
                          f"({parts.hard_tokens:,} tokens): waiting for the background summary")])
        return job

    def budget(self, new_from: int | None = None, reserve_tokens: int = 0, **overrides: Any) -> Budget:
        """What the stages may spend; ``reserve_tokens`` of the window are kept for what is attached after them."""
        parts = self._parts
        now = parts.clock()
        idle = now - self.last_request_s if now is not None and self.last_request_s is not None else None
        return Budget(
            policy=self.policy,
            window_tokens=parts.window_tokens - reserve_tokens,
            trigger_tokens=parts.trigger_tokens,
            count=parts.counter.count,
            count_item=parts.estimator.item,
            new_from=parts.timeline.processed if new_from is None else new_from,
            requests_sent=self.requests,
            idle_s=idle,
            now_s=now,
            results_dir=parts.results_dir,
            summarizer=parts.flight.guard(parts.summarizer()),
            count_text=parts.estimator.text,
            count_estimated=parts.counter.estimated_tokens,
            growth_tokens_per_request=parts.steward.growth_tokens_per_request,
            original=parts.timeline.original,
            **overrides,
        )

    def _count_request(self, view: Conversation, *, changed: bool) -> None:
        """``view`` goes out now: keep what the usage reported for it will be compared with."""
        self._parts.steward.sent(self._parts.counter.count(view), changed=changed)
        self.sent_before, self.last_sent = self.last_sent, view.snapshot()
        self.requests += 1
        self.last_request_s = self._parts.clock()

    def commit(self, view: Conversation) -> None:
        """``view`` is what is sent from now on; a changed view is checkpointed in the transcript.

        The checkpoint names the one it replaces (``base``); the store refuses it
        with :class:`~contextfold.errors.ViewConflict` if that is no longer the
        current one, and the view stays as it was.
        """
        timeline = self._parts.timeline
        if view is not timeline.view:
            self._parts.journal.commit_view(timeline.entries(view))
        timeline.commit(view)
