"""contextfold's own JSON form of items and headers.

Used by the transcript and by session files the CLI writes and reads back.
It is lossless for everything in :mod:`contextfold.conversation` (``readings``
excepted, which is a cache) and stable: a field added later gets a default.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import MISSING
from dataclasses import fields as dataclass_fields
from typing import Any

from .conversation import (
    NO_PROVENANCE,
    Block,
    Conversation,
    Document,
    Header,
    Image,
    Item,
    JSONObject,
    JSONValue,
    Offloaded,
    Opaque,
    Provenance,
    RedactedThinking,
    Summary,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from .errors import InvalidContent

_BLOCK_BY_KIND: dict[str, type[Block]] = {
    cls.kind: cls for cls in (Text, Image, Document, Thinking, RedactedThinking, ToolCall, ToolResult, Summary, Opaque)
}


def block_to_dict(block: Block) -> dict[str, JSONValue]:
    out: dict[str, JSONValue] = {"kind": block.kind}
    for spec in dataclass_fields(block):
        name = spec.name
        value = getattr(block, name)
        if name == "content" and isinstance(value, tuple):
            value = [block_to_dict(b) for b in value]
        elif isinstance(value, Mapping):
            value = dict(value)
        out[name] = value
    return out


def block_from_dict(data: object, where: str = "block") -> Block:
    """A block from its JSON form; each field checked against the block's type (see :func:`_checked_fields`)."""
    data = _object(data, where)
    kind = data.get("kind")
    cls = _BLOCK_BY_KIND.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise InvalidContent(None, where, f"unknown block kind {kind!r}" if isinstance(kind, str) or kind is None
                             else f"a block kind must be a string, not a {type(kind).__name__}")
    fields = _checked_fields(cls, {k: v for k, v in data.items() if k != "kind"}, where)
    if cls is ToolResult and isinstance(fields.get("content"), list):
        fields["content"] = tuple(block_from_dict(b, f"{where}.content[{i}]") for i, b in enumerate(fields["content"]))
    return cls(**fields)


def _object(data: object, where: str) -> Mapping[str, object]:
    if not isinstance(data, Mapping):
        raise InvalidContent(None, where, f"expected an object, got {type(data).__name__}")
    return data


def _checked_fields(cls: type, fields: dict[str, Any], where: str) -> dict[str, Any]:
    """``fields`` for ``cls(**fields)``: none unknown, every required one there, each of its annotated type.

    A record written by another version, or damaged, then fails here with the field named, not later
    in whatever first uses the value.
    """
    hints, declared = _declared(cls)
    for name in fields.keys() - declared.keys():
        raise InvalidContent(None, f"{where}.{name}", f"not a field of {cls.__name__}")
    for name, spec in declared.items():
        if name not in fields:
            if spec.default is MISSING and spec.default_factory is MISSING:
                raise InvalidContent(None, f"{where}.{name}", "missing")
            continue
        if not _fits(fields[name], hints[name]):
            raise InvalidContent(None, f"{where}.{name}", f"expected {hints[name]}, got {type(fields[name]).__name__}")
    return fields


@functools.cache
def _declared(cls: type) -> tuple[dict[str, object], dict[str, dataclasses.Field[object]]]:
    """The type hints of ``cls`` and its fields set at construction (once per class: resolving is slow)."""
    fields = {name: spec for name, spec in cls.__dataclass_fields__.items() if spec.init}  # type: ignore[attr-defined]
    return typing.get_type_hints(cls), fields


def _fits(value: object, hint: Any) -> bool:
    """Whether a JSON value can stand for a field annotated ``hint`` (a tuple of blocks is a JSON list)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is Any:
        return True
    if origin is typing.Literal:
        return isinstance(value, tuple({type(arg) for arg in typing.get_args(hint)}))  # the value is checked by the class
    if dataclasses.is_dataclass(hint):
        return isinstance(value, Mapping)  # read by its own reader
    if origin is tuple:
        return isinstance(value, list)
    if origin is not None:
        return isinstance(value, origin)
    if hint in (int, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, hint)


def item_to_dict(item: Item) -> dict[str, JSONValue]:
    """``item``'s JSON form; its provenance only when it has one (an item as its author wrote it has none)."""
    out: dict[str, JSONValue] = {
        "id": item.id,
        "role": item.role,
        "timestamp": item.timestamp,
        "meta": dict(item.meta),
        "blocks": [block_to_dict(b) for b in item.blocks],
    }
    if item.provenance != NO_PROVENANCE:
        out["provenance"] = provenance_to_dict(item.provenance)
    return out


def item_from_dict(data: object, where: str = "item") -> Item:
    """An item from its JSON form, its fields checked as :func:`block_from_dict` checks a block's.

    A record written before :class:`~contextfold.conversation.Provenance` existed kept its flags in ``meta``
    (``{"summary": true}``, ``{"blob": ...}``): they are moved to the provenance, so an old transcript resumes
    with its summaries still summaries."""
    record = dict(_object(data, where))
    provenance = record.pop("provenance", None)
    fields = _checked_fields(Item, record, where)
    blocks = tuple(block_from_dict(b, f"{where}.blocks[{i}]") for i, b in enumerate(fields.pop("blocks")))
    meta = fields.pop("meta", None) or {}
    if not isinstance(meta, Mapping):
        raise InvalidContent(None, f"{where}.meta", f"expected an object, got {type(meta).__name__}")
    legacy = {key: meta[key] for key in LEGACY_META_KEYS if key in meta}
    if legacy:
        meta = {key: value for key, value in meta.items() if key not in legacy}
        provenance = {**_legacy_provenance(legacy), **(_object(provenance, f"{where}.provenance") if provenance else {})}
    return Item(blocks=blocks, meta=meta,
                provenance=provenance_from_dict(provenance, f"{where}.provenance") if provenance else NO_PROVENANCE,
                **fields)


LEGACY_META_KEYS = ("summary", "summarizer", "restored", "survival", "synthetic", "static", "compacted", "blob",
                    "saved_to", "failure_line", "error_frame", "tally")
"""The ``meta`` keys that held an item's provenance before it was typed (read from old records only)."""


def _legacy_provenance(legacy: JSONObject) -> dict[str, JSONValue]:
    fields = {key: value for key, value in legacy.items() if key not in ("blob", "saved_to")}
    where = {key: legacy[key] for key in ("blob", "saved_to") if key in legacy}
    return {**fields, "offloaded": where} if where else fields


def provenance_to_dict(provenance: Provenance) -> dict[str, JSONValue]:
    """The fields of ``provenance`` that differ from the default (a record stays as short as what it says)."""
    out: dict[str, JSONValue] = {}
    for spec in dataclass_fields(provenance):
        value = getattr(provenance, spec.name)
        if value == spec.default:
            continue
        if isinstance(value, Offloaded):
            value = {key: getattr(value, key) for key in ("blob", "saved_to") if getattr(value, key) is not None}
        elif isinstance(value, tuple):
            value = list(value)
        out[spec.name] = value
    return out


def provenance_from_dict(data: object, where: str = "provenance") -> Provenance:
    fields = _checked_fields(Provenance, dict(_object(data, where)), where)
    if fields.get("offloaded") is not None:
        fields["offloaded"] = Offloaded(**_checked_fields(Offloaded, dict(fields["offloaded"]), f"{where}.offloaded"))
    if fields.get("error_frame") is not None:
        fields["error_frame"] = tuple(_strings(fields["error_frame"], f"{where}.error_frame"))
    return Provenance(**fields)


def _strings(values: list[Any], where: str) -> list[str]:
    for index, value in enumerate(values):
        if not isinstance(value, str):
            raise InvalidContent(None, f"{where}[{index}]", f"expected a string, got {type(value).__name__}")
    return values


def _tool_to_dict(spec: ToolSpec | Opaque) -> dict[str, JSONValue]:
    if isinstance(spec, Opaque):
        return block_to_dict(spec)
    return {"kind": "tool_spec", "name": spec.name, "description": spec.description,
            "parameters": dict(spec.parameters), "extra": dict(spec.extra)}


def _tool_from_dict(data: object, where: str) -> ToolSpec | Opaque:
    mapping = _object(data, where)
    if mapping.get("kind") == "tool_spec":
        fields = _checked_fields(ToolSpec, {k: v for k, v in mapping.items() if k != "kind"}, where)
        return ToolSpec(**{**fields, "parameters": fields.get("parameters") or {}, "extra": fields.get("extra") or {}})
    block = block_from_dict(data, where)
    if not isinstance(block, Opaque):
        raise InvalidContent(None, where, f"a tool is a tool_spec or an opaque block, not a {block.kind} block")
    return block


def header_to_dict(header: Header) -> dict[str, JSONValue]:
    return {
        "system": [item_to_dict(i) for i in header.system],
        "tools": [_tool_to_dict(t) for t in header.tools],
        "pinned": [item_to_dict(i) for i in header.pinned],
        "meta": dict(header.meta),
    }


def header_from_dict(data: object, where: str = "header") -> Header:
    data = _object(data, where)
    meta = data.get("meta") or {}
    if not isinstance(meta, Mapping):
        raise InvalidContent(None, f"{where}.meta", f"expected an object, got {type(meta).__name__}")
    return Header(
        system=tuple(item_from_dict(i, f"{where}.system[{k}]") for k, i in enumerate(_list(data, "system", where))),
        tools=tuple(_tool_from_dict(t, f"{where}.tools[{k}]") for k, t in enumerate(_list(data, "tools", where))),
        pinned=tuple(item_from_dict(i, f"{where}.pinned[{k}]") for k, i in enumerate(_list(data, "pinned", where))),
        meta=meta,
    )


def _list(data: Mapping[str, object], key: str, where: str) -> Sequence[object]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise InvalidContent(None, f"{where}.{key}", f"expected a list, got {type(value).__name__}")
    return value


def conversation_to_dict(conversation: Conversation) -> dict[str, JSONValue]:
    return {
        "format": "contextfold-session-1",
        "header": header_to_dict(conversation.header),
        "items": [item_to_dict(i) for i in conversation],
    }


def conversation_from_dict(data: Mapping[str, Any]) -> Conversation:
    return Conversation((item_from_dict(i) for i in data.get("items", ())), header_from_dict(data.get("header") or {}))
