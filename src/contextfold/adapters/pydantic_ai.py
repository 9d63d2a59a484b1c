"""pydantic-ai ``ModelMessage`` lists <-> :class:`~contextfold.conversation.Conversation`, lossless both ways.

``to_pydantic_ai(from_pydantic_ai(messages)) == messages``. Messages are read
through pydantic-ai's own serializer (``ModelMessagesTypeAdapter``, JSON
mode, so item metadata stays JSON) and written back through it; pydantic-ai is
imported when a function here is first called.

How the types map onto the neutral model:

* A ``ModelRequest`` becomes one item per part, sharing ``meta["group"]``
  and the request's own fields (``meta["message"]``): a ``SystemPromptPart`` a
  system item, a ``UserPromptPart`` a user item (text, and Opaque blocks for
  images, documents and other user content), a ``ToolReturnPart`` a tool
  item, a ``RetryPromptPart`` for a tool call a tool item marked as an error
  (one for output validation a user item), any other part a user item
  holding it Opaque. A tool return whose ``outcome`` is not ``success``
  (a retry, a failure) is an error result. The part's fields besides its content ride in
  ``meta["part"]``.
* A ``ModelResponse`` is one assistant item: ``TextPart`` Text,
  ``ToolCallPart`` ToolCall (string arguments parsed, the string kept),
  ``ThinkingPart`` Thinking, any other part (built-in tool calls and
  returns, files, provider compaction parts) Opaque; the response's fields
  (usage, model, provider details) in ``meta["message"]``.
* Items from elsewhere (a summary, files restored after it, a synthetic
  result from a repair) are written as new requests (user prompts, tool
  returns) or responses (text).

:func:`usage_from_pydantic_ai` reads the usage a ``ModelResponse`` carries.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..conversation import (
    Block,
    Conversation,
    Item,
    JSONObject,
    JSONValue,
    Opaque,
    Summary,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    new_id,
)
from ..errors import InvalidMessage
from ..usage import Usage
from ._reading import CallIds, as_list, as_object, read_message, require_call
from ._writing import foreign_block, origin

ORIGIN = "pydantic_ai"
TARGET = "pydantic-ai messages"
_TOOL_PARTS = ("tool-return", "retry-prompt")


def _adapter() -> Any:
    """pydantic-ai's serializer of message lists, imported by name at first use: pydantic-ai is an extra, and this
    module is type-checked (and imported) without it."""
    return importlib.import_module("pydantic_ai.messages").ModelMessagesTypeAdapter


# --------------------------------------------------------------------------- reading


def from_pydantic_ai(messages: Sequence[object], *, known_call_ids: Iterable[str] = ()) -> Conversation:
    """Read ``ModelMessage`` objects; ``known_call_ids`` names calls made in messages read before this list.

    Errors name the message index and field: :class:`InvalidMessage` for a
    message pydantic-ai cannot serialize or a tool return without its call.
    """
    try:
        data = _adapter().dump_python(list(as_list(messages, None, "messages")), mode="json")
    except Exception as error:
        raise InvalidMessage(None, "", f"pydantic-ai could not serialize the messages: {error}") from error
    calls = CallIds(known_call_ids)
    items: list[Item] = []
    for index, raw in enumerate(data):  # what pydantic-ai dumped from objects built without validation is checked
        message = read_message(raw, index)
        rest = {k: v for k, v in message.items() if k != "parts"}
        parts = [as_object(part, index, f"parts[{j}]") for j, part in enumerate(as_list(message.get("parts"), index,
                                                                                        "parts"))]
        if message.get("kind") == "response":
            blocks = tuple(_read_response_part(part, calls) for part in parts)
            items.append(Item("assistant", blocks, meta={"origin": ORIGIN, "message": rest}))
            continue
        group = new_id("grp")
        for j, part in enumerate(parts):
            items.append(_read_request_part(part, index, f"parts[{j}]", calls, {"group": group, "message": rest}))
    return Conversation(items)


def _read_request_part(part: Mapping[str, Any], index: int, field: str, calls: CallIds, meta: JSONObject) -> Item:
    kind = part.get("part_kind")
    rest = {k: v for k, v in part.items() if k != "content"}
    meta = {"origin": ORIGIN, **meta, "part": rest}
    content = part.get("content")
    if kind in _TOOL_PARTS and part.get("tool_call_id") and part.get("tool_name"):
        require_call(part["tool_call_id"], calls, index, f"{field}.tool_call_id")
        body: str | tuple[Block, ...] = content if isinstance(content, str) else (Opaque({"value": content}, ORIGIN),)
        failed = kind == "retry-prompt" or part.get("outcome", "success") != "success"
        return Item("tool", (ToolResult(part["tool_call_id"], body, failed, part["tool_name"]),), meta=meta)
    if kind in ("system-prompt", "user-prompt", "retry-prompt") and isinstance(content, str):
        return Item("system" if kind == "system-prompt" else "user", (Text(content),), meta={**meta, "shape": "str"})
    if kind == "user-prompt" and isinstance(content, list):
        blocks = tuple(Text(c) if isinstance(c, str) else Opaque({"value": c}, ORIGIN) for c in content)
        return Item("user", blocks, meta={**meta, "shape": "list"})
    return Item("user", (Opaque({"value": content}, ORIGIN),), meta={**meta, "shape": "value"})


def _read_response_part(part: Mapping[str, Any], calls: CallIds) -> Block:
    kind = part.get("part_kind")
    if kind == "text" and isinstance(part.get("content"), str):
        return Text(part["content"], {k: v for k, v in part.items() if k != "content"})
    if kind == "thinking" and isinstance(part.get("content"), str):
        rest = {k: v for k, v in part.items() if k not in ("content", "signature")}
        return Thinking(part["content"], part.get("signature"), rest)
    if kind == "tool-call" and isinstance(part.get("tool_call_id"), str):
        rest = {k: v for k, v in part.items() if k not in ("tool_call_id", "tool_name", "args")}
        args = part.get("args")
        calls.add(part["tool_call_id"])
        if isinstance(args, dict):
            return ToolCall(part["tool_call_id"], part["tool_name"], args, None, rest)
        parsed = _parse(args) if isinstance(args, str) else None
        raw = args if isinstance(args, str) else None
        return ToolCall(part["tool_call_id"], part["tool_name"], parsed or {}, raw, {**rest, "_args": type(args).__name__})
    return Opaque(dict(part), ORIGIN)


def _parse(text: str) -> dict[str, JSONValue] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# --------------------------------------------------------------------------- writing


def to_pydantic_ai(conversation: Conversation) -> list[Any]:
    """The conversation as ``ModelMessage`` objects (the header, which pydantic-ai does not keep, is not written)."""
    data: list[dict[str, Any]] = []
    group: str | None = None
    for index, item in enumerate(conversation.items):
        mine = origin(item) == ORIGIN
        if item.role == "assistant":
            message = dict(item.meta["message"]) if mine else {"kind": "response"}
            parts = [_write_response_block(b, mine, index, f"items[{index}].blocks[{j}]") for j, b in enumerate(item.blocks)]
            data.append({**message, "parts": parts})
            group = None
            continue
        item_group = item.meta.get("group") if mine else None
        joins = data and data[-1]["kind"] == "request" and (
            (item_group is not None and item_group == group) or (not mine and item.role == "tool" and group == "")
        )
        if not joins:
            data.append({**(item.meta["message"] if mine else {"kind": "request"}), "parts": []})
            group = item_group if mine else ("" if item.role == "tool" else None)
        data[-1]["parts"].append(_write_request_item(item, mine, index))
    messages: list[Any] = _adapter().validate_python(data)  # pydantic-ai's ModelMessage objects
    return messages


def _write_request_item(item: Item, mine: bool, index: int) -> dict[str, JSONValue]:
    field = f"items[{index}].blocks"
    result = item.tool_result
    if result is not None:
        content: JSONValue = result.content if isinstance(result.content, str) else _values(result.content, index, field)
        if not isinstance(result.content, str) and len(result.content) == 1 and isinstance(result.content[0], Opaque):
            content = result.content[0].data["value"]
        if mine:
            return {**item.meta["part"], "content": content}
        return {"part_kind": "tool-return", "tool_name": result.tool_name or "", "tool_call_id": result.call_id,
                "content": content}
    shape = item.meta.get("shape") if mine else "str"
    first = item.blocks[0] if item.blocks else None
    if shape == "value" and isinstance(first, Opaque):
        content = first.data["value"]
    elif shape == "list":
        content = _values(item.blocks, index, field)
    else:
        content = "\n\n".join(_text(b, index, field) for b in item.blocks)
    if mine:
        return {**item.meta["part"], "content": content}
    return {"part_kind": "system-prompt" if item.role == "system" else "user-prompt", "content": content}


def _values(blocks: Sequence[Block], index: int, field: str) -> list[JSONValue]:
    return [b.data["value"] if isinstance(b, Opaque) and b.provider == ORIGIN else _text(b, index, field) for b in blocks]


def _text(block: Block, index: int, field: str) -> str:
    if isinstance(block, (Text, Summary)):
        return block.text
    raise foreign_block(block, index, field, TARGET)


def _write_response_block(block: Block, mine: bool, index: int, field: str) -> dict[str, JSONValue]:
    extra = dict(block.extra) if mine else {}
    if isinstance(block, (Text, Summary)):
        return {"part_kind": "text", **extra, "content": block.text}
    if isinstance(block, Thinking):
        return {"part_kind": "thinking", **extra, "content": block.thinking, "signature": block.signature}
    if isinstance(block, ToolCall):
        kind = extra.pop("_args", "dict")
        args: JSONValue = dict(block.arguments) if kind == "dict" else block.raw_arguments
        if kind == "str" and args is None:
            args = json.dumps(dict(block.arguments))
        return {"part_kind": "tool-call", **extra, "tool_call_id": block.id, "tool_name": block.name, "args": args}
    if isinstance(block, Opaque) and block.provider == ORIGIN:
        return dict(block.data)
    raise foreign_block(block, index, field, TARGET)


# --------------------------------------------------------------------------- usage


def usage_from_pydantic_ai(message: object) -> Usage | None:
    """The usage of a ``ModelResponse`` (``None`` for a request, or a response without usage).

    pydantic-ai's ``input_tokens`` is the whole prompt, cache reads and writes included.
    """
    usage = getattr(message, "usage", None)
    if usage is None or getattr(message, "kind", None) != "response":
        return None
    return Usage(
        prompt_tokens=int(usage.input_tokens or 0),
        output_tokens=int(usage.output_tokens or 0),
        cache_read_tokens=int(usage.cache_read_tokens or 0),
        cache_write_tokens=int(usage.cache_write_tokens or 0),
    )
