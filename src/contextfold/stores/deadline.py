"""A bound on one blocking operation of a driver that has none: its socket is shut down when time is up.

A server that stops answering (a frozen process, a listener that accepts and
never replies) leaves a driver waiting on its socket for good when the driver
takes no timeout of its own for a statement (psycopg 3 before 3.3 has none;
the server's ``statement_timeout`` needs a server that runs). :data:`WATCHDOG`
is one daemon thread for the whole process: an operation arms it with its
socket and deadline and disarms it when done (a dictionary entry, no thread
started a statement); if the deadline passes first, the thread shuts the
socket down, the driver's wait ends with a lost connection, and the store
says the server did not answer in time. The connection is then broken, and
the store connects again on its next use.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import threading
import time
from collections.abc import Iterator


class Alarm:
    """One armed operation; ``fired`` once its socket was shut down for overrunning."""

    __slots__ = ("deadline", "fileno", "fired")

    def __init__(self, fileno: int, deadline: float) -> None:
        self.fileno = fileno
        self.deadline = deadline
        self.fired = False


class Watchdog:
    """Shuts down the socket of any operation still armed past its deadline (one thread, started on first use)."""

    def __init__(self) -> None:
        self._wake = threading.Condition()
        self._armed: dict[int, Alarm] = {}
        self._tokens = itertools.count()
        self._waiting_until: float | None = None  # when the thread wakes next by itself (None: not until told)
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def armed(self, fileno: int, seconds: float) -> Iterator[Alarm]:
        """Bound what runs inside to ``seconds`` on the socket ``fileno``; the :class:`Alarm` says if it fired."""
        alarm = Alarm(fileno, time.monotonic() + seconds)
        token = next(self._tokens)
        with self._wake:
            self._armed[token] = alarm
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="contextfold-store-deadline", daemon=True)
                self._thread.start()
            elif self._waiting_until is None or alarm.deadline < self._waiting_until:
                self._wake.notify()
        try:
            yield alarm
        finally:
            with self._wake:
                del self._armed[token]

    def _watch(self) -> None:
        with self._wake:
            while True:
                now = time.monotonic()
                for alarm in self._armed.values():
                    if not alarm.fired and alarm.deadline <= now:
                        alarm.fired = True
                        _shut_down(alarm.fileno)
                pending = [alarm.deadline for alarm in self._armed.values() if not alarm.fired]
                self._waiting_until = min(pending, default=None)
                self._wake.wait(None if self._waiting_until is None else self._waiting_until - now)


def _shut_down(fileno: int) -> None:
    """End every wait on the socket ``fileno`` (its owner sees the connection lost, and closes it)."""
    with contextlib.suppress(OSError):
        duplicate = socket.socket(fileno=os.dup(fileno))
        with duplicate:
            duplicate.shutdown(socket.SHUT_RDWR)


WATCHDOG = Watchdog()
"""The one watchdog of the process."""
