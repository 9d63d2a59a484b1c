"""Summaries made off the agent loop: started on a snapshot of the view, swapped in once done.

A model writes a summary in seconds, and a loop that waits for it stalls. When
a summary becomes due below the hard fill level (``Policy.hard_fill_fraction``
of the window), :class:`~contextfold.context.Context` starts it here on a
snapshot of the view, in a thread of :data:`POOL` (with the async API, its model
call is the summarizer's coroutine, a task of the running loop, and a step
awaits the job instead of blocking) and goes on sending the full view, which
the cheap stages keep within the window. The first step that finds it finished puts it in with :func:`splice`:
the items the summary replaced are replaced, exactly, in the view as it is
then, if they are all still there, unchanged and in a row (wherever they now
stand: the view may have been re-cut around them); items added since stay as
they are. Otherwise the summary is discarded, never misapplied. Only above the
hard level does a step wait for it, bounded by the summarizer's deadline.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent import futures
from dataclasses import dataclass
from typing import Any

from ..conversation import Conversation, Item
from ..events import Event
from ..summarizers.base import Summarizer, SummaryRequest, SummaryResult

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

    async def wait_async(self, timeout_s: float | None) -> bool:
        """Await until done or ``timeout_s`` passed (async API); whether it is done."""
        await asyncio.wait({asyncio.wrap_future(self._future)}, timeout=timeout_s)
        return self.done()


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
