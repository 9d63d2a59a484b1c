"""One summary at a time per session, across every worker of a shared store.

Two workers that find the same summary due would both pay a model call for
it, and one of the two views would be refused anyway. Before a summarizer
runs, the worker takes the session's *summary lease* in the store (a row or
a key that expires on its own after :data:`LEASE_S`, should the worker die).
A worker that finds another's lease waits for it to be released, up to
:data:`WAIT_S`, then reads the session again and decides afresh (the other
worker's summary usually makes its own unnecessary); if the lease is still
held then, it goes on unsummarized this step. A lease is taken only when a
summarizer is about to run, and released when the step ends; a summary made
in the background (:mod:`.background`) keeps it (:meth:`Flight.keep`) until
it is applied or discarded, and never waits for another worker's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from ..conversation import new_id
from ..errors import StoreUnavailable, SummaryInProgress
from ..stores import StoredSession
from ..summarizers.base import Summarizer, SummaryRequest, SummaryResult

logger = logging.getLogger("contextfold.context")

LEASE_S = 300.0
"""How long a lease lasts unless released: longer than any summary should take, short enough for a dead worker."""
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
            self.held = True
            return
        if self.waited or not wait:
            raise SummaryInProgress("another worker is summarizing this session; going on unsummarized")
        self.waited = True
        deadline = self._clock() + WAIT_S
        while self._clock() < deadline:
            self._sleep(POLL_S)
            if session.lease(self.holder, LEASE_S):
                session.release(self.holder)
                break
        raise SummaryInProgress("another worker summarized this session: reading it again")

    def keep(self, kept: bool) -> None:
        """Hold the lease past the end of the step (a background summary runs), or no longer."""
        self.kept = kept and self.held

    def end_step(self) -> None:
        """Release the lease if held and not kept; the next step may wait again."""
        session = self._session()
        if self.held and not self.kept and session is not None:
            try:
                session.release(self.holder)
            except StoreUnavailable as error:
                logger.warning("summary lease not released (%s); it expires in %.0f s", error, LEASE_S)
        self.held = self.kept
        self.waited = False


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
