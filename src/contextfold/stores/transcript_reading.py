"""Reading a transcript back: its record format, what a load returns, and the reader that checks each record.

A transcript (:mod:`.transcript`) is a JSON Lines file: a header record, then
items, events and header updates, each with its sequence number and (format
2) its CRC-32. :func:`read_records` rebuilds the session one record at a time
and stops at the first bad line, telling a torn tail (a crash cut the last
write short) from damage with records after it; a batch whose records did not
all reach the disk counts as none of it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from ..codec import header_from_dict, item_from_dict
from ..conversation import Conversation, Header, Item, JSONValue
from ..errors import InvalidConversation, InvalidSessionId, TranscriptCorrupt, TranscriptError, TranscriptUnsafe
from ..private_files import open_dir, open_file

log = logging.getLogger("contextfold.stores.transcript")

FORMAT = "contextfold-transcript"
FORMAT_VERSION = 2
"""The record layout this module writes (2: every record carries a checksum); a higher version is refused."""
CHECKSUM = "crc32"
_CRC_TAIL = re.compile(rb',"crc":"([0-9a-f]{8})"\}\n\Z')

_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def validate_session_id(session_id: str) -> str:
    """Return ``session_id`` if it is safe as a file name, else raise :class:`InvalidSessionId`.

    Allowed: 1 to 128 ASCII letters, digits, ``.``, ``_`` and ``-``, starting
    with a letter or digit (so no ``..``, no path separators, no hidden files).
    """
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        raise InvalidSessionId(
            f"invalid session id {session_id!r}: use 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return session_id


# --------------------------------------------------------------------------- what a load returns


@dataclass(frozen=True, slots=True)
class TranscriptEvent:
    """A recorded event (a compaction, say), with where it happened.

    ``item_count`` is how many items the transcript held when the event was
    recorded, so a replay can place it between items; ``time`` is Unix seconds.
    """

    seq: int
    kind: str
    data: dict[str, JSONValue]
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
    last line when a crash cut its write short. ``damaged`` is the first bad
    line that records follow, with everything after it (``length`` covers
    them all): the load stops before it. ``truncated`` says the file was cut
    back to its last good record (only :meth:`Transcript.open` does that,
    after copying damaged lines to ``damaged_saved_to``; :meth:`Transcript.load`
    never writes).
    """

    path: Path
    session_id: str
    created: float
    records: int
    torn_tail: SkippedLine | None = None
    truncated: bool = False
    damaged: SkippedLine | None = None
    damaged_saved_to: Path | None = None

    @property
    def skipped(self) -> tuple[SkippedLine, ...]:
        return tuple(line for line in (self.damaged, self.torn_tail) if line is not None)


class Restored(NamedTuple):
    """A conversation rebuilt from its transcript, its events and the load report."""

    conversation: Conversation
    events: list[TranscriptEvent]
    report: LoadReport


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True, slots=True)
class _Batch:
    """Where an open batch started (its first line, and what had been read before it); ``more`` still to come."""

    line: int
    offset: int
    seq: int
    items: int
    events: int
    header: Header | None
    more: int = 0


@dataclass
class RecordReader:
    """Rebuilds the session one record at a time, checking each as it goes."""

    path: Path
    next_seq: int = 0
    good_bytes: int = 0
    session_id: str = ""
    created: float = 0.0
    header: Header | None = None
    checksums: bool = False  # the header promises a checksum on every record
    items: list[Item] = field(default_factory=list)
    events: list[TranscriptEvent] = field(default_factory=list)
    batch: _Batch | None = None  # where the open batch started, while its records are read

    def corrupt(self, line: int, reason: str) -> TranscriptCorrupt:
        return TranscriptCorrupt(str(self.path), line, reason)

    def read(self, line: int, record: object) -> None:
        if not isinstance(record, dict):
            raise self.corrupt(line, f"a record is a JSON object, found {type(record).__name__}")
        seq, kind = record.get("seq"), record.get("type")
        if type(seq) is not int or seq != self.next_seq:
            raise self.corrupt(line, f"sequence number {seq!r} where {self.next_seq} was expected "
                                     "(a record is missing or repeated)")
        if (kind == "header") != (seq == 0):
            raise self.corrupt(line, "the header must be the first record, and only the first")
        handlers = {"header": self._header, "item": self._item, "event": self._event,
                    "header_update": self._header_update}
        handler = handlers.get(kind) if isinstance(kind, str) else None
        if handler is None:
            raise self.corrupt(line, f"unknown record type {kind!r}")
        more = record.get("more", 0)
        if type(more) is not int or more < 0:
            raise self.corrupt(line, f"'more' is {more!r}: not the count of the batch's records still to come")
        if self.batch is not None and more != self.batch.more - 1:
            self.batch = None  # the part of a batch kept before a damaged line that was cut off: it ends here
        if more and self.batch is None:
            self.batch = _Batch(line, self.good_bytes, self.next_seq, len(self.items), len(self.events), self.header)
        try:
            handler(record)
        except TranscriptError as err:
            raise self.corrupt(line, str(err)) from err
        except (KeyError, TypeError, ValueError, AttributeError, InvalidConversation) as err:
            raise self.corrupt(line, f"invalid {kind} record: {type(err).__name__}: {err}") from err
        self.next_seq += 1
        if self.batch is not None:
            self.batch = replace(self.batch, more=more) if more else None

    def drop_open_batch(self) -> _Batch | None:
        """Forget the records of a batch that never ended (a crash part way through writing it); where it began."""
        batch, self.batch = self.batch, None
        if batch is not None:
            self.next_seq = batch.seq
            del self.items[batch.items:]
            del self.events[batch.events:]
            self.header = batch.header
            self.good_bytes = batch.offset
        return batch

    def _header(self, record: dict[str, Any]) -> None:
        if record.get("format") != FORMAT:
            raise TranscriptError(f"not a {FORMAT} file (format {record.get('format')!r})")
        if not isinstance(record["version"], int) or record["version"] > FORMAT_VERSION:
            raise TranscriptError(f"format version {record['version']!r} is newer than this reader ({FORMAT_VERSION})")
        self.session_id = validate_session_id(record["session_id"])
        self.created = float(record["created"])
        self.header = header_from_dict(record["header"])
        self.checksums = record.get("checksum") == CHECKSUM

    def _header_update(self, record: dict[str, JSONValue]) -> None:
        self.header = header_from_dict(record["header"])

    def _item(self, record: dict[str, JSONValue]) -> None:
        self.items.append(item_from_dict(record["item"]))

    def _event(self, record: dict[str, Any]) -> None:
        kind, data = record["kind"], record["data"]
        if not isinstance(kind, str) or not isinstance(data, dict):
            raise TypeError("an event has a string kind and an object as data")
        self.events.append(TranscriptEvent(record["seq"], kind, data, float(record["time"]), int(record["item_count"])))

    def restored(self, torn_tail: SkippedLine | None, truncated: bool = False, *, damaged: SkippedLine | None = None,
                 saved_to: Path | None = None) -> Restored:
        assert self.header is not None
        report = LoadReport(self.path, self.session_id, self.created, self.next_seq, torn_tail, truncated,
                            damaged, saved_to)
        return Restored(Conversation(self.items, self.header), self.events, report)


def parse_line(line: bytes, checksums: bool = False) -> tuple[JSONValue, str | None]:
    """The record on one raw line, or ``(None, reason)`` when the line is unreadable or fails its checksum."""
    if not line.endswith(b"\n"):
        return None, "no line end: the write was cut short"
    tail = _CRC_TAIL.search(line)
    if tail is not None:
        line = line[: tail.start()] + b"}"
        if zlib.crc32(line) != int(tail.group(1), 16):
            return None, "checksum mismatch: the line was changed after it was written"
    elif checksums:
        return None, "no checksum where every record has one"
    try:
        return json.loads(line.decode("utf-8")), None
    except ValueError as err:  # JSONDecodeError and UnicodeDecodeError alike
        return None, f"not valid JSON ({err})"
    except RecursionError:
        return None, "JSON nested too deep to read"


def read_records(fd: int, path: Path) -> tuple[RecordReader, SkippedLine | None, SkippedLine | None]:
    """Read the records of the open file ``fd`` up to the first bad one.

    Returns the reader, the torn tail (a bad last line) and the damage (a bad
    line records follow, spanning to the end of the file). Only a bad header
    with records after it is an error: there is nothing to resume.
    """
    reader = RecordReader(path)
    bad: SkippedLine | None = None
    after_bad = offset = 0
    try:
        with os.fdopen(os.dup(fd), "rb") as file:
            file.seek(0)
            for number, line in enumerate(file, start=1):
                if bad is not None:
                    after_bad += 1
                    offset += len(line)
                    continue
                record, reason = parse_line(line, reader.checksums)
                if reason is None:
                    try:
                        reader.read(number, record)
                    except TranscriptCorrupt as err:
                        reason = err.reason
                if reason is not None:
                    bad = SkippedLine(number, offset, len(line), reason)
                else:
                    reader.good_bytes = offset + len(line)
                offset += len(line)
    except OSError as err:
        raise TranscriptError(f"{path}: cannot read the transcript: {err}") from err
    crashed = bad is None or not after_bad  # a damaged line with records after it is no crash: keep what is whole
    batch = reader.drop_open_batch() if crashed else None
    reader.batch = None
    if batch is not None:  # a crash part way through a batch: none of it counts, as for a torn line
        reason = f"a batch cut short at line {bad.line} ({bad.reason})" if bad is not None else "a batch cut short"
        bad = SkippedLine(batch.line, batch.offset, offset - batch.offset,
                          f"{reason}: its whole records from line {batch.line} on are left out")
    if bad is None or not after_bad:
        return reader, bad, None
    if reader.header is None:
        raise reader.corrupt(bad.line, f"{bad.reason}, and records follow it: no header to resume from")
    damaged = SkippedLine(bad.line, bad.offset, offset - bad.offset,
                          f"{bad.reason}; it and the {after_bad} line(s) after it were not loaded")
    log.warning("%s: %s", path, damaged)
    return reader, None, damaged


def open_read_only(path: Path) -> int:
    """A descriptor for reading ``path`` that refuses links, FIFOs and devices."""
    folder = open_dir(path.parent, create=False, unsafe=TranscriptUnsafe)
    try:
        return open_file(folder, path.name, os.O_RDONLY, where=path.parent, unsafe=TranscriptUnsafe)
    finally:
        os.close(folder)
