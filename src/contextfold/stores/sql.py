"""What the SQL stores share: two tables, and one short transaction for every write.

``contextfold_blobs`` holds a session's offloaded outputs by digest,
deleted with the session. ``contextfold_leases`` holds the summary lease of a session while a worker
summarizes it (so another does not summarize the same span; it expires on
its own if the worker dies). ``contextfold_sessions`` has a row a session with the next sequence number
and the revision of its view; ``contextfold_records`` a row a record, keyed by
session and sequence number, its body the transcript's JSON, and for an item
its id as ``item_key``, unique in the session: an append retried after a
timeout (whose first try may have committed) finds its items there and
inserts nothing again. An append moves
the session's ``next_seq`` and inserts its records in one transaction, so the
row lock on the session (PostgreSQL) or the database write lock (SQLite)
orders concurrent writers and a writer that dies mid-transaction leaves
nothing behind: sequence numbers stay gap-free. A view change is the same
update with ``AND view_seq = <base>`` in its condition: the compare-and-swap.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import BlobNotFound, SessionExists, SessionNotFound, ViewConflict
from .base import Record, SessionInfo, blob_digest, checked_digest, verified
from .records import decode, encode, record_key

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS contextfold_sessions (
        session_id TEXT PRIMARY KEY,
        created DOUBLE PRECISION NOT NULL,
        updated DOUBLE PRECISION NOT NULL,
        next_seq BIGINT NOT NULL,
        view_seq BIGINT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS contextfold_records (
        session_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    )""",
    """CREATE TABLE IF NOT EXISTS contextfold_leases (
        session_id TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        expires DOUBLE PRECISION NOT NULL
    )""",
)
BLOBS = """CREATE TABLE IF NOT EXISTS contextfold_blobs (
        session_id TEXT NOT NULL,
        digest TEXT NOT NULL,
        data {blob_type} NOT NULL,
        PRIMARY KEY (session_id, digest)
    )"""
"""Offloaded outputs, by session and the SHA-256 of their bytes (see :class:`~contextfold.stores.base.BlobStore`)."""
KEY_INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS contextfold_records_key ON contextfold_records (session_id, item_key)"


class SqlStore:
    """The SQL of the stores; a subclass supplies the connection, the transaction and the placeholder."""

    exclusive = False
    url: str
    placeholder = "?"
    blob_type = "BLOB"

    @contextmanager
    def _transaction(self, *, block: bool = True) -> Iterator[Any]:
        """A cursor inside one write transaction, committed on exit, rolled back on error.

        ``block=False`` is for reads (and single statements): no transaction
        block, no write lock, each statement on its own.
        """
        raise NotImplementedError

    def _sql(self, statement: str) -> str:
        return statement.replace("?", self.placeholder)

    def _where(self, session_id: str) -> str:
        return f"{self.url}#{session_id}"

    # -- writing
    def create(self, session_id: str, header: Record) -> None:
        now = time.time()
        with self._transaction() as cursor:
            cursor.execute(self._sql("INSERT INTO contextfold_sessions VALUES (?, ?, ?, 1, 0) ON CONFLICT DO NOTHING"),
                           (session_id, header.get("created", now), now))
            if cursor.rowcount != 1:
                raise SessionExists(self.url, session_id)
            cursor.execute(self._sql("INSERT INTO contextfold_records (session_id, seq, body) VALUES (?, 0, ?)"),
                           (session_id, encode(header)))

    def _create_schema(self, cursor: Any) -> None:
        """The tables, and the item key a database made before it had one gains (in the open's transaction)."""
        for statement in SCHEMA:
            cursor.execute(statement)
        cursor.execute(BLOBS.format(blob_type=self.blob_type))
        cursor.execute("SELECT * FROM contextfold_records WHERE 1 = 0")
        if "item_key" not in [column[0] for column in cursor.description]:
            cursor.execute("ALTER TABLE contextfold_records ADD COLUMN item_key TEXT")
        cursor.execute(KEY_INDEX)

    def append(self, session_id: str, records: Sequence[Record]) -> list[int]:
        """The records in one transaction; an item whose id the session holds already is not inserted
        again (its sequence number is returned), so a retried append is a no-op."""
        bodies = [encode(record) for record in records]  # before the transaction: a bad record writes nothing
        keys = [record_key(record) for record in records]
        with self._transaction() as cursor:
            stored = self._stored_keys(cursor, session_id, [key for key in keys if key is not None])
            fresh = [n for n, key in enumerate(keys) if key is None or key not in stored]
            cursor.execute(self._sql("UPDATE contextfold_sessions SET next_seq = next_seq + ?, updated = ? "
                                     "WHERE session_id = ? RETURNING next_seq"), (len(fresh), time.time(), session_id))
            row = cursor.fetchone()
            if row is None:
                raise SessionNotFound(self.url, session_id)
            first = row[0] - len(fresh)
            seqs = {n: first + i for i, n in enumerate(fresh)}
            cursor.executemany(self._sql("INSERT INTO contextfold_records (session_id, seq, body, item_key) "
                                         "VALUES (?, ?, ?, ?)"),
                               [(session_id, seqs[n], bodies[n], keys[n]) for n in fresh])
        return [seqs[n] if n in seqs else stored[keys[n]] for n in range(len(records))]  # type: ignore[index]

    def _stored_keys(self, cursor: Any, session_id: str, keys: list[str]) -> dict[str, int]:
        """Which of ``keys`` the session holds already, and at which sequence number."""
        if not keys:
            return {}
        marks = ", ".join("?" * len(keys))
        cursor.execute(self._sql(f"SELECT item_key, seq FROM contextfold_records WHERE session_id = ? "
                                 f"AND item_key IN ({marks})"), (session_id, *keys))
        return dict(cursor.fetchall())

    def commit_view(self, session_id: str, base: int, record: Record) -> int:
        body = encode(record)
        with self._transaction() as cursor:
            cursor.execute(self._sql("UPDATE contextfold_sessions SET next_seq = next_seq + 1, view_seq = next_seq, "
                                     "updated = ? WHERE session_id = ? AND view_seq = ? RETURNING view_seq"),
                           (time.time(), session_id, base))
            row = cursor.fetchone()
            if row is None:  # the view moved on, or there is no such session: say which
                cursor.execute(self._sql("SELECT view_seq FROM contextfold_sessions WHERE session_id = ?"), (session_id,))
                current = cursor.fetchone()
                if current is None:
                    raise SessionNotFound(self.url, session_id)
                raise ViewConflict(self.url, session_id, base, current[0])
            seq: int = row[0]
            cursor.execute(self._sql("INSERT INTO contextfold_records (session_id, seq, body) VALUES (?, ?, ?)"),
                           (session_id, seq, body))
        return seq

    # -- blobs
    def put_blob(self, session_id: str, data: bytes) -> str:
        """Keep ``data`` for the session in one transaction, committed (with the store's durability) before
        this returns, so it is in before any record that names it; its digest."""
        digest = blob_digest(data)
        with self._transaction() as cursor:
            cursor.execute(self._sql("SELECT 1 FROM contextfold_sessions WHERE session_id = ?"), (session_id,))
            if cursor.fetchone() is None:
                raise SessionNotFound(self.url, session_id)
            cursor.execute(self._sql("INSERT INTO contextfold_blobs VALUES (?, ?, ?) ON CONFLICT DO NOTHING"),
                           (session_id, digest, bytes(data)))
        return digest

    def get_blob(self, session_id: str, digest: str) -> bytes:
        digest = checked_digest(self.url, session_id, digest)
        with self._transaction(block=False) as cursor:
            cursor.execute(self._sql("SELECT data FROM contextfold_blobs WHERE session_id = ? AND digest = ?"),
                           (session_id, digest))
            row = cursor.fetchone()
        if row is None:
            raise BlobNotFound(self.url, session_id, digest)
        return verified(self.url, session_id, digest, bytes(row[0]))

    # -- the summary lease
    def lease(self, session_id: str, holder: str, seconds: float) -> bool:
        """Take (or renew) the session's summary lease for ``seconds``, unless another holder's is still running."""
        now = time.time()
        with self._transaction() as cursor:
            cursor.execute(self._sql("INSERT INTO contextfold_leases VALUES (?, ?, ?) ON CONFLICT (session_id) DO UPDATE "
                                     "SET holder = excluded.holder, expires = excluded.expires "
                                     "WHERE contextfold_leases.expires < ? OR contextfold_leases.holder = excluded.holder"),
                           (session_id, holder, now + seconds, now))
            return bool(cursor.rowcount == 1)

    def release(self, session_id: str, holder: str) -> None:
        """Give the lease back, if ``holder`` still has it."""
        with self._transaction() as cursor:
            cursor.execute(self._sql("DELETE FROM contextfold_leases WHERE session_id = ? AND holder = ?"),
                           (session_id, holder))

    # -- reading
    def read(self, session_id: str, after: int = -1) -> list[Record]:
        with self._transaction(block=False) as cursor:
            cursor.execute(self._sql("SELECT seq, body FROM contextfold_records WHERE session_id = ? AND seq > ? "
                                     "ORDER BY seq"), (session_id, after))
            rows = cursor.fetchall()
            if not rows:
                cursor.execute(self._sql("SELECT 1 FROM contextfold_sessions WHERE session_id = ?"), (session_id,))
                if cursor.fetchone() is None:
                    raise SessionNotFound(self.url, session_id)
        where = self._where(session_id)
        return [decode(where, seq, body) for seq, body in rows]

    def sessions(self) -> list[SessionInfo]:
        with self._transaction(block=False) as cursor:
            cursor.execute("SELECT session_id, created, updated, next_seq FROM contextfold_sessions "
                           "ORDER BY updated, session_id")
            return [SessionInfo(sid, created, updated, records) for sid, created, updated, records in cursor.fetchall()]

    # -- retention
    def delete(self, session_id: str) -> None:
        with self._transaction() as cursor:
            cursor.execute(self._sql("DELETE FROM contextfold_sessions WHERE session_id = ?"), (session_id,))
            if cursor.rowcount != 1:
                raise SessionNotFound(self.url, session_id)
            cursor.execute(self._sql("DELETE FROM contextfold_records WHERE session_id = ?"), (session_id,))
            cursor.execute(self._sql("DELETE FROM contextfold_blobs WHERE session_id = ?"), (session_id,))

    def rewrite(self, session_id: str, records: Mapping[int, Record]) -> None:
        with self._transaction() as cursor:
            cursor.executemany(self._sql("UPDATE contextfold_records SET body = ? WHERE session_id = ? AND seq = ?"),
                               [(encode(record), session_id, seq) for seq, record in records.items()])
