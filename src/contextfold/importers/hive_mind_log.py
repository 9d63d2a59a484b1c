"""The framing of hive-mind ``solve.mjs`` logs: agent events and prompts out of a plain-text log.

Log lines look like ``[<ISO ts>] [INFO] <payload>``; the lines that follow
without that prefix continue the previous payload. An agent's JSON event is a
payload starting with ``{`` in one of three shapes:

1. one line, possibly followed by further one-line events on un-prefixed lines
   (several events written at once);
2. pretty-printed over un-prefixed lines (a tool output may itself contain a
   line ``}``, so the block is decoded as a whole);
3. one long line cut by the logger into consecutive prefixed chunks, joined
   without separator until they parse.

Two kinds of damage occur in real logs and are handled: an invalid JSON escape
(a control character mangled into ``\\^[``) is repaired by escaping the
backslash, and an event cut off for good (the log ends inside it) cannot be
decoded; its line is reported as an ``unparsed`` entry so the importer can
record it rather than lose it silently.

The ``---BEGIN USER PROMPT---`` / ``---BEGIN SYSTEM PROMPT---`` blocks give the
prompt the agent was started with, exactly (the shell-quoted raw command is
not needed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..conversation import Conversation, JSONValue, Text
from ._common import ConversationBuilder, Source, unix_time
from ._source import JsonFault, fitting, parse_json

PREFIX = re.compile(r"^\[(\d{4}-\d\d-\d\dT[0-9:.]+Z?)\] \[([A-Z]+)\] ?(.*)$")
PROMPT_MARKERS = {"---BEGIN USER PROMPT---": "user_prompt", "---BEGIN SYSTEM PROMPT---": "system_prompt"}
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class Entry:
    """Something the log recorded: an ``event`` (dict), a ``user_prompt`` / ``system_prompt``
    (str) or an ``unparsed`` event start (its first line); ``line`` is 1-based."""

    kind: str
    line: int
    timestamp: float | None
    value: Any = None


@dataclass(slots=True)
class _Record:
    line: int
    timestamp: str
    payload: str
    continuation: list[str]


def looks_like_log(source: Source) -> bool:
    """Whether the file is a prefixed log (checks the first lines only)."""
    return sum(bool(PREFIX.match(line)) for line in source.lines[:60]) >= 3


def carries(source: Source, is_event: Callable[[object], bool]) -> bool:
    """Whether the file holds an agent's events: as raw JSON Lines, or inside a log."""
    if is_event(source.first_record):
        return True
    return looks_like_log(source) and any(e.kind == "event" and is_event(e.value) for e in entries(source))


def add_prompts(builder: ConversationBuilder, prompts: dict[str, Entry]) -> None:
    """Open a conversation with the prompt blocks logged before it, consuming them."""
    system = prompts.pop("system_prompt", None)
    if system is not None:
        builder.add_system(system.value, system.timestamp)
    prompt = prompts.pop("user_prompt", None)
    if prompt is not None:
        builder.add_user([Text(prompt.value)], prompt.timestamp)


def note_unparsed(builder: ConversationBuilder, entry: Entry) -> None:
    """Record the line of an event that could not be decoded, so its loss is visible."""
    builder.meta.setdefault("unparsed_lines", []).append(entry.line)


def agent_entries(source: Source, is_event: Callable[[object], bool]) -> list[Entry]:
    """The agent's events, with the log's prompts and undecodable events, from either form."""
    if is_event(source.first_record):
        return [Entry("event", number, None, record) for number, record in source.records()]
    return [e for e in entries(source) if e.kind != "event" or is_event(e.value)]


class AgentLog:
    """An agent's events, raw or inside a log, read into conversations in file order.

    A format subclasses it with :meth:`is_event` (whether a JSON value is one
    of its events), :meth:`event` (take one), :meth:`current` (the
    conversation in progress, where an undecodable event is noted) and
    :meth:`finish`; the log's prompt blocks wait in ``prompts`` until the next
    conversation opens with them (:func:`add_prompts`). The module of the
    format exposes the class's :meth:`matches` and :meth:`load`.
    """

    def __init__(self, source: Source) -> None:
        self.source = source
        self.prompts: dict[str, Entry] = {}

    @staticmethod
    def is_event(value: object) -> bool:
        raise NotImplementedError

    @classmethod
    def matches(cls, source: Source) -> bool:
        return carries(source, cls.is_event)

    @classmethod
    def load(cls, source: Source) -> list[Conversation]:
        reader = cls(source)
        for entry in agent_entries(source, cls.is_event):
            if entry.kind == "event":
                reader.event(entry)
            elif entry.kind == "unparsed":
                note_unparsed(reader.current(), entry)
            else:
                reader.prompts[entry.kind] = entry
        return reader.finish()

    def event(self, entry: Entry) -> None:
        raise NotImplementedError

    def current(self) -> ConversationBuilder:
        raise NotImplementedError

    def finish(self) -> list[Conversation]:
        raise NotImplementedError


def entries(source: Source) -> list[Entry]:
    """Every event and prompt of the log, in order (parsed once per source)."""
    if "hive_mind_log" not in source.memo:
        found = list(_entries(_records(source.lines)))
        for entry in found:
            if entry.kind == "event":
                try:
                    fitting(entry.value, "$")
                except JsonFault as fault:
                    raise source.error(f"line {entry.line}", f"{fault.reason} ({fault.where})") from None
        source.memo["hive_mind_log"] = found
    entries_read: list[Entry] = source.memo["hive_mind_log"]  # what the branch above stored
    return entries_read


def _records(lines: list[str]) -> list[_Record]:
    records: list[_Record] = []
    for number, line in enumerate(lines, 1):
        match = PREFIX.match(line)
        if match:
            records.append(_Record(number, match.group(1), match.group(3), []))
        elif records:
            records[-1].continuation.append(line)
    return records


def _entries(records: list[_Record]) -> Iterator[Entry]:
    index = 0
    while index < len(records):
        record = records[index]
        timestamp = unix_time(record.timestamp)
        kind = PROMPT_MARKERS.get(record.payload.strip())
        if kind is not None:
            index, text = _prompt(records, index + 1, "---END" + record.payload.strip()[len("---BEGIN") :])
            yield Entry(kind, record.line, timestamp, text)
            continue
        if not record.payload.startswith("{"):
            index += 1
            continue
        events, rest = _decode("\n".join([record.payload, *record.continuation]))
        next_index = index + 1
        if not events:
            next_index, events, rest = _join_chunks(records, index)
        yield from (Entry("event", record.line, timestamp, event) for event in events)
        if not events or rest.startswith("{"):
            yield Entry("unparsed", record.line, timestamp)
        index = next_index


def _prompt(records: list[_Record], index: int, end_marker: str) -> tuple[int, str]:
    lines: list[str] = []
    while index < len(records) and records[index].payload.strip() != end_marker:
        lines += [records[index].payload, *records[index].continuation]
        index += 1
    return index + 1, "\n".join(lines)


def _decode(text: str) -> tuple[list[JSONValue], str]:
    """The JSON values at the start of ``text`` (shapes 1 and 2), and what follows them undecoded.

    Text after the last value is log output that was not prefixed; if it
    starts like an event, the caller reports it as unparsed.
    """
    values: list[JSONValue] = []
    position, end = 0, len(text.rstrip())
    while position < end:
        while text[position].isspace():
            position += 1
        try:
            value, position = _DECODER.raw_decode(text, position)
        except (ValueError, RecursionError):  # not JSON, a number too long, or nested deeper than the parser goes
            repaired = _loads_repaired(text[position:]) if not values else None
            if repaired is None:
                return values, text[position:].strip()
            value, position = repaired, end
        values.append(value)
    return values, ""


def _join_chunks(records: list[_Record], index: int) -> tuple[int, list[JSONValue], str]:
    """Shape 3: join the payloads of the following prefixed records until the text parses.

    A chunk is a record without continuation lines, except the last one, whose
    continuation may hold further one-line events. Stops at a record that
    starts a new event. Returns the index after the last chunk used, the
    events (none when nothing parses) and any undecoded rest.
    """
    text = records[index].payload
    probe = index + 1
    while probe < len(records) and not _continues(records[probe - 1]):
        payload = records[probe].payload
        if payload.startswith('{"type"') or payload == "{":
            break
        text += payload
        value = _loads_repaired(text)
        if value is not None:
            more, rest = _decode("\n".join(records[probe].continuation))
            return probe + 1, [value, *more], rest
        probe += 1
    return index + 1, [], ""


def _continues(record: _Record) -> bool:
    return any(line.strip() for line in record.continuation)


def _loads_repaired(text: str) -> JSONValue:
    """``json.loads``, retried once with invalid escapes neutralised; ``None`` if still invalid."""
    try:
        value: JSONValue = parse_json(text, check=False)
        return value
    except JsonFault as fault:
        if not fault.reason.startswith("not valid JSON: Invalid \\escape"):
            return None
    repaired = _ESCAPE.sub(lambda m: m.group(0) if m.group(1) in '"\\/bfnrtu' else "\\\\" + m.group(1), text)
    try:
        repaired_value: JSONValue = parse_json(repaired, check=False)
        return repaired_value
    except JsonFault:
        return None
