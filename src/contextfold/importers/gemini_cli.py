"""Gemini CLI saved chats (``~/.gemini/tmp/<project hash>/chats/session-*.json`` or ``.jsonl``).

Gemini CLI's chat recording keeps one session per file, in one of two layouts:

- a JSON object ``{sessionId, projectHash, startTime, lastUpdated, messages, summary?}``
  (the layout of 2025);
- JSON Lines (the newer one): a ``session_metadata`` record (written again
  when the session's summary or times change), then one record per message,
  and ``message_update`` records that add fields (the response's ``tokens``,
  its ``toolCalls`` as they complete) to the message of the same ``id``,
  merged in the order written, whichever comes first (the message keeps its
  own ``timestamp``, not its updates').

Each message has ``id``, ``timestamp``, ``type`` and ``content`` (a string or
a list of Gemini parts):

- ``user``: a user item (its parts read by the Gemini adapter);
- ``gemini``: a model response: its ``thoughts`` (``subject`` and
  ``description``) as thinking, its text, and its ``toolCalls``, each
  ``{id, name, args, result, status}``; the call becomes a ``ToolCall`` and
  its ``result`` (the ``functionResponse`` parts Gemini CLI sent back, read
  by the Gemini adapter) its result, an error result when ``status`` is
  ``error``. A call without a ``result`` (cancelled before it ran) stays
  unanswered, as every unanswered call does. ``tokens``
  (``input``/``output``/``cached``/``thoughts``) is the response's usage,
  ``model`` its model.
- ``info``, ``error``, ``warning``: notes the CLI showed the person, never
  sent to the model: counted in ``meta["skipped"]``.

A message ``type`` not known yet, or a JSON Lines record of a type not known
yet, is counted in ``meta["unknown_records"]``. ``Header.meta`` has
``session_id``, ``project_hash`` and the session's ``summary`` where saved.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..adapters.recorded import genai_parts
from ..conversation import Block, Conversation, Item, JSONObject, Text, Thinking, ToolCall
from ..usage import Usage
from ._common import ConversationBuilder, Source, field_of, kind_of, read_wire, unix_time

FORMAT = "gemini-cli"
GEMINI = "gemini"
"""The adapter that reads the parts of a message and of a tool call's result."""
RESPONSE = "gemini"
"""Gemini CLI's message type for a model response (the CLI's word, not a provider switch)."""
MESSAGE_TYPES = frozenset({"user", RESPONSE})
NOTES = frozenset({"info", "error", "warning"})
"""Messages the CLI showed the person and never sent to the model."""
SESSION_FIELDS = {"sessionId": "session_id", "projectHash": "project_hash", "summary": "summary"}


def matches(source: Source) -> bool:
    doc = source.document
    if isinstance(doc, dict):
        return isinstance(doc.get("messages"), list) and "sessionId" in doc and "projectHash" in doc
    record = source.first_record if doc is None else None
    if record is None:
        return False
    if record.get("type") == "session_metadata":
        return "sessionId" in record
    kind = record.get("type")
    return isinstance(kind, str) and kind in MESSAGE_TYPES and {"id", "timestamp", "content"} <= record.keys() and (
        "message" not in record and "uuid" not in record  # Claude Code's records
    )


def load(source: Source) -> list[Conversation]:
    doc = source.document
    unknown: dict[str, int] = {}
    if source.first_record is not None and not (isinstance(doc, dict) and "messages" in doc):
        session, placed, unknown = _from_lines(source)
    else:
        session = source.require_document(dict)
        messages = field_of(source, session, "messages", list, "$")
        placed = [(f"$.messages[{index}]", message) for index, message in enumerate(messages)]
    builder = ConversationBuilder(source, f"{source.name}:0", {"format": FORMAT})
    said = {name: session[key] for key, name in SESSION_FIELDS.items() if isinstance(session.get(key), str)}
    builder.meta.update(said)
    builder.unknown.update(unknown)
    for where, message in placed:
        _message(builder, message, where)
    return [builder.build()]


def _from_lines(source: Source) -> tuple[JSONObject, list[tuple[str, Any]], dict[str, int]]:
    """The session's metadata (later records' fields winning), its messages with every update merged in, in
    the order first written, and the count of records of types not known yet."""
    session: dict[str, Any] = {}
    messages: dict[str, tuple[str, dict[str, Any]]] = {}
    unknown: dict[str, int] = {}
    for number, record in source.records():
        where = f"line {number}"
        kind = kind_of(source, record, "type", where)
        if kind == "session_metadata":
            session.update(record)
            continue
        if kind not in MESSAGE_TYPES | NOTES | {"message_update"}:
            unknown[kind or "(no type)"] = unknown.get(kind or "(no type)", 0) + 1
            continue
        message_id = field_of(source, record, "id", str, where)
        own = ("type", "timestamp") if kind == "message_update" else ()  # when it was updated, not written
        fields = {key: value for key, value in record.items() if key not in own}
        if message_id in messages:
            messages[message_id][1].update(fields)
        else:  # an update may come before its message: the message's own fields then fill it in
            messages[message_id] = (where, fields)
    return session, list(messages.values()), unknown


def _message(builder: ConversationBuilder, message: object, where: str) -> None:
    source = builder.source
    if not isinstance(message, Mapping):
        raise source.error(where, "a message must be an object")
    kind = kind_of(source, message, "type", where)
    timestamp = unix_time(message.get("timestamp"))
    if kind in NOTES:
        builder.skip(f"message/{kind}")
    elif kind == "user":
        for item in _parts(builder, "user", message.get("content"), f"{where}.content"):
            builder.add_item(item, where, timestamp)
    elif kind == RESPONSE:
        _response(builder, message, where, timestamp)
    else:
        builder.skip_unknown(f"message/{kind}" if kind else "message/(no type)")


def _parts(builder: ConversationBuilder, role: str, content: object, where: str) -> list[Item]:
    """A message's content as items: a string as text, parts (in the REST API's camelCase) read by the Gemini
    adapter."""
    if content is None or isinstance(content, str):
        return [Item("assistant" if role == "model" else "user", (Text(content),))] if content else []
    parts = genai_parts(content if isinstance(content, list) else [content])
    return read_wire(builder, GEMINI, [{"role": role, "parts": parts}], where)


def _response(builder: ConversationBuilder, message: JSONObject, where: str, timestamp: float | None) -> None:
    blocks: list[Block] = [Thinking(text) for text in _thoughts(message.get("thoughts"))]
    for item in _parts(builder, "model", message.get("content"), f"{where}.content"):
        blocks.extend(item.blocks)
    calls = message.get("toolCalls") or []
    if not isinstance(calls, list):
        raise builder.source.error(f"{where}.toolCalls", f"expected a list, found a {type(calls).__name__}")
    placed = [(f"{where}.toolCalls[{index}]", call) for index, call in enumerate(calls)]
    blocks.extend(_call(builder, call, place) for place, call in placed)
    meta: dict[str, Any] = {}
    usage = _usage(message.get("tokens"))
    if usage is not None:
        meta["usage"] = usage.to_dict()
    if isinstance(message.get("model"), str):
        meta["model"] = message["model"]
    builder.add_assistant(blocks, where, timestamp, meta)
    for place, call in placed:
        _result(builder, call, place)


def _thoughts(thoughts: object) -> list[str]:
    """Gemini CLI's thought summaries (``subject``, ``description``) as the text of one thinking block each."""
    texts = []
    for thought in thoughts if isinstance(thoughts, list) else ():
        if isinstance(thought, Mapping):
            parts = [thought.get("subject"), thought.get("description")]
            text = "\n".join(part for part in parts if isinstance(part, str) and part)
            if text:
                texts.append(text)
    return texts


def _call(builder: ConversationBuilder, call: object, where: str) -> ToolCall:
    if not isinstance(call, Mapping):
        raise builder.source.error(where, "a tool call must be an object")
    call_id = field_of(builder.source, call, "id", str, where)
    name = field_of(builder.source, call, "name", str, where)
    args = call.get("args") or {}
    if not isinstance(args, Mapping):
        raise builder.source.error(f"{where}.args", f"expected an object, found a {type(args).__name__}")
    return ToolCall(call_id, name, dict(args))


def _result(builder: ConversationBuilder, call: JSONObject, where: str) -> None:
    """The call's ``result`` as the tool result (and what else it sent back, after it); none: left open."""
    result, error = call.get("result"), call.get("status") == "error"
    timestamp = unix_time(call.get("timestamp"))
    facts = {"status": call["status"]} if isinstance(call.get("status"), str) else {}
    if result is None or result == []:
        return
    if isinstance(result, str):
        builder.add_result(str(call["id"]), result, where, error or None, timestamp, facts)
        return
    for item in _parts(builder, "user", result, f"{where}.result"):
        if item.tool_result is not None and error:
            item = replace(item, blocks=(replace(item.tool_result, is_error=True),))
        builder.add_item(item, where, timestamp, facts=facts if item.tool_result is not None else None)


def _usage(tokens: object) -> Usage | None:
    """Gemini CLI's own token summary: ``input`` is the whole prompt (``cached`` part of it), ``output`` the
    answer without its ``thoughts``."""
    if not isinstance(tokens, Mapping):
        return None
    counts = {key: tokens.get(key) for key in ("input", "output", "cached", "thoughts")}
    number = {key: value if isinstance(value, int) and not isinstance(value, bool) else 0
              for key, value in counts.items()}
    if not isinstance(counts["input"], int):
        return None
    return Usage(number["input"], number["output"] + number["thoughts"], number["cached"])
