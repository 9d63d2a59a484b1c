"""What every importer shares: reading the file once, and building a conversation in order.

A recorded session is read into a :class:`~._source.Source` (the decoded text,
parsed lazily as one JSON document or as JSON Lines), and each conversation in it is
assembled by a :class:`ConversationBuilder`, which

- keeps the parts of one model response together (several records sharing a
  response id, or reasoning/message/call events streamed one by one) so that
  parallel calls land in one assistant item, as the validity rules require;
- refuses a tool result whose call it has not seen, or a second result for the
  same call, naming the place in the file (``SessionFormatError``);
- gives items ids derived from the file name and position, so loading the same
  file twice gives equal conversations;
- counts what an importer skips on purpose (UI noise, bookkeeping records) in
  ``Header.meta["skipped"]``, and record types it does not know yet (a newer
  version of the recording tool) in ``Header.meta["unknown_records"]`` with a
  warning, so nothing disappears without a trace and a new type never refuses
  the whole file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from ..adapters import Reply, adapter_for, parse_arguments
from ..conversation import (
    Block,
    Conversation,
    Header,
    Item,
    JSONObject,
    JSONValue,
    Opaque,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
    as_role,
)
from ..errors import InvalidMessage
from ..usage import Usage
from ._source import Source as Source

log = logging.getLogger("contextfold.importers")

CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
"""The roles of a chat message in any provider's shape: a recorded message with another role (mini-swe-agent's
``exit``, a newer recorder's own) is the recording's bookkeeping, not a turn of the chat."""

MAX_EXTRA_CHARS = 300
"""Longest string kept in ``ToolResult.extra``; longer values duplicate the content and stay out."""


# --------------------------------------------------------------------------- small readers


_FRACTION = re.compile(r"\.(\d+)")


_LAST_UNIX_S = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc).timestamp()
"""The latest time a ``datetime`` can show: a number past it (either way) is no time at all."""


def unix_time(value: object) -> float | None:
    """Unix seconds from an ISO-8601 string (naive means UTC) or a number; ``None`` if absent or
    not a time (a number no date can show: ``10**400``, infinity, NaN).

    Python 3.10's ``fromisoformat`` takes neither ``Z`` nor fractions other than
    3 or 6 digits, so both are normalised first.
    """
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) if -_LAST_UNIX_S <= value <= _LAST_UNIX_S else None
    if not isinstance(value, str):
        return None
    text = value.strip().replace("Z", "+00:00").replace(" ", "T", 1)
    text = _FRACTION.sub(lambda m: "." + m.group(1)[:6].ljust(6, "0"), text, count=1)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def field_of(source: Source, record: JSONObject, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``record[key]``, which must exist and be of ``kind``; else a SessionFormatError at ``where.key``."""
    value = record.get(key)
    if not isinstance(value, kind):
        names = " or ".join(t.__name__ for t in (kind if isinstance(kind, tuple) else (kind,)))
        found = "missing" if key not in record else f"a {type(value).__name__}"
        raise source.error(f"{where}.{key}", f"expected {names}, found {found}")
    return value


def object_at(record: JSONObject, key: str) -> JSONObject:
    """``record[key]`` when it is an object, else an empty one: an optional part a recording may leave out."""
    value = record.get(key)
    return value if isinstance(value, Mapping) else {}


def kind_of(source: Source, record: JSONObject, key: str, where: str) -> str | None:
    """``record[key]`` that says what a record is (its ``type``, ``kind``, ``role``): a string, or ``None``
    when absent; anything else is a SessionFormatError at ``where.key``."""
    value = record.get(key)
    if value is None or isinstance(value, str):
        return value
    raise source.error(f"{where}.{key}", f"expected a string, found a {type(value).__name__}")


def call_arguments(raw: object) -> tuple[dict[str, JSONValue], str | None]:
    """Tool-call arguments as recorded (an object, a JSON string, anything else) as ``(arguments, raw string)``.

    A model may emit arguments that are not a JSON object; that is a recorded
    fact, not a broken file, so the call is kept with ``{}`` and the raw string
    (JSON text for a recorded non-string), and :meth:`ConversationBuilder.build`
    lists it in the item's ``meta["invalid_arguments"]``, as the adapters do.
    """
    if isinstance(raw, Mapping):
        return dict(raw), None
    if raw is None:
        return {}, None
    text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    return parse_arguments(text) or {}, text


def read_wire(
    builder: ConversationBuilder, adapter: str, messages: Sequence[Any], where: str, **fields: Any
) -> list[Item]:
    """Provider-shaped messages of a recording, read by that provider's adapter (system items first).

    Tool results may answer any call recorded so far.
    """
    with _wire_errors(builder, where):
        read = adapter_for(adapter).read(messages, known_call_ids=builder.recorded_call_ids(), **fields)
    return [*read.header.system, *read.items]


def read_reply(builder: ConversationBuilder, adapter: str, response: object, where: str) -> Reply:
    """A model response as a recording kept it, read by that provider's adapter."""
    with _wire_errors(builder, where):
        return adapter_for(adapter).read_response(response)


@contextmanager
def _wire_errors(builder: ConversationBuilder, where: str) -> Iterator[None]:
    """An adapter's typed errors as a :class:`SessionFormatError` at ``where`` and the field."""
    try:
        yield
    except InvalidMessage as error:
        raise builder.source.error(f"{where}.{error.field}" if error.field else where, error.reason) from error


def small_scalars(data: object, exclude: frozenset[str] = frozenset()) -> dict[str, JSONValue]:
    """The short scalar fields of a mapping: what is worth keeping in ``ToolResult.extra``."""
    if not isinstance(data, Mapping):
        return {}
    out: dict[str, JSONValue] = {}
    for key, value in data.items():
        if key in exclude:
            continue
        short_text = isinstance(value, str) and len(value) <= MAX_EXTRA_CHARS
        if short_text or value is None or isinstance(value, (bool, int, float)):
            out[key] = value
    return out


def text_blocks(text: str | None) -> list[Block]:
    """A one-block list for non-empty text, else empty (providers reject empty text blocks)."""
    return [Text(text)] if text else []


def tool_specs(tools: object) -> tuple[ToolSpec | Opaque, ...]:
    """Tool definitions in OpenAI ``{"function": {...}}``, flat ``{name, ...}`` or bare-name form.

    What fits none of them (a definition without a name or with a schema that is not an object, a
    ``tools`` that is not a list) is kept as it was recorded, Opaque.
    """
    specs: list[ToolSpec | Opaque] = []
    for tool in (tools if isinstance(tools, (list, tuple)) else [tools]) if tools else ():
        if isinstance(tool, str):
            specs.append(ToolSpec(tool))
            continue
        body = tool.get("function", tool) if isinstance(tool, Mapping) else None
        parameters = (body.get("parameters", body.get("input_schema")) or {}) if isinstance(body, Mapping) else None
        if isinstance(body, Mapping) and isinstance(body.get("name"), str) and isinstance(parameters, Mapping):
            description = body.get("description")
            specs.append(ToolSpec(body["name"], description if isinstance(description, str) else None, parameters))
        else:
            specs.append(Opaque(tool if isinstance(tool, Mapping) else {"value": tool}))
    return tuple(specs)


# --------------------------------------------------------------------------- building


@dataclass
class _Draft:
    """An item still open to more blocks (a response arriving in parts)."""

    role: str
    blocks: list[Block]
    timestamp: float | None
    meta: dict[str, Any] = field(default_factory=dict)
    response_id: str | None = None


class ConversationBuilder:
    """Collects one conversation in file order and checks that results answer known calls.

    ``key`` seeds the item ids (``it_`` + 16 hex digits of a hash of key and
    position), so they are stable across loads and distinct across files.
    ``meta`` becomes ``Header.meta``; keys whose value the file lacks (``None``)
    are left out.
    """

    def __init__(self, source: Source, key: str, meta: JSONObject | None = None) -> None:
        self.source = source
        self.key = key
        self.meta: dict[str, Any] = {k: v for k, v in (meta or {}).items() if v is not None}
        self.system: list[Item] = []
        self.tools: tuple[ToolSpec | Opaque, ...] = ()
        self.skipped: Counter[str] = Counter()
        self.unknown: Counter[str] = Counter()
        self._drafts: list[_Draft | Item] = []
        self._calls: dict[str, ToolCall] = {}  # by unique id
        self._latest: dict[str, str] = {}  # id as recorded -> unique id of its newest call
        self._answered: set[str] = set()
        self._reuses: Counter[str] = Counter()
        self._groups: dict[str, str] = {}

    # -- what has been seen
    def call(self, call_id: str) -> ToolCall | None:
        """The newest call recorded with this id."""
        return self._calls.get(self._latest.get(call_id, call_id))

    def recorded_call_ids(self) -> AbstractSet[str]:
        """Call ids as the file records them (a live view: results may answer any of them)."""
        return self._latest.keys()

    @property
    def started(self) -> bool:
        """Whether any item was added yet (the conversation's opening is still to come when not)."""
        return bool(self._drafts)

    def open_calls(self) -> list[str]:
        """Ids of calls without a result yet, in order."""
        return [cid for cid in self._calls if cid not in self._answered]

    def skip(self, what: str) -> None:
        """Count a record dropped by design (see the importer's docstring for why)."""
        self.skipped[what] += 1

    def skip_unknown(self, kind: str) -> None:
        """Count a record of a type this importer does not know (a newer recorder wrote it): skipped, not refused."""
        self.unknown[kind] += 1

    # -- adding
    def add_system(self, text: str, timestamp: float | None = None) -> None:
        """A system prompt: into the header while no item exists, else an item in place."""
        self._add_system("system", text_blocks(text) if self._drafts else [Text(text)], timestamp, {})

    def _add_system(self, role: str, blocks: Sequence[Block], timestamp: float | None, meta: JSONObject) -> None:
        if self._drafts:
            self._drafts.append(_Draft(role, list(blocks), timestamp, dict(meta)))
        else:
            key = f"system{len(self.system)}"
            self.system.append(Item(as_role(role), tuple(blocks), id=self._id(key), timestamp=timestamp, meta=dict(meta)))

    def add_item(
        self,
        item: Item,
        where: str,
        timestamp: float | None = None,
        meta: Mapping[str, Any] | None = None,
        facts: JSONObject | None = None,
        response_id: str | None = None,
    ) -> None:
        """An item an adapter read (:func:`read_wire`), placed as its role says.

        ``meta`` adds what the recording says about it; ``facts`` are a tool
        result's (see :meth:`add_result`); ``response_id`` joins an assistant
        item to the earlier records of the same response.
        """
        meta = {**item.meta, **(meta or {})}
        if "group" in meta:  # the adapter's fresh id for one wire message: made stable, as item ids are
            meta["group"] = self._groups.setdefault(meta["group"], f"grp_{len(self._groups)}")
        result = item.tool_result
        if result is not None:
            content, error = result.content, result.is_error
            self.add_result(result.call_id, content, where, error, timestamp, facts, meta, result.extra)
        elif item.role == "assistant":
            self.add_assistant(item.blocks, where, timestamp, meta, response_id)
        elif item.role in ("system", "developer"):
            self._add_system(item.role, item.blocks, timestamp, meta)
        else:
            self._drafts.append(_Draft(item.role, list(item.blocks), timestamp, meta))

    def add_user(
        self, blocks: Sequence[Block], timestamp: float | None = None, meta: JSONObject | None = None
    ) -> None:
        self._drafts.append(_Draft("user", list(blocks), timestamp, dict(meta or {})))

    def add_assistant(
        self,
        blocks: Sequence[Block],
        where: str,
        timestamp: float | None = None,
        meta: JSONObject | None = None,
        response_id: str | None = None,
        merge: bool = False,
    ) -> None:
        """Blocks of a model response.

        They join the latest assistant item when it carries the same
        ``response_id`` (one response split over several records; results of
        its earlier calls may sit in between), or, with ``merge``, when the
        latest item is an assistant one (formats that stream a response as
        separate reasoning, message and call events). ``meta`` is merged in,
        later values winning (the last record of a response has its usage).

        Agents do reuse a call id once its result is in (tau-bench, SWE-agent
        replays); the conversation needs unique ids, so a reused id becomes
        ``<id>#<n>`` (the item's ``meta["original_ids"]`` maps it back) and the
        results that follow are matched to the newest call of that id.
        """
        renamed: dict[str, str] = {}
        blocks = [self._register(block, where, renamed) if isinstance(block, ToolCall) else block for block in blocks]
        meta = {**(meta or {}), **({"original_ids": renamed} if renamed else {})}
        target = self._joinable(response_id, merge)
        if target is None:
            self._drafts.append(_Draft("assistant", list(blocks), timestamp, meta, response_id))
        else:
            target.blocks.extend(blocks)
            renamed.update(target.meta.get("original_ids", {}))
            target.meta.update(meta)

    def _register(self, call: ToolCall, where: str, renamed: dict[str, str]) -> ToolCall:
        original = call.id
        if original in self._latest:
            previous = self._latest[original]
            if previous not in self._answered:
                raise self.source.error(where, f"tool call id {original!r} is used again before its result")
            self._reuses[original] += 1
            call = replace(call, id=f"{original}#{self._reuses[original] + 1}")
            renamed[call.id] = original
        self._latest[original] = call.id
        self._calls[call.id] = call
        return call

    def _joinable(self, response_id: str | None, merge: bool) -> _Draft | None:
        for draft in reversed(self._drafts):
            if isinstance(draft, Item):  # a tool result
                if response_id is None:
                    return None
                continue
            if draft.role != "assistant":
                return None
            if response_id is not None:
                return draft if draft.response_id == response_id else None
            return draft if merge else None
        return None

    def add_result(
        self,
        call_id: str,
        content: str | tuple[Block, ...],
        where: str,
        is_error: bool | None = None,
        timestamp: float | None = None,
        facts: JSONObject | None = None,
        meta: JSONObject | None = None,
        extra: JSONObject | None = None,
    ) -> None:
        """The result of a call already added; anything else means a broken file.

        ``facts`` are what the recording adds about the result (an exit code,
        the file read): they go to the item's ``meta["facts"]``, never to the
        block's ``extra``, which holds only what the provider's wire had and is
        written back to it.
        """
        call_id = self._latest.get(call_id, call_id)
        call = self._calls.get(call_id)
        if call is None:
            raise self.source.error(where, f"tool result for call {call_id!r}, which no earlier tool call has")
        if call_id in self._answered:
            raise self.source.error(where, f"second tool result for call {call_id!r}")
        self._answered.add(call_id)
        result = ToolResult(call_id, content, is_error, call.name, call.arguments, extra=dict(extra or {}))
        meta = {**(meta or {}), **({"facts": dict(facts)} if facts else {})}
        index = len(self._drafts)
        self._drafts.append(Item("tool", (result,), id=self._id(str(index)), timestamp=timestamp, meta=meta))

    def set_usage(self, usage: Usage) -> bool:
        """Put a reported usage on the latest assistant item; ``False`` if it already has one (or none exists)."""
        for draft in reversed(self._drafts):
            if isinstance(draft, _Draft) and draft.role == "assistant":
                if "usage" in draft.meta:
                    return False
                draft.meta["usage"] = usage.to_dict()
                return True
        return False

    def annotate_last(self, key: str, values: Sequence[JSONValue]) -> bool:
        """Append ``values`` to ``meta[key]`` of the latest non-tool item; ``False`` when there is none."""
        for draft in reversed(self._drafts):
            if isinstance(draft, _Draft):
                draft.meta.setdefault(key, []).extend(values)
                return True
        return False

    def mark_user(self, text: str, marks: JSONObject) -> bool:
        """Add ``marks`` to the meta of the latest user item when its text is ``text`` (a recording that says
        elsewhere which message the person typed); ``False`` when the latest item is not that message."""
        for draft in reversed(self._drafts):
            if isinstance(draft, Item):
                continue
            typed = "".join(block.text for block in draft.blocks if isinstance(block, Text))
            if draft.role != "user" or typed.strip() != text.strip():
                return False
            draft.meta.update(marks)
            return True
        return False

    # -- result
    def build(self) -> Conversation:
        items: list[Item] = []
        for index, draft in enumerate(self._drafts):
            if isinstance(draft, Item):
                items.append(draft)
                continue
            meta = dict(draft.meta)
            if draft.response_id is not None:
                meta.setdefault("response_id", draft.response_id)
            meta.pop("invalid_arguments", None)  # an adapter's list names the ids as recorded, before renaming
            invalid = [b.id for b in draft.blocks if isinstance(b, ToolCall) and _invalid_arguments(b)]
            if invalid:
                meta["invalid_arguments"] = invalid
            items.append(
                Item(as_role(draft.role), tuple(draft.blocks), id=self._id(str(index)), timestamp=draft.timestamp, meta=meta)
            )
        meta = dict(self.meta)
        if self.skipped:
            meta["skipped"] = dict(sorted(self.skipped.items()))
        if self.unknown:
            meta["unknown_records"] = dict(sorted(self.unknown.items()))
            log.warning("%s: skipped %d record(s) of type(s) not known yet: %s", self.source.name,
                        sum(self.unknown.values()), ", ".join(sorted(self.unknown)))
        return Conversation(items, Header(system=tuple(self.system), tools=self.tools, meta=meta))

    def _id(self, position: str) -> str:
        return "it_" + hashlib.blake2b(f"{self.key}/{position}".encode(), digest_size=8).hexdigest()


def _invalid_arguments(call: ToolCall) -> bool:
    """The adapters' rule: a call whose raw argument string is not a JSON object."""
    return call.raw_arguments is not None and parse_arguments(call.raw_arguments) is None
