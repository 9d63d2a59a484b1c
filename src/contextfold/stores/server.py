"""What the stores on a database server share: a driver that stays optional, and a URL whose password stays secret.

PostgreSQL and Redis are both reached by a URL that may carry a password,
through a driver that is an optional extra. :class:`ServerLink` imports the
driver when a store is opened (a missing one is a :class:`StoreError` that
says what to install), names the store by its URL with the password masked,
and turns the driver's errors into :class:`StoreError` scrubbed of it.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import StoreError, StoreUnavailable
from ..redaction import redact_credentials, redact_url, url_secrets

log = logging.getLogger(__name__)


class ServerLink:
    """The driver module of one store and its URL, as the store may show it (``url``) and use it (``secret_url``)."""

    def __init__(self, url: str, *, module: str, error: str, unavailable: tuple[str, ...], needs: str) -> None:
        try:
            self.driver: Any = importlib.import_module(module)
        except ImportError as err:
            raise StoreError(needs) from err
        self.error: type[Exception] = getattr(self.driver, error)
        self.unavailable: tuple[type[Exception], ...] = tuple(getattr(self.driver, name) for name in unavailable)
        self.secret_url = url
        self.url = redact_url(url)
        self.secrets = url_secrets(url)
        log.debug("connecting to %s", self.url)

    @contextmanager
    def errors(self, doing: str = "") -> Iterator[None]:
        """Raise the driver's errors as :class:`StoreError`, named by the masked URL, the password scrubbed;
        a lost or refused connection (the server down, a timeout) as :class:`StoreUnavailable`, worth a retry."""
        try:
            yield
        except self.error as err:
            kind = StoreUnavailable if isinstance(err, self.unavailable) else StoreError
            raise kind(f"{self.url}: {doing}{redact_credentials(str(err), self.secrets)}") from None

    @contextmanager
    def connecting(self, doing: str = "") -> Iterator[None]:
        """:meth:`errors` around handing the URL to the driver, which parses it then: a URL it cannot take (a port
        out of range, a query value of the wrong type, a host that is not text) is a :class:`StoreError` too,
        not the ``ValueError`` (or ``UnicodeError``) the driver raises for it."""
        try:
            with self.errors(doing):
                yield
        except ValueError as err:
            raise StoreError(f"{self.url}: {doing}not a URL the driver takes: {redact_credentials(str(err), self.secrets)}") from None
