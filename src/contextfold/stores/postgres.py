"""``postgresql://user@host:port/db``: sessions shared by many workers on many machines (psycopg 3).

Credentials come from the URL or from libpq's environment (``PGPASSWORD``,
``PGPASSFILE``, ``PGUSER``...), and never reach a log or a message: the store
names itself by the URL with its password masked, and driver errors are
scrubbed of it. ``?durability=`` (see :data:`~contextfold.stores.base.DURABILITIES`)
sets ``synchronous_commit`` for the store's connection: off by default (an
acknowledged append survives any writer's crash), on with ``commit``.

A server that stops answering never blocks a caller for good (see
:class:`~contextfold.stores.timeouts.StoreTimeouts`): connecting is bounded by
libpq's ``connect_timeout``, every transaction by the process' watchdog
(:mod:`.deadline`) on the client and ``statement_timeout`` on the server, an
idle connection is watched by TCP keepalives, and the server ends a
transaction left idle (``idle_in_transaction_session_timeout``).
Install with the ``[postgres]`` extra.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from ..conversation import JSONValue
from ..errors import SessionNotFound, StoreError, install_hint
from .base import Durability, Record
from .records import encode, record_key
from .server import ServerLink
from .sql import SqlPlan, SqlPlans, SqlStore, Statement
from .timeouts import DEFAULT_TIMEOUTS, StoreTimeouts

_APPEND = """
WITH moved AS (
    UPDATE contextfold_sessions SET next_seq = next_seq + ?, updated = ? WHERE session_id = ? RETURNING next_seq
)
INSERT INTO contextfold_records (session_id, seq, body, item_key)
SELECT ?, moved.next_seq - ? + new.number - 1, new.body, new.item_key
FROM moved, unnest(?::text[], ?::text[]) WITH ORDINALITY AS new(body, item_key, number)
RETURNING seq
"""

log = logging.getLogger(__name__)

SCHEMA_LOCK = 0x636F6E74  # an advisory lock key: concurrent first connections create the tables one at a time


def postgres_link(url: str, timeouts: StoreTimeouts = DEFAULT_TIMEOUTS) -> ServerLink:
    """The driver (psycopg 3), the URL and the timeouts of a PostgreSQL store, sync or async."""
    return ServerLink(url, module="psycopg", error="Error", unavailable=("OperationalError",),
                      needs=f"the PostgreSQL store needs psycopg 3: {install_hint('postgres')}", timeouts=timeouts)


def libpq_timeouts(timeouts: StoreTimeouts) -> StoreTimeouts:
    """``timeouts`` as libpq keeps them: it connects within whole seconds, at least 2, so the bound counts what
    it will really wait."""
    return replace(timeouts, connect_s=max(2, math.ceil(timeouts.connect_s)))


class PostgresPlans(SqlPlans):
    """What PostgreSQL does its own way, for the sync and the async store alike."""

    placeholder = "%s"
    blob_type = "BYTEA"
    _link: ServerLink
    timeouts: StoreTimeouts
    _durability: Durability

    def _open(self) -> SqlPlan[None]:
        """The tables, created by one first connection at a time."""
        yield Statement("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))
        yield from self._create_schema()

    def _connect_options(self) -> dict[str, JSONValue]:
        """libpq's options for a new connection: autocommit (each write is its own transaction block),
        connected within ``connect_s``; keepalives probe it once idle ``idle_s``, and give up on a silent peer
        after three."""
        timeouts = self.timeouts
        return {"autocommit": True, "connect_timeout": int(timeouts.connect_s), "keepalives": 1,
                "keepalives_idle": math.ceil(timeouts.idle_s), "keepalives_interval": math.ceil(timeouts.operation_s),
                "keepalives_count": 3}

    def _settings(self) -> str:
        """The session settings a new connection is given (SET statements rather than startup ``options``,
        which connection poolers refuse): durability, and the server's side of the timeouts."""
        timeouts = self.timeouts
        return (f"SET synchronous_commit = {'on' if self._durability == 'commit' else 'off'}; "
                f"SET statement_timeout = {math.ceil(timeouts.operation_s * 1000)}; "
                f"SET idle_in_transaction_session_timeout = {math.ceil(timeouts.idle_s * 1000)}")

    def _append_at_once(self, session_id: str, records: Sequence[Record]) -> SqlPlan[list[int]]:
        """One statement, so one round trip and its own transaction: move ``next_seq``, insert the records.

        An item already stored (an append retried after a timeout) makes the
        statement fail whole on the key's unique index (:meth:`_stored_before`);
        the append is then done the careful way (:meth:`SqlPlans._append`), which skips it.
        """
        bodies = [encode(record) for record in records]
        keys = [record_key(record) for record in records]
        inserted = yield Statement(_APPEND, (len(bodies), time.time(), session_id, session_id, len(bodies), bodies, keys))
        seqs = sorted(row[0] for row in inserted.rows)
        if len(seqs) != len(bodies):
            raise SessionNotFound(self.url, session_id)
        return seqs

    def _stored_before(self, error: StoreError) -> bool:
        """Whether an append at once failed because one of its items is stored already."""
        return isinstance(error.__context__, self._link.driver.errors.UniqueViolation)


class PostgresStore(PostgresPlans, SqlStore):
    """Sessions in two tables of a PostgreSQL database."""

    def __init__(self, url: str, *, durability: Durability = "process",
                 timeouts: StoreTimeouts = DEFAULT_TIMEOUTS) -> None:
        self._link = postgres_link(url, timeouts)
        self.url = self._link.url
        self.timeouts = libpq_timeouts(self._link.timeouts)
        self._durability = durability
        self._connection: Any = None
        self._fresh = False  # a connection made since the last transaction: its settings are sent first
        self._one_at_a_time = threading.RLock()  # one transaction on the connection, whichever thread
        try:
            with self._link.connecting("cannot open the database: "):
                self._connect()
                self._run(self._open())
        except StoreError:
            self.close()
            raise

    def _connect(self) -> None:
        """A new connection (each write is its own ``_transaction()`` block, so autocommit), within
        ``connect_s``; its settings are sent with its first transaction."""
        self._connection = self._link.driver.connect(self._link.secret_url, **self._connect_options())
        self._fresh = True

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r})"

    def append(self, session_id: str, records: Sequence[Record]) -> list[int]:
        try:
            return self._run(self._append_at_once(session_id, records), block=False)
        except StoreError as err:
            if not self._stored_before(err):
                raise
            return super().append(session_id, records)

    @contextlib.contextmanager
    def _transaction(self, *, block: bool = True) -> Iterator[Any]:
        """A cursor in a transaction block; without ``block``, each statement is its own transaction
        (autocommit), which saves the BEGIN and COMMIT round trips. The whole of it gets ``operation_s``; one
        at a time on the connection, whichever thread (the summary lease's heartbeat renews from its own)."""
        if self._connection is None:
            raise StoreError(f"{self.url}: the store is closed")
        with self._one_at_a_time, self._link.errors(), contextlib.ExitStack() as stack:
            if self._connection.broken:  # the server went away since: connect again (the caller retries with backoff)
                log.warning("%s: the connection was lost; connecting again", self.url)
                self._connection.close()
                self._connect()
            stack.enter_context(self._link.bounded(self._connection.fileno()))
            if self._fresh:
                self._connection.execute(self._settings())
                self._fresh = False
            if block:
                stack.enter_context(self._connection.transaction())
            yield stack.enter_context(self._connection.cursor())

    def close(self) -> None:
        with self._one_at_a_time:  # not under a transaction of another thread
            if self._connection is not None:
                self._connection.close()
                self._connection = None
