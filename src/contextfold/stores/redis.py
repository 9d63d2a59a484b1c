"""``redis://host:port/db``: sessions in Redis, for workers that already share one (redis-py).

A session is a list of record bodies (its index is the sequence number, so
``RPUSH`` hands out gap-free numbers), a hash with its times and view
revision, a hash from item ids to their sequence numbers (an append retried
after a timeout finds its items there and pushes nothing again), a hash of
its offloaded outputs by digest (deleted with it), and a
member of a sorted set of sessions by last update. Every
write is one Lua script, which Redis runs atomically: an append checks that
the session exists and pushes all its records together; a view change pushes
only if the revision is still the one it was based on (the compare-and-swap
Redis' ``WATCH``/``MULTI`` would give, in one round trip). How durable an
acknowledged append is depends on the server's persistence (``appendonly``,
``appendfsync``): that is the operator's choice. Credentials come from the
URL (``redis://:password@host``) or ``REDIS_PASSWORD``-style settings of the
caller, and are never logged. A server that stops answering never blocks a
caller for good: connecting, every command and the check of a connection
left idle are bounded by the store's
:class:`~contextfold.stores.timeouts.StoreTimeouts` (redis-py's socket
timeouts and health check; its own retries are off, the store's caller
retries within the bound). Each operation is written once, as a plan
(:class:`RedisPlans`, see :mod:`.plans`), run by redis-py's blocking client
here and awaited on ``redis.asyncio``'s by the async store.
Install with the ``[redis]`` extra.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ..errors import BlobNotFound, SessionExists, SessionNotFound, ViewConflict, install_hint
from .base import Record, SessionInfo, blob_digest, checked_digest, verified
from .plans import Plan, PlannedStore, StorePlans, drive
from .records import decode, encode, record_key
from .server import ServerLink
from .timeouts import DEFAULT_TIMEOUTS, StoreTimeouts

T = TypeVar("T")

PREFIX = "contextfold"

_CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
redis.call('HSET', KEYS[1], 'created', ARGV[1], 'updated', ARGV[2], 'view_seq', 0)
redis.call('DEL', KEYS[2], KEYS[4])
redis.call('RPUSH', KEYS[2], ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
return 0
"""

_APPEND = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1} end
local n = tonumber(ARGV[3])
local seqs = {}
for i = 1, n do
    local key = ARGV[3 + i]
    local known = false
    if key ~= '' then known = redis.call('HGET', KEYS[4], key) end
    if known then
        seqs[i] = tonumber(known)
    else
        seqs[i] = redis.call('RPUSH', KEYS[2], ARGV[3 + n + i]) - 1
        if key ~= '' then redis.call('HSET', KEYS[4], key, seqs[i]) end
    end
end
redis.call('HSET', KEYS[1], 'updated', ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[1], ARGV[2])
return seqs
"""

_PUT_BLOB = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2])
return 0
"""

_COMMIT_VIEW = """
local current = redis.call('HGET', KEYS[1], 'view_seq')
if not current then return {-1, 0} end
if tonumber(current) ~= tonumber(ARGV[3]) then return {-2, tonumber(current)} end
local n = redis.call('RPUSH', KEYS[2], ARGV[4])
redis.call('HSET', KEYS[1], 'updated', ARGV[1], 'view_seq', n - 1)
redis.call('ZADD', KEYS[3], ARGV[1], ARGV[2])
return {0, n - 1}
"""


_LEASE = """
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0
"""


def client_timeouts(timeouts: StoreTimeouts) -> dict[str, Any]:
    """redis-py's client arguments for ``timeouts``: no retry of its own, which would multiply every timeout
    (the store's caller retries within ``give_up_s``). For the blocking client; the async one takes the same
    with a retry of ``redis.asyncio``'s (:mod:`.redis_async`)."""
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return {"socket_connect_timeout": timeouts.connect_s, "socket_timeout": timeouts.operation_s,
            "health_check_interval": timeouts.idle_s, "socket_keepalive": True, "retry": Retry(NoBackoff(), 0)}


Op = Callable[["RedisPlans"], Any]
"""One command (or script, or pipeline) of a plan, on the store's client: a value from redis-py's blocking
client, an awaitable from ``redis.asyncio``'s."""
RedisPlan = Plan[Op, T]

SCRIPTS: tuple[tuple[str, str], ...] = (("create", _CREATE), ("append", _APPEND), ("commit_view", _COMMIT_VIEW),
                                        ("lease", _LEASE), ("release", _RELEASE), ("put_blob", _PUT_BLOB))


def redis_link(url: str, timeouts: StoreTimeouts = DEFAULT_TIMEOUTS) -> ServerLink:
    """The driver (redis-py), the URL and the timeouts of a Redis store, sync or async."""
    return ServerLink(url, module="redis", error="RedisError", unavailable=("ConnectionError", "TimeoutError"),
                      needs=f"the Redis store needs redis-py: {install_hint('redis')}", timeouts=timeouts)


class RedisPlans(StorePlans[Op]):
    """What every Redis operation does, as a plan (:mod:`.plans`): the sync :class:`RedisStore` and the
    async store run the same plans, each with its own client (the two clients share their method names).
    A plan's commands need no transaction block to be run in (``block`` of ``_run`` changes nothing here): an
    operation that must be atomic is one Lua script or one ``MULTI`` pipeline."""

    _client: Any
    _scripts: dict[str, Callable[..., Any]]

    def _register(self) -> None:
        self._scripts = {name: self._client.register_script(source) for name, source in SCRIPTS}

    @staticmethod
    def _keys(session_id: str) -> list[str]:
        return [f"{PREFIX}:session:{session_id}", f"{PREFIX}:records:{session_id}", f"{PREFIX}:sessions",
                f"{PREFIX}:keys:{session_id}"]

    @staticmethod
    def _blobs(session_id: str) -> str:
        return f"{PREFIX}:blobs:{session_id}"

    # -- writing
    def _create(self, session_id: str, header: Record) -> RedisPlan[None]:
        now = time.time()
        args = [header.get("created", now), now, session_id, encode(header)]
        done = yield lambda io: io._scripts["create"](self._keys(session_id), args)
        if done == -1:
            raise SessionExists(self.url, session_id)

    def _append(self, session_id: str, records: Sequence[Record]) -> RedisPlan[list[int]]:
        bodies = [encode(record) for record in records]
        keys = [record_key(record) or "" for record in records]
        args = [time.time(), session_id, len(bodies), *keys, *bodies]
        seqs = yield lambda io: io._scripts["append"](self._keys(session_id), args)
        if seqs == [-1]:
            raise SessionNotFound(self.url, session_id)
        return [int(seq) for seq in seqs]

    def _commit_view(self, session_id: str, base: int, record: Record) -> RedisPlan[int]:
        args = [time.time(), session_id, base, encode(record)]
        status, seq = yield lambda io: io._scripts["commit_view"](self._keys(session_id), args)
        if status == -1:
            raise SessionNotFound(self.url, session_id)
        if status == -2:
            raise ViewConflict(self.url, session_id, base, seq)
        return int(seq)

    # -- blobs (a hash a session, from digest to bytes)
    def _put_blob(self, session_id: str, data: bytes) -> RedisPlan[str]:
        """Keep ``data`` for the session (one script: the session must exist); its digest. Written before any
        record that names it, on the same connection, so the server's log holds it first."""
        digest = blob_digest(data)
        keys = [self._keys(session_id)[0], self._blobs(session_id)]
        if (yield lambda io: io._scripts["put_blob"](keys, [digest, bytes(data)])) == -1:
            raise SessionNotFound(self.url, session_id)
        return digest

    def _get_blob(self, session_id: str, digest: str) -> RedisPlan[bytes]:
        digest = checked_digest(self.url, session_id, digest)
        data = yield lambda io: io._client.hget(self._blobs(session_id), digest)
        if data is None:
            raise BlobNotFound(self.url, session_id, digest)
        return verified(self.url, session_id, digest, bytes(data))

    # -- the summary lease (a key that expires on its own if the worker dies)
    def _lease(self, session_id: str, holder: str, seconds: float) -> RedisPlan[bool]:
        """Take (or renew) the session's summary lease for ``seconds``, unless another holder's is still running."""
        args = [holder, max(1, int(seconds * 1000))]
        return bool((yield lambda io: io._scripts["lease"]([f"{PREFIX}:lease:{session_id}"], args)))

    def _release(self, session_id: str, holder: str) -> RedisPlan[None]:
        """Give the lease back, if ``holder`` still has it."""
        yield lambda io: io._scripts["release"]([f"{PREFIX}:lease:{session_id}"], [holder])

    # -- reading
    def _read(self, session_id: str, after: int = -1) -> RedisPlan[list[Record]]:
        meta, records, _, _ = self._keys(session_id)
        bodies = yield lambda io: io._client.lrange(records, after + 1, -1)
        if not bodies and not (yield lambda io: io._client.exists(meta)):
            raise SessionNotFound(self.url, session_id)
        where = f"{self.url}#{session_id}"
        return [decode(where, after + 1 + i, body) for i, body in enumerate(bodies)]

    def _sessions(self) -> RedisPlan[list[SessionInfo]]:
        listed = yield lambda io: io._client.zrange(f"{PREFIX}:sessions", 0, -1)
        ids = [sid.decode() for sid in listed]

        def listing(io: RedisPlans) -> object:
            pipe = io._client.pipeline(transaction=False)
            for session_id in ids:
                meta, records, _, _ = self._keys(session_id)
                pipe.hmget(meta, "created", "updated")
                pipe.llen(records)
            return pipe.execute()

        replies = yield listing
        found = []
        for session_id, (created, updated), length in zip(ids, replies[::2], replies[1::2]):
            if created is not None:
                found.append(SessionInfo(session_id, float(created), float(updated), length))
        return sorted(found, key=lambda info: (info.updated, info.session_id))

    # -- retention
    def _delete(self, session_id: str) -> RedisPlan[None]:
        meta, records, index, keys = self._keys(session_id)

        def deleting(io: RedisPlans) -> object:
            pipe = io._client.pipeline(transaction=True)
            pipe.delete(meta, records, keys, self._blobs(session_id))
            pipe.zrem(index, session_id)
            return pipe.execute()

        deleted, _ = yield deleting
        if not deleted:
            raise SessionNotFound(self.url, session_id)

    def _rewrite(self, session_id: str, records: Mapping[int, Record]) -> RedisPlan[None]:
        key = self._keys(session_id)[1]

        def rewriting(io: RedisPlans) -> object:
            pipe = io._client.pipeline(transaction=True)
            for seq, record in records.items():
                pipe.lset(key, seq, encode(record))
            return pipe.execute()

        yield rewriting


class RedisStore(RedisPlans, PlannedStore[Op]):
    """Sessions in a Redis database, under keys starting ``contextfold:``."""

    def __init__(self, url: str, *, timeouts: StoreTimeouts = DEFAULT_TIMEOUTS) -> None:
        self._link = redis_link(url, timeouts)
        self.url = self._link.url
        self.timeouts = self._link.timeouts
        with self._link.connecting():
            self._client = self._link.driver.Redis.from_url(self._link.secret_url, **client_timeouts(self.timeouts))
            self._client.ping()
            self._register()

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r})"

    def _run(self, plan: RedisPlan[T], *, block: bool = True) -> T:
        with self._link.errors():
            return drive(plan, lambda op: op(self))

    def close(self) -> None:
        client = getattr(self, "_client", None)
        if client is not None:
            client.close()
            self._client = None
