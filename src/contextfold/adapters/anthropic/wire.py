"""Anthropic Messages API <-> :class:`~contextfold.conversation.Conversation`, lossless both ways.

``to_anthropic`` always returns the three request fields ``{"system",
"messages", "tools"}``: ``system`` is ``None`` when there is none and ``tools``
``[]``, so ``to_anthropic(from_anthropic(m, system=s, tools=t)) == {"system": s,
"messages": m, "tools": t or []}``.

How the wire maps onto the neutral model:

* A user message holding ``tool_result`` blocks becomes one ``tool`` item per
  result, then one user item with its other blocks. They share
  ``meta["group"]`` and remember their content positions (``meta["position"]``,
  ``meta["positions"]``), so ``to_anthropic`` rebuilds the one message in its
  original order. Consecutive tool items without a group (another format, or a
  repair) are sent together in one user message, as Anthropic requires.
* ``system`` (a string, or text blocks with ``cache_control``) is one system
  item in the header; ``header.meta["system_shape"]`` remembers which.
* Messages with role ``system`` inside the list stay in place; items of role
  ``developer`` from OpenAI are sent as ``system`` messages.
* Function tools become ToolSpecs; server tools (web search, code execution
  …) and server blocks (``server_tool_use``, ``web_search_tool_result``,
  ``search_result`` …) and any unknown block stay Opaque and go back verbatim.

Item meta written here: ``origin``, ``extra`` (message keys besides role and
content), ``shape`` (``"str"``/``"list"`` content), ``group``/``position``/
``positions``, ``result_content: "absent"`` (a tool_result without content).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ...conversation import (
    Block,
    Conversation,
    Document,
    Header,
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
    new_id,
)
from ...errors import EmptyContent, InvalidContent, InvalidToolArguments, UnknownRole
from .._media import anthropic_source, is_anthropic_source, split_data_url
from .._reading import (
    SEQUENCE,
    CallIds,
    WireObject,
    as_list,
    as_object,
    check_block,
    read_message,
    require_call,
    shown,
    type_of,
    where,
    word,
)
from .._tools import read_spec, read_tools, spec_fields, write_tools
from .._writing import check_arguments, foreign_block, merged, numbered, origin, shaped, warn_dropped, without_nones

ORIGIN = "anthropic"
TARGET = "Anthropic Messages"
_ROLES = frozenset({"user", "assistant", "system"})
_ONLY_IN = {"tool_use": "assistant", "thinking": "assistant", "redacted_thinking": "assistant", "tool_result": "user"}
"""Blocks the API accepts in one role only. Inside a tool result (pseudo-role ``tool``) none of them.

One exception is read, not refused: a ``tool_result`` in an assistant message that answers no client call is
a server tool's output. Anthropic names those ``web_search_tool_result`` and the like; Anthropic-compatible
backends (GLM's ``webReader`` behind Claude Code, for one) answer their ``server_tool_use`` with a plain
``tool_result`` in the model's own turn. It stays opaque and goes back as it came, as the backend took it."""


# --------------------------------------------------------------------------- reading


def from_anthropic(
    messages: Sequence[JSONObject],
    system: str | Sequence[JSONObject] | None = None,
    tools: Sequence[JSONObject] | None = None,
    *,
    known_call_ids: Iterable[str] = (),
) -> Conversation:
    """Read a Messages request. ``known_call_ids`` names calls made in messages read before this list.

    Errors name the message index and field: :class:`UnknownRole`,
    :class:`InvalidContent` (wrong types, a result without its call),
    :class:`EmptyContent`, :class:`InvalidEncoding`, :class:`OversizedBlock`.
    """
    calls = CallIds(known_call_ids)
    wire = as_list(messages, None, "messages")
    items: list[Item] = []
    for index, message in enumerate(wire):
        items.extend(_read_message(message, index, index == len(wire) - 1, calls))
    return Conversation(items, _read_header(system, tools))


def _read_header(system: object, tools: Sequence[Any] | None) -> Header:
    meta: dict[str, JSONValue] = {"origin": ORIGIN}
    items: tuple[Item, ...] = ()
    if isinstance(system, str):
        check_block(system, None, "system")
        items = (Item("system", (Text(system),), meta={"origin": ORIGIN}),)
        meta["system_shape"] = "str"
    elif system is not None:
        blocks = [as_object(b, None, f"system[{k}]") for k, b in enumerate(as_list(system, None, "system"))]
        read = tuple(_read_block(b, None, f"system[{k}]", "system", CallIds(())) for k, b in enumerate(blocks))
        items = (Item("system", read, meta={"origin": ORIGIN}),)
        meta["system_shape"] = "list"
    return Header(system=items, tools=read_tools(tools, ORIGIN, _read_tool), meta=meta)


def _read_tool(wire: WireObject) -> ToolSpec | None:
    if wire.rest.get("type") not in (None, "custom"):
        return None  # a server tool
    return read_spec(wire, "input_schema")


def _read_message(raw: object, index: int, final: bool, calls: CallIds) -> list[Item]:
    wire = WireObject(read_message(raw, index), index, "")
    role = word(wire.rest.get("role"))
    if role not in _ROLES:
        raise UnknownRole(index, "role", f"unknown role {shown(wire.rest.get('role'))}; "
                                         "Anthropic messages are user, assistant or system")
    wire.take("role", str)
    content = wire.take("content", (str, *SEQUENCE))
    meta: dict[str, JSONValue] = {"origin": ORIGIN}
    if wire.rest:
        meta["extra"] = wire.rest
    if not content and not final:
        raise EmptyContent(index, "content", "Anthropic rejects empty content on any message but the last")
    if isinstance(content, str):
        check_block(content, index, "content")
        return [Item(as_role(role), (Text(content),), meta={**meta, "shape": "str"})]
    objects = [as_object(b, index, f"content[{j}]") for j, b in enumerate(content)]
    blocks = [_read_block(o, index, f"content[{j}]", role, calls) for j, o in enumerate(objects)]
    results = [j for j, b in enumerate(blocks) if isinstance(b, ToolResult)]
    if not results:
        return [Item(as_role(role), tuple(blocks), meta={**meta, "shape": "list"})]
    group = new_id("grp")
    items = []
    for j in results:
        absent = {"result_content": "absent"} if "content" not in objects[j] else {}
        items.append(Item("tool", (blocks[j],), meta={**meta, "group": group, "position": j, **absent}))
    others = [j for j in range(len(blocks)) if not isinstance(blocks[j], ToolResult)]
    if others:
        items.append(Item(as_role(role), tuple(blocks[j] for j in others), meta={**meta, "group": group, "positions": others}))
    return items


def _read_block(data: JSONObject, index: int | None, field: str, role: str, calls: CallIds) -> Block:
    """One content block; ``role`` is the message's (``"tool"`` inside a tool result).

    A tool result has no size limit (its output goes to disk on arrival), but what it holds besides
    text (images, documents) does.
    """
    kind = type_of(data, index, field)
    answered = data.get("tool_use_id")
    if role == "assistant" and kind == "tool_result" and isinstance(answered, str) and answered not in calls:
        return Opaque(data, ORIGIN)  # a server tool's output, as compatible backends write it: see _ONLY_IN
    if kind != "tool_result" and not (role == "tool" and kind == "text"):
        check_block(data, index, field)
    if (role == "system" and kind != "text") or (kind in _ONLY_IN and _ONLY_IN[kind] != role):
        raise InvalidContent(index, where(field, "type"), f"a {kind!r} block cannot appear in a {role} message")
    reader = _READERS.get(kind) if kind is not None else None
    if reader is None:
        return Opaque(data, ORIGIN)
    wire = WireObject(data, index, field)
    wire.take_if("type", kind)
    return reader(wire, calls)


def empty_text(block: object) -> bool:
    """Whether ``block`` is a text block with no text: what the API returns at times and refuses in a request."""
    return isinstance(block, Mapping) and block.get("type") == "text" and block.get("text") == ""


def _read_text(wire: WireObject, calls: CallIds) -> Block:
    text = wire.take("text", str)
    if not text:
        raise EmptyContent(wire.index, where(wire.field, "text"), "Anthropic rejects empty text blocks")
    return Text(text, wire.rest)


def _read_image(wire: WireObject, calls: CallIds) -> Block:
    source = wire.rest.get("source")
    if not isinstance(source, Mapping):
        raise InvalidContent(wire.index, where(wire.field, "source"), "expected an object")
    if source.get("type") == "base64":
        data = wire.take("source.data", str)
        media_type = wire.take("source.media_type", str)
        wire.take("source.type", str)
        return Image(data=data, media_type=media_type, extra=wire.rest)
    if source.get("type") == "url":
        url = wire.take("source.url", str)
        wire.take("source.type", str)
        return Image(url=url, extra=wire.rest)
    return Image(extra=wire.rest)  # a file source rides in extra["source"]


def _read_document(wire: WireObject, calls: CallIds) -> Block:
    return Document(wire.take("source", Mapping), wire.rest)


def _read_thinking(wire: WireObject, calls: CallIds) -> Block:
    return Thinking(wire.take("thinking", str), wire.take("signature", str, required=False), wire.rest)


def _read_redacted(wire: WireObject, calls: CallIds) -> Block:
    return RedactedThinking(wire.take("data", str), wire.rest)


def _read_tool_use(wire: WireObject, calls: CallIds) -> Block:
    call_id = wire.take("id", str)
    name = wire.take("name", str)
    arguments = wire.take("input", Mapping, error=InvalidToolArguments)
    calls.add(call_id)
    return ToolCall(call_id, name, arguments, None, wire.rest)


def _read_compaction(wire: WireObject, calls: CallIds) -> Block:
    """A ``compaction`` block with a summary is a :class:`Summary` whose text is that summary (Claude wrote it to be
    read) and which goes back to Anthropic as the block itself; a failed one (no content: a no-op) stays opaque."""
    content = wire.data.get("content")
    if not isinstance(content, str) or not content:
        return Opaque(wire.data, ORIGIN)
    return Summary(content, native=dict(wire.data), native_provider=ORIGIN)


def _read_tool_result(wire: WireObject, calls: CallIds) -> Block:
    call_id = wire.take("tool_use_id", str)
    require_call(call_id, calls, wire.index, where(wire.field, "tool_use_id"))  # type: ignore[arg-type]
    is_error = wire.take("is_error", bool, required=False)
    content = wire.take("content", (str, *SEQUENCE), required="content" in wire.rest)
    if isinstance(content, SEQUENCE):
        fields = [where(wire.field, f"content[{k}]") for k in range(len(content))]
        objects = [as_object(b, wire.index, f) for b, f in zip(content, fields, strict=True)]
        content = tuple(_read_block(o, wire.index, f, "tool", calls) for o, f in zip(objects, fields, strict=True))
    return ToolResult(call_id, "" if content is None else content, is_error, extra=wire.rest)


_READERS: dict[str, Callable[[WireObject, CallIds], Block]] = {
    "text": _read_text,
    "image": _read_image,
    "document": _read_document,
    "thinking": _read_thinking,
    "redacted_thinking": _read_redacted,
    "tool_use": _read_tool_use,
    "tool_result": _read_tool_result,
    "compaction": _read_compaction,
}


# --------------------------------------------------------------------------- writing


def to_anthropic(conversation: Conversation) -> dict[str, Any]:
    """The ``system``, ``messages`` and ``tools`` of a Messages request.

    Raises :class:`InvalidToolArguments` for a call whose arguments are not a
    JSON object, :class:`InvalidContent` for blocks Anthropic cannot express and
    :class:`EmptyContent` for an empty message from another format; errors name
    the item's index in ``conversation.items`` and the neutral field path.
    """
    entries = list(numbered(conversation, system=False))
    pinned = len(conversation.header.pinned)
    last = len(conversation) - 1
    messages, _ = with_lead(_write_messages(entries[:pinned], last), _write_messages(entries[pinned:], last))
    return {"system": _write_system(conversation.header), "messages": messages, "tools": tools_to_anthropic(conversation)}


def with_lead(
    lead: Sequence[Mapping[str, Any]], messages: Sequence[Mapping[str, Any]]
) -> tuple[list[Mapping[str, Any]], list[int]]:
    """The request's messages: ``lead`` (the pinned items) before ``messages``, or after their compaction block.

    The API drops every message block before a ``compaction`` block that holds
    a summary (and the SDK's types say it goes first): pinned items in front
    of it would never reach the model. So they follow the block; a message
    that goes on after the block (the ``compact_20260112`` edit's reply: the
    block, then the answer) is split there, so the pinned items come between
    the summary and the answer (a ``tool_use`` in it keeps its results next).
    Also returned, for each message of ``[*lead, *messages]``, the index of the
    message its last block is in now (where a cache breakpoint closing it goes).
    """
    found = None if not lead else next(  # nothing pinned, nothing to place: no scan of the whole request
        ((k, b) for k in range(len(messages) - 1, -1, -1) if (b := _compaction_at(messages[k])) is not None), None)
    if found is None:
        return [*lead, *messages], [*range(len(lead) + len(messages))]
    at, block = found
    content = list(messages[at]["content"])
    head, rest = {**messages[at], "content": content[: block + 1]}, {**messages[at], "content": content[block + 1 :]}
    tail = [rest] if rest["content"] else []
    moved = len(lead) + len(tail)  # how far the messages after the compaction's message move down
    ends = [at + 1 + i for i in range(len(lead))]
    ends += [*range(at), at + moved if tail else at]
    ends += [k + moved for k in range(at + 1, len(messages))]
    return [*messages[:at], head, *lead, *tail, *messages[at + 1 :]], ends


def _compaction_at(message: JSONObject) -> int | None:
    """The position of a ``compaction`` block holding a summary in ``message`` (one without is a no-op)."""
    content = message.get("content")
    if not isinstance(content, list):
        return None
    return next((k for k, b in enumerate(content) if isinstance(b, Mapping) and b.get("type") == "compaction"
                 and b.get("content")), None)


def tools_to_anthropic(conversation: Conversation) -> list[dict[str, JSONValue]]:
    return write_tools(conversation, ORIGIN, TARGET, _write_tool)


def _write_tool(spec: ToolSpec, same: bool) -> dict[str, JSONValue]:
    fields = spec_fields(spec, "input_schema", same)
    return merged(fields, spec.extra) if same else fields


def _write_system(header: Header) -> str | list[dict[str, Any]] | None:
    if not header.system:
        return None
    blocks: list[Block] = []
    parts: list[dict[str, Any]] = []
    for position, item in enumerate(header.system):
        for j, block in enumerate(item.blocks):
            field = f"header.system[{position}].blocks[{j}]"
            if not isinstance(block, (Text, Summary)):
                raise foreign_block(block, None, field, f"the {TARGET} system prompt")
            # A compaction block in the system prompt is refused: there a summary is its text.
            part = {"type": "text", "text": block.text} if isinstance(block, Summary) else _write_block(block, item, None, field)
            if part is not None:
                blocks.append(block)
                parts.append(part)
    same = header.meta.get("origin") == ORIGIN
    return shaped(blocks, parts, header.meta.get("system_shape") if same else None, same)


class _ResultMessage:
    """A user message of tool results being assembled (Anthropic wants a round's results in one message)."""

    def __init__(self) -> None:
        self.parts: list[tuple[int | None, dict[str, JSONValue]]] = []
        self.group: str | None = None
        self.extra: JSONObject = {}

    def accepts(self, item: Item) -> bool:
        group = _group(item)
        return not self.parts or group is None or self.group is None or group == self.group

    def add(self, item: Item, parts: list[tuple[int | None, dict[str, JSONValue]]]) -> None:
        if not self.parts and origin(item) == ORIGIN:
            self.extra = item.meta.get("extra", {})
        self.group = self.group or _group(item)
        self.parts.extend(parts)

    def message(self) -> dict[str, JSONValue]:
        positions = [p for p, _ in self.parts]
        ordered = self.parts
        if None not in positions and len(set(positions)) == len(positions):  # the original order is known
            ordered = sorted(self.parts, key=lambda p: p[0])  # type: ignore[arg-type, return-value]
        return merged({"role": "user", "content": [part for _, part in ordered]}, self.extra)


def _group(item: Item) -> str | None:
    return item.meta.get("group") if origin(item) == ORIGIN else None


def _write_messages(entries: Iterable[tuple[int | None, str, Item]], last: int) -> list[dict[str, JSONValue]]:
    """The messages of ``entries`` (see :func:`numbered`); ``last`` is the index of the conversation's last item."""
    out: list[dict[str, JSONValue]] = []
    pending = _ResultMessage()
    for index, prefix, item in entries:
        if item.role == "tool":
            if not pending.accepts(item):
                out.append(pending.message())
                pending = _ResultMessage()
            pending.add(item, [(item.meta.get("position"), _write_result(item, index, prefix))])
            continue
        if pending.parts and item.role == "user" and _group(item) is not None and _group(item) == pending.group:
            positions = item.meta.get("positions", ())
            parts = _write_blocks(item, index, prefix)
            numbered_parts = (
                zip(positions, parts, strict=True) if len(positions) == len(parts) else ((None, p) for p in parts)
            )
            pending.add(item, list(numbered_parts))
            continue
        if pending.parts:
            out.append(pending.message())
            pending = _ResultMessage()
        message = _write_message(item, index, prefix, final=index == last)
        if message is not None:
            out.append(message)
    if pending.parts:
        out.append(pending.message())
    return out


def _write_message(item: Item, index: int | None, prefix: str, final: bool) -> dict[str, JSONValue] | None:
    """The message, or ``None`` when it held only another provider's reasoning (left out, with a warning)."""
    same = origin(item) == ORIGIN
    kept = [
        (b, p)
        for b, p in zip(item.blocks, _write_blocks(item, index, prefix, keep_none=True), strict=True)
        if p is not None
    ]
    content = shaped([b for b, _ in kept], [p for _, p in kept], item.meta.get("shape") if same else None, same)
    if content is None:
        if item.blocks and all(isinstance(b, (Thinking, RedactedThinking)) for b in item.blocks):
            return None
        if not final:
            raise EmptyContent(index, f"{prefix}blocks", "Anthropic rejects an empty message before the last")
        content = []
    role = "system" if item.role == "developer" else item.role
    return merged({"role": role, "content": content}, item.meta.get("extra", {}) if same else {})


def _write_blocks(item: Item, index: int | None, prefix: str, keep_none: bool = False) -> list[Any]:
    parts = [_write_block(b, item, index, f"{prefix}blocks[{j}]") for j, b in enumerate(item.blocks)]
    return parts if keep_none else [p for p in parts if p is not None]


def _write_result(item: Item, index: int | None, prefix: str) -> dict[str, JSONValue]:
    result = item.tool_result
    assert result is not None
    same = origin(item) == ORIGIN
    field = f"{prefix}blocks[0]"
    content: Any = result.content
    if not isinstance(content, str):
        written = (_write_block(b, item, index, f"{field}.content[{k}]") for k, b in enumerate(content))
        content = [part for part in written if part is not None]
    absent = same and item.meta.get("result_content") == "absent" and content == ""
    tree = without_nones(
        type="tool_result", tool_use_id=result.call_id, content=None if absent else content, is_error=result.is_error
    )
    return merged(tree, result.extra) if same else tree


def _write_block(block: Block, item: Item, index: int | None, field: str) -> dict[str, JSONValue] | None:
    """One block on the wire, or ``None`` when it is left out (empty foreign text; foreign reasoning, warned)."""
    source = origin(item)
    same = source == ORIGIN
    extra = block.extra if same else {}
    if isinstance(block, Text):
        return merged({"type": "text", "text": block.text}, extra) if block.text or same else None
    if isinstance(block, Summary):
        native = block.native_for(ORIGIN)
        return dict(native) if native is not None else {"type": "text", "text": block.text}
    if isinstance(block, Image):
        return merged({"type": "image", "source": _image_source(block, same, index, field)}, extra)
    if isinstance(block, Document):
        if is_anthropic_source(block):
            return merged({"type": "document", "source": block.source}, extra)
        filename = block.source.get("filename")
        return without_nones(type="document", source=anthropic_source(block, index, field), title=filename)
    if isinstance(block, (Thinking, RedactedThinking)):
        return _write_reasoning(block, source, index, field)
    if isinstance(block, ToolCall):
        check_arguments(item, block, index, field, TARGET)
        return merged({"type": "tool_use", "id": block.id, "name": block.name, "input": block.arguments}, extra)
    if isinstance(block, Opaque) and block.provider == ORIGIN:
        return dict(block.data)
    raise foreign_block(block, index, field, TARGET)


def _image_source(image: Image, same: bool, index: int | None, field: str) -> dict[str, JSONValue]:
    if image.data is not None:
        return without_nones(type="base64", media_type=image.media_type, data=image.data)
    if image.url is not None:
        inline = None if same else split_data_url(image.url)
        if inline is not None:
            return {"type": "base64", "media_type": inline[0], "data": inline[1]}
        return {"type": "url", "url": image.url}
    if same:
        return {}  # the file source is in extra["source"]
    raise InvalidContent(index, field, f"an image by provider file id cannot be expressed in {TARGET}")


def _write_reasoning(
    block: Thinking | RedactedThinking, source: str | None, index: int | None, field: str
) -> dict[str, JSONValue] | None:
    """Thinking goes back only with a signature Anthropic issued; another provider's reasoning is left out."""
    if isinstance(block, RedactedThinking):
        if source in (ORIGIN, None):
            return merged({"type": "redacted_thinking", "data": block.data}, block.extra if source else {})
    elif source == ORIGIN or (source is None and block.signature is not None):
        tree = without_nones(type="thinking", thinking=block.thinking, signature=block.signature)
        return merged(tree, block.extra if source else {})
    warn_dropped(f"{source} reasoning", index, field, TARGET)
    return None
