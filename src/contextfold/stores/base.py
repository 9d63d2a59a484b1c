"""What every session store does, whatever keeps the records.

A store holds sessions; a session is the transcript's list of records
(header, items, events, header updates, in the layout of
:mod:`contextfold.stores.transcript`), each with a per-session sequence number
counted from 0 without gaps. Records are only ever appended; two operations
are special:

* a *view change* (a compaction) is appended with :meth:`Store.commit_view`,
  a compare-and-swap: it commits only if the session's current view
  checkpoint is still the one the writer started from (its *revision*, the
  sequence number of that checkpoint, 0 when there is none), else it raises
  :class:`~contextfold.errors.ViewConflict` and writes nothing;
* retention (:mod:`contextfold.stores.retention`) deletes whole sessions and
  empties old checkpoints, and runs only when called explicitly.

Records cross this interface as dicts. Their bodies are made by the codec
(:mod:`contextfold.codec`) and stored as the same JSON a transcript line
holds, so every backend reads back exactly what was written.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from ..errors import BlobNotFound, StoreError

Record = dict[str, Any]
"""One record: ``{"seq": n, "type": ..., ...}`` on reading, without ``seq`` when appended."""

Durability = Literal["process", "commit"]
DURABILITIES: tuple[str, ...] = ("process", "commit")
"""When an acknowledged append is safe (the SQL stores' ``?durability=`` URL parameter).

* ``"process"`` (default): it survives the crash of any writer process; a
  crash of the database server or the machine may lose the last fraction of
  a second of appends, never the database's consistency (SQLite
  ``synchronous=NORMAL`` in WAL mode, PostgreSQL ``synchronous_commit=off``).
  An append costs well under a millisecond.
* ``"commit"``: it is on disk before it is acknowledged, and survives a power
  loss (``synchronous=FULL``, ``synchronous_commit=on``). An append costs a
  disk flush (0.2 ms on a local SSD, 5-10 ms on many virtual disks).
"""

BLOB_DIGEST = re.compile(r"[0-9a-f]{64}")
"""How a blob is named: the SHA-256 of its bytes in lowercase hex (nothing else, so a name is never a path)."""


def blob_digest(data: bytes) -> str:
    """The name a blob of ``data`` is kept under in any store: the same bytes, the same name."""
    return hashlib.sha256(data).hexdigest()


def checked_digest(where: str, session_id: str, digest: object) -> str:
    """``digest`` if it is a blob name; :class:`~contextfold.errors.BlobNotFound` otherwise (a path, ``../``,
    another type): a name that is not a digest can name nothing in any store."""
    if isinstance(digest, str) and BLOB_DIGEST.fullmatch(digest):
        return digest
    raise BlobNotFound(where, session_id, str(digest), "not a blob name (64 lowercase hex digits)")


def verified(where: str, session_id: str, digest: str, data: bytes) -> bytes:
    """``data`` read for ``digest``, checked to be what was put there (a damaged blob is an error, not content)."""
    if blob_digest(data) != digest:
        raise StoreError(f"{where}#{session_id}: blob {digest} is damaged: its bytes no longer match their digest")
    return data


VIEW_EVENT = "view"
"""Event kind of a view checkpoint (what was being sent after a stage changed it)."""


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session as a listing shows it: ``created`` and ``updated`` are Unix seconds."""

    session_id: str
    created: float
    updated: float
    records: int


@runtime_checkable
class Store(Protocol):
    """Where sessions live. ``url`` names the store for messages, with any password masked.

    ``exclusive`` is true when one writer holds a session at a time (the JSONL
    folder: a file lock), so nobody else's records can appear between one's own.
    """

    url: str
    exclusive: bool

    def create(self, session_id: str, header: Record) -> None:
        """Start a session with its header record; :class:`~contextfold.errors.SessionExists` if it is there."""

    def append(self, session_id: str, records: Sequence[Record]) -> list[int]:
        """Append records together (no other writer's record lands between them); their sequence numbers."""

    def commit_view(self, session_id: str, base: int, record: Record) -> int:
        """Append a view checkpoint if the current one is still ``base``; its sequence number, or ViewConflict."""

    def read(self, session_id: str, after: int = -1) -> list[Record]:
        """The records after sequence number ``after``, in order; SessionNotFound if there is no such session."""

    def sessions(self) -> list[SessionInfo]:
        """Every session in the store, oldest update first."""

    def delete(self, session_id: str) -> None:
        """Remove a session and all its records (retention only)."""

    def rewrite(self, session_id: str, records: Mapping[int, Record]) -> None:
        """Replace the bodies of the records at these sequence numbers (retention only)."""

    def close(self) -> None:
        """Release connections and files. Safe to call twice."""


@runtime_checkable
class BlobStore(Protocol):
    """A store that keeps blobs beside its sessions: large tool outputs offloaded from the history, kept by
    content (:func:`blob_digest`) so any worker that resumes the session reads them back, and removed with
    the session by :meth:`Store.delete` (retention). All four stores here are blob stores."""

    def put_blob(self, session_id: str, data: bytes) -> str:
        """Keep ``data`` for the session, durably before this returns; its digest. The same bytes again are a
        no-op. :class:`~contextfold.errors.SessionNotFound` if there is no such session."""

    def get_blob(self, session_id: str, digest: str) -> bytes:
        """The bytes put under ``digest``; :class:`~contextfold.errors.BlobNotFound` if there are none."""


def split_session_ref(text: str) -> tuple[str, str] | None:
    """``(store, session_id)`` if ``text`` names a stored session as ``STORE#session-id``, else None.

    ``STORE`` is a store URL or an existing folder of transcripts; the session
    id is whatever follows the last ``#`` (ids never hold one).
    """
    location, hash_, session_id = text.rpartition("#")
    if not hash_ or not session_id or not (is_store_url(location) or Path(location).is_dir()):
        return None
    return location, session_id


def is_store_url(text: str) -> bool:
    """Whether ``text`` is a store URL (rather than a plain file path)."""
    return text.split("://", 1)[0].lower() in ("jsonl", "file", "sqlite", "postgresql", "postgres", "redis", "rediss")
