"""Opening the store a URL names: the one module that knows every backend.

Kept apart from :mod:`.base` (which every backend imports) so that no
backend and the protocol import each other; the backends are imported only
when their URL is opened, so each optional driver stays optional.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

from ..errors import StoreError
from .asynchronous import AsyncStore, OffLoopStore
from .base import DURABILITIES, Durability, Store, redact


def open_store(location: str | os.PathLike[str] | Store | AsyncStore) -> Store:
    """The store a URL names (a :class:`Store` is returned as it is; an :class:`~.asynchronous.AsyncStore`
    as a worker thread of its loop reaches it, :meth:`~.asynchronous.AsyncStore.bridged`).

    * a folder path, or ``jsonl:///path/to/folder``: one transcript file a session (today's layout);
    * ``sqlite:///path/to/sessions.db`` (``sqlite:////abs/path`` and ``sqlite:///rel/path`` alike);
    * ``postgresql://user@host:port/db`` (psycopg 3, extra ``[postgres]``; libpq reads ``PGPASSWORD`` etc.);
    * ``redis://host:port/db`` (redis-py, extra ``[redis]``); ``rediss://`` for TLS.
    """
    if isinstance(location, AsyncStore):  # first: its methods have the names of a Store's
        return location.bridged()
    if isinstance(location, Store):
        return location
    text = os.fspath(location)
    if "\0" in text:  # no system call takes one, nor a driver: refused before a backend raises ValueError for it
        raise StoreError(f"{redact(text)!r}: a store's location cannot hold a NUL byte")
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme in ("", "jsonl", "file"):
        from .jsonl import JsonlStore

        return JsonlStore(Path(_path_of(text) if scheme else text))
    if scheme == "sqlite":
        from .sqlite import SqliteStore

        url, durability = split_durability(text)
        return SqliteStore(Path(_path_of(url)), durability=durability)
    if scheme in ("postgresql", "postgres"):
        from .postgres import PostgresStore

        url, durability = split_durability(text)
        return PostgresStore(url, durability=durability)
    if scheme in ("redis", "rediss"):
        from .redis import RedisStore

        return RedisStore(text)
    raise StoreError(f"unknown store {redact(text)!r}: use a folder, sqlite:///, postgresql:// or redis://")


async def open_async_store(location: str | os.PathLike[str] | Store | AsyncStore) -> AsyncStore:
    """The :class:`~.asynchronous.AsyncStore` a URL names, for an asyncio loop: PostgreSQL on psycopg's async
    connection, Redis on ``redis.asyncio``, a file store (a folder, ``jsonl://``, ``sqlite://``) in worker
    threads; a blocking :class:`Store` is given worker threads too, an async one is returned as it is.
    Close it with ``await store.close()``."""
    if isinstance(location, AsyncStore):
        return location
    if isinstance(location, Store):
        return OffLoopStore(location)
    text = os.fspath(location)
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme in ("postgresql", "postgres"):
        from .postgres_async import AsyncPostgresStore

        url, durability = split_durability(text)
        return await AsyncPostgresStore.open(url, durability=durability)
    if scheme in ("redis", "rediss"):
        from .redis_async import AsyncRedisStore

        return await AsyncRedisStore.open(text)
    return OffLoopStore(await asyncio.to_thread(open_store, text))


def local_path(location: str | os.PathLike[str]) -> Path | None:
    """The file (SQLite) or folder (JSONL) a local store's location names; ``None`` for a server's URL."""
    text = os.fspath(location)
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme in ("", "jsonl", "file"):
        return Path(_path_of(text) if scheme else text)
    if scheme == "sqlite":
        return Path(_path_of(split_durability(text)[0]))
    return None


def split_durability(url: str) -> tuple[str, Durability]:
    """``url`` without its ``durability`` query parameter, and that parameter (``"process"`` when absent)."""
    base, _, query = url.partition("?")
    pairs = parse_qsl(query, keep_blank_values=True)
    chosen = [value for key, value in pairs if key == "durability"]
    durability = chosen[-1] if chosen else "process"
    if durability not in DURABILITIES:
        raise StoreError(f"durability must be one of {DURABILITIES}, not {durability!r}")
    rest = urlencode([(key, value) for key, value in pairs if key != "durability"])
    return (f"{base}?{rest}" if rest else base), durability  # type: ignore[return-value]


def _path_of(url: str) -> str:
    """The path of a ``scheme:///path`` URL: ``sqlite:///x.db`` is ``x.db``, ``sqlite:////tmp/x.db`` is ``/tmp/x.db``."""
    rest = url.split("://", 1)[1]
    if not rest.startswith("/"):
        raise StoreError(f"{url!r}: a file store URL has three slashes, then the path (sqlite:///sessions.db)")
    return rest[1:] or "."
