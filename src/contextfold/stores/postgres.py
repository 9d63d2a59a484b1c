"""``postgresql://user@host:port/db``: sessions shared by many workers on many machines (psycopg 3).

Credentials come from the URL or from libpq's environment (``PGPASSWORD``,
``PGPASSFILE``, ``PGUSER``...), and never reach a log or a message: the store
names itself by the URL with its password masked, and driver errors are
scrubbed of it. ``?durability=`` (see :data:`~contextfold.stores.base.DURABILITIES`)
sets ``synchronous_commit`` for the store's connection: off by default (an
acknowledged append survives any writer's crash), on with ``commit``.
Install with the ``[postgres]`` extra.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import StoreError
from .base import Durability, redact, scrub
from .sql import SCHEMA, SqlStore

log = logging.getLogger(__name__)

SCHEMA_LOCK = 0x636F6E74  # an advisory lock key: concurrent first connections create the tables one at a time


class PostgresStore(SqlStore):
    """Sessions in two tables of a PostgreSQL database."""

    placeholder = "%s"

    def __init__(self, url: str, *, durability: Durability = "process") -> None:
        try:
            import psycopg
        except ImportError as err:
            raise StoreError("the PostgreSQL store needs psycopg 3: pip install 'contextfold[postgres]'") from err
        self._error = psycopg.Error
        self._secret_url = url
        self.url = redact(url)
        self._connection: Any = None
        log.debug("connecting to %s", self.url)
        try:
            self._connection = psycopg.connect(url, autocommit=True)  # each write is its own transaction() block
            self._connection.execute(f"SET synchronous_commit = {'on' if durability == 'commit' else 'off'}")
            with self._transaction() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                for statement in SCHEMA:
                    cursor.execute(statement)
        except psycopg.Error as err:
            self.close()
            raise StoreError(f"{self.url}: cannot open the database: {scrub(str(err), url)}") from None

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r})"

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        if self._connection is None:
            raise StoreError(f"{self.url}: the store is closed")
        try:
            with self._connection.transaction(), self._connection.cursor() as cursor:
                yield cursor
        except self._error as err:
            raise StoreError(f"{self.url}: {scrub(str(err), self._secret_url)}") from None

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
