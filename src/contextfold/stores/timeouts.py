"""How long a store on a database server may take before it counts as out of reach.

A server that stops answering (stopped, frozen, behind a dropped route) must
not block a caller for good: every connection, every operation and every
retry is bounded, so a write it does not take is a
:class:`~contextfold.errors.StoreUnavailable` within :attr:`StoreTimeouts.give_up_s`.
One value for the PostgreSQL and Redis stores, sync and async alike, set on
the store's constructor (``timeouts=``) or on its URL, in seconds::

    postgresql://db.internal/app?connect_timeout=2&operation_timeout=2.5&idle_timeout=30&give_up_after=10
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from urllib.parse import parse_qsl, quote, urlencode

from ..errors import StoreError


@dataclass(frozen=True, slots=True)
class StoreTimeouts:
    """The bounds of one server store, in seconds.

    * ``connect_s``: reaching the server and logging in (PostgreSQL counts it
      in whole seconds, at least 2: libpq's rule);
    * ``operation_s``: one operation (a statement, a script) with no answer
      this long means the server is out of reach: its connection is dropped
      and the operation fails (the store's operations are small; a read of a
      whole session of many megabytes over a slow link, or a prune of a large
      store, may need more: raise it on that store's URL);
    * ``idle_s``: a connection unused this long is checked before it is used
      again (Redis: a ``PING``; PostgreSQL: TCP keepalives), and the server
      ends a transaction its client left open this long (PostgreSQL's
      ``idle_in_transaction_session_timeout``);
    * ``give_up_s``: the bound a caller waits: a write is retried (see
      :data:`~contextfold.stores.outbox.RETRY_DELAYS_S`) only while another
      whole attempt (:attr:`attempt_s`) still ends within it.
    """

    connect_s: float = 2.0
    operation_s: float = 2.5
    idle_s: float = 30.0
    give_up_s: float = 10.0

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise StoreError(f"store timeouts: {field.name} must be a positive number of seconds, not {value!r}")
        if self.attempt_s > self.give_up_s:
            raise StoreError(f"store timeouts: give_up_s ({self.give_up_s:g}) must leave room for one attempt "
                             f"(connect_s + operation_s = {self.attempt_s:g})")

    @property
    def attempt_s(self) -> float:
        """The longest one try of an operation takes: connecting again, then the operation."""
        return self.connect_s + self.operation_s

    def from_url(self, url: str) -> tuple[str, StoreTimeouts]:
        """``url`` without the timeout parameters of :data:`URL_PARAMETERS`, and these timeouts with them applied."""
        base, mark, query = url.partition("?")
        if not mark:
            return url, self
        pairs = parse_qsl(query, keep_blank_values=True)
        chosen: dict[str, float] = {}
        for key, value in pairs:
            if key in URL_PARAMETERS:
                try:
                    chosen[URL_PARAMETERS[key]] = float(value)
                except ValueError:
                    raise StoreError(f"store URL: {key} must be a number of seconds, not {value!r}") from None
        rest = urlencode([(key, value) for key, value in pairs if key not in URL_PARAMETERS], quote_via=quote)
        return (f"{base}?{rest}" if rest else base), replace(self, **chosen)


URL_PARAMETERS: dict[str, str] = {
    "connect_timeout": "connect_s",
    "operation_timeout": "operation_s",
    "idle_timeout": "idle_s",
    "give_up_after": "give_up_s",
}
"""The store URL's query parameters (seconds) and the :class:`StoreTimeouts` field each sets."""

DEFAULT_TIMEOUTS = StoreTimeouts()
"""What a server store waits unless told otherwise: ``StoreUnavailable`` within 10 s of a server going silent."""
