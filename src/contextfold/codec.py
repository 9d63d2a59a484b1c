"""contextfold's own JSON form of items and headers.

Used by the transcript and by session files the CLI writes and reads back.
It is lossless for everything in :mod:`contextfold.conversation` (``memo``
excepted, which is a cache) and stable: a field added later gets a default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .conversation import (
    Block,
    Conversation,
    Document,
    Header,
    Image,
    Item,
    Opaque,
    RedactedThinking,
    Summary,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from .errors import InvalidContent

_BLOCK_BY_KIND: dict[str, type] = {
    cls.kind: cls for cls in (Text, Image, Document, Thinking, RedactedThinking, ToolCall, ToolResult, Summary, Opaque)
}


def block_to_dict(block: Block) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": block.kind}
    for name in block.__dataclass_fields__:  # type: ignore[union-attr]
        value = getattr(block, name)
        if name == "content" and isinstance(value, tuple):
            value = [block_to_dict(b) for b in value]
        elif isinstance(value, Mapping):
            value = dict(value)
        out[name] = value
    return out


def block_from_dict(data: Mapping[str, Any], where: str = "block") -> Block:
    kind = data.get("kind")
    cls = _BLOCK_BY_KIND.get(kind)  # type: ignore[arg-type]
    if cls is None:
        raise InvalidContent(None, where, f"unknown block kind {kind!r}")
    fields = {k: v for k, v in data.items() if k != "kind"}
    if cls is ToolResult and isinstance(fields.get("content"), list):
        fields["content"] = tuple(block_from_dict(b, f"{where}.content[{i}]") for i, b in enumerate(fields["content"]))
    return cls(**fields)


def item_to_dict(item: Item) -> dict[str, Any]:
    return {
        "id": item.id,
        "role": item.role,
        "timestamp": item.timestamp,
        "meta": dict(item.meta),
        "blocks": [block_to_dict(b) for b in item.blocks],
    }


def item_from_dict(data: Mapping[str, Any]) -> Item:
    blocks = tuple(block_from_dict(b, f"blocks[{i}]") for i, b in enumerate(data["blocks"]))
    return Item(data["role"], blocks, id=data["id"], timestamp=data.get("timestamp"), meta=data.get("meta") or {})


def _tool_to_dict(spec: ToolSpec | Opaque) -> dict[str, Any]:
    if isinstance(spec, Opaque):
        return block_to_dict(spec)
    return {"kind": "tool_spec", "name": spec.name, "description": spec.description,
            "parameters": dict(spec.parameters), "extra": dict(spec.extra)}


def _tool_from_dict(data: Mapping[str, Any]) -> ToolSpec | Opaque:
    if data.get("kind") == "tool_spec":
        return ToolSpec(data["name"], data.get("description"), data.get("parameters") or {}, data.get("extra") or {})
    block = block_from_dict(data, "tools")
    assert isinstance(block, Opaque)
    return block


def header_to_dict(header: Header) -> dict[str, Any]:
    return {
        "system": [item_to_dict(i) for i in header.system],
        "tools": [_tool_to_dict(t) for t in header.tools],
        "pinned": [item_to_dict(i) for i in header.pinned],
        "meta": dict(header.meta),
    }


def header_from_dict(data: Mapping[str, Any]) -> Header:
    return Header(
        system=tuple(item_from_dict(i) for i in data.get("system", ())),
        tools=tuple(_tool_from_dict(t) for t in data.get("tools", ())),
        pinned=tuple(item_from_dict(i) for i in data.get("pinned", ())),
        meta=data.get("meta") or {},
    )


def conversation_to_dict(conversation: Conversation) -> dict[str, Any]:
    return {
        "format": "contextfold-session-1",
        "header": header_to_dict(conversation.header),
        "items": [item_to_dict(i) for i in conversation],
    }


def conversation_from_dict(data: Mapping[str, Any]) -> Conversation:
    return Conversation((item_from_dict(i) for i in data.get("items", ())), header_from_dict(data.get("header") or {}))
