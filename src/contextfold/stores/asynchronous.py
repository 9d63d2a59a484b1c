"""Stores for an asyncio loop: nothing a store does ever blocks the loop.

An agent served by an async web server runs many sessions on one event loop;
a blocking ``fsync`` or database round trip on that loop stalls every one of
them. :class:`AsyncStore` is the :class:`~contextfold.stores.Store` protocol
with every operation awaitable:

* PostgreSQL on psycopg's ``AsyncConnection`` (:mod:`.postgres_async`) and
  Redis on ``redis.asyncio`` (:mod:`.redis_async`) await their round trips;
  they run the very plans of their blocking twins (:mod:`.plans`);
* a file store (the JSONL folder, SQLite) has no async client: :class:`OffLoopStore`
  runs each of its calls in a worker thread (``asyncio.to_thread``).

:func:`~contextfold.stores.opening.open_async_store` opens one from a URL.
A :class:`~contextfold.context.Context` given an async store does its
decisions off the loop (its async API: ``aadd``, ``aprepare``,
``acompact``...) and reaches the store from there through
:meth:`AsyncStore.bridged`: a file store directly, a server store through
:class:`LoopBridge`, which hands each call to the loop the store's client
lives on and waits for it off that loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from ..errors import StoreError, StoreUnavailable
from .base import Record, SessionInfo, Store

T = TypeVar("T")


@runtime_checkable
class AsyncStore(Protocol):
    """:class:`~contextfold.stores.Store` for an asyncio loop: the same operations, each awaited; and
    :meth:`bridged`, the store as a worker thread reaches it."""

    url: str
    exclusive: bool

    async def create(self, session_id: str, header: Record) -> None: ...

    async def append(self, session_id: str, records: Sequence[Record]) -> list[int]: ...

    async def commit_view(self, session_id: str, base: int, record: Record) -> int: ...

    async def read(self, session_id: str, after: int = -1) -> list[Record]: ...

    async def sessions(self) -> list[SessionInfo]: ...

    async def delete(self, session_id: str) -> None: ...

    async def rewrite(self, session_id: str, records: Mapping[int, Record]) -> None: ...

    async def put_blob(self, session_id: str, data: bytes) -> str: ...

    async def get_blob(self, session_id: str, digest: str) -> bytes: ...

    async def lease(self, session_id: str, holder: str, seconds: float) -> bool: ...

    async def release(self, session_id: str, holder: str) -> None: ...

    async def close(self) -> None: ...

    def bridged(self) -> Store:
        """This store as a blocking :class:`~contextfold.stores.Store` for code running in a worker thread
        (never on the loop); closing it leaves this store open."""


class OffLoopStore:
    """A blocking file store (the JSONL folder, SQLite) as an :class:`AsyncStore`: each call in a worker thread.

    Calls are made one at a time (a lock), whichever thread makes them: a file
    store's connection or file handles are not for two threads at once.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self.url = store.url
        self.exclusive = store.exclusive
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OffLoopStore({self.store!r})"

    async def _off_loop(self, name: str, *args: Any) -> Any:
        return await asyncio.to_thread(_locked(self.store, name, self._lock), *args)

    async def create(self, session_id: str, header: Record) -> None:
        await self._off_loop("create", session_id, header)

    async def append(self, session_id: str, records: Sequence[Record]) -> list[int]:
        result: list[int] = await self._off_loop("append", session_id, records)
        return result

    async def commit_view(self, session_id: str, base: int, record: Record) -> int:
        result: int = await self._off_loop("commit_view", session_id, base, record)
        return result

    async def read(self, session_id: str, after: int = -1) -> list[Record]:
        result: list[Record] = await self._off_loop("read", session_id, after)
        return result

    async def sessions(self) -> list[SessionInfo]:
        result: list[SessionInfo] = await self._off_loop("sessions")
        return result

    async def delete(self, session_id: str) -> None:
        await self._off_loop("delete", session_id)

    async def rewrite(self, session_id: str, records: Mapping[int, Record]) -> None:
        await self._off_loop("rewrite", session_id, records)

    async def put_blob(self, session_id: str, data: bytes) -> str:
        result: str = await self._off_loop("put_blob", session_id, data)
        return result

    async def get_blob(self, session_id: str, digest: str) -> bytes:
        result: bytes = await self._off_loop("get_blob", session_id, digest)
        return result

    async def lease(self, session_id: str, holder: str, seconds: float) -> bool:
        result: bool = await self._off_loop("lease", session_id, holder, seconds)
        return result

    async def release(self, session_id: str, holder: str) -> None:
        await self._off_loop("release", session_id, holder)

    async def close(self) -> None:
        await self._off_loop("close")

    def bridged(self) -> Store:
        """The file store itself for a worker thread, its calls one at a time with this store's, and a
        session closing it leaving it open (its owner closes it)."""
        return _Lent(self.store, self._lock)


def _locked(store: Store, name: str, lock: threading.Lock) -> Callable[..., Any]:
    """``store``'s method ``name``, called holding ``lock``; a :class:`StoreError` if the store has none."""
    method = getattr(store, name, None)
    if method is None:
        raise StoreError(f"{store.url}: this store has no {name}()")

    def call(*args: Any) -> Any:
        with lock:
            return method(*args)

    return call


class _Lent:
    """A file store lent to a session: each call holds the lock of the :class:`OffLoopStore` it belongs to,
    and :meth:`close` is left to its owner."""

    def __init__(self, store: Store, lock: threading.Lock) -> None:
        self._store = store
        self._lock = lock

    def close(self) -> None:
        """Nothing: the store belongs to whoever opened it."""

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._store, name)
        return _locked(self._store, name, self._lock) if callable(value) else value


class LoopBridge:
    """An async server store as a blocking :class:`~contextfold.stores.Store` for a worker thread: each call is
    a coroutine run on the loop the store's client lives on (``run_coroutine_threadsafe``), waited for in the
    thread. Called on that loop's own thread it would wait for itself: that is a :class:`StoreError` saying to
    use the async API instead. :meth:`close` leaves the store open (its owner closes it)."""

    def __init__(self, store: AsyncStore, loop: asyncio.AbstractEventLoop) -> None:
        self.store = store
        self.url = store.url
        self.exclusive = store.exclusive
        self._loop = loop

    def __repr__(self) -> str:
        return f"LoopBridge({self.store!r})"

    def _wait(self, coroutine: Coroutine[object, object, T]) -> T:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            coroutine.close()
            raise StoreError(f"{self.url}: an async store cannot be used by a blocking call on its own event loop; "
                             "use the async API (Context.acreate, aadd, aprepare, acompact, aclose)")
        if self._loop.is_closed() or not self._loop.is_running():
            coroutine.close()
            raise StoreUnavailable(f"{self.url}: the event loop of this async store is not running")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def create(self, session_id: str, header: Record) -> None:
        self._wait(self.store.create(session_id, header))

    def append(self, session_id: str, records: Sequence[Record]) -> list[int]:
        return self._wait(self.store.append(session_id, records))

    def commit_view(self, session_id: str, base: int, record: Record) -> int:
        return self._wait(self.store.commit_view(session_id, base, record))

    def read(self, session_id: str, after: int = -1) -> list[Record]:
        return self._wait(self.store.read(session_id, after))

    def sessions(self) -> list[SessionInfo]:
        return self._wait(self.store.sessions())

    def delete(self, session_id: str) -> None:
        self._wait(self.store.delete(session_id))

    def rewrite(self, session_id: str, records: Mapping[int, Record]) -> None:
        self._wait(self.store.rewrite(session_id, records))

    def put_blob(self, session_id: str, data: bytes) -> str:
        return self._wait(self.store.put_blob(session_id, data))

    def get_blob(self, session_id: str, digest: str) -> bytes:
        return self._wait(self.store.get_blob(session_id, digest))

    def lease(self, session_id: str, holder: str, seconds: float) -> bool:
        return self._wait(self.store.lease(session_id, holder, seconds))

    def release(self, session_id: str, holder: str) -> None:
        self._wait(self.store.release(session_id, holder))

    def close(self) -> None:
        """Nothing: the async store belongs to whoever opened it (``await store.close()``)."""
