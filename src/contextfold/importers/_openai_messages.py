"""OpenAI Chat Completions messages as recorded by agents (mini-swe-agent, tau-bench, SWE-agent).

These files hold the chat as sent to the model, plus agent-specific extras
that each importer reads itself; this module turns the standard part of one
message (``role``, ``content``, ``tool_calls``, ``reasoning_content``,
``tool_call_id``) into items of a :class:`ConversationBuilder`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..conversation import Block, Image, Opaque, Text, Thinking, ToolCall
from ._common import ConversationBuilder, field_of, parse_arguments, text_blocks


def content_blocks(builder: ConversationBuilder, content: Any, where: str) -> list[Block]:
    """``content`` as blocks: a string, ``None``, or a list of text / image parts."""
    if content is None or isinstance(content, str):
        return text_blocks(content)
    if not isinstance(content, list):
        raise builder.source.error(where, f"content must be a string, null or a list, not {type(content).__name__}")
    blocks: list[Block] = []
    for index, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text" and isinstance(part.get("text"), str):
            blocks.append(Text(part["text"]))
        elif kind == "image_url" and isinstance(part.get("image_url"), Mapping):
            blocks.append(Image(url=part["image_url"].get("url")))
        elif isinstance(part, Mapping):
            blocks.append(Opaque(part, provider="openai"))
        else:
            raise builder.source.error(f"{where}[{index}]", "a content part must be an object")
    return blocks


def tool_call(builder: ConversationBuilder, call: Any, where: str) -> ToolCall:
    """One ``tool_calls[]`` entry (``{id, type, function: {name, arguments}}``)."""
    if not isinstance(call, Mapping):
        raise builder.source.error(where, "a tool call must be an object")
    function = field_of(builder.source, call, "function", Mapping, where)
    name = field_of(builder.source, function, "name", str, f"{where}.function")
    call_id = field_of(builder.source, call, "id", str, where)
    arguments, raw, extra = parse_arguments(function.get("arguments"))
    return ToolCall(call_id, name, arguments, raw, extra)


def add_message(
    builder: ConversationBuilder,
    message: Any,
    where: str,
    timestamp: float | None = None,
    meta: Mapping[str, Any] | None = None,
    result_extra: Mapping[str, Any] | None = None,
) -> None:
    """Add one chat message; ``result_extra`` goes on the ToolResult of a ``tool`` message."""
    if not isinstance(message, Mapping):
        raise builder.source.error(where, "a message must be an object")
    role = message.get("role")
    content = message.get("content")
    if role in ("system", "developer"):
        text = "\n".join(b.text for b in content_blocks(builder, content, f"{where}.content") if isinstance(b, Text))
        builder.add_system(text, timestamp)
    elif role == "user":
        builder.add_user(content_blocks(builder, content, f"{where}.content"), timestamp, meta)
    elif role == "assistant":
        blocks: list[Block] = []
        reasoning = message.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            blocks.append(Thinking(reasoning))
        blocks.extend(content_blocks(builder, content, f"{where}.content"))
        calls = message.get("tool_calls") or []
        if not isinstance(calls, list):
            raise builder.source.error(f"{where}.tool_calls", "expected a list")
        blocks.extend(tool_call(builder, call, f"{where}.tool_calls[{i}]") for i, call in enumerate(calls))
        builder.add_assistant(blocks, where, timestamp, meta)
    elif role == "tool":
        call_id = field_of(builder.source, message, "tool_call_id", str, where)
        blocks = content_blocks(builder, content, f"{where}.content")
        body: str | tuple[Block, ...] = content if isinstance(content, str) else (tuple(blocks) or "")
        builder.add_result(call_id, body, where, timestamp=timestamp, extra=result_extra, meta=meta)
    else:
        raise builder.source.error(f"{where}.role", f"unknown role {role!r}")
