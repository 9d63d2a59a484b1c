"""Redis for an asyncio loop: ``redis.asyncio``, the plans of :class:`~.redis.RedisStore`.

Every operation is the same plan the blocking store runs
(:class:`~.redis.RedisPlans`: the same keys, the same Lua scripts, the same
record bodies), awaited on the async client, whose connection pool serves
every session of the loop. How long the server may take is
:class:`~.timeouts.StoreTimeouts` (the blocking stores' value, also read from
the URL): connecting and each command are bounded by the client's socket
timeouts (a command with no answer is :class:`~contextfold.errors.StoreUnavailable`),
and a connection idle longer than ``idle_s`` is checked before it is used.
Open it with ``await AsyncRedisStore.open(url)``; ``await store.close()`` when done.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from ..errors import StoreError
from .asynchronous import LoopBridge
from .base import Store
from .plans import AsyncPlannedStore, adrive
from .redis import Op, RedisPlan, RedisPlans, client_timeouts, redis_link
from .timeouts import DEFAULT_TIMEOUTS, StoreTimeouts

T = TypeVar("T")


class AsyncRedisStore(RedisPlans, AsyncPlannedStore[Op]):
    """Sessions under the keys of :class:`~.redis.RedisStore`, reached without blocking the loop."""

    def __init__(self, url: str, *, timeouts: StoreTimeouts = DEFAULT_TIMEOUTS) -> None:
        """Not connected yet: use :meth:`open`."""
        self._link = redis_link(url, timeouts)
        self.url = self._link.url
        self.timeouts = self._link.timeouts
        self._loop: asyncio.AbstractEventLoop | None = None
        with self._link.connecting():
            from redis import asyncio as driver  # the link imported redis: this part of it is there too
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff

            options = {**client_timeouts(self.timeouts), "retry": Retry(NoBackoff(), 0)}  # the async client's retry
            self._client: Any = driver.Redis.from_url(self._link.secret_url, **options)
            self._register()

    @classmethod
    async def open(cls, url: str, *, timeouts: StoreTimeouts = DEFAULT_TIMEOUTS) -> AsyncRedisStore:
        """The store at ``url``; :class:`StoreUnavailable` if the server does not answer within the timeouts."""
        store = cls(url, timeouts=timeouts)
        store._loop = asyncio.get_running_loop()
        try:
            with store._link.connecting():
                await store._client.ping()
        except BaseException:
            await store.close()
            raise
        return store

    def __repr__(self) -> str:
        return f"AsyncRedisStore({self.url!r})"

    async def _run(self, plan: RedisPlan[T], *, block: bool = True) -> T:
        with self._link.errors():
            if self._client is None:
                raise StoreError(f"{self.url}: the store is closed")
            return await adrive(plan, self._await)

    async def _await(self, op: Any) -> Any:
        return await op(self)

    def bridged(self) -> Store:
        """This store for a worker thread: each call awaited on the loop it was opened on."""
        if self._loop is None:
            raise StoreError(f"{self.url}: the store is not open (await AsyncRedisStore.open(url))")
        return LoopBridge(self, self._loop)

    async def close(self) -> None:
        """Close the client and its connections. Safe to call twice."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
