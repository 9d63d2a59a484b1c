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

Each operation is written once, as a plan of statements (:class:`SqlPlans`,
see :mod:`.plans`): :class:`SqlStore` runs it on a DB-API cursor (SQLite,
psycopg), the async PostgreSQL store awaits it on psycopg's async cursor.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple, TypeVar

from ..errors import BlobNotFound, SessionExists, SessionNotFound, ViewConflict
from .base import Record, SessionInfo, blob_digest, checked_digest, verified
from .plans import Plan, PlannedStore, StorePlans, drive
from .records import decode, encode, record_key

T = TypeVar("T")

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


class Statement(NamedTuple):
    """One SQL statement of a plan (``?`` placeholders); ``many``: ``params`` is a list of rows (executemany)."""

    sql: str
    params: Sequence[object] = ()
    many: bool = False


class Answer(NamedTuple):
    """What a statement gave back: the rows it changed, the rows it returned, the names of their columns."""

    rowcount: int
    rows: list[Any]
    columns: list[str]

    def first(self) -> Any:
        return self.rows[0] if self.rows else None


SqlPlan = Plan[Statement, T]


class SqlPlans(StorePlans[Statement]):
    """What every SQL operation does, as a plan (:mod:`.plans`); the sync :class:`SqlStore` and the async
    PostgreSQL store run the same plans, each on its own client."""

    placeholder = "?"
    blob_type = "BLOB"

    def _sql(self, statement: str) -> str:
        return statement.replace("?", self.placeholder)

    def _where(self, session_id: str) -> str:
        return f"{self.url}#{session_id}"

    # -- writing
    def _create(self, session_id: str, header: Record) -> SqlPlan[None]:
        now = time.time()
        inserted = yield Statement("INSERT INTO contextfold_sessions VALUES (?, ?, ?, 1, 0) ON CONFLICT DO NOTHING",
                                   (session_id, header.get("created", now), now))
        if inserted.rowcount != 1:
            raise SessionExists(self.url, session_id)
        yield Statement("INSERT INTO contextfold_records (session_id, seq, body) VALUES (?, 0, ?)",
                        (session_id, encode(header)))

    def _create_schema(self) -> SqlPlan[None]:
        """The tables, and the item key a database made before it had one gains (in the open's transaction)."""
        for statement in SCHEMA:
            yield Statement(statement)
        yield Statement(BLOBS.format(blob_type=self.blob_type))
        columns = yield Statement("SELECT * FROM contextfold_records WHERE 1 = 0")
        if "item_key" not in columns.columns:
            yield Statement("ALTER TABLE contextfold_records ADD COLUMN item_key TEXT")
        yield Statement(KEY_INDEX)

    def _append(self, session_id: str, records: Sequence[Record]) -> SqlPlan[list[int]]:
        """The records in one transaction; an item whose id the session holds already is not inserted
        again (its sequence number is returned), so a retried append is a no-op."""
        bodies = [encode(record) for record in records]  # before the transaction: a bad record writes nothing
        keys = [record_key(record) for record in records]
        known = [key for key in keys if key is not None]
        stored: dict[str, int] = {}
        if known:
            found = yield Statement(f"SELECT item_key, seq FROM contextfold_records WHERE session_id = ? "
                                    f"AND item_key IN ({', '.join('?' * len(known))})", (session_id, *known))
            stored = dict(found.rows)
        fresh = [n for n, key in enumerate(keys) if key is None or key not in stored]
        moved = yield Statement("UPDATE contextfold_sessions SET next_seq = next_seq + ?, updated = ? "
                                "WHERE session_id = ? RETURNING next_seq", (len(fresh), time.time(), session_id))
        row = moved.first()
        if row is None:
            raise SessionNotFound(self.url, session_id)
        first = row[0] - len(fresh)
        seqs = {n: first + i for i, n in enumerate(fresh)}
        yield Statement("INSERT INTO contextfold_records (session_id, seq, body, item_key) VALUES (?, ?, ?, ?)",
                        [(session_id, seqs[n], bodies[n], keys[n]) for n in fresh], many=True)
        return [seqs[n] if n in seqs else stored[keys[n]] for n in range(len(records))]  # type: ignore[index]

    def _commit_view(self, session_id: str, base: int, record: Record) -> SqlPlan[int]:
        body = encode(record)
        moved = yield Statement("UPDATE contextfold_sessions SET next_seq = next_seq + 1, view_seq = next_seq, "
                                "updated = ? WHERE session_id = ? AND view_seq = ? RETURNING view_seq",
                                (time.time(), session_id, base))
        row = moved.first()
        if row is None:  # the view moved on, or there is no such session: say which
            current = (yield Statement("SELECT view_seq FROM contextfold_sessions WHERE session_id = ?",
                                       (session_id,))).first()
            if current is None:
                raise SessionNotFound(self.url, session_id)
            raise ViewConflict(self.url, session_id, base, current[0])
        seq: int = row[0]
        yield Statement("INSERT INTO contextfold_records (session_id, seq, body) VALUES (?, ?, ?)", (session_id, seq, body))
        return seq

    # -- blobs
    def _put_blob(self, session_id: str, data: bytes) -> SqlPlan[str]:
        """Keep ``data`` for the session in one transaction, committed (with the store's durability) before
        this returns, so it is in before any record that names it; its digest."""
        digest = blob_digest(data)
        if (yield Statement("SELECT 1 FROM contextfold_sessions WHERE session_id = ?", (session_id,))).first() is None:
            raise SessionNotFound(self.url, session_id)
        yield Statement("INSERT INTO contextfold_blobs VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                        (session_id, digest, bytes(data)))
        return digest

    def _get_blob(self, session_id: str, digest: str) -> SqlPlan[bytes]:
        digest = checked_digest(self.url, session_id, digest)
        row = (yield Statement("SELECT data FROM contextfold_blobs WHERE session_id = ? AND digest = ?",
                               (session_id, digest))).first()
        if row is None:
            raise BlobNotFound(self.url, session_id, digest)
        return verified(self.url, session_id, digest, bytes(row[0]))

    # -- the summary lease
    def _lease(self, session_id: str, holder: str, seconds: float) -> SqlPlan[bool]:
        """Take (or renew) the session's summary lease for ``seconds``, unless another holder's is still running."""
        now = time.time()
        taken = yield Statement("INSERT INTO contextfold_leases VALUES (?, ?, ?) ON CONFLICT (session_id) DO UPDATE "
                                "SET holder = excluded.holder, expires = excluded.expires "
                                "WHERE contextfold_leases.expires < ? OR contextfold_leases.holder = excluded.holder",
                                (session_id, holder, now + seconds, now))
        return bool(taken.rowcount == 1)

    def _release(self, session_id: str, holder: str) -> SqlPlan[None]:
        """Give the lease back, if ``holder`` still has it."""
        yield Statement("DELETE FROM contextfold_leases WHERE session_id = ? AND holder = ?", (session_id, holder))

    # -- reading
    def _read(self, session_id: str, after: int = -1) -> SqlPlan[list[Record]]:
        rows = (yield Statement("SELECT seq, body FROM contextfold_records WHERE session_id = ? AND seq > ? "
                                "ORDER BY seq", (session_id, after))).rows
        if not rows and (yield Statement("SELECT 1 FROM contextfold_sessions WHERE session_id = ?",
                                         (session_id,))).first() is None:
            raise SessionNotFound(self.url, session_id)
        where = self._where(session_id)
        return [decode(where, seq, body) for seq, body in rows]

    def _sessions(self) -> SqlPlan[list[SessionInfo]]:
        rows = (yield Statement("SELECT session_id, created, updated, next_seq FROM contextfold_sessions "
                                "ORDER BY updated, session_id")).rows
        return [SessionInfo(sid, created, updated, records) for sid, created, updated, records in rows]

    # -- retention
    def _delete(self, session_id: str) -> SqlPlan[None]:
        if (yield Statement("DELETE FROM contextfold_sessions WHERE session_id = ?", (session_id,))).rowcount != 1:
            raise SessionNotFound(self.url, session_id)
        yield Statement("DELETE FROM contextfold_records WHERE session_id = ?", (session_id,))
        yield Statement("DELETE FROM contextfold_blobs WHERE session_id = ?", (session_id,))

    def _rewrite(self, session_id: str, records: Mapping[int, Record]) -> SqlPlan[None]:
        yield Statement("UPDATE contextfold_records SET body = ? WHERE session_id = ? AND seq = ?",
                        [(encode(record), session_id, seq) for seq, record in records.items()], many=True)


def answer_of(cursor: Any, rows: list[Any]) -> Answer:
    """What the statement just executed on ``cursor`` gave back, ``rows`` being what it returned (fetched
    by the caller: a blocking cursor's ``fetchall()`` or an async one's, see :func:`returns_rows`)."""
    return Answer(cursor.rowcount, rows, [column[0] for column in cursor.description or ()])


def returns_rows(cursor: Any) -> bool:
    """Whether the statement just executed on ``cursor`` returned rows to fetch."""
    return cursor.description is not None


class SqlStore(SqlPlans, PlannedStore[Statement]):
    """The SQL stores' blocking side: each plan in one ``_transaction()``; a subclass supplies the connection,
    the transaction and the placeholder."""

    @contextmanager
    def _transaction(self, *, block: bool = True) -> Iterator[Any]:
        """A cursor inside one write transaction, committed on exit, rolled back on error.

        ``block=False`` is for reads (and single statements): no transaction
        block, no write lock, each statement on its own.
        """
        raise NotImplementedError

    def _run(self, plan: SqlPlan[T], *, block: bool = True) -> T:
        with self._transaction(block=block) as cursor:
            return drive(plan, lambda statement: self._execute(cursor, statement))

    def _execute(self, cursor: Any, statement: Statement) -> Answer:
        if statement.many:
            cursor.executemany(self._sql(statement.sql), statement.params)
        else:
            cursor.execute(self._sql(statement.sql), statement.params)
        return answer_of(cursor, cursor.fetchall() if returns_rows(cursor) else [])
