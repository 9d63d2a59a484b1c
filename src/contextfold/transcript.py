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
gets glued onto a torn one. A bad line anywhere else is not a crash
artefact: reading stops with :class:`~contextfold.errors.TranscriptCorrupt`
naming the line.

Records (``seq`` counts records from 0 with no gap, so a lost line shows)::

    {"seq": 0, "type": "header", "format": "contextfold-transcript", "version": 1,
     "session_id": "...", "created": 1700000000.0, "header": {...codec.header_to_dict...}}
    {"seq": 1, "type": "item", "item": {...codec.item_to_dict...}}
    {"seq": 2, "type": "event", "kind": "compaction", "time": 1700000001.5, "item_count": 1, "data": {...}}
    {"seq": 3, "type": "header_update", "header": {...}}
"""

from __future__ import annotations

import errno
import json
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

from .codec import header_from_dict, header_to_dict, item_from_dict, item_to_dict
from .conversation import Conversation, Header, Item
from .errors import InvalidConversation, TranscriptCorrupt, TranscriptError

try:
    import fcntl
except ImportError:  # Windows: no advisory lock, one writer per transcript is the caller's duty.
    fcntl = None  # type: ignore[assignment]

FORMAT = "contextfold-transcript"
FORMAT_VERSION = 1
"""The record layout this module writes; a transcript with a higher version is refused."""

FsyncPolicy = Literal["always", "batch", "never"]
FSYNC_POLICIES: tuple[str, ...] = ("always", "batch", "never")

DEFAULT_MAX_RECORD_BYTES = 32 * 1024 * 1024
"""Largest single record, in bytes: the largest request a provider accepts (Anthropic: 32 MB).

An item over it could never be sent to a model anyway, and every reader
holds a whole line in memory.
"""

_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def validate_session_id(session_id: str) -> str:
    """Return ``session_id`` if it is safe as a file name, else raise :class:`TranscriptError`.

    Allowed: 1 to 128 ASCII letters, digits, ``.``, ``_`` and ``-``, starting
    with a letter or digit (so no ``..``, no path separators, no hidden files).
    """
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        raise TranscriptError(
            f"invalid session id {session_id!r}: use 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return session_id


def transcript_path(directory: str | os.PathLike[str], session_id: str) -> Path:
    """Where the transcript of ``session_id`` lives in ``directory`` (the name comes from the id only)."""
    return Path(directory) / f"{validate_session_id(session_id)}.jsonl"


# --------------------------------------------------------------------------- what a load returns


@dataclass(frozen=True, slots=True)
class TranscriptEvent:
    """A recorded event (a compaction, say), with where it happened.

    ``item_count`` is how many items the transcript held when the event was
    recorded, so a replay can place it between items; ``time`` is Unix seconds.
    """

    seq: int
    kind: str
    data: dict[str, Any]
    time: float
    item_count: int


@dataclass(frozen=True, slots=True)
class SkippedLine:
    """A line left out of a load; ``line`` is 1-based, ``offset`` and ``length`` in bytes."""

    line: int
    offset: int
    length: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line} ({self.length} bytes at offset {self.offset}): {self.reason}"


@dataclass(frozen=True, slots=True)
class LoadReport:
    """What reading a transcript found.

    ``records`` counts the good records (header included). ``torn_tail`` is the
    last line when a crash cut its write short; it is the only line ever
    skipped. ``truncated`` says the file was cut back to its last good record
    (only :meth:`Transcript.open` does that; :meth:`Transcript.load` never writes).
    """

    path: Path
    session_id: str
    created: float
    records: int
    torn_tail: SkippedLine | None = None
    truncated: bool = False

    @property
    def skipped(self) -> tuple[SkippedLine, ...]:
        return (self.torn_tail,) if self.torn_tail else ()


class Restored(NamedTuple):
    """A conversation rebuilt from its transcript, its events and the load report."""

    conversation: Conversation
    events: list[TranscriptEvent]
    report: LoadReport


# --------------------------------------------------------------------------- reading


@dataclass
class _Reader:
    """Rebuilds the session one record at a time, checking each as it goes."""

    path: Path
    next_seq: int = 0
    good_bytes: int = 0
    session_id: str = ""
    created: float = 0.0
    header: Header | None = None
    items: list[Item] = field(default_factory=list)
    events: list[TranscriptEvent] = field(default_factory=list)

    def corrupt(self, line: int, reason: str) -> TranscriptCorrupt:
        return TranscriptCorrupt(str(self.path), line, reason)

    def read(self, line: int, record: Any) -> None:
        if not isinstance(record, dict):
            raise self.corrupt(line, f"a record is a JSON object, found {type(record).__name__}")
        seq, kind = record.get("seq"), record.get("type")
        if type(seq) is not int or seq != self.next_seq:
            raise self.corrupt(line, f"sequence number {seq!r} where {self.next_seq} was expected "
                                     "(a record is missing or repeated)")
        if (kind == "header") != (seq == 0):
            raise self.corrupt(line, "the header must be the first record, and only the first")
        handler = {"header": self._header, "item": self._item, "event": self._event,
                   "header_update": self._header_update}.get(kind)
        if handler is None:
            raise self.corrupt(line, f"unknown record type {kind!r}")
        try:
            handler(record)
        except TranscriptError as err:
            raise self.corrupt(line, str(err)) from err
        except (KeyError, TypeError, ValueError, InvalidConversation) as err:
            raise self.corrupt(line, f"invalid {kind} record: {type(err).__name__}: {err}") from err
        self.next_seq += 1

    def _header(self, record: dict[str, Any]) -> None:
        if record.get("format") != FORMAT:
            raise TranscriptError(f"not a {FORMAT} file (format {record.get('format')!r})")
        if not isinstance(record["version"], int) or record["version"] > FORMAT_VERSION:
            raise TranscriptError(f"format version {record['version']!r} is newer than this reader ({FORMAT_VERSION})")
        self.session_id = validate_session_id(record["session_id"])
        self.created = float(record["created"])
        self.header = header_from_dict(record["header"])

    def _header_update(self, record: dict[str, Any]) -> None:
        self.header = header_from_dict(record["header"])

    def _item(self, record: dict[str, Any]) -> None:
        self.items.append(item_from_dict(record["item"]))

    def _event(self, record: dict[str, Any]) -> None:
        kind, data = record["kind"], record["data"]
        if not isinstance(kind, str) or not isinstance(data, dict):
            raise TypeError("an event has a string kind and an object as data")
        self.events.append(TranscriptEvent(record["seq"], kind, data, float(record["time"]), int(record["item_count"])))

    def restored(self, torn_tail: SkippedLine | None, truncated: bool) -> Restored:
        assert self.header is not None
        report = LoadReport(self.path, self.session_id, self.created, self.next_seq, torn_tail, truncated)
        return Restored(Conversation(self.items, self.header), self.events, report)


def _parse_line(line: bytes) -> tuple[Any, str | None]:
    """The record on one raw line, or ``(None, reason)`` when the line is unreadable."""
    if not line.endswith(b"\n"):
        return None, "no line end: the write was cut short"
    try:
        return json.loads(line.decode("utf-8")), None
    except ValueError as err:  # JSONDecodeError and UnicodeDecodeError alike
        return None, f"not valid JSON ({err})"


def _read(path: Path) -> tuple[_Reader, SkippedLine | None]:
    """Read every record; an unreadable line is a torn tail if it is the last, else corruption."""
    reader = _Reader(path)
    unreadable: SkippedLine | None = None
    offset = 0
    try:
        with open(path, "rb") as file:
            for number, line in enumerate(file, start=1):
                if unreadable is not None:
                    raise reader.corrupt(unreadable.line, f"{unreadable.reason}, and records follow it, "
                                                          "so it is not a torn tail")
                record, reason = _parse_line(line)
                if reason is not None:
                    unreadable = SkippedLine(number, offset, len(line), reason)
                else:
                    reader.read(number, record)
                    reader.good_bytes = offset + len(line)
                offset += len(line)
    except OSError as err:
        raise TranscriptError(f"{path}: cannot read the transcript: {err}") from err
    return reader, unreadable


# --------------------------------------------------------------------------- writing


def _encode(record: dict[str, Any], what: str, max_record_bytes: int) -> bytes:
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

    Errors are :class:`TranscriptError` so the caller can carry on without a
    transcript. A failed write is undone (the file keeps only whole records);
    after a failed fsync, or a failed undo, the transcript refuses further
    appends until it is reopened, because which records reached the disk is
    then unknown.

    :attr:`restored` is what the file held when it was opened (the header
    alone for a new transcript); :attr:`header` and :attr:`item_count` follow
    the appends since.
    """

    restored: Restored

    def __init__(self, path: Path, fd: int, fsync: FsyncPolicy, batch_records: int, max_record_bytes: int) -> None:
        self.path = path
        self.fsync: FsyncPolicy = fsync
        self.batch_records = batch_records
        self.max_record_bytes = max_record_bytes
        self.header = Header()
        self.item_count = 0
        self._fd: int | None = fd
        self._size = 0  # bytes of whole records in the file
        self._next_seq = 0
        self._unsynced = 0  # changes written since the last fsync
        self._broken: str | None = None

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
    ) -> Transcript:
        """Create the transcript of ``session_id`` in ``directory``, or resume the one there.

        The directory is created owner-only (0700) and the file 0600. On
        resume the file is read back (see :attr:`restored`), a torn last line
        is cut off, and ``header``, if given and different from the recorded
        one, is appended as a header update. Only one writer may hold a
        transcript at a time.
        """
        if fsync not in FSYNC_POLICIES:
            raise TranscriptError(f"fsync must be one of {FSYNC_POLICIES}, not {fsync!r}")
        if batch_records < 1:
            raise TranscriptError(f"batch_records must be at least 1, not {batch_records}")
        path = transcript_path(directory, session_id)
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError as err:
            raise TranscriptError(f"{path}: cannot open the transcript for appending: {err}") from err
        transcript = cls(path, fd, fsync, batch_records, max_record_bytes)
        try:
            transcript._start(session_id, header)
        except BaseException:
            transcript.close()
            raise
        return transcript

    @staticmethod
    def load(path: str | os.PathLike[str]) -> Restored:
        """Rebuild the conversation and events a transcript holds, without writing to it.

        A torn last line is skipped and reported; any other bad line raises
        :class:`TranscriptCorrupt` naming it.
        """
        reader, torn_tail = _read(Path(path))
        if reader.header is None:
            cut = f" ({torn_tail})" if torn_tail else ""
            raise TranscriptCorrupt(str(path), 1, f"no complete header record{cut}")
        return reader.restored(torn_tail, truncated=False)

    def _start(self, session_id: str, header: Header | None) -> None:
        self._lock()
        reader, torn_tail = _read(self.path)
        self._size = reader.good_bytes
        if torn_tail is not None:
            self._io(lambda fd: os.ftruncate(fd, reader.good_bytes), f"cutting off the torn {torn_tail}")
            self._after_change()
        if reader.header is None:  # new, or a crash before the header was whole
            self._io(lambda fd: os.fchmod(fd, 0o600), "setting the file mode")
            created, header = time.time(), header or Header()
            self._append_record("header", {"format": FORMAT, "version": FORMAT_VERSION, "session_id": session_id,
                                           "created": created, "header": header_to_dict(header)}, "header")
            if self.fsync != "never":
                self._sync_directory()
            reader = _Reader(self.path, self._next_seq, self._size, session_id, created, header)
        elif reader.session_id != session_id:
            raise TranscriptCorrupt(str(self.path), 1, f"belongs to session {reader.session_id!r}, not {session_id!r}")
        self.restored = reader.restored(torn_tail, truncated=torn_tail is not None)
        self.header = self.restored.conversation.header
        self.item_count = len(self.restored.conversation)
        self._next_seq = reader.next_seq
        if header is not None and header != self.header:
            self.update_header(header)

    def _lock(self) -> None:
        if fcntl is not None:
            self._io(lambda fd: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB),
                     "locking the file (is another writer holding this session?)")

    def _sync_directory(self) -> None:
        """Make the new file's directory entry durable too."""
        try:
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as err:
            raise TranscriptError(f"{self.path.parent}: cannot sync the directory: {err}") from err

    # -- appending
    def append(self, item: Item) -> int:
        """Append one item; returns its record's sequence number once it is committed."""
        seq = self._append_record("item", {"item": item_to_dict(item)}, f"item {item.id!r} ({item.role})")
        self.item_count += 1
        return seq

    def append_event(self, kind: str, data: Mapping[str, Any]) -> int:
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
        seq = self._append_record("header_update", {"header": header_to_dict(header)}, "header update")
        self.header = header
        return seq

    def sync(self) -> None:
        """Force everything appended so far to the disk, whatever the fsync policy."""
        self._check_usable()
        if self._unsynced:
            self._fsync()

    def close(self) -> None:
        """Sync (unless the policy is ``"never"``) and release the file. Safe to call twice."""
        if self._fd is None:
            return
        try:
            if self._unsynced and self.fsync != "never" and self._broken is None:
                self._fsync()
        finally:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Transcript:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Transcript({str(self.path)!r}, {self._next_seq} records, fsync={self.fsync!r})"

    # -- the write path
    def _append_record(self, kind: str, fields: dict[str, Any], what: str) -> int:
        self._check_usable()
        seq = self._next_seq
        data = _encode({"seq": seq, "type": kind, **fields}, what, self.max_record_bytes)
        try:
            self._write_all(data)
        except OSError as err:
            self._undo_partial_write()
            raise TranscriptError(f"{self.path}: could not append {what}: {err}") from err
        self._size += len(data)
        self._next_seq += 1
        self._after_change()
        return seq

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

    def _after_change(self) -> None:
        self._unsynced += 1
        if self.fsync == "always" or (self.fsync == "batch" and self._unsynced >= self.batch_records):
            self._fsync()

    def _fsync(self) -> None:
        try:
            os.fsync(self._fd)  # type: ignore[arg-type]
        except OSError as err:
            self._broken = f"fsync failed ({err}), so which records reached the disk is unknown"
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
        if self._broken is not None:
            raise TranscriptError(f"{self.path}: no further appends: {self._broken}; reopen the transcript")
