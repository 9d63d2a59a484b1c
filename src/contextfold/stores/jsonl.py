"""The JSONL folder: one transcript file a session, exactly as :mod:`contextfold.stores.transcript` writes it.

Today's layout, unchanged on disk, so every transcript ever written is a
session of this store. Writing goes through :class:`~contextfold.stores.transcript.Transcript`
(its durability, its file lock): one writer a session at a time, across
processes, which is why this store is ``exclusive`` and why a view change
only has to be checked against what this process wrote.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from ..codec import header_from_dict
from ..conversation import JSONValue
from ..errors import (
    BlobNotFound,
    SessionNotFound,
    StoreError,
    StoreUnavailable,
    TranscriptCorrupt,
    TranscriptError,
    ViewConflict,
)
from ..private_files import open_dir, open_file, write_new
from .base import VIEW_EVENT, Record, SessionInfo, blob_digest, checked_digest, verified
from .records import encode, to_line
from .transcript import Transcript, transcript_path
from .transcript_reading import Restored, open_read_only, parse_line

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)


class JsonlStore:
    """Sessions as ``<session_id>.jsonl`` files in ``directory`` (created 0700 on first write)."""

    exclusive = True

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.url = str(self.directory)
        self._writers: dict[str, Transcript] = {}
        self._revisions: dict[str, int] = {}

    @classmethod
    def holding(cls, transcript: Transcript) -> JsonlStore:
        """The store of a transcript's folder, writing that session through the transcript already open."""
        store = cls(transcript.path.parent)
        store._adopt(transcript.restored.report.session_id, transcript)
        return store

    def __repr__(self) -> str:
        return f"JsonlStore({self.url!r})"

    # -- writing
    def create(self, session_id: str, header: Record) -> None:
        self._writers[session_id] = Transcript.open(self.directory, session_id, header=header_from_dict(header["header"]),
                                                    resume=False)  # SessionExists, or TranscriptUnsafe for a link
        self._revisions[session_id] = 0

    def acquire(self, session_id: str) -> Restored | None:
        """Take the session for writing now (its lock: a second writer is refused at once, not at its
        first append), and what its transcript held, damaged lines set aside and reported; ``None``
        when this store holds it already (read it as it is now)."""
        if session_id in self._writers:
            return None
        return self._writer(session_id).restored

    def append(self, session_id: str, records: Sequence[Record]) -> list[int]:
        """One batch, written whole or not at all (see :meth:`Transcript.append_batch`)."""
        writer = self._writer(session_id)
        for record in records:  # all or nothing: a record that cannot be written stops the batch before it starts
            encode(record)
        return self._write(writer, records)

    def commit_view(self, session_id: str, base: int, record: Record) -> int:
        writer = self._writer(session_id)
        current = self._revisions[session_id]
        if current != base:
            raise ViewConflict(self.url, session_id, base, current)
        seq = self._write(writer, [record])[0]
        self._revisions[session_id] = seq
        return seq

    @staticmethod
    def _write(writer: Transcript, records: Sequence[Record]) -> list[int]:
        """The records appended as one batch; a disk that refuses them is :class:`StoreUnavailable`."""
        try:
            return writer.append_batch([(r["type"], _fields(r)) for r in records])
        except TranscriptError as err:
            if isinstance(err.__cause__, OSError):  # full, or failing: nothing of the batch is in the file
                raise StoreUnavailable(str(err)) from err
            raise

    def _writer(self, session_id: str) -> Transcript:
        writer = self._writers.get(session_id)
        if writer is None:
            writer = self._adopt(session_id, Transcript.open(self.directory, session_id, resume=True))
        return writer

    def _adopt(self, session_id: str, writer: Transcript) -> Transcript:
        self._writers[session_id] = writer
        self._revisions[session_id] = max((e.seq for e in writer.restored.events if e.kind == VIEW_EVENT), default=0)
        return writer

    # -- blobs: files in the session's results folder, named by digest
    def blob_path(self, session_id: str, digest: str) -> Path:
        """Where the blob ``digest`` of the session is (or would be) kept: a file the agent's tools can read."""
        return self._results(session_id) / f"sha256-{checked_digest(self.url, session_id, digest)}.txt"

    def _results(self, session_id: str) -> Path:
        return self.directory / f"{session_id}-results"  # where Context has always saved large outputs

    def put_blob(self, session_id: str, data: bytes) -> str:
        """Write ``data`` whole under a temporary name, flushed to disk, then renamed into place (owner-only
        folder and file, never through a link); its digest."""
        if not transcript_path(self.directory, session_id).is_file():
            raise SessionNotFound(self.url, session_id)
        digest = blob_digest(data)
        path = self.blob_path(session_id, digest)
        try:
            folder = open_dir(path.parent)
            try:
                write_new(folder, path.name, bytes(data), where=path.parent, durable=True)
            finally:
                os.close(folder)
        except OSError as err:
            raise StoreUnavailable(f"{path}: cannot write the blob: {err}") from err
        return digest

    def get_blob(self, session_id: str, digest: str) -> bytes:
        path = self.blob_path(session_id, digest)
        try:
            folder = open_dir(path.parent, create=False)
            try:
                fd = open_file(folder, path.name, os.O_RDONLY, where=path.parent)
            finally:
                os.close(folder)
        except FileNotFoundError:
            raise BlobNotFound(self.url, session_id, digest) from None
        except OSError as err:
            raise StoreError(f"{path}: cannot read the blob: {err}") from err
        with os.fdopen(fd, "rb") as file:
            return verified(self.url, session_id, digest, file.read())

    # -- reading
    def read(self, session_id: str, after: int = -1) -> list[Record]:
        """The records after ``after``, up to the first damaged line (logged; the writer sets it aside)."""
        return [record for record in self._records(session_id, up_to_damage=True) if record["seq"] > after]

    def _records(self, session_id: str, *, up_to_damage: bool = False) -> Iterator[Record]:
        """Every whole record of the file, never through a link; a torn last line (a writer cut short)
        is left out, and so, with ``up_to_damage``, is a damaged line with everything after it."""
        path = transcript_path(self.directory, session_id)
        try:
            file = os.fdopen(open_read_only(path), "rb")
        except FileNotFoundError:
            raise SessionNotFound(self.url, session_id) from None
        except OSError as err:
            raise StoreError(f"{path}: cannot read the transcript: {err}") from err
        with file:
            pending: tuple[int, str] | None = None
            batch: list[Record] = []  # the records of a batch not yet ended: given out only once it ends
            for number, line in enumerate(file, start=1):
                if pending is not None and up_to_damage and pending[0] > 1:
                    log.warning("%s: line %d is damaged (%s); the session is read up to the record before it",
                                path, pending[0], pending[1])
                    return
                if pending is not None:
                    raise TranscriptCorrupt(str(path), pending[0], f"{pending[1]}, and records follow it")
                record, reason = parse_line(line)
                if reason is not None:
                    pending = (number, reason)
                elif not (isinstance(record, dict) and type(record.get("seq")) is int and isinstance(record.get("type"), str)):
                    raise TranscriptCorrupt(str(path), number, "a record is a JSON object with an integer seq and a type")
                elif record.get("more"):
                    batch.append(record)
                else:
                    yield from batch
                    batch = []
                    yield record
            if batch:
                log.warning("%s: a batch of records from seq %s was cut short by a crash; it is left out",
                            path, batch[0].get("seq"))

    def sessions(self) -> list[SessionInfo]:
        found = []
        for path in self.directory.glob("*.jsonl") if self.directory.is_dir() else ():
            if path.is_symlink() or not path.is_file():
                continue
            with open(path, "rb") as file:
                first = file.readline()
                records = 1 + sum(chunk.count(b"\n") for chunk in iter(lambda: file.read(1 << 20), b""))
            record, reason = parse_line(first)
            if reason is not None or not isinstance(record, dict) or record.get("type") != "header":
                continue  # not a transcript: nothing of ours
            value = record.get("created", 0)  # a damaged header's time (not a number, or none a date can show) is unknown
            created = float(value) if type(value) in (int, float) and abs(value) < 1e12 else 0.0
            # the file's clock is coarser than time.time(): never before it
            found.append(SessionInfo(path.stem, created, max(path.stat().st_mtime, created), records))
        return sorted(found, key=lambda info: (info.updated, info.session_id))

    # -- retention
    def delete(self, session_id: str) -> None:
        path = transcript_path(self.directory, session_id)
        self._release(session_id)
        try:
            path.unlink()
        except FileNotFoundError:
            raise SessionNotFound(self.url, session_id) from None
        results = self._results(session_id)  # large outputs and blobs
        if results.is_dir() and not results.is_symlink():
            shutil.rmtree(results)

    def rewrite(self, session_id: str, records: Mapping[int, Record]) -> None:
        """Write the file again with these records replaced, atomically, holding the session's lock."""
        self._release(session_id)
        path = transcript_path(self.directory, session_id)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            raise SessionNotFound(self.url, session_id) from None
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            data = b"".join(to_line({**records.get(r["seq"], r), "seq": r["seq"]}) for r in self._records(session_id))
            handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=f".{session_id}.", suffix=".tmp")
            with os.fdopen(handle, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, path)
        except OSError as err:
            raise StoreError(f"{path}: cannot rewrite the transcript (is a writer holding it?): {err}") from err
        finally:
            os.close(fd)

    def _release(self, session_id: str) -> None:
        writer = self._writers.pop(session_id, None)
        self._revisions.pop(session_id, None)
        if writer is not None:
            writer.close()

    def close(self) -> None:
        for session_id in list(self._writers):
            self._release(session_id)


def _fields(record: Record) -> dict[str, JSONValue]:
    """What a record holds besides its place (``seq``, ``type``, and ``more`` of the batch it was written in)."""
    return {k: v for k, v in record.items() if k not in ("seq", "type", "more")}
