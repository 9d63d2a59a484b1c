"""Taking wire objects apart: the working copy an adapter takes modelled fields out of, and its checks.

Reading a wire object, an adapter *takes* the fields the neutral model has a
slot for; whatever is left (unknown keys, ``cache_control``, ``detail``, ids,
statuses) is the block's ``extra`` or the item's ``meta["extra"]``, and the
writers deep-merge it back (:func:`._writing.merged`). A field is only taken
when it has the type the model expects, so an odd value (``"description":
null``) simply stays in the leftover and comes back untouched.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from ..conversation import Conversation, Header, Item, JSONObject, JSONValue, Opaque, ToolSpec
from ..errors import InvalidContent, InvalidEncoding, InvalidMessage, OversizedBlock

SEQUENCE = (list, tuple)
"""What counts as a JSON array on input (a ``str`` is never one)."""


def where(prefix: str, name: str) -> str:
    """A dotted field path: ``where("content[2]", "text") == "content[2].text"``."""
    return f"{prefix}.{name}" if prefix else name


def as_object(value: object, index: int | None, field: str) -> JSONObject:
    """A wire object as a mapping. SDK response models (pydantic) are dumped as sent by the server."""
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    dumped = dump(mode="json", exclude_unset=True) if callable(dump) else None
    if isinstance(dumped, Mapping):
        return dumped
    raise InvalidContent(index, field or "message", f"expected an object, got {type(value).__name__}")


def as_list(value: object, index: int | None, field: str) -> Sequence[object]:
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

    def __init__(self, data: JSONObject, index: int | None, field: str) -> None:
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

    def take_if(self, key: str, expected: object) -> bool:
        """Remove a top-level key when it holds ``expected`` (a default the writer puts back)."""
        if key in self.rest and self.rest[key] == expected:
            del self.rest[key]
            return True
        return False

    def _lookup(self, keys: list[str]) -> object:
        node: object = self.rest
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


_MISSING: object = object()


OUTPUT_TEXT = frozenset({"text", "input_text", "output_text"})
"""Part types of a tool output's text, in the three formats: never too large (see :data:`MAX_BLOCK_BYTES`)."""


def read_object(raw: object, index: int | None, field: str, output: bool = False) -> WireObject:
    """One wire block or part, checked for encoding and size, ready to be taken apart.

    A text part of a tool ``output`` has no size limit; the message it is in was checked already
    (:func:`read_message`).
    """
    data = as_object(raw, index, field)
    kind = type_of(data, index, field)
    if not (output and kind in OUTPUT_TEXT):
        check_block(data, index, field)
    return WireObject(data, index, field)


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
    if not isinstance(call_id, str):
        raise InvalidContent(index, field, f"expected a string, got {shown(call_id)}")
    if call_id not in calls:
        raise InvalidContent(index, field, f"no earlier tool call has id {call_id!r}")


def parse_arguments(raw: str) -> dict[str, JSONValue] | None:
    """Tool-call arguments sent as a JSON string, or ``None`` when they are not a JSON object
    (:func:`check_json` included: a string that decodes to lone surrogates is kept raw, not decoded).

    An empty string is no arguments (``{}``): models send it for tools without parameters.
    """
    if not raw:
        return {}
    try:
        value = json.loads(raw)
        check_json(value, None, "arguments")
    except (ValueError, RecursionError, InvalidMessage):  # not JSON, nested too deep, or holding what JSON cannot
        return None
    return value if isinstance(value, dict) else None


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


MAX_BLOCK_BYTES = 32 * 1024 * 1024
"""Largest single block accepted, in UTF-8 bytes of its strings (32 MiB, the Anthropic request limit).

Tool outputs are exempt: however large, they are read, and :class:`~contextfold.Context` saves them to
disk on arrival and keeps a preview (a request never carries them whole)."""

MAX_NESTING = 100
"""Deepest nesting of objects and arrays accepted in one message. Tool schemas and arguments go a few
levels; much deeper is hostile, and Python's own JSON writer and comparisons fail at about 1,000."""

_MAX_INT_BITS = 14_000
"""Longest integer accepted (about 4,200 digits): Python writes no more than 4,300 digits as text."""


def word(value: object) -> str | None:
    """``value`` if it is a string (a role, a type), else ``None``: a list or object there names nothing."""
    return value if isinstance(value, str) else None


def type_of(data: JSONObject, index: int | None, field: str, key: str = "type") -> str | None:
    """A block's or item's ``type``: ``None`` when it has none, a typed error when it is not a string."""
    kind = data.get(key)
    if kind is None or isinstance(kind, str):
        return kind
    raise InvalidContent(index, where(field, key), f"expected a string, got {shown(kind)}")


def shown(value: object) -> str:
    """A short, safe rendering of a value for an error message (any type, any size)."""
    return repr(value[:60]) if isinstance(value, str) else f"a {type(value).__name__}"


def read_message(raw: object, index: int) -> JSONObject:
    """One message (or Responses item) of a list: an object holding nothing JSON cannot carry.

    The one check every reader starts with, so that no field (taken into the model or left over for the
    writer) escapes it; block sizes are checked where the blocks are read (:func:`check_block`).
    """
    data = as_object(raw, index, "")
    check_json(data, index, "")
    return data


def check_json(value: object, index: int | None, field: str) -> int:
    """Reject what no JSON request can carry, naming the field; returns the UTF-8 bytes of its strings.

    Refused: text that is not valid UTF-8 (lone surrogates, bytes), numbers JSON cannot write (NaN,
    infinities, integers of thousands of digits), keys that are not strings, values of other types (sets,
    arbitrary objects), and nesting deeper than :data:`MAX_NESTING`. SDK objects are checked once read
    (:func:`as_object` dumps them).
    """
    try:
        return _measure(value, 0)
    except _NotJson as bad:
        path = field
        for step in reversed(bad.path):
            path = f"{path}[{step}]" if isinstance(step, int) else where(path, step)
        raise bad.error(index, path or "message", bad.reason) from None


def check_block(value: object, index: int | None, field: str) -> None:
    """:func:`check_json`, and blocks over :data:`MAX_BLOCK_BYTES` refused."""
    size = check_json(value, index, field)
    if size > MAX_BLOCK_BYTES:
        raise OversizedBlock(index, field or "item", f"block is {size} bytes; the limit is {MAX_BLOCK_BYTES}")


class _NotJson(Exception):
    """Why a value is refused; ``path`` collects the keys and indexes on the way out (innermost first)."""

    def __init__(self, reason: str, error: type[InvalidMessage] = InvalidContent) -> None:
        self.reason = reason
        self.error = error
        self.path: list[str | int] = []


def _measure(value: Any, depth: int) -> int:
    """UTF-8 bytes of every string in a JSON value (scalars count 8); :class:`_NotJson` for what is not one.

    Scalars are tested before containers and ``dict`` before the ``Mapping`` ABC, whose ``isinstance`` is
    several times slower: this walks every node of every imported record (a 4 MB recording: 150,000 calls)."""
    if isinstance(value, str):
        if value.isascii():
            return len(value)
        try:
            return len(value.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise _NotJson(f"lone surrogate {value[exc.start]!r} at character {exc.start}", InvalidEncoding) from None
    if value is None or isinstance(value, bool):
        return 8
    if isinstance(value, int):
        if value.bit_length() > _MAX_INT_BITS:
            raise _NotJson(f"an integer of {value.bit_length():,} bits is too long to write as JSON")
        return 8
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotJson(f"{value} is not a JSON number")
        return 8
    sequence = isinstance(value, (list, tuple))
    mapping = not sequence and isinstance(value, (dict, Mapping))
    if sequence or mapping:
        if depth >= MAX_NESTING:
            raise _NotJson(f"nested deeper than {MAX_NESTING} levels")
        total = 0
        for step, child in value.items() if mapping else enumerate(value):
            if isinstance(step, str):
                total += len(step) if step.isascii() else _measure(step, depth)  # a key: counted, checked as text
            elif mapping:
                raise _NotJson(f"object keys must be strings, not {shown(step)}")
            try:
                total += _measure(child, depth + 1)
            except _NotJson as bad:
                bad.path.append(step)
                raise
        return total
    if isinstance(value, (bytes, bytearray)):
        try:
            bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _NotJson(f"bytes are not valid UTF-8 at byte {exc.start}", InvalidEncoding) from None
        raise _NotJson("expected a string, got bytes (decode them first)")
    if callable(getattr(value, "model_dump", None)):
        return 0  # an SDK object: dumped and checked when its block is read
    raise _NotJson(f"{shown(value)} is not a JSON value")
