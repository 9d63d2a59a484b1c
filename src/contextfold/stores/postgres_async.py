"""PostgreSQL for an asyncio loop: psycopg 3's ``AsyncConnection``, the plans of :class:`~.postgres.PostgresStore`.

Every operation is the same plan of statements the blocking store runs
(:class:`~.postgres.PostgresPlans`), awaited on an async cursor, so the loop
never waits on the database. One store serves every session of the loop: it
keeps up to ``connections`` connections (a transaction holds one from its
first statement to its commit; more concurrent operations wait their turn,
on the loop). How long the server may take is :class:`~.timeouts.StoreTimeouts`
(the blocking stores' value, also read from the URL): connecting is bounded
by libpq's ``connect_timeout``, an operation by ``asyncio.wait_for`` on the
client (its connection is then dropped, and the operation is
:class:`~contextfold.errors.StoreUnavailable`) and ``statement_timeout`` on
the server, and the server ends a transaction left idle. Open it with
``await AsyncPostgresStore.open(url)``; ``await store.close()`` when done.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any, TypeVar

from ..errors import StoreError, StoreUnavailable
from .base import Durability, Record, Store
from .asynchronous import LoopBridge
from .plans import AsyncPlannedStore, adrive
from .postgres import PostgresPlans, libpq_timeouts, postgres_link
from .sql import Answer, SqlPlan, Statement, answer_of, returns_rows
from .timeouts import DEFAULT_TIMEOUTS, StoreTimeouts

log = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_CONNECTIONS = 8
"""How many connections one async store opens at most (PostgreSQL's default allows 100 in all)."""


class AsyncPostgresStore(PostgresPlans, AsyncPlannedStore[Statement]):
    """Sessions in the tables of :class:`~.postgres.PostgresStore`, reached without blocking the loop."""

    def __init__(self, url: str, *, durability: Durability = "process", timeouts: StoreTimeouts = DEFAULT_TIMEOUTS,
                 connections: int = DEFAULT_CONNECTIONS) -> None:
        """Not connected yet: use :meth:`open`."""
        if isinstance(connections, bool) or not isinstance(connections, int) or connections < 1:
            raise StoreError(f"connections must be a whole number of at least 1, not {connections!r}")
        self._link = postgres_link(url, timeouts)
        self.url = self._link.url
        self.timeouts = libpq_timeouts(self._link.timeouts)
        self._durability = durability
        self._size = connections
        self._opened = 0  # connections made and not dropped
        self._idle: asyncio.Queue[Any] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    @classmethod
    async def open(cls, url: str, *, durability: Durability = "process", timeouts: StoreTimeouts = DEFAULT_TIMEOUTS,
                   connections: int = DEFAULT_CONNECTIONS) -> AsyncPostgresStore:
        """The store at ``url``, its tables created if they are not there; :class:`StoreUnavailable` if the
        server cannot be reached within the timeouts."""
        store = cls(url, durability=durability, timeouts=timeouts, connections=connections)
        store._loop = asyncio.get_running_loop()
        try:
            with store._link.connecting("cannot open the database: "):
                await store._run(store._open())
        except BaseException:
            await store.close()
            raise
        return store

    def __repr__(self) -> str:
        return f"AsyncPostgresStore({self.url!r})"

    async def _connect(self) -> Any:
        """A new connection with the blocking store's options and settings (durability, the server's side of
        the timeouts)."""
        connection = await self._link.driver.AsyncConnection.connect(self._link.secret_url, **self._connect_options())
        try:
            await connection.execute(self._settings())
        except BaseException:
            await connection.close()
            raise
        return connection

    async def _acquire(self) -> Any:
        """An idle connection, a new one while fewer than ``connections`` are open, else the next one freed."""
        if self._closed:
            raise StoreError(f"{self.url}: the store is closed")
        if self._idle.empty() and self._opened < self._size:
            self._opened += 1
            try:
                return await asyncio.wait_for(self._connect(), self.timeouts.attempt_s)
            except BaseException:
                self._opened -= 1
                raise
        return await self._idle.get()

    async def _give_back(self, connection: Any, usable: bool) -> None:
        if usable and not self._closed:
            self._idle.put_nowait(connection)
            return
        self._opened -= 1
        with contextlib.suppress(Exception):
            await connection.close()

    async def _run(self, plan: SqlPlan[T], *, block: bool = True) -> T:
        """``plan`` on one connection, in one transaction block (without ``block``: each statement on its own),
        within the operation timeout; the driver's errors as :class:`StoreError`, the password scrubbed."""
        with self._link.errors():
            connection = await self._acquire()
            timed_out = False
            try:
                return await asyncio.wait_for(self._on(connection, plan, block), self.timeouts.operation_s)
            except asyncio.TimeoutError:
                timed_out = True
                log.warning("%s: no answer within %g s; the connection is dropped", self.url, self.timeouts.operation_s)
                raise StoreUnavailable(f"{self.url}: no answer within {self.timeouts.operation_s:g} s") from None
            finally:  # a plan's typed error (a conflict, a session not there) leaves the connection usable
                await self._give_back(connection, not (timed_out or connection.broken or connection.closed))

    async def _on(self, connection: Any, plan: SqlPlan[T], block: bool) -> T:
        async with contextlib.AsyncExitStack() as stack:
            if block:
                await stack.enter_async_context(connection.transaction())
            cursor = await stack.enter_async_context(connection.cursor())
            return await adrive(plan, lambda statement: self._execute(cursor, statement))

    async def _execute(self, cursor: Any, statement: Statement) -> Answer:
        if statement.many:
            await cursor.executemany(self._sql(statement.sql), statement.params)
        else:
            await cursor.execute(self._sql(statement.sql), statement.params)
        return answer_of(cursor, await cursor.fetchall() if returns_rows(cursor) else [])

    async def append(self, session_id: str, records: Sequence[Record]) -> list[int]:
        try:
            return await self._run(self._append_at_once(session_id, records), block=False)
        except StoreError as err:
            if not self._stored_before(err):
                raise
            return await self._run(self._append(session_id, records))

    def bridged(self) -> Store:
        """This store for a worker thread: each call awaited on the loop it was opened on."""
        if self._loop is None:
            raise StoreError(f"{self.url}: the store is not open (await AsyncPostgresStore.open(url))")
        return LoopBridge(self, self._loop)

    async def close(self) -> None:
        """Close every idle connection; one in use is closed when it is given back. Safe to call twice."""
        self._closed = True
        while not self._idle.empty():
            connection = self._idle.get_nowait()
            self._opened -= 1
            with contextlib.suppress(Exception):
                await connection.close()
