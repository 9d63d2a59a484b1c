"""OpenAI Chat Completions messages <-> :class:`~contextfold.conversation.Conversation`, lossless both ways.

``to_openai(from_openai(messages))`` is exactly ``messages``;
``tools_to_openai(from_openai(m, tools=t))`` is exactly ``t``.

How the wire maps onto the neutral model:

* The leading ``system``/``developer`` messages are the header's system
  items; later ones stay in place.
* An assistant message is one item: its ``reasoning_content`` (DeepSeek and
  other compatible servers) as a Thinking block first, then its content
  parts, then its ``tool_calls``. Arguments keep their exact string in
  ``ToolCall.raw_arguments``; when that string is not a JSON object (OpenAI
  takes such history) ``arguments`` is ``{}`` and the call id is listed in
  ``meta["invalid_arguments"]``. Custom tool calls are ToolCalls whose raw
  input is free text.
* A ``tool`` message is a tool item; its content stays a string or a list.
* ``input_audio``, ``refusal`` and unknown parts are Opaque; ``file`` parts
  are Documents whose source is the ``file`` object.
* Unknown message keys (``name``, ``refusal``, ``audio``, vendor fields) ride
  in ``meta["extra"]``; ``meta["shape"]`` is the content's shape: ``"str"``,
  ``"list"``, ``"none"`` (``null``) or ``"absent"``.

The deprecated ``function`` role is not read (:class:`UnknownRole`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...conversation import (
    Block,
    Conversation,
    Document,
    Image,
    Item,
    JSONObject,
    JSONValue,
    Opaque,
    RedactedThinking,
    Summary,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    ToolSpec,
    as_role,
)
from ...errors import InvalidContent, UnknownRole
from .._media import image_url, openai_file
from .._reading import (
    SEQUENCE,
    CallIds,
    WireObject,
    as_list,
    check_block,
    parse_arguments,
    read_message,
    read_object,
    require_call,
    shown,
    with_leading_system,
    word,
)
from .._tools import read_spec, read_tools, spec_fields, write_tools
from .._writing import arguments_json, foreign_block, merged, numbered, origin, result_content, shaped, warn_dropped

ORIGIN = "openai"
TARGET = "OpenAI Chat Completions"
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
_ABSENT: object = object()


# --------------------------------------------------------------------------- reading


def from_openai(
    messages: Sequence[JSONObject],
    tools: Sequence[JSONObject] | None = None,
    *,
    known_call_ids: Iterable[str] = (),
) -> Conversation:
    """Read a Chat Completions message list. ``known_call_ids`` names calls made in messages read before it.

    Errors name the message index and field: :class:`UnknownRole`,
    :class:`InvalidContent` (wrong types, a tool message without its call),
    :class:`InvalidEncoding`, :class:`OversizedBlock`.
    """
    calls = CallIds(known_call_ids)
    items = [_read_message(raw, index, calls) for index, raw in enumerate(as_list(messages, None, "messages"))]
    return with_leading_system(items, read_tools(tools, ORIGIN, _read_tool), ORIGIN)


def _read_tool(wire: WireObject) -> ToolSpec | None:
    return read_spec(wire, "parameters", base="function") if wire.rest.get("type") == "function" else None


def _read_message(raw: object, index: int, calls: CallIds) -> Item:
    wire = WireObject(read_message(raw, index), index, "")
    role = word(wire.rest.get("role"))
    if role not in _ROLES:
        found = shown(wire.rest.get("role"))
        raise UnknownRole(index, "role", f"unknown role {found}; expected one of {sorted(_ROLES)}")
    wire.take("role", str)
    meta: dict[str, JSONValue] = {"origin": ORIGIN}
    if role == "tool":
        call_id = wire.take("tool_call_id", str)
        require_call(call_id, calls, index, "tool_call_id")
        blocks, shape = _read_content(wire, required=True, output=True)
        content: str | tuple[Block, ...] = tuple(blocks) if shape == "list" else (blocks[0].text if blocks else "")  # type: ignore[union-attr]
        blocks = [ToolResult(call_id, content)]
    elif role == "assistant":
        reasoning = wire.take("reasoning_content", str, required=False)
        content_blocks, meta["shape"] = _read_content(wire, required=False)
        invalid: list[str] = []
        blocks = (
            ([Thinking(reasoning)] if reasoning is not None else [])
            + content_blocks
            + _read_calls(wire, calls, invalid)
        )
        if invalid:
            meta["invalid_arguments"] = invalid
    else:
        blocks, meta["shape"] = _read_content(wire, required=True)
    if wire.rest:
        meta["extra"] = wire.rest
    return Item(as_role(role), tuple(blocks), meta=meta)


def _read_content(wire: WireObject, required: bool, output: bool = False) -> tuple[list[Block], str]:
    """The content's blocks and shape; an empty string is no block (OpenAI accepts it, so it is carried).

    A tool message's text (``output``) has no size limit: it goes to disk on arrival.
    """
    if "content" not in wire.rest and not required:
        return [], "absent"
    content = wire.take("content", (str, *SEQUENCE) if required else (str, *SEQUENCE, type(None)))
    if content is None:
        return [], "none"
    if isinstance(content, str):
        if not output:
            check_block(content, wire.index, "content")
        return ([Text(content)] if content else []), "str"
    return [_read_part(part, wire.index, f"content[{j}]", output) for j, part in enumerate(content)], "list"


def _read_part(raw: object, index: int | None, field: str, output: bool) -> Block:
    wire = read_object(raw, index, field, output)
    kind = wire.rest.get("type")
    if kind == "text":
        wire.take_if("type", kind)
        return Text(wire.take("text", str), wire.rest)
    if kind == "image_url":
        wire.take_if("type", kind)
        return Image(url=wire.take("image_url.url", str), extra=wire.rest)
    if kind == "file":
        wire.take_if("type", kind)
        return Document(wire.take("file", Mapping), wire.rest)
    return Opaque(wire.data, ORIGIN)  # input_audio, refusal, and parts we do not know


def _read_calls(wire: WireObject, calls: CallIds, invalid: list[str]) -> list[Block]:
    raw_calls = wire.rest.get("tool_calls")
    if raw_calls is None or (isinstance(raw_calls, SEQUENCE) and not raw_calls):
        return []  # absent, null or [] stay as they were in extra
    wire.take("tool_calls", SEQUENCE)
    return [_read_call(raw, wire.index, f"tool_calls[{j}]", calls, invalid) for j, raw in enumerate(raw_calls)]  # type: ignore[arg-type]


def _read_call(raw: object, index: int, field: str, calls: CallIds, invalid: list[str]) -> Block:
    wire = read_object(raw, index, field)
    call_id = wire.take("id", str)
    custom = wire.rest.get("type") == "custom"
    name = wire.take("custom.name" if custom else "function.name", str)
    raw_arguments = wire.take("custom.input" if custom else "function.arguments", str)
    arguments = parse_arguments(raw_arguments)
    if arguments is None:
        invalid.append(call_id)
    calls.add(call_id)
    return ToolCall(call_id, name, arguments or {}, raw_arguments, wire.rest)


# --------------------------------------------------------------------------- writing


def to_openai(conversation: Conversation) -> list[dict[str, JSONValue]]:
    """The message list, header system items first.

    Raises :class:`InvalidContent` for blocks Chat Completions cannot express
    (another provider's server blocks, images in tool messages, file ids);
    errors name the item's index in ``conversation.items`` and the neutral field.
    An item holding only reasoning that cannot be carried is left out (warned).
    """
    written = (_write_message(item, index, prefix) for index, prefix, item in numbered(conversation, system=True))
    return [message for message in written if message is not None]


def tools_to_openai(conversation: Conversation) -> list[dict[str, JSONValue]]:
    return write_tools(conversation, ORIGIN, TARGET, _write_tool)


def _write_tool(spec: ToolSpec, same: bool) -> dict[str, JSONValue]:
    function = spec_fields(spec, "parameters", same)
    return merged({"function": function}, spec.extra) if same else {"type": "function", "function": function}


def _write_message(item: Item, index: int | None, prefix: str) -> dict[str, JSONValue] | None:
    same = origin(item) == ORIGIN
    message: dict[str, JSONValue] = {"role": item.role}
    if item.role == "tool":
        message.update(_write_result(item, index, prefix, same))
    else:
        turn = _write_turn(item, index, prefix, same)
        if not turn and item.blocks:
            return None
        message.update(turn)
    return merged(message, item.meta.get("extra", {})) if same else message


def _write_turn(item: Item, index: int | None, prefix: str, same: bool) -> dict[str, JSONValue]:
    out: dict[str, JSONValue] = {}
    reasoning: list[str] = []
    calls: list[dict[str, JSONValue]] = []
    kept: list[tuple[Block, dict[str, JSONValue]]] = []
    for j, block in enumerate(item.blocks):
        field = f"{prefix}blocks[{j}]"
        if item.role == "assistant" and isinstance(block, Thinking) and (same or block.thinking):
            reasoning.append(block.thinking)
        elif item.role == "assistant" and isinstance(block, (Thinking, RedactedThinking)):
            warn_dropped("encrypted reasoning", index, field, TARGET)
        elif item.role == "assistant" and isinstance(block, ToolCall):
            calls.append(_write_call(block, same))
        else:
            kept.append((block, _write_part(block, same, index, field)))
    if reasoning:
        out["reasoning_content"] = "\n\n".join(reasoning)
    if item.blocks and not (kept or reasoning or calls or same):
        return out  # everything in it was reasoning this format cannot carry (warned)
    content = _content(kept, item.meta.get("shape") if same else None, item.role, bool(calls), same)
    if content is not _ABSENT:
        out["content"] = content
    if calls:
        out["tool_calls"] = calls
    return out


def _content(kept: list[tuple[Block, dict[str, JSONValue]]], shape: str | None, role: str, calls: bool, same: bool) -> Any:
    if not kept and shape in ("none", "absent"):
        return None if shape == "none" else _ABSENT
    content = shaped([b for b, _ in kept], [p for _, p in kept], shape if shape in ("str", "list") else None, same)
    if content is None:
        return None if role == "assistant" and calls else ""  # content may be null only beside tool calls
    return content


def _write_call(call: ToolCall, same: bool) -> dict[str, JSONValue]:
    if not same:
        return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments_json(call)}}
    if call.extra.get("type") == "custom":
        return merged({"id": call.id, "custom": {"name": call.name, "input": arguments_json(call)}}, call.extra)
    return merged({"id": call.id, "function": {"name": call.name, "arguments": arguments_json(call)}}, call.extra)


def _write_result(item: Item, index: int | None, prefix: str, same: bool) -> dict[str, JSONValue]:
    def write(block: Block, field: str) -> dict[str, JSONValue]:
        if not same and not isinstance(block, (Text, Summary)):
            raise InvalidContent(index, field, f"{TARGET} tool messages carry only text")
        return _write_part(block, same, index, field)

    result, content = result_content(item, index, prefix, same, TARGET, write)
    return {"tool_call_id": result.call_id, "content": content}


def _write_part(block: Block, same: bool, index: int | None, field: str) -> dict[str, JSONValue]:
    extra = block.extra if same and not isinstance(block, Summary) else {}
    if isinstance(block, (Text, Summary)):
        return merged({"type": "text", "text": block.text}, extra)
    if isinstance(block, Image):
        url = image_url(block)
        if url is None:
            raise InvalidContent(index, field, f"an image by provider file id cannot be expressed in {TARGET}")
        return merged({"type": "image_url", "image_url": {"url": url}}, extra)
    if isinstance(block, Document):
        file = dict(block.source) if same else openai_file(block, index, field, TARGET, accepts_url=False)
        return merged({"type": "file", "file": file}, extra)
    if isinstance(block, Opaque) and block.provider == ORIGIN:
        return dict(block.data)
    raise foreign_block(block, index, field, TARGET)
