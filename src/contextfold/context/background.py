"""Summaries made off the agent loop: started on a snapshot of the view, swapped in once done.

A model writes a summary in seconds, and a loop that waits for it stalls. When
a summary becomes due below the hard fill level (``Policy.hard_fill_fraction``
of the window), the step (:class:`Background`, :meth:`Background.defer`) starts
it here on a snapshot of the view, in a thread of :data:`POOL` (with the async
API, its model call is the summarizer's coroutine, a task of the running loop;
a step that must wait for it waits in its worker thread) and goes on sending the full view, which
the cheap stages keep within the window. The first step that finds it finished puts it in with :func:`splice`:
the items the summary replaced are replaced, exactly, in the view as it is
then, if they are all still there, unchanged and in a row (wherever they now
stand: the view may have been re-cut around them); items added since stay as
they are. Otherwise the summary is discarded, never misapplied. Only above the
hard level does a step wait for it, bounded by the summarizer's deadline.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent import futures
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from ..conversation import Conversation, Item
from ..errors import SummaryInProgress
from ..events import Event
from ..pipeline.base import Budget
from ..pipeline.step import DUE, MANUAL, SETTLE, Occasion
from ..summarizers.base import Summarizer, SummaryRequest, SummaryResult
from ..pipeline.consent import announced
from .off_loop import off_loop
from .parts import Parts

logger = logging.getLogger("contextfold.context")
T = TypeVar("T")

WAIT_GRACE_S = 5.0
"""How long past the summarizer's deadline a step above the hard level waits (its fallback is still written)."""


@dataclass(frozen=True)
class Outcome:
    """What a background summary made of its snapshot: the view, its events, whether it met its target."""

    view: Conversation
    events: list[Event]
    fits: bool | None


Work = Callable[[], Outcome]


class Job:
    """One summary running off the loop on ``snapshot``, in a worker of :data:`POOL`; :meth:`outcome` once
    :meth:`done`."""

    def __init__(self, snapshot: Conversation, work: Work) -> None:
        self.snapshot = snapshot
        self.accounted: list[Event] | None = None  # the steward's verdict, taken once when the job is first landed
        self._future = POOL.submit(work)

    def done(self) -> bool:
        return self._future.done()

    def outcome(self) -> Outcome:
        failed = self._future.cancelled() or self._future.exception() is not None
        return _outcome_or_failure(None if failed else self._future.result(), self.snapshot)

    def wait(self, timeout_s: float | None) -> bool:
        """Block until done or ``timeout_s`` passed; whether it is done. Never on an event loop's thread
        (blocking would stall the very loop a job's model call may run on): the async API's steps run
        in a worker thread, and wait there."""
        if not on_event_loop():
            futures.wait([self._future], timeout_s)
        return self.done()


class Background:
    """The summary one Context has running off the loop, if any, and what a step does about it.

    A step asks :meth:`defer` whether a due summary goes to the background
    (and starts it), :meth:`landing` for the view it starts from (a finished
    summary put in), and learns from :attr:`wait_for` that it must wait first.
    """

    def __init__(self, parts: Parts) -> None:
        self._parts = parts
        self.job: Job | None = None
        self.wait_for: Job | None = None  # the job this step must wait for: the view is above the hard level
        self._waited = False  # this step has waited for its job once
        self._in_loop = False  # this step was called through the async API: a job's model call runs on its loop
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop of the last async call
        if self.enabled:
            POOL.warm()  # a thread waits for the first summary: no step waits for one to start

    @property
    def enabled(self) -> bool:
        """Whether a due summary below the hard level is made off the loop (``Policy.background_summaries``)."""
        mode = self._parts.policy.background_summaries
        return mode == "always" or (mode == "auto" and self.wait_bound() is not None)

    @property
    def running(self) -> bool:
        return self.job is not None and not self.job.done()

    def wait_bound(self) -> float | None:
        return wait_bound_s(self._parts.summarizer())

    async def off_loop(self, call: Callable[[], T]) -> T:
        """``call()`` made off the running loop; a summary it starts makes its model call on that loop."""
        loop = asyncio.get_running_loop()

        def run() -> T:
            self._loop, self._in_loop = loop, True
            try:
                return call()
            finally:
                self._in_loop = False

        return await off_loop(run)

    def wait(self) -> None:
        """Wait for the running summary, if any, to end (``settle``)."""
        if self.job is not None:
            self.job.wait(None)

    def end_step(self) -> None:
        self.wait_for, self._waited = None, False

    def defer(self, view: Conversation, budget: Budget, target: int) -> bool:
        """A summary is due on ``view``: whether this step leaves it to the background (started now, or running).

        Above the hard level it does not: the step waits for the running job
        (once) or summarizes inline, as it would without a background.
        """
        parts, job = self._parts, self.job
        if parts.counter.count(view) > parts.hard_tokens:
            if job is not None and not self._waited:
                self.wait_for = job
                return True
            return False
        if job is not None:
            return True
        try:
            parts.flight.take(wait=False)
        except SummaryInProgress as busy:  # another worker summarizes: its view is read next step
            logger.info("session %s: no background summary started: %s", parts.session_id, busy)
            return True
        parts.flight.keep(True)
        self.job = self._start(view, budget, target)
        return True

    def _start(self, view: Conversation, budget: Budget, target: int) -> Job:
        parts = self._parts
        snapshot = view.snapshot()  # the committed view is appended to in place; the job's must not move
        summarizer = on_loop(parts.summarizer(), self._loop) if self._in_loop and self._loop else parts.summarizer()
        counter = copy.copy(parts.counter)  # the loop's counter learns from usage as the job counts: its own copy
        work_budget = replace(budget, summarizer=summarizer, count=counter.count,
                              count_estimated=counter.estimated_tokens, new_from=len(snapshot))

        def work() -> Outcome:
            return Outcome(*parts.steward.summary_off_loop(snapshot, work_budget, target))

        job = Job(snapshot, work)
        tokens = parts.counter.count(view)
        logger.info("session %s: a summary of %d item(s) (%d tokens) started in the background; the loop goes on "
                    "with the full view until it is done", parts.session_id, len(snapshot), tokens)
        parts.emit([Event("summarize", "started", tokens_before=tokens, data={"snapshot_items": len(snapshot),
                          "target_tokens": target, "hard_tokens": parts.hard_tokens},
                          detail=f"summarizing a snapshot of {len(snapshot)} item(s) in the background")])
        return job

    def landing(self, occasion: Occasion) -> tuple[Conversation, list[Event], int]:
        """The view this step starts from, the events of a background summary put in or discarded, and the
        index from which the cheap stages have not yet seen the view (the summary moves it)."""
        parts = self._parts
        current, processed = parts.timeline.view, parts.timeline.processed
        job = self.job
        if job is None:
            return current, [], processed
        if not job.done():
            if occasion.summary == DUE or occasion is SETTLE:
                return current, [], processed
            why = "a manual compact" if occasion is MANUAL else "a reactive compaction after 'prompt too long'"
            return current, self.drop(f"superseded by {why}", []), processed
        outcome = job.outcome()
        if job.accounted is None:  # once, however many times a view conflict makes the step land it
            job.accounted = parts.steward.landed(outcome.events, outcome.fits, parts.counter.count(outcome.view))
        events = [*outcome.events, *job.accounted]
        if outcome.view is job.snapshot or not any(e.items for e in outcome.events):
            self.drop(None, [])  # nothing to put in: it failed, or there was too little to summarize
            return current, events, processed
        placed = splice(job.snapshot.items, outcome.view.items, current.items)
        if isinstance(placed, str) or placed.end > processed:
            why = placed if isinstance(placed, str) else "it replaces items no stage has seen yet"
            calls = tuple(call for e in outcome.events for call in e.calls)  # what it cost is still priced
            return current, self.drop(why, [e for e in events if not e.items], calls), processed
        view = placed.apply(current)
        before, after = parts.counter.count(current), parts.counter.count(view)
        logger.info("session %s: the background summary is applied: %d item(s) replaced, %d -> %d tokens",
                    parts.session_id, placed.end - placed.start, before, after)
        applied = Event("summarize", "applied", tokens_before=before, tokens_after=after,
                        detail=f"the background summary replaced {placed.end - placed.start} item(s) of the view",
                        data={"start": placed.start, "replaced": placed.end - placed.start, "made": len(placed.items)})
        told = announced(current, view, outcome.events, parts.counter.count, parts.estimator.item, "none", parts.consent)
        return view, [*events, applied, *told], processed + len(placed.items) - (placed.end - placed.start)

    def drop(self, why: str | None, events: list[Event], calls: tuple[Any, ...] = ()) -> list[Event]:
        """Let the background summary go (its result, if it comes, is never used); ``events`` and a
        ``discarded`` event saying ``why``, if there is a reason to tell."""
        self.finish()
        if why is None:
            return events
        logger.warning("session %s: the background summary is discarded: %s", self._parts.session_id, why)
        return [*events, Event("summarize", "discarded", detail=why, calls=calls)]

    def finish(self) -> None:
        self.job = None
        self._parts.flight.keep(False)  # released when the step ends

    def waited(self, job: Job, done: bool) -> None:
        """After a step above the hard level waited: it decides afresh, inline if the job is still not done."""
        self._waited, self.wait_for = True, None
        if not done and self.job is job:
            bound = self.wait_bound()
            waited = f"within {bound:g} s of waiting " if bound is not None and not on_event_loop() else ""
            self._parts.emit(self.drop(f"not finished {waited}above the hard level "
                                       f"({self._parts.hard_tokens:,} tokens): summarized inline instead", []))

    def close(self) -> None:
        """Discard a summary still running (the context is closing)."""
        if self.job is not None:
            self._parts.emit(self.drop("the context was closed before it finished", []))
            self._parts.flight.end_step()


class _Pool:
    """Daemon threads shared by every Context, started once and then kept waiting for work.

    Starting a thread inside a step would make the step wait for the system to schedule it (tens of
    milliseconds on a loaded machine); a daemon thread never holds up the interpreter's exit (a model
    summary ends at its deadline anyway).
    """

    def __init__(self) -> None:
        self._work: queue.SimpleQueue[tuple[Work, futures.Future[Outcome]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def warm(self) -> None:
        """Have a thread waiting before the first summary is due (called when a Context is made)."""
        with self._lock:
            if self._idle == 0:
                self._start()

    def submit(self, work: Work) -> futures.Future[Outcome]:
        future: futures.Future[Outcome] = futures.Future()
        with self._lock:
            if self._idle == 0:
                self._start()
            self._idle -= 1
        self._work.put((work, future))
        return future

    def _start(self) -> None:
        self._idle += 1
        threading.Thread(target=self._serve, name="contextfold-background", daemon=True).start()

    def _serve(self) -> None:
        while True:
            work, future = self._work.get()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(work())
                except BaseException as error:  # noqa: BLE001 - the step that lands it reads the failure
                    future.set_exception(error)
            with self._lock:
                self._idle += 1


POOL = _Pool()
"""Where every background summary runs."""


def on_event_loop() -> bool:
    """Whether this thread is running an asyncio loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _outcome_or_failure(outcome: Outcome | None, snapshot: Conversation) -> Outcome:
    if outcome is not None:
        return outcome
    return Outcome(snapshot, [Event("summarize", "failed", detail="the background summary ended without a result")],
                   False)


def wait_bound_s(summarizer: Summarizer) -> float | None:
    """How long a step above the hard level waits: the summarizer's deadline and a grace (``None``: it has none,
    and an inline summary would have taken as long)."""
    deadline = getattr(summarizer, "deadline_s", None)
    return float(deadline) + WAIT_GRACE_S if isinstance(deadline, (int, float)) else None


def on_loop(summarizer: Summarizer, loop: asyncio.AbstractEventLoop) -> Summarizer:
    """``summarizer`` for a job's executor thread: its ``asummarize``, if it has one, run on ``loop``."""
    if not callable(getattr(summarizer, "asummarize", None)):
        return summarizer
    return _OnLoop(summarizer, loop)


class _OnLoop:
    """A summarizer whose calls from a worker thread are made by its coroutine on the event loop."""

    def __init__(self, summarizer: Summarizer, loop: asyncio.AbstractEventLoop) -> None:
        self._summarizer = summarizer
        self._loop = loop

    @property
    def name(self) -> str:
        return self._summarizer.name

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        coroutine = self._summarizer.asummarize(request)  # type: ignore[attr-defined]
        result: SummaryResult = asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()
        return result

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._summarizer, attribute)


@dataclass(frozen=True)
class Placement:
    """Where a summary goes in the current view: ``items`` in place of ``current[start:end]``."""

    start: int
    end: int
    items: tuple[Item, ...]

    def apply(self, current: Conversation) -> Conversation:
        view = list(current.items)
        return current.with_items([*view[: self.start], *self.items, *view[self.end :]])


def splice(snapshot: Sequence[Item], summarized: Sequence[Item], current: Sequence[Item]) -> Placement | str:
    """Where the change from ``snapshot`` to ``summarized`` goes in ``current``, or why it cannot go anywhere.

    The change is the run of ``snapshot`` items that ``summarized`` does not
    keep at either end (the span summarized, and any tail item the escalation
    shortened), and what replaced it. It goes where that run stands in
    ``current``, item for item the same objects (or equal ones); if the run is
    not there whole, the summary would drop or duplicate an item: it is refused.
    """
    head = _common(snapshot, summarized)
    tail = _common(snapshot[::-1], summarized[::-1], limit=min(len(snapshot), len(summarized)) - head)
    replaced = snapshot[head : len(snapshot) - tail]
    made = tuple(summarized[head : len(summarized) - tail])
    if not replaced:
        return "the summary replaced no item of its snapshot"
    first = replaced[0]
    starts = [i for i, item in enumerate(current) if _same(item, first)]
    for start in sorted(starts, key=lambda i: abs(i - head)):  # where it was first: the usual case
        run = current[start : start + len(replaced)]
        if len(run) == len(replaced) and all(_same(a, b) for a, b in zip(run, replaced)):
            return Placement(start, start + len(replaced), made)
    gone = sum(1 for item in replaced if not any(_same(item, other) for other in current))
    if gone:
        return f"{gone} of the {len(replaced)} item(s) it replaces changed or left the view while it ran"
    return f"the {len(replaced)} item(s) it replaces are no longer in one run in the view"


def _same(a: Item, b: Item) -> bool:
    return a is b or (a.id == b.id and a == b)


def _common(a: Sequence[Item], b: Sequence[Item], limit: int | None = None) -> int:
    """How many items ``a`` and ``b`` share from their start (at most ``limit``)."""
    most = min(len(a), len(b)) if limit is None else min(len(a), len(b), limit)
    n = 0
    while n < most and _same(a[n], b[n]):
        n += 1
    return n
