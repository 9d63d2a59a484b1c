"""OpenAI Responses input items <-> :class:`~contextfold.conversation.Conversation`, lossless both ways.

``to_responses(from_responses(items))`` is exactly ``items``;
``tools_to_responses(from_responses(i, tools=t))`` is exactly ``t``.

How the wire maps onto the neutral model:

* Consecutive ``reasoning``, assistant ``message`` and ``function_call`` /
  ``custom_tool_call`` items (and server-side calls such as
  ``web_search_call``) form ONE assistant item, so parallel calls are one
  round. ``meta["segments"]`` records which wire item each block came from
  (``{"kind": "message", "blocks": n, "shape", "extra"}`` or
  ``{"kind": "item"}``); ``to_responses`` splits the item back along it.
* ``reasoning`` is a Thinking block: the summary texts joined by a blank line,
  ``encrypted_content`` as its signature; the id, status and any summary that
  the text alone cannot rebuild stay in ``extra``.
* ``function_call_output`` / ``custom_tool_call_output`` is a tool item; the
  output stays a string or a list of parts.
* Other messages are items of their role (leading system/developer ones form
  the header). Unknown item types are Opaque: ``*_output``/``*_response``
  items as user items of their own, the rest inside the assistant turn.
* A ``compaction`` item (OpenAI's own summary, encrypted) is an item of its
  own holding one :class:`Summary` that goes back as the item itself; every
  other format gets its text. So does a summary contextfold made from one.
* Item keys besides the modelled ones (``type``, ``id``, ``status``,
  ``phase`` …) ride in ``meta["extra"]``; ``meta["shape"]`` is ``"str"`` or
  ``"list"`` content, or ``"item"`` for an Opaque item.
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
from .._media import OPENAI_FILE_KEYS, image_url, openai_file
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
    type_of,
    with_leading_system,
    word,
)
from .._tools import read_spec, read_tools, spec_fields, write_tools
from .._writing import (
    arguments_json,
    foreign_block,
    merged,
    numbered,
    origin,
    result_content,
    shaped,
    warn_dropped,
    without_nones,
)

ORIGIN = "responses"
TARGET = "OpenAI Responses"
_MESSAGE_ROLES = frozenset({"user", "assistant", "system", "developer"})
_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}
"""Call item types and the key holding their argument string."""
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
ITEM_TYPES = frozenset({"message", "reasoning", *_CALLS, *_OUTPUTS})
"""The item types a conversation is made of on this wire (what a recording of Responses items holds)."""
_CONTENT = (Text, Summary, Image, Document, Opaque)
"""Blocks that live inside a message's content."""
ENCRYPTED_SUMMARY = ("[The conversation before this point was compacted by OpenAI; its summary is encrypted and "
                     "only OpenAI's models can read it.]")
"""The text of a ``compaction`` item read off the wire, for any other reader, until contextfold writes a summary of
what it replaced (:mod:`contextfold.context.native`)."""


# --------------------------------------------------------------------------- reading


def from_responses(
    items: Sequence[JSONObject],
    tools: Sequence[JSONObject] | None = None,
    *,
    known_call_ids: Iterable[str] = (),
) -> Conversation:
    """Read a Responses ``input`` list. ``known_call_ids`` names calls made in items read before it.

    Errors name the item index and field: :class:`UnknownRole`,
    :class:`InvalidContent` (wrong types, an output without its call),
    :class:`InvalidEncoding`, :class:`OversizedBlock`.
    """
    reader = _Reader(CallIds(known_call_ids))
    for index, raw in enumerate(as_list(items, None, "items")):
        reader.read(read_message(raw, index), index)
    reader.end_turn()
    return with_leading_system(reader.items, read_tools(tools, ORIGIN, _read_tool), ORIGIN)


def _read_tool(wire: WireObject) -> ToolSpec | None:
    if not wire.take_if("type", "function"):
        return None
    return read_spec(wire, "parameters")


class _Reader:
    """Reads items in order, gathering each assistant turn's wire items into one assistant item."""

    def __init__(self, calls: CallIds) -> None:
        self.calls = calls
        self.items: list[Item] = []
        self._blocks: list[Block] = []
        self._segments: list[dict[str, JSONValue]] = []
        self._invalid: list[str] = []

    def read(self, data: JSONObject, index: int) -> None:
        kind = type_of(data, index, "") or ("message" if "role" in data else None)
        if kind is None:
            raise InvalidContent(index, "type", "an input item needs a type (or a role, for a message)")
        if kind == "message":
            self._read_message(data, index)
        elif kind == "reasoning":
            check_block(data, index, "")
            self._add_to_turn([_read_reasoning(WireObject(data, index, ""))], {"kind": "item"})
        elif kind in _CALLS:
            check_block(data, index, "")
            self._add_to_turn([self._read_call(WireObject(data, index, ""), kind)], {"kind": "item"})
        elif kind in _OUTPUTS:
            self._add_item(self._read_output(data, index))
        elif kind == "compaction" and isinstance(data.get("encrypted_content"), str):
            check_block(data, index, "")
            self._add_item(Item("assistant", (Summary(ENCRYPTED_SUMMARY, native=dict(data), native_provider=ORIGIN),),
                                meta={"origin": ORIGIN}))
        else:
            self._read_unknown(data, index, kind)

    def end_turn(self) -> None:
        if not self._segments:
            return
        meta: dict[str, JSONValue] = {"origin": ORIGIN, "segments": self._segments}
        if self._invalid:
            meta["invalid_arguments"] = self._invalid
        self.items.append(Item("assistant", tuple(self._blocks), meta=meta))
        self._blocks, self._segments, self._invalid = [], [], []

    def _add_to_turn(self, blocks: list[Block], segment: dict[str, JSONValue]) -> None:
        self._blocks.extend(blocks)
        self._segments.append(segment)

    def _add_item(self, item: Item) -> None:
        self.end_turn()
        self.items.append(item)

    def _read_message(self, data: JSONObject, index: int) -> None:
        role = word(data.get("role"))
        if role not in _MESSAGE_ROLES:
            raise UnknownRole(
                index, "role", f"unknown role {shown(data.get('role'))}; expected one of {sorted(_MESSAGE_ROLES)}"
            )
        wire = WireObject(data, index, "")
        wire.take("role", str)
        content = wire.take("content", (str, *SEQUENCE))
        if isinstance(content, str):
            check_block(content, index, "content")
            blocks: list[Block] = [Text(content)] if content else []
            shape = "str"
        else:
            blocks = [_read_part(part, index, f"content[{j}]", role) for j, part in enumerate(content)]
            shape = "list"
        if role == "assistant":
            self._add_to_turn(blocks, {"kind": "message", "blocks": len(blocks), "shape": shape, "extra": wire.rest})
        else:
            self._add_item(Item(as_role(role), tuple(blocks), meta=_meta(wire, shape=shape)))

    def _read_call(self, wire: WireObject, kind: str) -> ToolCall:
        wire.take_if("type", "function_call")
        call_id = wire.take("call_id", str)
        name = wire.take("name", str)
        raw_arguments = wire.take(_CALLS[kind], str)
        arguments = parse_arguments(raw_arguments)
        if arguments is None:
            self._invalid.append(call_id)
        self.calls.add(call_id)
        return ToolCall(call_id, name, arguments or {}, raw_arguments, wire.rest)

    def _read_output(self, data: JSONObject, index: int) -> Item:
        wire = WireObject(data, index, "")
        wire.take_if("type", "function_call_output")
        call_id = wire.take("call_id", str)
        require_call(call_id, self.calls, index, "call_id")
        output = wire.take("output", (str, *SEQUENCE))
        if isinstance(output, str):  # no size limit: an output goes to disk on arrival
            content: str | tuple[Block, ...] = output
        else:
            content = tuple(_read_part(part, index, f"output[{k}]", "tool") for k, part in enumerate(output))
        return Item("tool", (ToolResult(call_id, content),), meta=_meta(wire))

    def _read_unknown(self, data: JSONObject, index: int, kind: str) -> None:
        check_block(data, index, "")
        role = word(data.get("role"))
        if role not in ("user", "system", "developer"):
            role = "user" if kind.endswith(("_output", "_response")) else None
        if role is None:
            self._add_to_turn([Opaque(data, ORIGIN)], {"kind": "item"})
        else:
            self._add_item(Item(as_role(role), (Opaque(data, ORIGIN),), meta={"origin": ORIGIN, "shape": "item"}))


def _meta(wire: WireObject, **fields: JSONValue) -> dict[str, JSONValue]:
    meta = {"origin": ORIGIN, **fields}
    if wire.rest:
        meta["extra"] = wire.rest
    return meta


def _text_type(role: str) -> str:
    return "output_text" if role == "assistant" else "input_text"


def _read_part(raw: object, index: int, field: str, role: str) -> Block:
    wire = read_object(raw, index, field, output=role == "tool")
    kind = wire.rest.get("type")
    if kind in ("input_text", "output_text"):
        wire.take_if("type", _text_type(role))
        return Text(wire.take("text", str), wire.rest)
    if kind == "input_image":
        wire.take_if("type", kind)
        return Image(url=wire.take("image_url", str, required=False), extra=wire.rest)
    if kind == "input_file":
        wire.take_if("type", kind)
        source = {key: wire.take(key, str, required=False) for key in OPENAI_FILE_KEYS}
        return Document(without_nones(**source), wire.rest)
    return Opaque(wire.data, ORIGIN)  # refusal, and parts we do not know


def _summary_text(summary: object) -> str:
    parts = summary if isinstance(summary, SEQUENCE) else ()
    return "\n\n".join(p["text"] for p in parts if isinstance(p, Mapping) and isinstance(p.get("text"), str))


def _default_summary(text: str) -> list[dict[str, JSONValue]]:
    return [{"type": "summary_text", "text": text}] if text else []


def _read_reasoning(wire: WireObject) -> Thinking:
    wire.take_if("type", "reasoning")
    summary = wire.take("summary", SEQUENCE)
    text = _summary_text(summary)
    if summary != _default_summary(text):
        wire.rest["summary"] = summary  # not rebuildable from the text alone: keep it as sent
    return Thinking(text, wire.take("encrypted_content", str, required=False), wire.rest)


# --------------------------------------------------------------------------- writing


def to_responses(conversation: Conversation) -> list[dict[str, JSONValue]]:
    """The ``input`` item list, header system items first.

    Raises :class:`InvalidContent` for blocks Responses cannot express; errors
    name the item's index in ``conversation.items`` and the neutral field.
    """
    out: list[dict[str, JSONValue]] = []
    for index, prefix, item in numbered(conversation, system=True):
        out.extend(_write_item(item, index, prefix))
    return out


def tools_to_responses(conversation: Conversation) -> list[dict[str, JSONValue]]:
    return write_tools(conversation, ORIGIN, TARGET, _write_tool)


def _write_tool(spec: ToolSpec, same: bool) -> dict[str, JSONValue]:
    fields = {"type": "function", **spec_fields(spec, "parameters", same)}
    # Responses enforces strict schemas unless told not to; another format's schema was never written for that.
    return merged(fields, spec.extra) if same else {**fields, "strict": False}


def _write_item(item: Item, index: int | None, prefix: str) -> list[dict[str, JSONValue]]:
    native = _native_compaction(item)
    if native is not None:
        return [dict(native)]
    same = origin(item) == ORIGIN
    if same and item.meta.get("shape") == "item" and len(item.blocks) == 1 and isinstance(item.blocks[0], Opaque):
        return [dict(item.blocks[0].data)]
    if item.role == "tool":
        return [_write_output(item, index, prefix, same)]
    if item.role == "assistant":
        return _write_turn(item, index, prefix, same)
    shape = item.meta.get("shape") if same else None
    extra = item.meta.get("extra", {}) if same else None
    return [_write_message(item.role, list(enumerate(item.blocks)), shape, extra, index, prefix)]


def _native_compaction(item: Item) -> JSONObject | None:
    """The ``compaction`` item a summary item stands for, when it holds one this API returned (sent in its place)."""
    if len(item.blocks) != 1 or not isinstance(item.blocks[0], Summary):
        return None
    return item.blocks[0].native_for(ORIGIN)


def _write_message(
    role: str,
    blocks: list[tuple[int, Block]],
    shape: str | None,
    extra: JSONObject | None,
    index: int | None,
    prefix: str,
) -> dict[str, JSONValue]:
    """A message item; ``extra`` is ``None`` for another format's item (then the canonical shape is used)."""
    same = extra is not None
    parts = [_write_part(b, role, same, index, f"{prefix}blocks[{j}]") for j, b in blocks]
    content = shaped([b for _, b in blocks], parts, shape, same)
    message = {"role": role, "content": "" if content is None else content}
    return merged(message, extra) if extra is not None else {"type": "message", **message}


def _write_turn(item: Item, index: int | None, prefix: str, same: bool) -> list[dict[str, JSONValue]]:
    segments = item.meta.get("segments") if same else None
    if not _segments_fit(segments, item.blocks):
        segments = _derive_segments(item.blocks, one_per_message=not same)
    out: list[dict[str, JSONValue]] = []
    start = 0
    for segment in segments:  # type: ignore[union-attr]
        if segment["kind"] == "message":
            count = segment["blocks"]
            chunk = list(enumerate(item.blocks))[start : start + count]
            extra = segment.get("extra") if same else None  # derived segments have none: canonical form
            out.append(_write_message("assistant", chunk, segment.get("shape"), extra, index, prefix))
        else:
            count = 1
            written = _write_turn_block(item.blocks[start], item, same, index, f"{prefix}blocks[{start}]")
            if written is not None:
                out.append(written)
        start += count
    return out


def _segments_fit(segments: object, blocks: Sequence[Block]) -> bool:
    """Whether recorded segments still describe these blocks (a stage may have changed them)."""
    if not isinstance(segments, list):
        return False
    start = 0
    for segment in segments:
        count = segment["blocks"] if segment["kind"] == "message" else 1
        chunk = blocks[start : start + count]
        if len(chunk) != count:
            return False
        if segment["kind"] == "message" and not all(isinstance(b, _CONTENT) for b in chunk):
            return False
        if segment["kind"] != "message" and isinstance(chunk[0], (Text, Summary, Image, Document)):
            return False
        start += count
    return start == len(blocks)


def _derive_segments(blocks: Sequence[Block], one_per_message: bool) -> list[dict[str, JSONValue]]:
    """Consecutive content blocks form one message; every other block is an item of its own.

    Another format's assistant text goes one block per message: an assistant
    input message takes a string (a list of output parts needs the id and status
    of a response this API produced).
    """
    segments: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, (Text, Summary, Image, Document)):
            if segments and segments[-1]["kind"] == "message" and not one_per_message:
                segments[-1]["blocks"] += 1
                continue
            segments.append({"kind": "message", "blocks": 1})
        else:
            segments.append({"kind": "item"})
    return segments


def _write_turn_block(block: Block, item: Item, same: bool, index: int | None, field: str) -> dict[str, Any] | None:
    if isinstance(block, ToolCall):
        if same and block.extra.get("type") == "custom_tool_call":
            return merged({"call_id": block.id, "name": block.name, "input": arguments_json(block)}, block.extra)
        tree = {"type": "function_call", "call_id": block.id, "name": block.name, "arguments": arguments_json(block)}
        return merged(tree, block.extra) if same else tree
    if isinstance(block, Thinking) and same:
        return _write_reasoning(block)
    if isinstance(block, (Thinking, RedactedThinking)):
        warn_dropped(f"reasoning from {origin(item) or 'another source'}", index, field, TARGET)
        return None
    if isinstance(block, Opaque) and block.provider == ORIGIN:
        return dict(block.data)
    raise foreign_block(block, index, field, TARGET)


def _write_reasoning(block: Thinking) -> dict[str, JSONValue]:
    kept = block.extra.get("summary")
    summary = kept if _summary_text(kept) == block.thinking and kept is not None else _default_summary(block.thinking)
    tree = without_nones(type="reasoning", summary=summary, encrypted_content=block.signature)
    return merged(tree, {k: v for k, v in block.extra.items() if k != "summary"})


def _write_output(item: Item, index: int | None, prefix: str, same: bool) -> dict[str, Any]:
    result, output = result_content(
        item, index, prefix, same, TARGET, lambda b, f: _write_part(b, "tool", same, index, f)
    )
    tree = {"type": "function_call_output", "call_id": result.call_id, "output": output}
    return merged(tree, item.meta.get("extra", {})) if same else tree


def _write_part(block: Block, role: str, same: bool, index: int | None, field: str) -> dict[str, JSONValue]:
    extra = block.extra if same and not isinstance(block, Summary) else {}
    if isinstance(block, (Text, Summary)):
        kind = _text_type(role)
        foreign: dict[str, JSONValue] = {"annotations": []} if kind == "output_text" and not same else {}
        return merged({"type": kind, "text": block.text, **foreign}, extra)
    if isinstance(block, Image):
        url = block.url if same else image_url(block)
        if url is None and not same:
            raise InvalidContent(
                index, field, f"an image by another provider's file id cannot be expressed in {TARGET}"
            )
        return merged(without_nones(type="input_image", image_url=url, detail=None if same else "auto"), extra)
    if isinstance(block, Document):
        source = dict(block.source) if same else openai_file(block, index, field, TARGET, accepts_url=True)
        return merged({"type": "input_file", **source}, extra)
    if isinstance(block, Opaque) and block.provider == ORIGIN:
        return dict(block.data)
    raise foreign_block(block, index, field, TARGET)
