"""Putting wire objects back: leftovers merged over the modelled fields, shapes, and what cannot be sent.

Leftovers are format-specific: they are emitted only to the format they came
from (the item's ``meta["origin"]``). Across formats the content is mapped and
the format hints are left behind; content the target cannot carry raises a
typed error, and reasoning the target has no slot for is dropped with a
:class:`LossyConversion` warning.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence

from ..conversation import Block, Conversation, Item, JSONObject, JSONValue, Opaque, Summary, Text, ToolCall, ToolResult
from ..errors import InvalidContent, InvalidToolArguments
from ._reading import where

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


def without_nones(**fields: JSONValue) -> dict[str, JSONValue]:
    """The given fields without the ``None`` ones (absent on the wire)."""
    return {k: v for k, v in fields.items() if v is not None}


def merged(tree: JSONObject, extra: JSONObject) -> dict[str, JSONValue]:
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
    item: Item, index: int | None, prefix: str, same: bool, target: str, write: Callable[[Block, str], dict[str, JSONValue]]
) -> tuple[ToolResult, str | list[dict[str, JSONValue]]]:
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


def shaped(
    blocks: Sequence[Block], parts: list[dict[str, JSONValue]], shape: str | None, same: bool
) -> str | list[dict[str, JSONValue]] | None:
    """A message's content in its wire shape: a bare string where it was one and still can be.

    ``shape`` is what the source said (``"str"`` or ``"list"``); ``None`` (another
    format, or built in code) prefers a bare string for one text. A text block
    whose provider fields are written (``same``) cannot be a bare string.
    ``None`` is returned for no content and no shape: the caller knows its format's rule.
    """
    plain = len(blocks) <= 1 and all(_bare(b, p, same) for b, p in zip(blocks, parts, strict=True))
    if shape == "list" or not plain:
        return parts
    if blocks:
        return blocks[0].text  # type: ignore[union-attr]
    return "" if shape == "str" else None


def _bare(block: Block, part: JSONObject, same: bool) -> bool:
    """Whether ``block`` (written as ``part``) can be a bare string: a summary sent as text (not as the
    provider's own compaction block), or a text with no provider fields to write."""
    if isinstance(block, Summary):
        return "text" in part
    return isinstance(block, Text) and not (same and block.extra)


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
