"""What one agent step decides, on the one guarded path every entry point of the facade shares.

The facade has four ways in: preparing a request, a turn boundary, a manual
compact, and a retry after the provider said the prompt was too long. Each is
an :class:`Occasion` saying what the pipeline may do then, and all four take
:meth:`Steward.run`: the cheap stages on new items, then, guarded, the
decisions the occasion allows (a batch edit or an economic summary that
pays; a summary that is due, forced, or reactive). A fault in those
decisions (a summarizer bug) keeps the view the cheap stages left, is
recorded as an event and logged, and counts towards the breaker: it never
reaches the agent loop.

The :class:`Steward` is the pipeline's memory between steps: consecutive
failures (the breaker), the request size at the last look (so most steps
skip pricing entirely), how fast requests grow, which stage changed the
prefix last and the cached figure last reported (to name a cache break).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from ..conversation import Conversation
from ..errors import ContextOverflow, RequestOverWindow, SummaryInProgress
from ..events import Event
from ..limits import ModelLimits, compaction_threshold
from ..usage import Usage
from .base import Budget, Policy
from .consent import Consent
from .economics import choose
from .escalate import compact, old_outputs_first, rungs
from .receipts import made
from .running import run_stages
from .stages.fit import fit_window, window_limit
from .tiers import DEFAULT_PIPELINE as DEFAULT_PIPELINE  # where it was first defined: still importable from here
from .tiers import Pipeline as Pipeline

logger = logging.getLogger(__name__)

DUE, FORCED, REACTIVE, NO_SUMMARY = "due", "forced", "reactive", "none"
REACTIVE_TARGET_SHARE = 0.7
"""After "prompt too long", compact to this share of the refused request (or to the trigger, if lower)."""
CACHE_BREAK_DROP = 0.05
"""A fall in cached prompt tokens larger than this share of the previous figure is a cache break."""




@dataclass(frozen=True)
class Occasion:
    """Why the pipeline runs now, which decides what it may do.

    ``edits``: the batch stages and an economic summary are priced (only
    before a request, where the saving is real). ``summary``: ``due`` at a
    turn boundary over the trigger while the breaker is closed; ``forced``
    whatever the size; ``reactive`` down to a share of the refused request,
    breaker or not (the request fails otherwise). ``automatic``: a failure
    counts towards the breaker. ``sends``: the result goes out as a request,
    so the invariants are checked and the step is counted.
    """

    edits: bool
    summary: str
    automatic: bool
    sends: bool


PREPARE = Occasion(edits=True, summary=DUE, automatic=True, sends=True)
TURN_BOUNDARY = Occasion(edits=False, summary=DUE, automatic=True, sends=False)
MANUAL = Occasion(edits=False, summary=FORCED, automatic=False, sends=False)
RETRY = Occasion(edits=False, summary=REACTIVE, automatic=True, sends=True)
SETTLE = Occasion(edits=False, summary=NO_SUMMARY, automatic=True, sends=False)
"""Only what other writers and a finished background summary changed: no stage decides anything new."""

Defer = Callable[[Conversation, Budget, int], bool]
"""Asked when a summary is due (the view, its budget, the target): ``True`` leaves it to the background."""


class Steward:
    """One session's compaction decisions, and what they remember between steps."""

    def __init__(self, policy: Policy, pipeline: Pipeline = DEFAULT_PIPELINE) -> None:
        self.policy = policy
        self.pipeline = pipeline
        self.failures = 0
        self.growth_tokens_per_request: float | None = None  # a decayed mean over requests where nothing fired
        self._evaluated_at_tokens = 0
        self._sent_tokens: int | None = None
        self._last_fired: str | None = None
        self._last_cache_read: int | None = None

    def resumed(self, evaluated_tokens: int) -> None:
        """A resumed session's view was last priced at ``evaluated_tokens``: the first step after the
        resume does not price it all again (that would cost a summarizer run over the whole view)."""
        self._evaluated_at_tokens = evaluated_tokens

    @property
    def breaker_open(self) -> bool:
        """Automatic compaction has failed too often in a row and is off until a manual compact succeeds."""
        return self.failures >= self.policy.max_consecutive_failures

    def trigger_tokens(self, limits: ModelLimits) -> int:
        """Above this many prompt tokens a summary is due (policy override, else the dynamic threshold).

        The dynamic threshold is :func:`~contextfold.limits.compaction_threshold` (room for the reply and a margin)
        but at least ``Policy.trigger_min_fraction`` of the window, as long as the reply's room (at most a quarter
        of the window) stays free. Under about 100k the threshold's fixed margin would compact a 32k window at
        two thirds of it: on the corpus and on held-back sessions a later trigger kept more of what the agent went
        on to use at little more cost (README, "Presets").
        """
        p = self.policy
        if p.trigger_tokens is not None:
            return p.trigger_tokens
        if p.trigger_fraction is not None:
            return int(p.trigger_fraction * limits.context_window)
        window = limits.context_window
        floor = min(int(p.trigger_min_fraction * window), window - min(limits.max_output_tokens, window // 4))
        return max(compaction_threshold(limits), floor, window // 4)

    # ------------------------------------------------------------------ the step
    def run(self, view: Conversation, budget: Budget, occasion: Occasion,
            defer: Defer | None = None, consent: Consent | None = None) -> tuple[Conversation, list[Event]]:
        """The view after this occasion's stages and decisions, and every event they produced, a compaction's
        receipt last (:mod:`.receipts`).

        ``defer`` may take a due summary off this step (see :mod:`contextfold.context.background`);
        ``consent`` is asked before an automatic compaction is kept (:mod:`.consent`).
        """
        view, events = run_stages(view, budget, self.pipeline.cheap)
        held = self._held(view, budget, occasion)
        if held is not None:
            return view, [*events, *held]
        try:
            decided, produced, fits = self._decide(view, budget, occasion, defer)
        except ContextOverflow:
            raise  # nothing left to remove: the caller must know before it sends
        except SummaryInProgress as busy:  # another worker summarizes this session: no failure of ours
            decided, produced, fits = view, [Event("summarize", "elsewhere", detail=str(busy))], None
        except Exception as error:  # noqa: BLE001 - a summarizer bug must not take the agent down: keep the view, count it
            logger.warning("compaction failed, the request goes out uncompacted: %s: %s", type(error).__name__, error)
            decided, produced, fits = view, [Event("summarize", "failed", detail=f"{type(error).__name__}: {error}")], False
        receipt, faults = made(view, decided, produced, budget.count, budget.count_item, occasion.summary)
        events.extend(faults)
        if receipt is not None and consent is not None and occasion.summary != FORCED:
            verdict = consent(receipt, occasion.summary == DUE and budget.count(view) <= window_limit(budget, view))
            events.extend(verdict.events)
            if not verdict.proceed:
                return view, events
        events.extend(produced)
        if fits is not None:
            events.extend(self._account(produced, fits, automatic=occasion.automatic))
        self._note_fired(produced)
        return decided, [*events, receipt.event()] if receipt is not None else events

    def _held(self, view: Conversation, budget: Budget, occasion: Occasion) -> list[Event] | None:
        """``None`` when the policy's mode lets ``occasion`` decide; else what it says instead (nothing is decided).

        ``auto`` lets every occasion decide; ``manual`` only a compaction asked for (:data:`MANUAL`, the agent's
        ``compact_context``), not an automatic one (an idle session's); ``off`` none, a compaction asked for
        included (an event says so). A request that would go out over the window,
        or that the provider refused as too long, is not sent uncompacted: :class:`RequestOverWindow`.
        """
        mode = self.policy.mode
        asked = occasion.summary == FORCED and not occasion.automatic
        if mode == "auto" or occasion.summary == NO_SUMMARY or (mode == "manual" and asked):
            return None
        if occasion.summary == FORCED:
            logger.info("a compaction with Policy(mode=%r): nothing is compacted", mode)
            why = "never compacts" if mode == "off" else "compacts only when asked"
            return [Event("compact", mode, detail=f"Policy(mode={mode!r}) {why}: the view is unchanged")]
        tokens = budget.count(view)
        if occasion.summary == REACTIVE or (occasion.sends and tokens > window_limit(budget, view)):
            raise RequestOverWindow(tokens, budget.window_tokens, mode)
        return []

    def _decide(
        self, view: Conversation, budget: Budget, occasion: Occasion, defer: Defer | None = None
    ) -> tuple[Conversation, list[Event], bool | None]:
        """The decisions that may fail: the view, their events, and whether a summary met its target
        (``None``: none ran, or none could: the span was under the minimum).

        When a summary is due, the old outputs that went whole for their own request are previewed first, and
        alone when that is enough (:func:`~.escalate.old_outputs_first`). A due summary ``defer`` takes to the
        background is decided next: no batch edit is priced then (the summary rewrites the prefix anyway, and
        considers clearing before summarizing on its own).
        """
        due = self._summary_target(view, budget, occasion) if occasion.summary == DUE else None
        if due is not None:
            made = old_outputs_first(view, budget, due)  # the old outputs sent whole go first, alone if enough
            if made is not None:
                self._evaluated_at_tokens = budget.count(made[0])
                return *made, True
        if due is not None and defer is not None and defer(view, budget, due):
            return view, [], None
        events: list[Event] = []
        if occasion.edits:
            view, events = self._edit(view, budget)
        target = self._summary_target(view, budget, occasion)
        if target is None:
            return view, events, None
        result, produced, fits = self.make_summary(view, budget, occasion, target)
        self._evaluated_at_tokens = budget.count(result)
        return result, [*events, *produced], fits

    def make_summary(self, view: Conversation, budget: Budget, occasion: Occasion,
                     target: int) -> tuple[Conversation, list[Event], bool | None]:
        """The summary the occasion calls for, down to ``target``: the view, its events, whether it met the target.

        Reads and changes none of the steward's memory, so that it can run off the agent loop on a snapshot.
        """
        if occasion.summary in (FORCED, REACTIVE):
            budget = replace(budget, force_summary=occasion.summary == FORCED, refused=occasion.summary == REACTIVE)
        result, produced, met = compact(view, budget, target, self.pipeline)
        fits: bool | None = met
        if not fits and not any(e.stage == "summarize" for e in produced):
            fits = None  # too few messages to summarize yet (and the window not at stake): no failed compaction
        if occasion.sends and budget.count(result) > window_limit(budget, result):
            result, more = fit_window(result, budget)  # the window is a limit, not a target: go on down
            produced = [*produced, *more]
        return result, produced, fits

    def summary_off_loop(self, view: Conversation, budget: Budget,
                         target: int) -> tuple[Conversation, list[Event], bool | None]:
        """:meth:`make_summary` of a due summary, a fault in it kept as :meth:`run` keeps one (a ``failed`` event,
        the view unchanged): what a background summary runs. Its outcome is accounted by :meth:`landed`."""
        try:
            return self.make_summary(view, budget, TURN_BOUNDARY, target)
        except Exception as error:  # noqa: BLE001 - as in run(): a summarizer bug never reaches the agent loop
            logger.warning("background compaction failed, the view stays as it is: %s: %s", type(error).__name__, error)
            return view, [Event("summarize", "failed", detail=f"{type(error).__name__}: {error}")], False

    def landed(self, produced: list[Event], fits: bool | None, tokens: int) -> list[Event]:
        """A background summary's outcome taken into the steward's memory (breaker, last stage, size looked at)."""
        events = self._account(produced, fits, automatic=True) if fits is not None else []
        self._note_fired(produced)
        self._evaluated_at_tokens = tokens
        return events

    def _summary_target(self, view: Conversation, budget: Budget, occasion: Occasion) -> int | None:
        """The size a summary should bring the request to now, or ``None`` when none is due."""
        if occasion.summary == NO_SUMMARY:
            return None
        if occasion.summary == REACTIVE:
            return min(budget.trigger_tokens, int(budget.count(view) * REACTIVE_TARGET_SHARE))
        if occasion.summary == FORCED:
            return budget.trigger_tokens
        tokens = budget.count(view)
        if not ends_at_boundary(view) or (tokens <= budget.trigger_tokens and not budget.over_message_trigger(view)):
            return None
        if not self.breaker_open or tokens > window_limit(budget, view):  # an open breaker never lets a request overflow
            return budget.trigger_tokens
        return None

    def _edit(self, view: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
        """Consider changing the middle of the history, and do it only if it pays.

        Two candidates: the batch stages together, and, at a turn boundary, a
        summary with a short tail; :func:`~contextfold.pipeline.economics.choose`
        keeps the one that saves the most, if any pays. Evaluated only when the
        request grew enough since the last look, or the cache went cold, so
        most steps skip this entirely.
        """
        tokens = budget.count(view)
        grown = tokens - self._evaluated_at_tokens
        if not (budget.cache_cold or grown >= self.policy.clear_min_savings_tokens // 2 or tokens > budget.trigger_tokens):
            return view, []
        self._evaluated_at_tokens = tokens
        candidates = []
        edited, produced = run_stages(view, budget, self.pipeline.batch)
        if produced:
            candidates.append((edited, produced))
        summary = rungs(self.pipeline)[1]
        if summary is not None and self._summary_may_pay(view, budget, tokens):
            economic = replace(budget, tail_tokens=self.policy.economic_summary_tail_tokens, after=self.pipeline.after)
            summarized, made = run_stages(view, economic, (summary,))
            if made:
                candidates.append((summarized, made))
        chosen, events = choose(view, candidates, budget)
        if chosen is not view:
            self._evaluated_at_tokens = budget.count(chosen)
        return chosen, events

    def _summary_may_pay(self, view: Conversation, budget: Budget, tokens: int) -> bool:
        """Whether a summary below the trigger is worth pricing at all (it costs a summarizer run)."""
        p = self.policy
        return (
            p.economic_summaries
            and getattr(budget.summarizer, "offline", False)  # pricing a model-written summary would pay for it
            and not self.breaker_open
            and tokens >= p.economic_summary_min_tokens
            and ends_at_boundary(view)
        )

    def _account(self, produced: list[Event], fits: bool, *, automatic: bool) -> list[Event]:
        """Count a summary that failed or missed its target towards the breaker; a good one resets it.

        A summary the fallback wrote is a failure of the configured summarizer, so it counts too.
        """
        fallbacks = [e.data["fallback"] for e in produced if e.stage == "summarize" and e.data.get("fallback")]
        events = [Event("summarize", "fallback", detail=reason) for reason in fallbacks]
        if fits and not fallbacks:
            self.failures = 0
        elif automatic:
            self.failures += 1
            if self.failures == self.policy.max_consecutive_failures:
                detail = (f"{self.failures} compactions in a row failed to reach the trigger; automatic compaction "
                          "is off until one succeeds, except to keep a request within the window")
                logger.warning("contextfold: %s", detail)
                events.append(Event("summarize", "breaker_open", detail=detail))
        return events

    def _note_fired(self, events: Iterable[Event]) -> None:
        for event in events:
            if event.items:
                self._last_fired = event.stage

    # ------------------------------------------------------------------ what came back
    def sent(self, tokens: int, *, changed: bool) -> None:
        """A request of ``tokens`` went out; learn how fast requests grow while nothing is compacted."""
        if not changed and self._sent_tokens is not None and tokens >= self._sent_tokens:
            sample = tokens - self._sent_tokens
            growth = self.growth_tokens_per_request
            self.growth_tokens_per_request = sample if growth is None else 0.7 * growth + 0.3 * sample
        self._sent_tokens = tokens

    def cache_break(self, usage: Usage) -> Event | None:
        """A cache break, if the cached prompt fell since the last report, named after the stage that caused it."""
        previous = self._last_cache_read
        cause = self._last_fired or "the cache expired or the prefix changed outside contextfold"
        self._last_cache_read = usage.cache_read_tokens
        self._last_fired = None
        if not previous or usage.cache_read_tokens >= previous * (1 - CACHE_BREAK_DROP):
            return None
        return Event("cache", "break", tokens_before=previous, tokens_after=usage.cache_read_tokens,
                     detail=f"cached prompt fell from {previous:,} to {usage.cache_read_tokens:,}; cause: {cause}",
                     data={"cause": cause})


def ends_at_boundary(view: Conversation) -> bool:
    """No call is waiting for its result: every call of the last assistant turn is answered."""
    answered: set[str] = set()
    for item in reversed(view.items):
        result = item.tool_result
        if result is not None:
            answered.add(result.call_id)
            continue
        return all(call.id in answered for call in item.tool_calls)
    return True
