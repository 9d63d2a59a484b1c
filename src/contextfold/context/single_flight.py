"""One summary at a time per session, across every worker of a shared store.

Two workers that find the same summary due would both pay a model call for
it, and one of the two views would be refused anyway. Before a summarizer
runs, the worker takes the session's *summary lease* in the store (a row or
a key that expires on its own after :data:`LEASE_S`), and a heartbeat
(:data:`HEARTBEAT`, one thread for the process) renews it every
:data:`HEARTBEAT_S` while the worker holds it: a worker that dies (killed,
frozen, cut off from the store) stops renewing, and its lease is free a few
seconds later, however long its summary would have taken.
A worker that finds another's lease waits for it to be released, up to
:data:`WAIT_S`. If the other's summary landed meanwhile, it reads the session
again and decides afresh (that summary usually makes its own unnecessary); if
the lease came free without one (its holder died, or dropped its summary), it
keeps the lease and summarizes now. If the lease is still held at the end of
the wait, it goes on unsummarized this step. A lease is taken only when a
summarizer is about to run, and released when the step ends; a summary made
in the background (:mod:`.background`) keeps it (:meth:`Flight.keep`) until
it is applied or discarded, and never waits for another worker's.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ..conversation import new_id
from ..errors import StoreUnavailable, SummaryInProgress
from ..stores import StoredSession
from ..summarizers.base import Summarizer, SummaryRequest, SummaryResult

logger = logging.getLogger("contextfold.context")

LEASE_S = 3.0
"""How long a lease lasts unless renewed: another worker takes over this long after a dead holder's last beat."""
HEARTBEAT_S = 1.0
"""How often a holder renews its lease: a few beats a lease, so one late beat (a loaded machine) loses nothing."""
HOLD_S = 300.0
"""How long a lease is renewed at most: longer than any summary should take; a holder stuck past it is taken over."""
WAIT_S = 60.0
"""How long a worker waits for another's summary before it goes on unsummarized."""
POLL_S = 0.1
"""How often a waiting worker looks whether the lease was released."""


class Flight:
    """The summary lease of one Context: who it is, whether it holds the lease or has waited this step."""

    def __init__(self, session: Callable[[], StoredSession | None], sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._session = session
        self._sleep = sleep
        self._clock = clock
        self.holder = new_id("worker")
        self.held = False
        self.waited = False
        self.kept = False  # the lease outlives the step: a background summary holds it
        self._taken = 0.0  # when the lease was taken (its renewals end HOLD_S after)
        self._holding = threading.Lock()  # a renewal and a release never cross (a renewal would take it back)

    def guard(self, summarizer: Summarizer) -> Summarizer:
        """``summarizer``, taking the lease before each summary when the session is shared."""
        return _Leased(summarizer, self)

    def take(self, *, wait: bool = True) -> None:
        """Take the lease, or raise :class:`SummaryInProgress` (after waiting, once a step, for it to be
        released; at once with ``wait=False``)."""
        session = self._session()
        if session is None or self.held:
            return
        try:
            got = session.lease(self.holder, LEASE_S)
            if got is None:
                return  # one writer a session: nobody to race
            if got and session.view_moved():  # another worker's summary landed since this step read the session
                session.release(self.holder)
                raise SummaryInProgress("another worker changed the view since this step read it")
        except StoreUnavailable as error:  # no lease to be had: summarize rather than never
            logger.warning("summary lease unavailable (%s); summarizing without it", error)
            return
        if got:
            self._hold()
            return
        if self.waited or not wait:
            raise SummaryInProgress("another worker is summarizing this session; going on unsummarized")
        self.waited = True
        deadline = self._clock() + WAIT_S
        while self._clock() < deadline:
            self._sleep(POLL_S)
            if session.lease(self.holder, LEASE_S):
                if session.view_moved():  # its summary landed: read it
                    session.release(self.holder)
                    break
                logger.info("the summary lease came free with no summary made (its holder stopped): summarizing here")
                self._hold()
                return
        raise SummaryInProgress("another worker summarized this session: reading it again")

    def _hold(self) -> None:
        """The lease is this worker's now: the heartbeat renews it until it is released."""
        self.held = True
        self._taken = self._clock()
        HEARTBEAT.add(self)

    def renew(self) -> None:
        """Renew the lease (the heartbeat's call): a lease taken over by another worker (this one missed its
        beats) or held past :data:`HOLD_S` is no longer renewed; a store out of reach is tried next beat."""
        with self._holding:
            session = self._session()
            if not self.held or session is None:
                HEARTBEAT.remove(self)
                return
            if self._clock() - self._taken > HOLD_S:
                logger.warning("summary lease held %.0f s: no longer renewed (another worker may take it)", HOLD_S)
                HEARTBEAT.remove(self)
                return
            try:
                if not session.lease(self.holder, LEASE_S):
                    logger.warning("summary lease taken over by another worker (this one missed its heartbeats)")
                    HEARTBEAT.remove(self)
            except StoreUnavailable as error:
                logger.warning("summary lease not renewed (%s); trying again in %.0f s", error, HEARTBEAT_S)

    def keep(self, kept: bool) -> None:
        """Hold the lease past the end of the step (a background summary runs), or no longer."""
        self.kept = kept and self.held

    def end_step(self) -> None:
        """Release the lease if held and not kept; the next step may wait again."""
        session = self._session()
        if self.held and not self.kept:
            with self._holding:
                HEARTBEAT.remove(self)
                self.held = False
                if session is not None:
                    try:
                        session.release(self.holder)
                    except StoreUnavailable as error:
                        logger.warning("summary lease not released (%s); it expires in %.0f s", error, LEASE_S)
        self.waited = False


class _Heartbeat:
    """One daemon thread renewing every lease this process holds, every :data:`HEARTBEAT_S` (started on first use:
    a thread started a summary would stall the step)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: dict[int, Flight] = {}
        self._thread: threading.Thread | None = None

    def add(self, flight: Flight) -> None:
        with self._lock:
            self._flights[id(flight)] = flight
            if self._thread is None:
                self._thread = threading.Thread(target=self._beat, name="contextfold-lease-heartbeat", daemon=True)
                self._thread.start()

    def remove(self, flight: Flight) -> None:
        with self._lock:
            self._flights.pop(id(flight), None)

    def _beat(self) -> None:
        while True:
            time.sleep(HEARTBEAT_S)
            with self._lock:
                flights = list(self._flights.values())
            for flight in flights:
                try:
                    flight.renew()
                except Exception:  # noqa: BLE001 - a beat that fails must not stop the others' for good
                    logger.exception("summary lease heartbeat failed")


HEARTBEAT = _Heartbeat()
"""The heartbeat of every lease held in this process."""


class _Leased:
    """A summarizer that takes the session's lease first; everything else is the summarizer's own."""

    def __init__(self, summarizer: Summarizer, flight: Flight) -> None:
        self._summarizer = summarizer
        self._flight = flight

    @property
    def name(self) -> str:
        return self._summarizer.name

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        self._flight.take()
        return self._summarizer.summarize(request)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._summarizer, attribute)
