"""A request as the replay counts, searches and dumps it: OpenAI Chat Completions messages.

Every figure the replay reports is computed from this one rendering, so the
``--requests`` dump holds exactly what was counted, and a recount from the
dump alone (:mod:`.check`) arrives at the same numbers. Each item is rendered
once and counted once per tokenizer (both memoized in ``Item.memo``), which
keeps a replay at O(total items) tokenization however many requests repeat an
item.

Counting a message (in tokens of the replay's tokenizer) follows the
:class:`~contextfold.tokens.Estimator`'s rules: its per-message framing, the
text of the content, the reasoning, and each tool call's name and arguments
with the call framing; a tool message adds the result framing; an image costs
what the estimator charges for it. Other keys of a message are not counted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from ..adapters.openai_chat import to_openai, tools_to_openai
from ..conversation import Block, Conversation, Document, Header, Image, Item, Opaque, ToolResult
from ..errors import InvalidMessage
from ..tokens import Estimator

_RENDERED = "replay:openai"


@dataclass(frozen=True, eq=False)
class Message:
    """One item as sent: the wire message, its JSON line fragment (for the dump) and its searchable text.

    Compared by identity (``eq=False``): the same item gives the same object.
    """

    data: dict[str, Any]
    json: str
    text: str

    @cached_property
    def wire_text(self) -> str:
        """The message's text with tool-call arguments as sent (JSON), where recall looks for what was used."""
        return message_text(self.data, decode_arguments=False)


def as_message(data: dict[str, Any]) -> Message:
    """A wire message with its JSON and searchable text."""
    return Message(data, json.dumps(data, ensure_ascii=False), message_text(data))


def render_item(item: Item) -> Message | None:
    """The item as one Chat Completions message, or ``None`` when nothing of it can be sent.

    An item the format cannot carry as is (an image inside a tool result, a
    block from another provider) is rendered in the nearest OpenAI shape (the
    image stays inside the tool message), so that it is still counted and
    dumped; only reasoning with no readable text is left out, with the
    adapter's :class:`~contextfold.adapters.LossyConversion` warning.
    """
    if _RENDERED in item.memo:
        return item.memo[_RENDERED]
    try:
        written = to_openai(Conversation((item,)))
    except InvalidMessage:
        written = to_openai(Conversation((_portable(item),)))
    rendered = item.memo[_RENDERED] = as_message(written[0]) if written else None
    return rendered


def render_request(request: Conversation, estimator: Estimator) -> tuple[list[Message], list[int]]:
    """The request's messages (the header's system items, its pinned items, the conversation) and the tokens of each.

    Items with nothing to send are left out; an item that cannot be rendered
    raises the adapter's error, naming the item's index in the conversation
    (``None`` and a ``header.`` field for header items).
    """
    header = request.header
    numbered = [
        *((None, f"header.system[{k}].", item) for k, item in enumerate(header.system)),
        *((None, f"header.pinned[{k}].", item) for k, item in enumerate(header.pinned)),
        *((index, "", item) for index, item in enumerate(request.items)),
    ]
    messages: list[Message] = []
    tokens: list[int] = []
    for index, prefix, item in numbered:
        try:
            rendered = render_item(item)
        except InvalidMessage as error:
            raise type(error)(index, prefix + error.field, f"item {item.id!r}: {error.reason}") from error
        if rendered is not None:
            messages.append(rendered)
            tokens.append(item_tokens(item, estimator))
    return messages, tokens


def summary_positions(request: Conversation, messages: Sequence[Message]) -> list[int]:
    """Where in ``messages`` (``request`` rendered) the summaries are: the items holding a summary block."""
    summaries = {id(render_item(item)) for item in (*request.header.pinned, *request.items) if item.kind == "summary"}
    return [number for number, message in enumerate(messages) if id(message) in summaries]


def item_tokens(item: Item, estimator: Estimator) -> int:
    """Tokens of the item's rendered message (0 when nothing of it is sent), memoized per tokenizer."""
    key = f"replay:{estimator.name}"
    tokens = item.memo.get(key)
    if tokens is None:
        rendered = render_item(item)
        tokens = item.memo[key] = 0 if rendered is None else message_tokens(rendered.data, estimator)
    return tokens


def render_tools(header: Header) -> list[dict[str, Any]]:
    """The header's tool definitions in Chat Completions form; another provider's own tools are kept as they are."""
    try:
        return tools_to_openai(Conversation((), header))
    except InvalidMessage:
        tools = tuple(replace(spec, provider="openai") if isinstance(spec, Opaque) else spec for spec in header.tools)
        return tools_to_openai(Conversation((), replace(header, tools=tools)))


# --------------------------------------------------------------------------- counting and searching


def message_tokens(data: Mapping[str, Any], estimator: Estimator) -> int:
    """Tokens of one Chat Completions message (see the module docstring for what is counted)."""
    costs, count = estimator.costs, estimator.text
    tokens = costs.message_tokens + (costs.tool_result_tokens if data.get("role") == "tool" else 0)
    content = data.get("content")
    if isinstance(content, str):
        tokens += count(content)
    elif isinstance(content, list):
        tokens += sum(_part_tokens(part, estimator) for part in content)
    reasoning = data.get("reasoning_content")
    if isinstance(reasoning, str):
        tokens += count(reasoning)
    for call in _calls(data):
        name, arguments = _call_text(call)
        tokens += costs.tool_call_tokens + count(name) + count(arguments)
    return tokens


def tools_tokens(tools: Sequence[Mapping[str, Any]], estimator: Estimator) -> int:
    """Tokens of the tool definitions: name, description and JSON schema of each, with the spec framing."""
    costs, count = estimator.costs, estimator.text
    tokens = 0
    for tool in tools:
        function = tool.get("function")
        if isinstance(function, Mapping):
            schema = json.dumps(function.get("parameters", {}), ensure_ascii=False)
            tokens += count(str(function.get("name", ""))) + count(str(function.get("description") or ""))
            tokens += costs.tool_spec_tokens + count(schema)
        else:
            tokens += costs.tool_spec_tokens + count(json.dumps(tool, ensure_ascii=False))
    return tokens


def message_text(data: Mapping[str, Any], *, decode_arguments: bool = True) -> str:
    """Everything of a message a reader could find a fact in: content text, reasoning, tool names and arguments.

    Arguments are searched as the strings they hold, decoded from JSON (a
    path in them reads as written); with ``decode_arguments`` false, as the
    JSON text sent, which is what forward-reference recall
    (:mod:`.recall`) reads, as the reference scorer does.
    """
    parts: list[str] = []
    content = data.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        parts.extend(p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    if isinstance(data.get("reasoning_content"), str):
        parts.append(data["reasoning_content"])
    for call in _calls(data):
        name, arguments = _call_text(call)
        parts.append(name)
        parts.extend(_strings(arguments) if decode_arguments else [arguments])
    return "\n".join(parts)


def _strings(arguments: str) -> list[str]:
    """The string values inside JSON arguments, decoded (a path in them reads as written), else the raw text."""
    try:
        decoded = json.loads(arguments)
    except ValueError:
        return [arguments]
    found: list[str] = []
    stack = [decoded]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict):
            stack.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            stack.extend(reversed(value))
    return found


def _calls(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    calls = data.get("tool_calls")
    return [c for c in calls if isinstance(c, Mapping)] if isinstance(calls, list) else []


def _call_text(call: Mapping[str, Any]) -> tuple[str, str]:
    """A call's name and arguments (a custom tool's free-text input)."""
    body = call.get("function") or call.get("custom") or {}
    arguments = body.get("arguments", body.get("input", ""))
    return str(body.get("name", "")), arguments if isinstance(arguments, str) else json.dumps(arguments)


def _part_tokens(part: Any, estimator: Estimator) -> int:
    if not isinstance(part, Mapping):
        return estimator.text(json.dumps(part, ensure_ascii=False))
    kind = part.get("type")
    if kind == "text" and isinstance(part.get("text"), str):
        return estimator.text(part["text"])
    if kind == "image_url" and isinstance(part.get("image_url"), Mapping):
        return estimator.block(Image(url=str(part["image_url"].get("url", ""))))
    if kind == "file" and isinstance(part.get("file"), Mapping):
        return estimator.block(Document(part["file"]))
    return estimator.text(json.dumps(part, ensure_ascii=False))


# --------------------------------------------------------------------------- the nearest OpenAI shape


def _portable(item: Item) -> Item:
    """The item as if read from OpenAI, without other formats' fields.

    The adapter writes an item of its own format as faithfully as it can
    (images inside a tool message, say), which is what counting needs; the
    original ``meta`` and block ``extra`` belong to another format and are
    left behind.
    """
    return Item(item.role, tuple(map(_portable_block, item.blocks)), id=item.id, meta={"origin": "openai"})


def _portable_block(block: Block) -> Block:
    if isinstance(block, ToolResult) and not isinstance(block.content, str):
        return replace(block, content=tuple(map(_portable_block, block.content)), extra={})
    if isinstance(block, Opaque):
        return replace(block, provider="openai", extra={})
    return replace(block, extra={})
