"""Goose sessions (block/goose: ``~/.local/share/goose/sessions/*.jsonl``, and ``goose session export`` JSON).

The JSON Lines file opens with the session's metadata (``working_dir``,
``description``, token totals), then one message a line; an export is one
JSON object with the same metadata and the messages in ``conversation``.
A message is ``{id, role, created, content, metadata}``: ``created`` in unix
seconds, ``metadata`` saying whether the agent and the person saw it
(``agentVisible``, ``userVisible``, kept in ``meta["visible"]`` when either is
false: Goose hides what its own compaction replaced, and the summary it
wrote is for the agent only). Content items, by ``type``:

- ``text``, ``image`` (``data``, ``mimeType``), ``thinking`` (with its
  ``signature``), ``redactedThinking``;
- ``toolRequest`` / ``frontendToolRequest``: a call, ``{id, toolCall}`` where
  ``toolCall`` is ``{status: "success", value: {name, arguments}}`` or
  ``{status: "error", error}`` (a call the model wrote wrong: kept with
  ``{}`` and the error as its raw arguments);
- ``toolResponse``: the result of the call of the same ``id``,
  ``{status: "success", value}`` where ``value`` is an MCP result
  (``{content, isError}``, or, from older versions, the list of contents),
  or ``{status: "error", error}``. MCP text contents are the result's text,
  images its images, embedded resources their text.

Confirmation requests, required actions, system notifications and the
markers older versions wrote (``conversationCompacted``,
``summarizationRequested``, ``contextLengthExceeded``) are bookkeeping,
counted in ``meta["skipped"]``; a content type not known yet in
``meta["unknown_records"]``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..conversation import Block, Conversation, Image, JSONObject, RedactedThinking, Text, Thinking, ToolCall
from ._common import ConversationBuilder, Source, field_of, kind_of, object_at, text_blocks, unix_time

FORMAT = "goose"
CALLS = frozenset({"toolRequest", "frontendToolRequest"})
BOOKKEEPING = frozenset(
    {"toolConfirmationRequest", "actionRequired", "systemNotification", "conversationCompacted",
     "summarizationRequested", "contextLengthExceeded"}
)  # fmt: skip
GOOSE_CONTENT = CALLS | BOOKKEEPING | {"toolResponse", "redactedThinking"}
"""Content types only Goose writes: one of them tells a Goose message from a chat API's."""
SESSION_FIELDS = ("working_dir", "description", "name")
LEADING = 3
"""How many leading lines detection reads: the metadata line, then a message or two."""


def matches(source: Source) -> bool:
    doc = source.document
    if isinstance(doc, dict) and isinstance(doc.get("conversation"), list):
        return "working_dir" in doc
    if doc is not None and not isinstance(doc, dict):
        return False
    records = source.leading_records(LEADING)
    if records and records[0] is not None and "working_dir" in records[0] and "role" not in records[0]:
        return True
    return any(record is not None and _goose_message(record) for record in records)


def _goose_message(record: JSONObject) -> bool:
    """A message with Goose's own marks: ``created`` and its visibility, or a content type only Goose has."""
    content = record.get("content")
    if not isinstance(record.get("role"), str) or "created" not in record or not isinstance(content, list):
        return False
    own = any(isinstance(part, Mapping) and isinstance(part.get("type"), str) and part["type"] in GOOSE_CONTENT
              for part in content)
    return own or "agentVisible" in object_at(record, "metadata")


def load(source: Source) -> list[Conversation]:
    doc = source.document
    if isinstance(doc, dict) and isinstance(doc.get("conversation"), list):
        session: JSONObject = doc
        messages = [(f"$.conversation[{index}]", message) for index, message in enumerate(doc["conversation"])]
    else:
        lines = list(source.records())
        first = lines[0][1] if lines else {}
        session = first if "role" not in first else {}
        messages = [(f"line {number}", record) for number, record in lines if record is not session]
    meta = {"format": FORMAT, **{key: session[key] for key in SESSION_FIELDS if isinstance(session.get(key), str)}}
    builder = ConversationBuilder(source, f"{source.name}:0", meta)
    for where, message in messages:
        _message(builder, message, where)
    return [builder.build()]


def _message(builder: ConversationBuilder, message: object, where: str) -> None:
    source = builder.source
    if not isinstance(message, Mapping):
        raise source.error(where, "a message must be an object")
    role = kind_of(source, message, "role", where)
    content = field_of(source, message, "content", list, where)
    timestamp = unix_time(message.get("created"))
    visibility = object_at(message, "metadata")
    hidden = {key: visibility[key] for key in ("agentVisible", "userVisible") if visibility.get(key) is False}
    meta: dict[str, Any] = {"visible": hidden} if hidden else {}
    blocks: list[Block] = []
    for index, part in enumerate(content):
        place = f"{where}.content[{index}]"
        if not isinstance(part, Mapping):
            raise source.error(place, "a content item must be an object")
        kind = kind_of(source, part, "type", place)
        if kind == "toolResponse":
            _result(builder, part, place, timestamp, meta)
        elif kind in BOOKKEEPING:
            builder.skip(f"content/{kind}")
        else:
            blocks.extend(_block(builder, part, kind, place))
    if not blocks:
        return
    if role == "assistant":
        builder.add_assistant(blocks, where, timestamp, meta)
    else:
        builder.add_user(blocks, timestamp, meta)


def _block(builder: ConversationBuilder, part: JSONObject, kind: str | None, where: str) -> list[Block]:
    if kind == "text":
        return text_blocks(field_of(builder.source, part, "text", str, where))
    if kind == "image":
        mime = part.get("mimeType")
        return [Image(data=field_of(builder.source, part, "data", str, where), media_type=mime if isinstance(
            mime, str) else None)]
    if kind == "thinking":
        signature = part.get("signature")
        text = field_of(builder.source, part, "thinking", str, where)
        return [Thinking(text, signature if isinstance(signature, str) and signature else None)]
    if kind == "redactedThinking":
        return [RedactedThinking(field_of(builder.source, part, "data", str, where))]
    if kind in CALLS:
        return [_call(builder, part, where)]
    builder.skip_unknown(f"content/{kind or '(no type)'}")
    return []


def _call(builder: ConversationBuilder, part: JSONObject, where: str) -> ToolCall:
    call_id = field_of(builder.source, part, "id", str, where)
    call = field_of(builder.source, part, "toolCall", Mapping, where)
    if call.get("status") == "error":  # the model's call could not be read: kept, its error as the raw arguments
        return ToolCall(call_id, "(invalid call)", {}, str(call.get("error", "")))
    value = field_of(builder.source, call, "value", Mapping, f"{where}.toolCall")
    name = field_of(builder.source, value, "name", str, f"{where}.toolCall.value")
    arguments = value.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        raise builder.source.error(f"{where}.toolCall.value.arguments", "expected an object")
    return ToolCall(call_id, name, dict(arguments))


def _result(builder: ConversationBuilder, part: JSONObject, where: str, timestamp: float | None,
            meta: JSONObject) -> None:
    call_id = field_of(builder.source, part, "id", str, where)
    result = field_of(builder.source, part, "toolResult", Mapping, where)
    if result.get("status") == "error":
        builder.add_result(call_id, str(result.get("error", "")), where, True, timestamp, None, meta)
        return
    value = result.get("value")
    contents = value.get("content") if isinstance(value, Mapping) else value
    if not isinstance(contents, list):
        raise builder.source.error(f"{where}.toolResult.value", "expected an MCP result or a list of contents")
    blocks = _mcp_contents(contents)
    is_error = value.get("isError") if isinstance(value, Mapping) else None
    only_text = all(isinstance(block, Text) for block in blocks)
    text = "\n".join(block.text for block in blocks if isinstance(block, Text))
    builder.add_result(call_id, text if only_text else tuple(blocks), where,
                       is_error if isinstance(is_error, bool) else None, timestamp, None, meta)


def _mcp_contents(contents: Sequence[object]) -> list[Block]:
    """MCP contents: text, images, and embedded resources by their text (a binary one named, not inlined)."""
    blocks: list[Block] = []
    for content in contents:
        if not isinstance(content, Mapping):
            continue
        kind = content.get("type")
        if kind == "text" and isinstance(content.get("text"), str):
            blocks.extend(text_blocks(content["text"]))
        elif kind == "image" and isinstance(content.get("data"), str):
            mime = content.get("mimeType")
            blocks.append(Image(data=content["data"], media_type=mime if isinstance(mime, str) else None))
        elif kind == "resource":
            resource = object_at(content, "resource")
            text = resource.get("text")
            blocks.extend(text_blocks(text if isinstance(text, str) else f"[resource {resource.get('uri', '')}]"))
        else:
            blocks.append(Text(json.dumps(content, ensure_ascii=False)))
    return blocks
