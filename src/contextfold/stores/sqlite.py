"""``sqlite:///path.db``: the embedded store, from the standard library, for a service on one machine.

WAL mode lets readers go on while one writer commits; every write takes the
database lock first (``BEGIN IMMEDIATE``), so processes appending to one
session queue up instead of failing. How durable an acknowledged append is
follows ``?durability=`` (see :data:`~contextfold.stores.base.DURABILITIES`):
by default it survives any writer's crash, with ``commit`` a power loss too.
SQLite's lock is not queued: a waiting writer polls, so under heavy
contention one writer can wait while others commit again and again; a view
change that waits that way is more often refused (and re-decided, or raised
after :data:`~contextfold.context.MAX_VIEW_CONFLICTS` refusals) than on
PostgreSQL, whose row locks are granted in order. The database file (and so
its ``-wal`` and ``-shm`` companions, which SQLite creates with the same mode)
is owner-only, and a symbolic link in its place is refused, as for transcripts.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import StoreError, StoreUnavailable
from .base import Durability
from .sql import SqlStore

BUSY_TIMEOUT_S = 60.0
"""How long a write waits for another process's transaction before it fails."""


class SqliteStore(SqlStore):
    """Sessions in one SQLite database file."""

    def __init__(self, path: str | os.PathLike[str], *, durability: Durability = "process",
                 read_only: bool = False) -> None:
        """``read_only`` opens an existing database for reading only (SQLite's ``mode=ro``): nothing is
        created or set up, so a file this user may read but not write (another user's, on read-only media)
        can still be listed, shown and exported; a write is then a :class:`StoreError`."""
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self._connection: sqlite3.Connection | None = None
        self._one_at_a_time = threading.RLock()
        try:
            if read_only:
                self._connection = _read_only(self.path)
                return
            _create_owner_only(self.path)
            # one thread at a time, any thread: the lease heartbeat's, an async loop's step threads (.asynchronous)
            self._connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                               check_same_thread=False)
            self._connection.execute("PRAGMA journal_mode=WAL")
            self._connection.execute(f"PRAGMA synchronous={'FULL' if durability == 'commit' else 'NORMAL'}")
            self._run(self._create_schema())
        except (OSError, sqlite3.OperationalError) as err:  # a full disk, a folder that cannot be made, a lock
            self.close()
            raise StoreUnavailable(f"{self.url}: cannot open the database: {err}") from err
        except sqlite3.Error as err:
            self.close()
            raise StoreError(f"{self.url}: cannot open the database: {err}") from err

    def __repr__(self) -> str:
        return f"SqliteStore({self.url!r})"

    @contextmanager
    def _transaction(self, *, block: bool = True) -> Iterator[Any]:
        """A cursor holding the write lock (``BEGIN IMMEDIATE``); without ``block``, one for reading, each
        statement its own snapshot, taking no lock. One at a time on the connection, whichever thread (the
        summary lease's heartbeat renews from its own)."""
        if self._connection is None:
            raise StoreError(f"{self.url}: the store is closed")
        with self._one_at_a_time:
            cursor = self._connection.cursor()
            try:
                if not block:
                    yield cursor
                    return
                cursor.execute("BEGIN IMMEDIATE")
                try:
                    yield cursor
                except BaseException:
                    self._connection.rollback()
                    raise
                cursor.execute("COMMIT")
            except sqlite3.Error as err:
                if self._connection.in_transaction:
                    self._connection.rollback()
                kind = StoreUnavailable if isinstance(err, sqlite3.OperationalError) else StoreError  # full, locked, I/O
                raise kind(f"{self.url}: {err}") from err
            finally:
                cursor.close()

    def close(self) -> None:
        with self._one_at_a_time:  # not under a transaction of another thread
            if self._connection is not None:
                self._connection.close()
                self._connection = None


def _read_only(path: Path) -> sqlite3.Connection:
    """A connection that reads ``path`` and never writes it, nor anything beside it.

    SQLite's ``mode=ro`` still makes the ``-shm`` file a WAL database is read through, which a folder this user
    cannot write refuses; then, if no ``-wal`` file is there (no writer has the database open: every record is
    in the main file), the file is read as ``immutable``, which needs no ``-shm``.
    """
    uri = path.absolute().as_uri()
    connection = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return connection
    except sqlite3.OperationalError:
        connection.close()
        if Path(f"{path}-wal").exists():
            raise
    return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)


def _create_owner_only(path: Path) -> None:
    """Create the database file 0600 (its folder 0700) unless it exists; never through a symbolic link.

    An existing file is only looked at, never opened: on POSIX, closing any
    descriptor of a file drops every lock this process holds on it, the
    locks of its other SQLite connections included, and a connection that
    lost its locks lets another process checkpoint and delete the
    write-ahead log under it (a "malformed" database, or "disk I/O error").
    A new file is created with ``O_EXCL``, so no connection can hold it yet.
    """
    if path.parent != Path(""):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    except FileExistsError:
        if path.is_symlink():
            raise StoreError(f"sqlite:///{path}: the database is a symbolic link; give the file itself") from None
