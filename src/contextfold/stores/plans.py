"""A store operation written once, run by a blocking client or awaited on an async one.

The SQL and Redis stores have a synchronous class (for an agent loop in a
thread) and an asynchronous one (for an asyncio loop: psycopg's
``AsyncConnection``, ``redis.asyncio``). What an operation does (which
statements or commands, in which order, what their answers mean, which
typed error a refusal is) is a *plan*: a generator that yields each step of
I/O and is sent its answer. :func:`drive` runs a plan with a blocking client,
:func:`adrive` awaits each step; only the client at the edge differs, so the
two classes can never disagree on what an operation means.

Which plan serves which operation of a store, and whether it needs a
transaction block, is said once too: :class:`PlannedStore` for the blocking
stores, :class:`AsyncPlannedStore` for the async ones (the same list, each
call awaited), both over the plans a :class:`StorePlans` subclass writes
(:class:`~.sql.SqlPlans`, :class:`~.redis.RedisPlans`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from typing import Any, Generic, TypeVar

from .base import Record, SessionInfo

T = TypeVar("T")
Step = TypeVar("Step")

Plan = Generator[Step, Any, T]
"""A store operation: yields steps of I/O, is sent each one's answer, returns the operation's result."""


def drive(plan: Plan[Step, T], execute: Callable[[Step], object]) -> T:
    """``plan`` run to its end, each step done by ``execute`` (blocking); its result."""
    try:
        step = next(plan)
        while True:
            step = plan.send(execute(step))
    except StopIteration as finished:
        result: T = finished.value
        return result


async def adrive(plan: Plan[Step, T], execute: Callable[[Step], Awaitable[object]]) -> T:
    """``plan`` run to its end, each step awaited on ``execute``; its result."""
    try:
        step = next(plan)
        while True:
            step = plan.send(await execute(step))
    except StopIteration as finished:
        result: T = finished.value
        return result


class StorePlans(Generic[Step]):
    """The plan of each store operation, written by a subclass for its kind of server (statements or commands).

    ``Step`` is what a plan of that server yields (a SQL ``Statement``, a Redis ``Op``), so a store's ``_run`` is
    typed for the steps it can execute.

    Reads (``_get_blob``, ``_read``, ``_sessions``) are run without a transaction block (see ``block`` of
    :meth:`PlannedStore._run`): each of their steps stands alone.
    """

    exclusive = False
    url: str

    def _create(self, session_id: str, header: Record) -> Plan[Step, None]:
        raise NotImplementedError

    def _append(self, session_id: str, records: Sequence[Record]) -> Plan[Step, list[int]]:
        raise NotImplementedError

    def _commit_view(self, session_id: str, base: int, record: Record) -> Plan[Step, int]:
        raise NotImplementedError

    def _put_blob(self, session_id: str, data: bytes) -> Plan[Step, str]:
        raise NotImplementedError

    def _get_blob(self, session_id: str, digest: str) -> Plan[Step, bytes]:
        raise NotImplementedError

    def _lease(self, session_id: str, holder: str, seconds: float) -> Plan[Step, bool]:
        raise NotImplementedError

    def _release(self, session_id: str, holder: str) -> Plan[Step, None]:
        raise NotImplementedError

    def _read(self, session_id: str, after: int = -1) -> Plan[Step, list[Record]]:
        raise NotImplementedError

    def _sessions(self) -> Plan[Step, list[SessionInfo]]:
        raise NotImplementedError

    def _delete(self, session_id: str) -> Plan[Step, None]:
        raise NotImplementedError

    def _rewrite(self, session_id: str, records: Mapping[int, Record]) -> Plan[Step, None]:
        raise NotImplementedError


class PlannedStore(StorePlans[Step]):
    """A blocking :class:`~contextfold.stores.Store` whose every operation is its plan, run by :meth:`_run`."""

    def _run(self, plan: Plan[Step, T], *, block: bool = True) -> T:
        """``plan`` run to its end on the store's client (:func:`drive`); ``block=False``: without a transaction
        block, for a read (a client with no such blocks ignores it)."""
        raise NotImplementedError

    def create(self, session_id: str, header: Record) -> None:
        self._run(self._create(session_id, header))

    def append(self, session_id: str, records: Sequence[Record]) -> list[int]:
        return self._run(self._append(session_id, records))

    def commit_view(self, session_id: str, base: int, record: Record) -> int:
        return self._run(self._commit_view(session_id, base, record))

    def put_blob(self, session_id: str, data: bytes) -> str:
        return self._run(self._put_blob(session_id, data))

    def get_blob(self, session_id: str, digest: str) -> bytes:
        return self._run(self._get_blob(session_id, digest), block=False)

    def lease(self, session_id: str, holder: str, seconds: float) -> bool:
        return self._run(self._lease(session_id, holder, seconds))

    def release(self, session_id: str, holder: str) -> None:
        self._run(self._release(session_id, holder))

    def read(self, session_id: str, after: int = -1) -> list[Record]:
        return self._run(self._read(session_id, after), block=False)

    def sessions(self) -> list[SessionInfo]:
        return self._run(self._sessions(), block=False)

    def delete(self, session_id: str) -> None:
        self._run(self._delete(session_id))

    def rewrite(self, session_id: str, records: Mapping[int, Record]) -> None:
        self._run(self._rewrite(session_id, records))


class AsyncPlannedStore(StorePlans[Step]):
    """:class:`PlannedStore` for an asyncio loop: the same plans, each awaited by :meth:`_run` (:func:`adrive`)."""

    async def _run(self, plan: Plan[Step, T], *, block: bool = True) -> T:
        raise NotImplementedError

    async def create(self, session_id: str, header: Record) -> None:
        await self._run(self._create(session_id, header))

    async def append(self, session_id: str, records: Sequence[Record]) -> list[int]:
        return await self._run(self._append(session_id, records))

    async def commit_view(self, session_id: str, base: int, record: Record) -> int:
        return await self._run(self._commit_view(session_id, base, record))

    async def put_blob(self, session_id: str, data: bytes) -> str:
        return await self._run(self._put_blob(session_id, data))

    async def get_blob(self, session_id: str, digest: str) -> bytes:
        return await self._run(self._get_blob(session_id, digest), block=False)

    async def lease(self, session_id: str, holder: str, seconds: float) -> bool:
        return await self._run(self._lease(session_id, holder, seconds))

    async def release(self, session_id: str, holder: str) -> None:
        await self._run(self._release(session_id, holder))

    async def read(self, session_id: str, after: int = -1) -> list[Record]:
        return await self._run(self._read(session_id, after), block=False)

    async def sessions(self) -> list[SessionInfo]:
        return await self._run(self._sessions(), block=False)

    async def delete(self, session_id: str) -> None:
        await self._run(self._delete(session_id))

    async def rewrite(self, session_id: str, records: Mapping[int, Record]) -> None:
        await self._run(self._rewrite(session_id, records))
