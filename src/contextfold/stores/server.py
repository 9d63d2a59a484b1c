"""What the stores on a database server share: a driver that stays optional, and a URL whose password stays secret.

PostgreSQL and Redis are both reached by a URL that may carry a password,
through a driver that is an optional extra. :class:`ServerLink` imports the
driver when a store is opened (a missing one is a :class:`StoreError` that
says what to install), names the store by its URL with the password masked,
turns the driver's errors into :class:`StoreError` scrubbed of it, and holds
the store's :class:`~.timeouts.StoreTimeouts` (given, or set on the URL).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import StoreError, StoreUnavailable
from .base import redact, scrub
from .deadline import WATCHDOG
from .timeouts import DEFAULT_TIMEOUTS, StoreTimeouts

log = logging.getLogger(__name__)


class ServerLink:
    """The driver module of one store, its URL as the store may show it (``url``) and use it (``secret_url``,
    without the timeout parameters), and its ``timeouts``."""

    def __init__(self, url: str, *, module: str, error: str, unavailable: tuple[str, ...], needs: str,
                 timeouts: StoreTimeouts = DEFAULT_TIMEOUTS) -> None:
        try:
            self.driver: Any = importlib.import_module(module)
        except ImportError as err:
            raise StoreError(needs) from err
        self.error: type[Exception] = getattr(self.driver, error)
        self.unavailable: tuple[type[Exception], ...] = tuple(getattr(self.driver, name) for name in unavailable)
        self.url = redact(url)
        self.secret_url, self.timeouts = timeouts.from_url(url)
        log.debug("connecting to %s", self.url)

    @contextmanager
    def errors(self, doing: str = "") -> Iterator[None]:
        """Raise the driver's errors as :class:`StoreError`, named by the masked URL, the password scrubbed;
        a lost or refused connection (the server down, a timeout) as :class:`StoreUnavailable`, worth a retry."""
        try:
            yield
        except self.error as err:
            kind = StoreUnavailable if isinstance(err, self.unavailable) else StoreError
            raise kind(f"{self.url}: {doing}{scrub(str(err), self.secret_url)}") from None

    @contextmanager
    def bounded(self, fileno: int) -> Iterator[None]:
        """Bound what runs inside to ``timeouts.operation_s`` on the connection's socket ``fileno`` (see
        :mod:`.deadline`): past it, the connection is dropped and the driver's error is a :class:`StoreUnavailable`
        that says the server did not answer in time."""
        with WATCHDOG.armed(fileno, self.timeouts.operation_s) as alarm:
            try:
                yield
            except self.error:
                if alarm.fired:
                    raise StoreUnavailable(f"{self.url}: no answer within {self.timeouts.operation_s:g} s; "
                                           "the connection was dropped") from None
                raise

    @contextmanager
    def connecting(self, doing: str = "") -> Iterator[None]:
        """:meth:`errors` around handing the URL to the driver, which parses it then: a URL it cannot take (a port
        out of range, a query value of the wrong type, a host that is not text) is a :class:`StoreError` too,
        not the ``ValueError`` (or ``UnicodeError``) the driver raises for it."""
        try:
            with self.errors(doing):
                yield
        except ValueError as err:
            raise StoreError(f"{self.url}: {doing}not a URL the driver takes: {scrub(str(err), self.secret_url)}") from None
