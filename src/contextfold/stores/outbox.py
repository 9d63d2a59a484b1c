"""Writes the store refused, kept in order until it accepts them: nothing is reported done before it is durable.

A write that fails because the store is out of reach or out of space (a
:class:`~contextfold.errors.StoreUnavailable`: a full disk, a lost connection,
a database that is down) is tried again a few times with growing pauses
(:data:`RETRY_DELAYS_S`; on a server store only while its :class:`RetryBudget`
lasts), then raised; its records stay here, oldest first,
and every later write sends them first, in order, so the session's records
keep the order they were made in. While records wait, a write is tried once
(no pauses: the store is known to be down, and the caller decides whether to
go on in memory). A retried append is safe because the stores recognise an
item already appended by its id (see :mod:`.sql` and :mod:`.redis`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from ..errors import StoreUnavailable, ViewConflict
from .base import Record
from .timeouts import StoreTimeouts

log = logging.getLogger(__name__)

T = TypeVar("T")

RETRY_DELAYS_S: tuple[float, ...] = (0.05, 0.25, 1.0)
"""The pauses between the tries of a write the store refused, before :class:`StoreUnavailable` is raised."""


@dataclass
class Batch:
    """Records written together; ``base`` is set for a view checkpoint (the revision it replaces)."""

    records: list[Record]
    base: int | None = None
    seqs: list[int] = field(default_factory=list)


Send = Callable[[Batch], list[int]]


class Outbox:
    """The batches of one session not yet in its store, and the one way they are sent: oldest first."""

    def __init__(self, send: Send, where: str, sleep: Callable[[float], None] = time.sleep, *,
                 budget: RetryBudget | None = None) -> None:
        self._send = send
        self._where = where
        self._sleep = sleep
        self.budget = budget or RetryBudget(None)
        self._batches: list[Batch] = []

    @property
    def waiting(self) -> int:
        """Records not yet in the store."""
        return sum(len(batch.records) for batch in self._batches)

    def write(self, batch: Batch) -> list[int]:
        """Send ``batch`` after every batch waiting before it; its sequence numbers once the store has it.

        :class:`StoreUnavailable` when the store still refuses (the batch then
        waits here); :class:`~contextfold.errors.ViewConflict` for a view
        checkpoint another writer got in ahead of (it is not kept).
        """
        store_was_up = not self._batches
        self._batches.append(batch)
        try:
            self.flush(retry=store_was_up, current=batch)
        except ViewConflict:
            self._batches.remove(batch)
            raise
        return batch.seqs

    def flush(self, *, retry: bool = True, current: Batch | None = None) -> None:
        """Send every waiting batch, oldest first; raise :class:`StoreUnavailable` at the first the store refuses.

        A waiting view checkpoint that another writer's view has overtaken
        meanwhile is dropped (logged): reading the session brings the other view.
        """
        delays = RETRY_DELAYS_S if retry else ()
        while self._batches:
            batch = self._batches[0]
            for tried, delay in enumerate((*delays, None), start=1):
                try:
                    batch.seqs = self.budget.attempt(lambda: self._send(batch))  # noqa: B023 - called at once
                    break
                except StoreUnavailable as err:
                    if delay is not None and not self.budget.allows(delay):
                        delay = None
                    if delay is None:
                        raise StoreUnavailable(f"{err} (tried {tried} time(s); {self.waiting} record(s) wait in "
                                               "memory and are written first once the store accepts)",
                                               self.waiting) from err
                    log.warning("%s: the store refused a write (%s); trying again in %.2f s", self._where, err, delay)
                    self._sleep(delay)
                except ViewConflict as conflict:
                    if batch is current:  # the checkpoint being committed now: the caller decides again
                        raise
                    log.warning("%s: a view checkpoint that waited was overtaken by another writer's (%s); "
                                "dropped", self._where, conflict)
                    break
            self._batches.pop(0)



class RetryBudget:
    """How long one outage of a server store may still be retried: the tries that fail close together (in one
    call of the caller: a read, then its write) share ``give_up_s``, counted from the start of the first, so a
    caller waits at most that long, however many operations the call makes. An operation's first try is always
    made; a retry only if it still ends in time (``attempt_s``). A success, or a quiet ``give_up_s``, ends the outage.
    Without timeouts (a local store), every retry is allowed."""

    def __init__(self, timeouts: StoreTimeouts | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.timeouts = timeouts
        self.clock = clock
        self._since: float | None = None  # when the first failed try of this outage began
        self._last = 0.0  # when the last one failed
        self.silent = False  # the last failed try waited out the operation timeout: the server does not answer

    def attempt(self, operation: Callable[[], T]) -> T:
        """``operation()``: a :class:`StoreUnavailable` it raises counts in the outage, a result ends it."""
        begun = self.clock()
        try:
            result = operation()
        except StoreUnavailable:
            now = self.clock()
            if self._since is None or (self.timeouts is not None and now - self._last > self.timeouts.give_up_s):
                self._since = begun
            self._last = now
            self.silent = self.timeouts is not None and now - begun >= self.timeouts.operation_s
            raise
        self._since = None
        return result

    def allows(self, delay: float) -> bool:
        """Whether another try after ``delay`` still ends within the bound."""
        if self.timeouts is None or self._since is None:
            return True
        return self.clock() - self._since + delay + self.timeouts.attempt_s <= self.timeouts.give_up_s
