"""The append-only transcript: every item a session ever saw, one JSON record a line.

Compaction is non-destructive because of this file: whatever the pipeline
drops from the view sent to the model is still here, and a session resumes
from it to exactly the conversation it had (same header, same items, same
ids and timestamps).

Durability rule: a record is committed when its line end is on disk. Each
record goes to the file in one ``os.write`` loop on an ``O_APPEND`` descriptor
with no buffering in between, so once :meth:`Transcript.append` returns, a
crash of the process (even ``SIGKILL``) cannot lose it; with ``fsync="always"``
(the default) it also survives a power loss. A crash in the middle of a write
leaves a *torn* last line; reading skips and reports it, and
:meth:`Transcript.open` cuts it off before appending, so a new record never
gets glued onto a torn one. A bad line anywhere else (a damaged disk block,
a flipped byte) is not a crash artefact: reading keeps every record before
it and reports the rest as damaged; :meth:`Transcript.open` moves the damaged
part to a side file (never deleting it) before appending.

Every record ends with a CRC-32 of the rest of its line, so a flipped byte
inside a string is found instead of loaded. Version 1 transcripts (no
checksums) still load.

Safety rule: the folder and the file are opened without following links
(:mod:`contextfold.private_files`), owner-only; one writer holds a session at
a time (an advisory lock), and only in the process that opened it (a forked
child is refused).

Records (``seq`` counts records from 0 with no gap, so a lost line shows)::

    {"seq": 0, "type": "header", "format": "contextfold-transcript", "version": 2, "checksum": "crc32",
     "session_id": "...", "created": 1700000000.0, "header": {...codec.header_to_dict...},"crc":"0a1b2c3d"}
    {"seq": 1, "type": "item", "item": {...codec.item_to_dict...},"crc":"..."}
    {"seq": 2, "type": "event", "kind": "compaction", "time": 1700000001.5, "item_count": 1, "data": {...},"crc":"..."}
    {"seq": 3, "type": "header_update", "header": {...},"crc":"..."}
"""

from __future__ import annotations

import errno
import json
import logging
import os
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from ..codec import header_from_dict, header_to_dict, item_to_dict
from ..conversation import Header, Item, JSONObject
from ..errors import (
    SessionExists,
    SessionNotFound,
    TranscriptCorrupt,
    TranscriptError,
    TranscriptForked,
    TranscriptLocked,
    TranscriptUnsafe,
)
from ..private_files import open_dir, open_file, write_new
from .transcript_reading import (
    CHECKSUM,
    FORMAT,
    FORMAT_VERSION,
    LoadReport,
    RecordReader,
    Restored,
    SkippedLine,
    open_read_only,
    read_records,
    validate_session_id,
)

try:
    import fcntl
except ImportError:  # Windows: no advisory lock, one writer per transcript is the caller's duty.
    fcntl = None  # type: ignore[assignment]

__all__ = ["CHECKSUM", "DEFAULT_MAX_RECORD_BYTES", "FORMAT", "FORMAT_VERSION", "FSYNC_POLICIES", "MAX_PENDING_BYTES",
           "FsyncPolicy", "LoadReport", "Restored", "SkippedLine", "Transcript", "checksummed", "transcript_path",
           "validate_session_id"]

log = logging.getLogger(__name__)

FsyncPolicy = Literal["always", "batch", "never"]
FSYNC_POLICIES: tuple[str, ...] = ("always", "batch", "never")

DEFAULT_MAX_RECORD_BYTES = 32 * 1024 * 1024
"""Largest single record, in bytes: the largest request a provider accepts (Anthropic: 32 MB).

An item over it could never be sent to a model anyway, and every reader
holds a whole line in memory.
"""

MAX_PENDING_BYTES = 64 * 1024 * 1024
"""Records kept in memory while the disk refuses them (a full disk), written first once it accepts again."""

def transcript_path(directory: str | os.PathLike[str], session_id: str) -> Path:
    """Where the transcript of ``session_id`` lives in ``directory`` (the name comes from the id only)."""
    return Path(directory) / f"{validate_session_id(session_id)}.jsonl"


# --------------------------------------------------------------------------- writing


def _encode(record: JSONObject, what: str, max_record_bytes: int) -> bytes:
    """One record as a JSON line (UTF-8; ASCII escapes only when the text holds lone surrogates)."""
    try:
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        try:
            data = (text + "\n").encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: \u escapes keep them exactly
            data = (json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n").encode("ascii")
    except (TypeError, ValueError) as err:
        raise TranscriptError(f"{what} cannot be written to the transcript: {err}") from err
    if len(data) > max_record_bytes:
        raise TranscriptError(f"{what} is {len(data)} bytes as a record, over the limit of {max_record_bytes}")
    return data


def checksummed(line: bytes) -> bytes:
    """A record line (as :func:`_encode` makes it) with the CRC-32 of its JSON added as its last field."""
    return b"%s,\"crc\":\"%08x\"}\n" % (line[:-2], zlib.crc32(line[:-1]))


class Transcript:
    """An open transcript of one session, appending in order. Use :meth:`open`.

    ``fsync`` chooses when appended records are forced to the disk:

    * ``"always"`` (default): before every append returns. An acknowledged
      record survives a power loss. Costs one fsync per record (about 0.2 ms
      on a local SSD, far more on network disks).
    * ``"batch"``: every ``batch_records`` records, on :meth:`sync` and on
      :meth:`close`. A process crash loses nothing; a power loss can lose the
      records of the last unfinished batch.
    * ``"never"``: left to the operating system (except an explicit
      :meth:`sync`). A process crash loses nothing; a power loss can lose
      whatever the OS had not written yet.

    Errors are :class:`TranscriptError`. A write the disk refuses (a full
    disk) is undone, so the file keeps only whole records, and the record
    waits in memory (:attr:`pending`, up to :data:`MAX_PENDING_BYTES`): the
    next append, :meth:`sync` or :meth:`close` writes it first, so nothing is
    lost once space is freed. After a failed fsync, or a failed undo, the
    transcript refuses further appends until it is reopened, because which
    records reached the disk is then unknown. Only the process that opened a
    transcript may write to it: a forked child gets
    :class:`~contextfold.errors.TranscriptForked`.

    :attr:`restored` is what the file held when it was opened (the header
    alone for a new transcript); :attr:`header` and :attr:`item_count` follow
    the appends since.
    """

    restored: Restored

    def __init__(self, path: Path, fd: int, dir_fd: int, fsync: FsyncPolicy, batch_records: int,
                 max_record_bytes: int) -> None:
        self.path = path
        self.fsync: FsyncPolicy = fsync
        self.batch_records = batch_records
        self.max_record_bytes = max_record_bytes
        self.header = Header()
        self.item_count = 0
        self._fd: int | None = fd
        self._dir_fd: int | None = dir_fd
        self._pid = os.getpid()
        self._size = 0  # bytes of whole records in the file
        self._next_seq = 0
        self._unsynced = 0  # changes written since the last fsync
        self._broken: str | None = None
        self._pending: list[bytes] = []  # encoded records the disk refused, oldest first

    # -- opening and loading
    @classmethod
    def open(
        cls,
        directory: str | os.PathLike[str],
        session_id: str,
        *,
        header: Header | None = None,
        fsync: FsyncPolicy = "always",
        batch_records: int = 32,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
        resume: bool | None = None,
    ) -> Transcript:
        """Create the transcript of ``session_id`` in ``directory``, or resume the one there.

        ``resume=False`` insists on a new session (:class:`SessionExists` if one
        is recorded), ``resume=True`` on an existing one (:class:`SessionNotFound`),
        ``None`` takes either. The directory is created owner-only (0700) and
        the file 0600; a link at either is refused (:class:`TranscriptUnsafe`).
        On resume the file is read back (see :attr:`restored`), a torn last
        line is cut off, damaged lines are moved to a side file, and
        ``header``, if given and different from the recorded one, is appended
        as a header update. Only one writer may hold a transcript at a time
        (:class:`TranscriptLocked`).
        """
        if fsync not in FSYNC_POLICIES:
            raise TranscriptError(f"fsync must be one of {FSYNC_POLICIES}, not {fsync!r}")
        if batch_records < 1:
            raise TranscriptError(f"batch_records must be at least 1, not {batch_records}")
        path = transcript_path(directory, session_id)
        try:
            dir_fd = open_dir(path.parent, create=resume is not True, unsafe=TranscriptUnsafe)
        except FileNotFoundError as err:  # resuming in a folder that does not exist: nothing is created
            raise SessionNotFound(str(path.parent), session_id) from err
        except OSError as err:
            raise TranscriptError(f"{path}: cannot open the transcript for appending: {err}") from err
        try:
            fd, created = _open_session_file(dir_fd, path, resume)
        except BaseException:
            os.close(dir_fd)
            raise
        transcript = cls(path, fd, dir_fd, fsync, batch_records, max_record_bytes)
        try:
            transcript._start(session_id, header)
        except BaseException:
            transcript._release(remove=created)
            raise
        log.debug("%s: opened (%s, %d items)", path, "new" if created else "resumed", transcript.item_count)
        return transcript

    @staticmethod
    def load(path: str | os.PathLike[str]) -> Restored:
        """Rebuild the conversation and events a transcript holds, without writing to it.

        A torn last line is skipped and reported, and so is a damaged line with
        everything after it (:attr:`LoadReport.damaged`); a link is refused.
        """
        path = Path(path)
        try:
            fd = open_read_only(path)
        except OSError as err:
            raise TranscriptError(f"{path}: cannot read the transcript: {err}") from err
        try:
            reader, torn_tail, damaged = read_records(fd, path)
        finally:
            os.close(fd)
        if reader.header is None:
            cut = f" ({torn_tail})" if torn_tail else ""
            raise TranscriptCorrupt(str(path), 1, f"no complete header record{cut}")
        return reader.restored(torn_tail, damaged=damaged)

    @property
    def pending(self) -> int:
        """Records accepted but not yet on disk because the disk refused them."""
        return len(self._pending)

    def _start(self, session_id: str, header: Header | None) -> None:
        self._lock()
        reader, torn_tail, damaged = read_records(self._fd, self.path)  # type: ignore[arg-type]
        if reader.header is not None and reader.session_id != session_id:
            raise TranscriptCorrupt(str(self.path), 1, f"belongs to session {reader.session_id!r}, not {session_id!r}")
        self._size = reader.good_bytes
        saved_to = self._cut_bad_lines(reader.good_bytes, torn_tail, damaged)
        if reader.header is None:  # new, or a crash before the header was whole
            created, header = time.time(), header or Header()
            self.append_batch([("header", {"format": FORMAT, "version": FORMAT_VERSION, "checksum": CHECKSUM,
                                           "session_id": session_id, "created": created,
                                           "header": header_to_dict(header)})])  # raises if the disk refuses it
            if self.fsync != "never":
                self._sync_directory()
            reader = RecordReader(self.path, self._next_seq, self._size, session_id, created, header)
        cut = torn_tail is not None or damaged is not None
        self.restored = reader.restored(torn_tail, cut, damaged=damaged, saved_to=saved_to)
        self.header = self.restored.conversation.header
        self.item_count = len(self.restored.conversation)
        self._next_seq = reader.next_seq
        if header is not None and header != self.header:
            self.update_header(header)

    def _cut_bad_lines(self, good_bytes: int, torn_tail: SkippedLine | None, damaged: SkippedLine | None) -> Path | None:
        """Cut the file back to its last good record; lines that were whole are first copied to a side file."""
        bad = damaged or torn_tail
        if bad is None:
            return None
        saved_to = None
        removed = os.pread(self._fd, bad.length, bad.offset)  # type: ignore[arg-type]
        if b"\n" in removed:  # a whole line may be an acknowledged record: keep a copy, never just delete it
            name = f"{self.path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
            try:
                saved_to = write_new(self._dir_fd, name, removed, where=self.path.parent)  # type: ignore[arg-type]
            except OSError as err:
                raise TranscriptError(f"{self.path}: cannot set the damaged {bad} aside: {err}") from err
            log.warning("%s: damaged %s; moved to %s, resuming from the %d bytes before it",
                        self.path, bad, saved_to, good_bytes)
        self._io(lambda fd: os.ftruncate(fd, good_bytes), f"cutting off the bad {bad}")
        self._after_change()
        return saved_to

    def _lock(self) -> None:
        if fcntl is None:
            return
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # type: ignore[arg-type]
        except BlockingIOError as err:
            raise TranscriptLocked(f"{self.path}: another writer holds this session (another process, "
                                   "or another Context in this one); close it first") from err
        except OSError as err:
            raise TranscriptError(f"{self.path}: locking the file failed: {err}") from err

    def _sync_directory(self) -> None:
        """Make the new file's directory entry durable too."""
        try:
            os.fsync(self._dir_fd)  # type: ignore[arg-type]
        except OSError as err:
            raise TranscriptError(f"{self.path.parent}: cannot sync the directory: {err}") from err

    # -- appending
    def append(self, item: Item) -> int:
        """Append one item; returns its record's sequence number once it is committed.

        If the disk refuses the record (a full disk) it waits in memory
        (:attr:`pending`, logged) and the next write, :meth:`sync` or
        :meth:`close` writes it first; if too much is waiting already, it is
        refused with a :class:`TranscriptError`.
        """
        return self._append_record("item", {"item": item_to_dict(item)}, f"item {item.id!r} ({item.role})",
                                   is_item=True)

    def append_event(self, kind: str, data: JSONObject) -> int:
        """Record an event (``data`` must be JSON-serializable); returns its sequence number."""
        if not isinstance(kind, str) or not kind:
            raise TranscriptError(f"an event kind is a non-empty string, not {kind!r}")
        if not isinstance(data, Mapping):
            raise TranscriptError(f"event {kind!r}: data must be a mapping, not {type(data).__name__}")
        return self._append_record(
            "event", {"kind": kind, "time": time.time(), "item_count": self.item_count, "data": dict(data)},
            f"event {kind!r}",
        )

    def update_header(self, header: Header) -> int:
        """Record that the header changed (new system prompt or tools); returns the sequence number."""
        self.header = header
        return self._append_record("header_update", {"header": header_to_dict(header)}, "header update")

    def sync(self) -> None:
        """Write what the disk refused before, then force everything to the disk, whatever the fsync policy."""
        self._check_usable()
        self._flush_pending()
        if self._unsynced:
            self._fsync()

    def close(self) -> None:
        """Write what is pending, sync (unless the policy is ``"never"``) and release the file and its lock.

        Safe to call twice. The file is released whatever happens; records the
        disk still refuses are then lost, and a :class:`TranscriptError` says how many.
        """
        if self._fd is None:
            return
        lost = 0
        try:
            if self._pid == os.getpid() and self._broken is None:
                try:
                    self._flush_pending()
                except TranscriptError:
                    lost = len(self._pending)
                if self._unsynced and self.fsync != "never":
                    self._fsync()
        finally:
            self._release(remove=False)
        if lost:
            log.error("%s: closed with %d record(s) the disk refused; they are lost", self.path, lost)
            raise TranscriptError(f"{self.path}: closed with {lost} record(s) the disk refused; they are lost")

    def _release(self, *, remove: bool) -> None:
        """Close the file (which drops the lock) and its folder; ``remove`` deletes a file this open created."""
        if remove and self._pid == os.getpid():
            try:
                os.unlink(self.path.name, dir_fd=self._dir_fd)
            except OSError as err:
                log.warning("%s: could not remove the unfinished new transcript: %s", self.path, err)
        for fd in (self._fd, self._dir_fd):
            if fd is not None:
                os.close(fd)
        self._fd = self._dir_fd = None

    def __enter__(self) -> Transcript:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Transcript({str(self.path)!r}, {self._next_seq} records, fsync={self.fsync!r})"

    def append_batch(self, records: Sequence[tuple[str, dict[str, Any]]]) -> list[int]:
        """Append ``(type, fields)`` records as one batch, all or nothing; their sequence numbers.

        Every record but the last carries ``"more": n`` (how many of its batch
        follow), and the batch goes to the file in one write, so a reader sees
        it whole or not at all: a crash part way leaves an open batch at the
        end, which reading leaves out like a torn line (and :meth:`open` cuts
        off, keeping a copy). Unlike :meth:`append`, a batch the disk refuses
        is not kept here: the file is cut back to before it and
        :class:`TranscriptError` is raised (the caller keeps the records).
        """
        self._check_usable()
        self._flush_pending()  # records an append() left waiting go first; while the disk refuses them, so is this
        last = len(records) - 1
        lines = [checksummed(_encode({"seq": self._next_seq + n, "type": kind, **fields,
                                      **({"more": last - n} if n < last else {})},
                                     f"a {kind} record", self.max_record_bytes))
                 for n, (kind, fields) in enumerate(records)]
        data = b"".join(lines)
        try:
            self._write_all(data)
        except OSError as err:
            self._undo_partial_write()
            raise TranscriptError(f"{self.path}: the disk refused a batch of {len(lines)} record(s): {err}") from err
        seqs = list(range(self._next_seq, self._next_seq + len(lines)))
        self._next_seq += len(lines)
        self._size += len(data)
        for kind, fields in records:
            self.item_count += kind == "item"
            if kind == "header_update":
                self.header = header_from_dict(fields["header"])
        self._after_change()
        return seqs

    # -- the write path
    def _append_record(self, kind: str, fields: JSONObject, what: str, *, is_item: bool = False) -> int:
        self._check_usable()
        seq = self._next_seq
        data = checksummed(_encode({"seq": seq, "type": kind, **fields}, what, self.max_record_bytes))
        if self._pending and sum(map(len, self._pending)) + len(data) > MAX_PENDING_BYTES:
            self._flush_pending()  # raises while the disk still refuses: the record is refused, not queued
        self._pending.append(data)
        self._next_seq += 1
        self.item_count += is_item
        try:
            self._flush_pending()
        except TranscriptError as err:
            if self._broken is not None:
                raise
            log.warning("%s: could not append %s yet; kept in memory with %d record(s) waiting, written first "
                        "once the disk accepts: %s", self.path, what, len(self._pending), err.__cause__)
        return seq

    def _flush_pending(self) -> None:
        """Write the records the disk refused so far, oldest first; stop at the first refusal."""
        while self._pending:
            data = self._pending[0]
            try:
                self._write_all(data)
            except OSError as err:
                self._undo_partial_write()
                raise TranscriptError(f"{self.path}: the disk refused a record: {err}") from err
            self._pending.pop(0)
            self._size += len(data)
            self._after_change()

    def _write_all(self, data: bytes) -> None:
        """Write every byte: a regular file may take fewer than asked in one call."""
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)  # type: ignore[arg-type]
            if written == 0:
                raise OSError(errno.ENOSPC, "the file accepted no bytes")
            view = view[written:]

    def _undo_partial_write(self) -> None:
        """Cut a half-written record off, so the next one starts on a fresh line."""
        try:
            os.ftruncate(self._fd, self._size)  # type: ignore[arg-type]
        except OSError as err:
            self._broken = f"a failed write left part of a record that could not be removed ({err})"
            log.error("%s: %s", self.path, self._broken)

    def _after_change(self) -> None:
        self._unsynced += 1
        if self.fsync == "always" or (self.fsync == "batch" and self._unsynced >= self.batch_records):
            self._fsync()

    def _fsync(self) -> None:
        try:
            os.fsync(self._fd)  # type: ignore[arg-type]
        except OSError as err:
            self._broken = f"fsync failed ({err}), so which records reached the disk is unknown"
            log.error("%s: %s", self.path, self._broken)
            raise TranscriptError(f"{self.path}: {self._broken}") from err
        self._unsynced = 0

    def _io(self, operation: Callable[[int], object], doing: str) -> None:
        """Run ``operation(fd)``, turning an OS error into a TranscriptError that says what was being done."""
        try:
            operation(self._fd)  # type: ignore[arg-type]
        except OSError as err:
            raise TranscriptError(f"{self.path}: {doing} failed: {err}") from err

    def _check_usable(self) -> None:
        if self._fd is None:
            raise TranscriptError(f"{self.path}: the transcript is closed")
        if self._pid != os.getpid():
            raise TranscriptForked(f"{self.path}: opened by process {self._pid}, not this one ({os.getpid()}, a "
                                   "fork): only the process that opened a transcript may write to it")
        if self._broken is not None:
            raise TranscriptError(f"{self.path}: no further appends: {self._broken}; reopen the transcript")


def _open_session_file(dir_fd: int, path: Path, resume: bool | None) -> tuple[int, bool]:
    """Open (or create, ``O_EXCL``) the transcript file in its folder; returns the descriptor and whether it is new."""
    flags = os.O_RDWR | os.O_APPEND
    try:
        if resume is not True:
            try:
                return open_file(dir_fd, path.name, flags | os.O_CREAT | os.O_EXCL, where=path.parent,
                                 unsafe=TranscriptUnsafe), True
            except FileExistsError:
                if resume is False:
                    raise SessionExists(str(path.parent), path.stem) from None
        return open_file(dir_fd, path.name, flags, where=path.parent, unsafe=TranscriptUnsafe), False
    except FileNotFoundError as err:
        raise SessionNotFound(str(path.parent), path.stem) from err
    except OSError as err:
        raise TranscriptError(f"{path}: cannot open the transcript for appending: {err}") from err
