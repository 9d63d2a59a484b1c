"""LangChain message objects <-> :class:`~contextfold.conversation.Conversation`, lossless both ways.

``to_langchain(from_langchain(messages)) == messages`` for the messages an
agent's state holds: ``SystemMessage``, ``HumanMessage``, ``AIMessage`` (and
its chunk) and ``ToolMessage``. ``langchain_core`` is imported only when
messages are written, so reading needs nothing but the objects.

How LangChain's shapes map onto the neutral model:

* Leading system messages are the header's system items; later ones stay in place.
* ``content`` is a string (one Text block, or none for ``""``) or a list:
  ``{"type": "text"}`` dicts are Text blocks (their other keys in ``extra``),
  bare strings in the list are Text blocks marked ``lc_string``,
  ``{"type": "thinking"}`` dicts are Thinking, anything else (images,
  Anthropic ``tool_use`` echoes, reasoning, citations...) is an Opaque block
  carried untouched.
* ``AIMessage.tool_calls`` are ToolCalls after the content blocks.
* A ``ToolMessage`` is a tool item: its content (string or blocks) is the
  result, ``status == "error"`` is ``is_error``.
* Every other field that differs from its default (``id``, ``name``,
  ``additional_kwargs``, ``response_metadata``, ``usage_metadata``,
  ``artifact``, ``invalid_tool_calls``...) rides in ``meta["extra"]``, and the
  class in ``meta["class"]`` when it is not the plain one (``AIMessageChunk``).
  They are the framework's own values; a transcript can store them only when
  they are plain JSON (LangChain's are; a tool's ``artifact`` may not be).

A message of another type (``ChatMessage``, ``FunctionMessage``,
``RemoveMessage``) raises :class:`~contextfold.errors.UnknownRole` naming its index.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..conversation import (
    Block,
    Conversation,
    Item,
    JSONValue,
    Opaque,
    Summary,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    ToolSpec,
    as_role,
)
from ..errors import InvalidContent, UnknownRole
from ..usage import Usage
from ._reading import CallIds, as_list, read_object, require_call, shown, with_leading_system, word
from ._writing import foreign_block

ORIGIN = "langchain"
TARGET = "LangChain messages"
_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool", "AIMessageChunk": "assistant"}
_CLASSES = {"system": "SystemMessage", "user": "HumanMessage", "assistant": "AIMessage", "tool": "ToolMessage"}
_MODELLED = frozenset({"content", "type", "tool_calls", "tool_call_id", "status"})
STRING = "lc_string"
"""``Text.extra`` key marking a bare string inside a content list."""


# --------------------------------------------------------------------------- reading


def from_langchain(messages: Sequence[object], *, known_call_ids: Iterable[str] = ()) -> Conversation:
    """Read LangChain messages. Errors name the message index and field."""
    calls = CallIds(known_call_ids)
    items = [_read_message(message, index, calls) for index, message in enumerate(as_list(messages, None, "messages"))]
    return with_leading_system(items, (), ORIGIN)


def _fields(message: object, index: int) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The message's type, its modelled fields, and the others that differ from their defaults."""
    fields = getattr(type(message), "model_fields", None)
    given = getattr(message, "type", None)
    kind = word(given)
    if fields is None or kind is None or kind not in _ROLES:
        raise UnknownRole(index, "type", f"unsupported message {type(message).__name__} (type {shown(given)})")
    modelled: dict[str, JSONValue] = {}
    extra: dict[str, JSONValue] = {}
    for name, info in fields.items():
        value = getattr(message, name, None)  # an object built without validation may lack one
        if name in _MODELLED:
            modelled[name] = value
        elif name != "type" and value != info.get_default(call_default_factory=True):
            extra[name] = value
    return kind, modelled, extra


def _read_message(message: object, index: int, calls: CallIds) -> Item:
    kind, fields, extra = _fields(message, index)
    role = _ROLES[kind]
    meta: dict[str, JSONValue] = {"origin": ORIGIN}
    if type(message).__name__ != _CLASSES[role]:
        meta["class"] = type(message).__name__
    if extra:
        meta["extra"] = extra
    content = fields["content"]
    if isinstance(content, str):
        meta["shape"] = "str"
        blocks: list[Block] = [Text(content)] if content else []
    else:
        meta["shape"] = "list"
        blocks = [_read_part(part, index, f"content[{k}]") for k, part in enumerate(as_list(content, index, "content"))]
    if role == "tool":
        call_id = fields["tool_call_id"]
        require_call(call_id, calls, index, "tool_call_id")
        body: str | tuple[Block, ...] = content if isinstance(content, str) else tuple(blocks)
        return Item("tool", (ToolResult(call_id, body, fields["status"] == "error"),), meta=meta)
    for position, call in enumerate(as_list(fields.get("tool_calls") or (), index, "tool_calls")):
        blocks.append(_read_call(call, index, f"tool_calls[{position}]", calls))
    return Item(as_role(role), tuple(blocks), meta=meta)


def _read_part(part: object, index: int, field: str) -> Block:
    if isinstance(part, str):
        return Text(part, extra={STRING: True})
    wire = read_object(part, index, field)
    kind = wire.rest.get("type")
    if kind == "text" and isinstance(wire.rest.get("text"), str):
        text = wire.take("text", str)
        del wire.rest["type"]
        return Text(text, extra=wire.rest)
    if kind == "thinking" and isinstance(wire.rest.get("thinking"), str):
        thinking = wire.take("thinking", str)
        signature = wire.take("signature", str, required=False)
        del wire.rest["type"]
        return Thinking(thinking, signature, extra=wire.rest)
    return Opaque(wire.data, ORIGIN)


def _read_call(call: object, index: int, field: str, calls: CallIds) -> ToolCall:
    wire = read_object(call, index, field)
    name = wire.take("name", str)
    args = wire.take("args", Mapping)
    call_id = wire.take("id", str, required=False)
    if call_id is None:
        raise InvalidContent(index, f"{field}.id", "a tool call without an id cannot be paired with its result")
    calls.add(call_id)
    return ToolCall(call_id, name, args, extra=wire.rest)


# --------------------------------------------------------------------------- writing


def to_langchain(conversation: Conversation) -> list[Any]:
    """The messages for ``conversation``, header system items first (``langchain_core`` objects)."""
    from langchain_core import messages as lc

    out = []
    items: list[tuple[int | None, str, Item]] = [
        (None, f"header.system[{k}].", item) for k, item in enumerate(conversation.header.system)]
    items += [(None, f"header.pinned[{k}].", item) for k, item in enumerate(conversation.header.pinned)]
    items += [(index, "", item) for index, item in enumerate(conversation.items)]
    for index, prefix, item in items:
        same = item.meta.get("origin") == ORIGIN
        cls = getattr(lc, (item.meta.get("class") or _CLASSES[item.role]) if same else _CLASSES[_role(item)])
        fields = dict(item.meta.get("extra", {})) if same else {}
        fields.update(_write_fields(item, same, index, prefix))
        out.append(cls(**fields))
    return out


def _role(item: Item) -> str:
    return "system" if item.role == "developer" else item.role


def _write_fields(item: Item, same: bool, index: int | None, prefix: str) -> dict[str, JSONValue]:
    result = item.tool_result
    if result is not None:
        content = result.content if isinstance(result.content, str) else [
            _write_part(block, same, index, f"{prefix}blocks[0].content[{k}]") for k, block in enumerate(result.content)
        ]
        return {"content": content, "tool_call_id": result.call_id, "status": "error" if result.is_error else "success"}
    calls = item.tool_calls
    blocks = [b for b in item.blocks if not isinstance(b, ToolCall)]
    shape = item.meta.get("shape") if same else None
    fields: dict[str, JSONValue] = {"content": _content(blocks, shape, same, index, prefix)}
    if calls:
        fields["tool_calls"] = [
            {"name": c.name, "args": dict(c.arguments), "id": c.id, **(c.extra if same else {"type": "tool_call"})}
            for c in calls
        ]
    return fields


def _content(blocks: Sequence[Block], shape: str | None, same: bool, index: int | None, prefix: str) -> str | list[Any]:
    """A string where the source had one (or, from elsewhere, for one plain text), else the list of parts."""
    if shape == "str" or (shape is None and len(blocks) <= 1 and all(isinstance(b, (Text, Summary)) for b in blocks)):
        if not blocks:
            return ""
        if len(blocks) == 1 and isinstance(blocks[0], (Text, Summary)) and not (same and blocks[0].extra):
            return blocks[0].text
    return [_write_part(block, same, index, f"{prefix}blocks[{k}]") for k, block in enumerate(blocks)]


def _write_part(block: Block, same: bool, index: int | None, field: str) -> Any:
    if isinstance(block, Text):
        if same and block.extra.get(STRING):
            return block.text
        return {"type": "text", "text": block.text, **(dict(block.extra) if same else {})}
    if isinstance(block, Summary):
        return {"type": "text", "text": block.text}
    if isinstance(block, Thinking):
        signature = {"signature": block.signature} if block.signature is not None else {}
        return {"type": "thinking", "thinking": block.thinking, **signature, **(dict(block.extra) if same else {})}
    if isinstance(block, Opaque) and block.provider == ORIGIN:
        return dict(block.data)
    raise foreign_block(block, index, field, TARGET)


def message_id(item: Item) -> str | None:
    """The LangChain id of the message an item was read from (``None`` when it had none)."""
    return item.meta.get("extra", {}).get("id") if item.meta.get("origin") == ORIGIN else None


def tools_from_langchain(tools: Sequence[Any]) -> tuple[ToolSpec | Opaque, ...]:
    """Tool definitions (``BaseTool`` objects, functions or provider dicts) as the header's tools.

    LangChain renders each the way it sends it to OpenAI-compatible models;
    those are read with the Chat Completions rules.
    """
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from .openai_chat import from_openai

    return from_openai([], tools=[convert_to_openai_tool(tool) for tool in tools]).header.tools


def usage_from_langchain(usage: Mapping[str, Any]) -> Usage:
    """An ``AIMessage.usage_metadata`` (``input_tokens`` counts the cached part too) in the neutral shape."""
    details = usage.get("input_token_details") or {}
    return Usage(
        prompt_tokens=int(usage.get("input_tokens") or 0),
        output_tokens=int(usage.get("output_tokens") or 0),
        cache_read_tokens=int(details.get("cache_read") or 0),
        cache_write_tokens=int(details.get("cache_creation") or 0),
    )
