"""Opening the store a URL names: the one module that knows every backend.

Kept apart from :mod:`.base` (which every backend imports) so that no
backend and the protocol import each other; the backends are imported only
when their URL is opened, so each optional driver stays optional.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

from ..errors import StoreError
from ..redaction import redact_url
from .asynchronous import AsyncStore, OffLoopStore
from .base import DURABILITIES, Durability, Store


LIBPQ_CONNINFO = re.compile(r"\s*(host|hostaddr|port|dbname|user|password|service|sslmode)\s*=", re.IGNORECASE)
"""The start of a libpq ``key=value`` connection string (``host=db password=...``), which is no store location."""


def open_store(location: str | os.PathLike[str] | Store | AsyncStore, *, read_only: bool = False) -> Store:
    """The store a URL names (a :class:`Store` is returned as it is; an :class:`~.asynchronous.AsyncStore`
    as a worker thread of its loop reaches it, :meth:`~.asynchronous.AsyncStore.bridged`); ``read_only`` for a
    reader that writes nothing (a SQLite file is then opened ``mode=ro``: one this user may not write can still be read).

    * a folder path, or ``jsonl:///abs/folder`` (``file:///abs/folder``) or ``jsonl://rel/folder``: one
      transcript file a session (today's layout);
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
        raise StoreError(f"{redact_url(text)!r}: a store's location cannot hold a NUL byte")
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if not scheme and LIBPQ_CONNINFO.match(text):  # else a folder named after it, password and all
        raise StoreError(f"{redact_url(text)!r} is a libpq connection string: name a PostgreSQL store by a URL, "
                         "postgresql://user@host:port/db (other settings as ?name=value)")
    if scheme in ("", "jsonl", "file"):
        from .jsonl import JsonlStore

        return JsonlStore(Path(_folder_of(text) if scheme else text))
    if scheme == "sqlite":
        from .sqlite import SqliteStore

        url, durability = split_durability(text)
        return SqliteStore(Path(_path_of(url)), durability=durability, read_only=read_only)
    if scheme in ("postgresql", "postgres"):
        from .postgres import PostgresStore

        url, durability = split_durability(text)
        return PostgresStore(url, durability=durability)
    if scheme in ("redis", "rediss"):
        from .redis import RedisStore

        return RedisStore(text)
    raise StoreError(f"unknown store {redact_url(text)!r}: use a folder, sqlite:///, postgresql:// or redis://")


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
        return Path(_folder_of(text) if scheme else text)
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


def _folder_of(url: str) -> str:
    """The folder of a ``jsonl://`` or ``file://`` URL, read as a file URL is: ``jsonl:///srv/x`` is ``/srv/x``,
    ``jsonl://x`` is ``x`` (relative), ``file://localhost/srv/x`` is ``/srv/x``. (A SQLite URL differs: its
    ``sqlite:///x.db`` is relative, the convention SQLAlchemy set.)"""
    scheme, rest = url.split("://", 1)
    if scheme.lower() == "file":
        host, _, path = rest.partition("/")
        if host not in ("", "localhost"):
            raise StoreError(f"{url!r}: a file URL names a folder of this machine: file:///abs/folder")
        rest = f"/{path}"
    return "/" + rest.lstrip("/") if rest.startswith("/") else rest or "."


def _path_of(url: str) -> str:
    """The path of a ``scheme:///path`` URL: ``sqlite:///x.db`` is ``x.db``, ``sqlite:////tmp/x.db`` is ``/tmp/x.db``."""
    rest = url.split("://", 1)[1]
    if not rest.startswith("/"):
        raise StoreError(f"{redact_url(url)!r}: a file store URL has three slashes, then the path (sqlite:///sessions.db)")
    return rest[1:] or "."
