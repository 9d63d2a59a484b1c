"""What the three wire adapters share: taking wire objects apart and putting them back.

The lossless round trip rests on one convention. Reading a wire object, an
adapter *takes* the fields the neutral model has a slot for; whatever is left
(unknown keys, ``cache_control``, ``detail``, ids, statuses) is the block's
``extra`` or the item's ``meta["extra"]``. Writing, it builds the modelled
fields again and deep-merges the leftover back over them. A field is only
taken when it has the type the model expects, so an odd value (``"description":
null``) simply stays in the leftover and comes back untouched.

Leftovers are format-specific: they are emitted only to the format they came
from (the item's ``meta["origin"]``). Across formats the content is mapped and
the format hints are left behind; content the target cannot carry raises a
typed error, and reasoning the target has no slot for is dropped with a
:class:`LossyConversion` warning.
"""

from __future__ import annotations

import base64
import binascii
import json
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from ..conversation import (
    Block,
    Conversation,
    Document,
    Header,
    Image,
    Item,
    Opaque,
    Summary,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from ..errors import InvalidContent, InvalidEncoding, InvalidMessage, InvalidToolArguments, OversizedBlock

MAX_BLOCK_BYTES = 32 * 1024 * 1024
"""Largest single block accepted, in UTF-8 bytes of its strings (32 MiB, the Anthropic request limit)."""

SEQUENCE = (list, tuple)
"""What counts as a JSON array on input (a ``str`` is never one)."""


ERROR_MARK = "[tool error] "
"""Put in front of an error result's text for formats that have no error flag."""


class LossyConversion(UserWarning):
    """Converting to another format left something out that the target cannot carry.

    Raised as a warning, not an error, only for reasoning (thinking from
    another provider, whose signature the target cannot verify); everything
    else that cannot be expressed raises a typed
    :class:`~contextfold.errors.InvalidMessage`.
    """


def warn_dropped(what: str, index: int | None, field: str, target: str) -> None:
    place = f"item {index}" if index is not None else "header"
    warnings.warn(f"{place}, {field}: {what} cannot be sent to {target}; left out", LossyConversion, stacklevel=2)


def origin(item: Item) -> str | None:
    """The wire format an item was read from (``None`` for items built in code)."""
    return item.meta.get("origin")


# --------------------------------------------------------------------------- reading


def where(prefix: str, name: str) -> str:
    """A dotted field path: ``where("content[2]", "text") == "content[2].text"``."""
    return f"{prefix}.{name}" if prefix else name


def as_object(value: Any, index: int | None, field: str) -> Mapping[str, Any]:
    """A wire object as a mapping. SDK response models (pydantic) are dumped as sent by the server."""
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_unset=True)
    raise InvalidContent(index, field or "message", f"expected an object, got {type(value).__name__}")


def as_list(value: Any, index: int | None, field: str) -> Sequence[Any]:
    if isinstance(value, SEQUENCE):
        return value
    raise InvalidContent(index, field, f"expected a list, got {type(value).__name__}")


def _type_names(types: type | tuple[type, ...]) -> str:
    kinds = types if isinstance(types, tuple) else (types,)
    names = {list: "list", tuple: "list", str: "string", bool: "boolean", Mapping: "object", dict: "object"}
    return " or ".join(dict.fromkeys(names.get(t, t.__name__) for t in kinds))


class WireObject:
    """A working copy of one wire object: fields are taken out, ``rest`` is what the model has no slot for.

    Paths are dotted (``"function.arguments"``); nested objects are copied
    before anything is removed from them, so the caller's data is never changed.
    """

    __slots__ = ("data", "field", "index", "rest")

    def __init__(self, data: Mapping[str, Any], index: int | None, field: str) -> None:
        self.data = data
        self.rest: dict[str, Any] = dict(data)
        self.index = index
        self.field = field

    def take(
        self,
        path: str,
        types: type | tuple[type, ...],
        *,
        required: bool = True,
        nonempty: bool = False,
        error: type[InvalidMessage] = InvalidContent,
    ) -> Any:
        """Remove and return the value at ``path`` if it has one of ``types`` (and is non-empty if asked).

        Otherwise the value stays in ``rest``; a required one raises ``error``.
        """
        keys = path.split(".")
        value = self._lookup(keys)
        if isinstance(value, types) and not (nonempty and not value):
            self._remove(keys)
            return value
        if required:
            got = "nothing" if value is _MISSING else type(value).__name__
            raise error(self.index, where(self.field, path), f"expected {_type_names(types)}, got {got}")
        return None

    def take_if(self, key: str, expected: Any) -> bool:
        """Remove a top-level key when it holds ``expected`` (a default the writer puts back)."""
        if key in self.rest and self.rest[key] == expected:
            del self.rest[key]
            return True
        return False

    def _lookup(self, keys: list[str]) -> Any:
        node: Any = self.rest
        for key in keys:
            if not isinstance(node, Mapping) or key not in node:
                return _MISSING
            node = node[key]
        return node

    def _remove(self, keys: list[str]) -> None:
        chain = [self.rest]
        for key in keys[:-1]:
            child = dict(chain[-1][key])
            chain[-1][key] = child
            chain.append(child)
        del chain[-1][keys[-1]]
        for depth in range(len(chain) - 1, 0, -1):  # prune objects we emptied
            if chain[depth]:
                break
            del chain[depth - 1][keys[depth - 1]]


_MISSING: Any = object()


def check_block(value: Any, index: int | None, field: str) -> None:
    """Reject text that is not valid UTF-8 and blocks over :data:`MAX_BLOCK_BYTES`."""
    try:
        size = _size(value)
    except _BadText:
        path, reason, error = _locate(value, field) or (field, "text is not valid UTF-8", InvalidEncoding)
        raise error(index, path, reason) from None
    if size > MAX_BLOCK_BYTES:
        raise OversizedBlock(index, field or "item", f"block is {size} bytes; the limit is {MAX_BLOCK_BYTES}")


class _BadText(Exception):
    pass


def _size(value: Any) -> int:
    """UTF-8 bytes of every string in a JSON value (scalars count 8)."""
    if isinstance(value, str):
        if value.isascii():
            return len(value)
        try:
            return len(value.encode("utf-8"))
        except UnicodeEncodeError:
            raise _BadText from None
    if isinstance(value, Mapping):
        return sum(_size(k) + _size(v) for k, v in value.items())
    if isinstance(value, SEQUENCE):
        return sum(_size(v) for v in value)
    if isinstance(value, (bytes, bytearray)):
        raise _BadText
    return 8


def _locate(value: Any, path: str) -> tuple[str, str, type[InvalidMessage]] | None:
    """Where the first bad string in ``value`` is, why, and the error to raise (slow path, errors only)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return path, f"lone surrogate {value[exc.start]!r} at character {exc.start}", InvalidEncoding
    elif isinstance(value, (bytes, bytearray)):
        try:
            bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            return path, f"bytes are not valid UTF-8 at byte {exc.start}", InvalidEncoding
        return path, "expected a string, got bytes (decode them first)", InvalidContent
    elif isinstance(value, Mapping):
        for key, child in value.items():
            found = _locate(key, path) or _locate(child, where(path, str(key)))
            if found:
                return found
    elif isinstance(value, SEQUENCE):
        for position, child in enumerate(value):
            found = _locate(child, f"{path}[{position}]")
            if found:
                return found
    return None


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """Tool-call arguments sent as a JSON string, or ``None`` when they are not a JSON object."""
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class CallIds:
    """The call ids a tool result may answer: those read so far from this list, and those known from before.

    ``known`` is kept by reference, not copied: a caller appending to a long
    history passes its live set of ids, and reading one message stays O(1).
    """

    def __init__(self, known: Iterable[str]) -> None:
        self._known: AbstractSet[str] = known if isinstance(known, AbstractSet) else frozenset(known)
        self._read: set[str] = set()

    def add(self, call_id: str) -> None:
        self._read.add(call_id)

    def __contains__(self, call_id: object) -> bool:
        return call_id in self._read or call_id in self._known


def require_call(call_id: str, calls: CallIds, index: int, field: str) -> None:
    """A tool result must answer a call made earlier in the same list (or in ``known_call_ids``)."""
    if call_id not in calls:
        raise InvalidContent(index, field, f"no earlier tool call has id {call_id!r}")


def read_object(raw: Any, index: int | None, field: str) -> WireObject:
    """One wire block or part, checked for encoding and size, ready to be taken apart."""
    data = as_object(raw, index, field)
    check_block(data, index, field)
    return WireObject(data, index, field)


def with_leading_system(
    items: Iterable[Item], header_tools: tuple[ToolSpec | Opaque, ...], provider: str
) -> Conversation:
    """A conversation whose header holds the system/developer items that open the list (OpenAI formats)."""
    system: list[Item] = []
    body: list[Item] = []
    for item in items:
        if not body and item.role in ("system", "developer"):
            system.append(item)
        else:
            body.append(item)
    return Conversation(body, Header(system=tuple(system), tools=header_tools, meta={"origin": provider}))


# --------------------------------------------------------------------------- writing


def compact(**fields: Any) -> dict[str, Any]:
    """The given fields without the ``None`` ones (absent on the wire)."""
    return {k: v for k, v in fields.items() if v is not None}


def merged(tree: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """The modelled fields with the leftover deep-merged over them (the leftover wins)."""
    out = dict(tree)
    for key, value in extra.items():
        mine = out.get(key)
        out[key] = merged(mine, value) if isinstance(mine, dict) and isinstance(value, Mapping) else value
    return out


def numbered(conversation: Conversation, system: bool) -> Iterable[tuple[int | None, str, Item]]:
    """Every item to send (system items first if asked), with its error index and field prefix.

    Conversation items are numbered by their position in ``conversation.items``;
    header items have index ``None`` and a ``header.system[k].`` prefix.
    """
    for position, item in enumerate(conversation.header.system if system else ()):
        yield None, f"header.system[{position}].", item
    for position, item in enumerate(conversation.header.pinned):
        yield None, f"header.pinned[{position}].", item
    for position, item in enumerate(conversation.items):
        yield position, "", item


def result_content(
    item: Item, index: int | None, prefix: str, same: bool, target: str, write: Callable[[Block, str], dict[str, Any]]
) -> tuple[ToolResult, str | list[dict[str, Any]]]:
    """A tool item's result and its content on the wire (``write`` renders one block at a field).

    OpenAI formats have no error flag. A result from elsewhere that was an
    error says so in its text instead (``ERROR_MARK`` in front), so the model
    still learns the call failed; a result read from the target format itself
    is written back untouched.
    """
    result = item.tool_result
    assert result is not None
    field = f"{prefix}blocks[0]"
    flag = bool(result.is_error) and not same
    if isinstance(result.content, str):
        return result, f"{ERROR_MARK}{result.content}" if flag else result.content
    parts = [write(block, f"{field}.content[{k}]") for k, block in enumerate(result.content)]
    if flag:
        parts.insert(0, write(Text(ERROR_MARK.strip()), f"{field}.is_error"))
    return result, parts


def foreign_block(block: Block, index: int | None, field: str, target: str) -> InvalidContent:
    """The error for a block the target format has no way to express."""
    if isinstance(block, Opaque):
        kind = block.data.get("type", "untyped")
        what = f"a {block.provider or 'foreign'} {kind!r} block"
    else:
        what = f"a {block.kind} block here"
    return InvalidContent(index, field, f"{what} cannot be expressed in {target}")


# --------------------------------------------------------------------------- media


def data_url(media_type: str | None, data: str) -> str:
    return f"data:{media_type or 'application/octet-stream'};base64,{data}"


def split_data_url(url: str) -> tuple[str, str] | None:
    """``(media_type, base64 data)`` of a base64 ``data:`` URL, else ``None``."""
    if not url.startswith("data:"):
        return None
    head, sep, data = url[5:].partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    return head[: -len(";base64")] or "application/octet-stream", data


def image_url(image: Image) -> str | None:
    """The URL OpenAI formats take for an image: its own, or a ``data:`` URL of its base64 data."""
    if image.url is not None:
        return image.url
    return data_url(image.media_type, image.data) if image.data is not None else None


OPENAI_FILE_KEYS = ("file_data", "file_id", "file_url", "filename")
"""Keys of an OpenAI file reference (chat ``file`` parts; Responses ``input_file``)."""


def is_anthropic_source(document: Document) -> bool:
    """Anthropic document sources carry a ``type``; OpenAI file references do not."""
    return "type" in document.source


def openai_file(document: Document, index: int | None, field: str, target: str, accepts_url: bool) -> dict[str, Any]:
    """An OpenAI file reference for a document read from another format (``accepts_url``: Responses only)."""
    source = document.source
    if not is_anthropic_source(document):
        if "file_url" in source and not accepts_url:
            raise InvalidContent(index, where(field, "source.file_url"), f"{target} cannot reference a file by URL")
        return {k: source[k] for k in OPENAI_FILE_KEYS if k in source}
    name = document.extra.get("title") or "document"
    if source.get("type") == "base64":
        return {"file_data": data_url(source.get("media_type"), source.get("data", "")), "filename": name}
    if source.get("type") == "text":
        encoded = base64.b64encode(str(source.get("data", "")).encode("utf-8")).decode("ascii")
        return {"file_data": data_url("text/plain", encoded), "filename": name}
    if source.get("type") == "url" and accepts_url:
        return {"file_url": source.get("url")}
    kind = source.get("type")
    raise InvalidContent(index, field, f"an Anthropic {kind!r} document source cannot be expressed in {target}")


def anthropic_source(document: Document, index: int | None, field: str) -> dict[str, Any]:
    """An Anthropic document source for an OpenAI file reference."""
    source = document.source
    inline = split_data_url(source["file_data"]) if isinstance(source.get("file_data"), str) else None
    if inline is not None:
        media_type, data = inline
        if media_type == "text/plain":
            try:
                text = base64.b64decode(data, validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                raise InvalidContent(index, field, "text/plain file data is not base64 UTF-8") from None
            return {"type": "text", "media_type": media_type, "data": text}
        return {"type": "base64", "media_type": media_type, "data": data}
    if isinstance(source.get("file_url"), str):
        return {"type": "url", "url": source["file_url"]}
    raise InvalidContent(index, field, "an OpenAI file id or non-base64 file cannot be expressed in Anthropic")


# --------------------------------------------------------------------------- shared shapes


EMPTY_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}
"""The parameters schema sent for a tool defined without one in another format."""


def arguments_json(call: ToolCall) -> str:
    """Arguments as a JSON string: the exact original when the source format sent one."""
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)


def check_arguments(item: Item, call: ToolCall, index: int | None, field: str, target: str) -> None:
    """Formats that carry arguments as an object cannot carry a non-JSON string the model produced."""
    if call.id in item.meta.get("invalid_arguments", ()):
        raise InvalidToolArguments(
            index,
            where(field, "arguments"),
            f"arguments {call.raw_arguments!r} are not a JSON object; {target} needs one",
        )


def shaped(
    blocks: Sequence[Block], parts: list[dict[str, Any]], shape: str | None, same: bool
) -> str | list[dict[str, Any]] | None:
    """A message's content in its wire shape: a bare string where it was one and still can be.

    ``shape`` is what the source said (``"str"`` or ``"list"``); ``None`` (another
    format, or built in code) prefers a bare string for one text. A text block
    whose provider fields are written (``same``) cannot be a bare string.
    ``None`` is returned for no content and no shape: the caller knows its format's rule.
    """
    plain = len(blocks) <= 1 and all(_bare(b, same) for b in blocks)
    if shape == "list" or not plain:
        return parts
    if blocks:
        return blocks[0].text  # type: ignore[union-attr]
    return "" if shape == "str" else None


def _bare(block: Block, same: bool) -> bool:
    return isinstance(block, Summary) or (isinstance(block, Text) and not (same and block.extra))


def read_tools(
    tools: Sequence[Any] | None, provider: str, read: Callable[[WireObject], ToolSpec | None]
) -> tuple[ToolSpec | Opaque, ...]:
    """Tool definitions: ``read`` makes a ToolSpec of a function tool (``None``: keep it Opaque)."""
    if tools is None:
        return ()
    specs: list[ToolSpec | Opaque] = []
    for position, raw in enumerate(as_list(tools, None, "tools")):
        wire = read_object(raw, None, f"tools[{position}]")
        spec = read(wire)
        specs.append(spec if spec is not None else Opaque(wire.data, provider))
    return tuple(specs)


def read_spec(wire: WireObject, schema_key: str, base: str = "") -> ToolSpec:
    """A ToolSpec from a function tool; ``base`` is where its fields sit (``"function"`` in chat)."""
    prefix = f"{base}." if base else ""
    name = wire.take(f"{prefix}name", str)
    description = wire.take(f"{prefix}description", str, required=False)
    parameters = wire.take(f"{prefix}{schema_key}", Mapping, required=False, nonempty=True)
    return ToolSpec(name, description, parameters or {}, wire.rest)


def spec_fields(spec: ToolSpec, schema_key: str, same: bool) -> dict[str, Any]:
    """Name, description and schema of a tool; another format's tool without a schema gets an empty one."""
    schema = spec.parameters or (None if same else EMPTY_SCHEMA)
    return compact(name=spec.name, description=spec.description, **{schema_key: schema})


def write_tools(
    conversation: Conversation, provider: str, target: str, write: Callable[[ToolSpec, bool], dict[str, Any]]
) -> list[dict[str, Any]]:
    """Tool definitions for ``provider``; ``write(spec, same_format)`` renders one function tool."""
    same = conversation.header.meta.get("origin") == provider
    out: list[dict[str, Any]] = []
    for position, spec in enumerate(conversation.header.tools):
        if isinstance(spec, Opaque):
            if spec.provider != provider:
                raise foreign_block(spec, None, f"header.tools[{position}]", target)
            out.append(dict(spec.data))
        else:
            out.append(write(spec, same))
    return out
