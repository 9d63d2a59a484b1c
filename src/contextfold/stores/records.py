"""The records a session is made of, built by the codec and stored as the transcript's JSON.

One format for every backend: a record body is exactly the JSON object of a
transcript line without its ``seq`` (the store keeps the sequence number in
its own column or position), so a session exported from a database is a
transcript file, and a transcript file is a session any store can hold.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping

from ..codec import header_to_dict, item_to_dict
from ..conversation import Header, Item, JSONObject
from ..errors import StoreError, TranscriptCorrupt, TranscriptError
from .base import VIEW_EVENT, Record
from .transcript import DEFAULT_MAX_RECORD_BYTES, _encode, checksummed
from .transcript_reading import FORMAT, FORMAT_VERSION, RecordReader, Restored


def header_record(session_id: str, header: Header, created: float | None = None) -> Record:
    return {"type": "header", "format": FORMAT, "version": FORMAT_VERSION, "session_id": session_id,
            "created": time.time() if created is None else created, "header": header_to_dict(header)}


def item_record(item: Item) -> Record:
    return {"type": "item", "item": item_to_dict(item)}


def event_record(kind: str, data: JSONObject, item_count: int) -> Record:
    if not isinstance(kind, str) or not kind:
        raise StoreError(f"an event kind is a non-empty string, not {kind!r}")
    if not isinstance(data, Mapping):
        raise StoreError(f"event {kind!r}: data must be a mapping, not {type(data).__name__}")
    return {"type": "event", "kind": kind, "time": time.time(), "item_count": item_count, "data": dict(data)}


def record_key(record: Record) -> str | None:
    """The idempotency key of a record: an item's id (an append retried after a timeout is then a no-op)."""
    if record.get("type") == "item" and isinstance(record.get("item"), Mapping):
        key = record["item"].get("id")
        return key if isinstance(key, str) else None
    return None


def header_update_record(header: Header) -> Record:
    return {"type": "header_update", "header": header_to_dict(header)}


def encode(record: Record, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> str:
    """A record body as stored (JSON text, no ``seq``); StoreError if it cannot be, or is too large."""
    body = {k: v for k, v in record.items() if k != "seq"}
    try:
        return _encode(body, f"a {record.get('type')} record", max_record_bytes).decode("utf-8").rstrip("\n")
    except TranscriptError as err:
        raise StoreError(str(err)) from err


def to_line(record: Record) -> bytes:
    """A record as a line of a transcript file (``seq`` and ``type`` first, as the transcript writes them)."""
    ordered = {"seq": record["seq"], "type": record["type"], **record}
    return checksummed(_encode(ordered, f"record {record['seq']}", DEFAULT_MAX_RECORD_BYTES))


def decode(where: str, seq: int, body: str | bytes) -> Record:
    """The record stored as ``body`` at ``seq``; TranscriptCorrupt naming it if the body is not a JSON object."""
    try:
        record = json.loads(body)
    except ValueError as err:
        raise TranscriptCorrupt(where, seq + 1, f"record {seq} is not valid JSON ({err})") from err
    if not isinstance(record, dict):
        raise TranscriptCorrupt(where, seq + 1, f"record {seq} is not a JSON object")
    return {"seq": seq, **record}


def restore(where: str, records: Iterable[Record]) -> Restored:
    """The conversation and events the records hold, checked the way a transcript file is (``line`` = seq + 1)."""
    reader = RecordReader(where)  # type: ignore[arg-type]
    for record in records:
        reader.read(record.get("seq", -1) + 1, record)
    if reader.header is None:
        raise TranscriptCorrupt(where, 1, "no header record")
    return reader.restored(None, truncated=False)


def view_revision(records: Iterable[Record], current: int = 0) -> int:
    """The sequence number of the last view checkpoint among ``records`` (``current`` if none)."""
    for record in records:
        if record.get("type") == "event" and record.get("kind") == VIEW_EVENT:
            current = record["seq"]
    return current
