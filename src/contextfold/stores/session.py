"""One session of a store, as a :class:`~contextfold.context.Context` writes and follows it.

It turns items, events and header changes into records (through the codec),
appends them, and keeps track of how far the session has been read: ``seen``
is the sequence number up to which every record, one's own and other
writers', has been folded into the context. When an append comes back with a
number past ``seen + 1``, other writers got in between; :meth:`pull` then
returns everything after ``seen`` (marking which records were one's own) so
the context folds the session in its one true order.

A view change is committed against :attr:`revision`, the last view checkpoint
this writer has folded; if another writer changed the view since, the store
refuses it with :class:`~contextfold.errors.ViewConflict` and nothing is
written.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ..conversation import Header, Item, JSONObject
from ..errors import SessionExists, StoreError, StoreUnavailable
from .asynchronous import AsyncStore
from .base import VIEW_EVENT, BlobStore, Record, Store
from .opening import open_store
from .outbox import Batch, Outbox, RetryBudget
from .records import encode, event_record, header_record, header_update_record, item_record, restore, view_revision
from .transcript import Restored, Transcript, validate_session_id

Location = str | os.PathLike[str] | Store | AsyncStore
"""A store (an async one is reached as :meth:`~.asynchronous.AsyncStore.bridged` says, from a worker thread),
or what :func:`~contextfold.stores.open_store` opens: a URL or a folder."""


@dataclass(frozen=True, slots=True)
class Pulled:
    """A record read back from the store; ``mine`` when this writer appended it."""

    record: Record
    mine: bool


class StoredSession:
    """A session open for writing. Use :meth:`open` (create or continue) or :meth:`resume` (must exist)."""

    def __init__(self, store: Store, session_id: str, restored: Restored, *, owns_store: bool) -> None:
        self.store = store
        self.session_id = session_id
        self.restored = restored
        self.header = restored.conversation.header
        self.item_count = len(restored.conversation)
        self.seen = restored.report.records - 1
        self.revision = max((e.seq for e in restored.events if e.kind == VIEW_EVENT), default=0)
        self._owns_store = owns_store
        self._location: Location = store  # what it was opened from (a URL may carry a password: never shown)
        self._mine: set[int] = set()  # own records past ``seen``, to recognise when pulled
        self._outbox = Outbox(self._send, f"{store.url}#{session_id}",
                              budget=RetryBudget(getattr(store, "timeouts", None)))  # a server store's bounds

    # -- opening
    @classmethod
    def resume(cls, location: Location, session_id: str) -> StoredSession:
        """The session ``session_id`` of the store at ``location``; SessionNotFound if it is not there."""
        return cls._opening(location, session_id, create=False)

    @classmethod
    def create(cls, location: Location, session_id: str, header: Header | None = None) -> StoredSession:
        """A new session ``session_id`` in the store at ``location``; SessionExists if it is there."""
        return cls._opening(location, session_id, create=True, header=header)

    @classmethod
    def open(cls, location: Location, session_id: str) -> StoredSession:
        """Continue ``session_id`` in the store at ``location``, or create it (a transcript folder's habit)."""
        return cls._opening(location, session_id, create=None)

    @classmethod
    def _opening(cls, location: Location, session_id: str, *, create: bool | None,
                 header: Header | None = None) -> StoredSession:
        """Open the store and the session: ``create`` True (must be new), False (must exist) or None (either).
        An id a folder could not name its file after is refused by every store (InvalidSessionId), so a session
        is never committed that the folder stores, the CLI or an export could not open again."""
        validate_session_id(session_id)
        store = open_store(location)
        try:
            if create is not False:
                try:
                    store.create(session_id, header_record(session_id, header or Header()))
                except SessionExists:
                    if create:
                        raise
            acquire = getattr(store, "acquire", None)  # a store with a lock takes it now (JSONL)
            restored = (acquire(session_id) if acquire is not None else None) or restore(
                f"{store.url}#{session_id}", store.read(session_id))
        except BaseException:
            if store is not location:
                store.close()
            raise
        session = cls(store, session_id, restored, owns_store=store is not location)
        session._location = location
        return session

    def sibling(self, session_id: str) -> StoredSession:
        """Another session (a subagent's) in the same store, created or continued; it has its own connection."""
        return StoredSession.open(self._location, session_id)

    @classmethod
    def adopt(cls, transcript: Transcript) -> StoredSession:
        """A session over a transcript already open (its file lock held): the JSONL store of its folder."""
        from .jsonl import JsonlStore

        store = JsonlStore.holding(transcript)
        restored = transcript.restored
        session = cls(store, restored.report.session_id, restored, owns_store=True)
        session.header, session.item_count = transcript.header, transcript.item_count
        return session

    @property
    def path(self) -> Path | None:
        """The file the session lives in, for a file store (JSONL: its transcript; SQLite: the database)."""
        directory = getattr(self.store, "directory", None)
        if directory is not None:
            return Path(directory) / f"{self.session_id}.jsonl"
        return getattr(self.store, "path", None)

    @property
    def folder(self) -> Path | None:
        """Where files that belong with the session (persisted outputs) go: next to its file, if it has one."""
        return self.path.parent if self.path is not None else None

    # -- blobs: offloaded outputs, kept by content beside the session (see BlobStore)
    def put_blob(self, data: bytes) -> str:
        """Keep ``data`` with the session, durable when this returns (before any item naming it is appended);
        its digest, the name :meth:`get_blob` reads it back by from any worker that resumes the session.
        :class:`~contextfold.errors.StoreUnavailable` if the store refuses it now (nothing then names it)."""
        return self._blobs().put_blob(self.session_id, data)

    def get_blob(self, digest: str) -> bytes:
        """The bytes :meth:`put_blob` kept under ``digest`` in this session (never another session's);
        :class:`~contextfold.errors.BlobNotFound` if there are none, or ``digest`` is not a digest."""
        return self._blobs().get_blob(self.session_id, digest)

    def blob_path(self, digest: str) -> Path | None:
        """The file the blob is in, when the store keeps blobs as files (the JSONL folder), else ``None``."""
        locate = getattr(self.store, "blob_path", None)
        return locate(self.session_id, digest) if locate is not None else None

    def _blobs(self) -> BlobStore:
        if not isinstance(self.store, BlobStore):
            raise StoreError(f"{self.store.url}: this store keeps no blobs (it has no put_blob/get_blob)")
        return self.store

    # -- writing
    def append_items(self, items: Sequence[Item]) -> list[int]:
        """Append items together (no other writer's record between them); their sequence numbers."""
        return self._append([item_record(item) for item in items])

    def append(self, item: Item) -> int:
        return self.append_items([item])[0]

    def append_event(self, kind: str, data: JSONObject) -> int:
        return self._append([event_record(kind, data, self.item_count)])[0]

    def update_header(self, header: Header) -> int:
        self.header = header
        return self._append([header_update_record(header)])[0]

    def commit_view(self, data: JSONObject) -> int:
        """Record a view checkpoint, if the view is still the one at :attr:`revision` (else ViewConflict)."""
        return self._outbox.write(Batch([event_record(VIEW_EVENT, data, self.item_count)], base=self.revision))[0]

    def _append(self, records: list[Record]) -> list[int]:
        """Write ``records`` together, after any the store refused before (:class:`StoreUnavailable` if it
        still refuses: they wait in memory, in order)."""
        for record in records:
            encode(record)  # a record no store could hold is the caller's error, raised now, never kept waiting
        return self._outbox.write(Batch(records))

    def _send(self, batch: Batch) -> list[int]:
        """One batch into the store, and this writer's place in the session moved past it."""
        if batch.base is None:
            seqs = self.store.append(self.session_id, batch.records)
        else:
            seqs = [self.store.commit_view(self.session_id, batch.base, batch.records[0])]
            self.revision = seqs[0]
        contiguous = seqs[0] == self.seen + 1 and not self._mine
        if contiguous:
            self.seen = seqs[-1]
            self.item_count += sum(record["type"] == "item" for record in batch.records)
        else:
            self._mine.update(seqs)
        return seqs

    def flush(self) -> None:
        """Write what the store refused before (:class:`StoreUnavailable` if it still does)."""
        self._outbox.flush()

    @property
    def waiting(self) -> int:
        """Records the store refused so far, waiting in memory to be written first."""
        return self._outbox.waiting

    # -- the summary lease of a store many workers share
    def lease(self, holder: str, seconds: float) -> bool | None:
        """Take the session's summary lease (``None``: this store has one writer a session, so no lease)."""
        lease = getattr(self.store, "lease", None)
        if self.store.exclusive or lease is None:
            return None
        return bool(lease(self.session_id, holder, seconds))

    def release(self, holder: str) -> None:
        release = getattr(self.store, "release", None)
        if release is not None:
            release(self.session_id, holder)

    def view_moved(self) -> bool:
        """Whether another writer committed a view since :attr:`seen` (read, not folded in)."""
        if self.store.exclusive:
            return False
        return any(r["type"] == "event" and r.get("kind") == VIEW_EVENT and r["seq"] not in self._mine
                   for r in self.store.read(self.session_id, self.seen))

    @property
    def behind(self) -> bool:
        """Other writers' records may sit between what was folded and one's own last append."""
        return bool(self._mine)

    # -- following other writers
    def pull(self) -> list[Pulled]:
        """Every record after :attr:`seen`, in order, and move ``seen`` (and the counts) past them."""
        if self.store.exclusive:
            return []
        records = self._read_again_once()
        pulled = [Pulled(record, record["seq"] in self._mine) for record in records]
        for record in records:
            if record["type"] == "item":
                self.item_count += 1
        if records:
            self.seen = records[-1]["seq"]
            self.revision = view_revision(records, self.revision)
        self._mine = {seq for seq in self._mine if seq > self.seen}
        return pulled

    def _read_again_once(self) -> list[Record]:
        """The records after :attr:`seen`; a read the store refused at once is tried once more (a dropped
        connection is made again by the next call), if that still ends within the store's bound. One that got
        no answer is not: the server is silent, and the write that follows spends the bound on its retries."""
        budget = self._outbox.budget
        read = partial(self.store.read, self.session_id, self.seen)
        try:
            return budget.attempt(read)
        except StoreUnavailable:
            if budget.silent or not budget.allows(0):
                raise
            return budget.attempt(read)

    def close(self) -> None:
        """Write what waits, then release the store; :class:`StoreUnavailable` (the session left open, so
        ``close()`` can be called again once the store is back) if records could not be written."""
        self._outbox.flush()
        if self._owns_store:
            self.store.close()

    def __repr__(self) -> str:
        return f"StoredSession({self.store.url!r}, {self.session_id!r}, seen={self.seen}, revision={self.revision})"
