"""Strands Agents messages <-> :class:`~contextfold.conversation.Conversation`, lossless both ways.

``to_strands(from_strands(messages)) == messages``.

Strands keeps an agent's history as Bedrock Converse messages: ``{"role":
"user" | "assistant", "content": [block, ...]}``, each block a dict with one
key naming its kind (``text``, ``toolUse``, ``toolResult``, ``image``,
``reasoningContent``, ``cachePoint`` ...). How they map onto the neutral
model:

* ``{"text": s}`` is a Text block; ``toolUse`` (``toolUseId``, ``name``,
  ``input``) a ToolCall; any other block is Opaque and goes back verbatim.
* A user message holding ``toolResult`` blocks becomes one ``tool`` item per
  result, then one user item with its other blocks, sharing
  ``meta["group"]`` and remembering their positions, so ``to_strands``
  rebuilds the one message in its order. ``status`` ``"error"`` is
  ``is_error=True``, ``"success"`` ``False``, absent ``None``; the result's
  content blocks are read like message blocks. Consecutive tool items from
  elsewhere (a repair) go back together in one user message.
* Message keys besides role and content (``metadata`` with the usage of an
  assistant reply) ride in ``meta["extra"]``; block keys besides the
  modelled ones in the block's ``extra``.
* Blocks from other formats: a Summary is written as text; other foreign
  blocks raise :class:`~contextfold.errors.InvalidContent`.

:func:`usage_from_strands` reads the ``usage`` Strands records in an
assistant message's metadata.
"""

from __future__ import annotations

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
    ToolCall,
    ToolResult,
    new_id,
)
from ..errors import InvalidContent, InvalidMessage, UnknownRole
from ..usage import Usage
from ._reading import CallIds, as_list, require_call, shown
from ._writing import foreign_block, origin

ORIGIN = "strands"
TARGET = "Strands messages"
_STATUS = {"error": True, "success": False}


# --------------------------------------------------------------------------- reading


def from_strands(messages: Sequence[JSONObject], *, known_call_ids: Iterable[str] = ()) -> Conversation:
    """Read Strands messages; ``known_call_ids`` names calls made in messages read before this list.

    Errors name the message index and field: :class:`UnknownRole`,
    :class:`InvalidMessage`, :class:`InvalidContent` (a result without its call).
    """
    calls = CallIds(known_call_ids)
    items: list[Item] = []
    for index, message in enumerate(as_list(messages, None, "messages")):
        items.extend(_read_message(message, index, calls))
    return Conversation(items)


def _read_message(message: object, index: int, calls: CallIds) -> list[Item]:
    if not isinstance(message, Mapping) or not isinstance(message.get("content"), list):
        raise InvalidMessage(index, "content", "a Strands message is an object with a list of content blocks")
    role = message.get("role")
    if role not in ("user", "assistant"):
        raise UnknownRole(index, "role", f"unknown role {shown(role)}; Strands messages are user or assistant")
    rest = {k: v for k, v in message.items() if k not in ("role", "content")}
    meta: dict[str, JSONValue] = {"origin": ORIGIN, **({"extra": rest} if rest else {})}
    blocks = [_read_block(block, index, f"content[{j}]", calls) for j, block in enumerate(message["content"])]
    results = [j for j, block in enumerate(blocks) if isinstance(block, ToolResult)]
    if not results:
        return [Item(role, tuple(blocks), meta=meta)]
    group = new_id("grp")
    items = [Item("tool", (blocks[j],), meta={**meta, "group": group, "position": j}) for j in results]
    others = [j for j in range(len(blocks)) if j not in results]
    if others:
        items.append(Item(role, tuple(blocks[j] for j in others), meta={**meta, "group": group, "positions": others}))
    return items


def _read_block(block: object, index: int, field: str, calls: CallIds) -> Block:
    if not isinstance(block, Mapping) or len(block) != 1:
        return Opaque(block if isinstance(block, Mapping) else {"value": block}, ORIGIN)
    (kind, body), = block.items()
    if kind == "text" and isinstance(body, str):
        return Text(body)
    if kind == "toolUse" and isinstance(body, Mapping) and {"toolUseId", "name", "input"} <= body.keys():
        for key, types in (("toolUseId", str), ("name", str), ("input", Mapping)):
            if not isinstance(body[key], types):
                raise InvalidContent(index, f"{field}.toolUse.{key}", f"expected {'an object' if types is Mapping else 'a string'}, "
                                                                      f"got {shown(body[key])}")
        calls.add(body["toolUseId"])
        rest = {k: v for k, v in body.items() if k not in ("toolUseId", "name", "input")}
        return ToolCall(body["toolUseId"], body["name"], body["input"], None, rest)
    if kind == "toolResult" and isinstance(body, Mapping) and isinstance(body.get("toolUseId"), str):
        require_call(body["toolUseId"], calls, index, f"{field}.toolResult.toolUseId")
        content = body.get("content", [])
        if not isinstance(content, list):
            raise InvalidContent(index, f"{field}.toolResult.content", "expected a list of content blocks")
        parts = tuple(_read_block(part, index, f"{field}.toolResult.content[{k}]", calls) for k, part in enumerate(content))
        if not isinstance(body.get("status"), (str, type(None))):
            raise InvalidContent(index, f"{field}.toolResult.status", f"expected a string, got {shown(body['status'])}")
        rest = {k: v for k, v in body.items() if k not in ("toolUseId", "status", "content")}
        if "content" not in body:
            rest["_content"] = "absent"
        return ToolResult(body["toolUseId"], parts, _STATUS.get(body.get("status")), extra=rest)  # type: ignore[arg-type]
    return Opaque(dict(block), ORIGIN)


# --------------------------------------------------------------------------- writing


def to_strands(conversation: Conversation) -> list[dict[str, JSONValue]]:
    """The conversation as Strands messages (the header is not written: Strands keeps its system prompt apart)."""
    out: list[dict[str, JSONValue]] = []
    results: list[tuple[int | None, dict[str, JSONValue]]] = []
    group: str | None = None
    extra: JSONObject = {}

    def flush() -> None:
        nonlocal results, group, extra
        if results:
            ordered = results
            positions = [p for p, _ in results]
            if None not in positions and len(set(positions)) == len(positions):
                ordered = sorted(results, key=lambda r: r[0])  # type: ignore[arg-type, return-value]
            out.append({"role": "user", "content": [block for _, block in ordered], **extra})
        results, group, extra = [], None, {}

    for index, item in enumerate(conversation.items):
        mine = origin(item) == ORIGIN
        item_group = item.meta.get("group") if mine else None
        if item.role == "tool":
            if results and item_group is not None and group is not None and item_group != group:
                flush()
            if not results and mine:
                extra = item.meta.get("extra", {})
            group = group or item_group
            results.append((item.meta.get("position") if mine else None, _write_result(item, index)))
            continue
        blocks = [_write_block(block, index, f"items[{index}].blocks[{j}]") for j, block in enumerate(item.blocks)]
        if results and item.role == "user" and item_group is not None and item_group == group:
            positions = item.meta.get("positions", ())
            pairs = zip(positions, blocks) if len(positions) == len(blocks) else ((None, b) for b in blocks)
            results.extend(pairs)
            flush()
            continue
        flush()
        role = "assistant" if item.role == "assistant" else "user"
        out.append({"role": role, "content": blocks, **(item.meta.get("extra", {}) if mine else {})})
    flush()
    return out


def _write_result(item: Item, index: int) -> dict[str, Any]:
    result = item.tool_result
    assert result is not None
    rest = dict(result.extra) if origin(item) == ORIGIN else {}
    absent = rest.pop("_content", None) == "absent"
    body: dict[str, JSONValue] = {"toolUseId": result.call_id}
    if result.is_error is not None:
        body["status"] = "error" if result.is_error else "success"
    content = result.content
    if isinstance(content, str):
        parts = [{"text": content}] if content or not absent else []
    else:
        parts = [_write_block(b, index, f"items[{index}].blocks[0].content[{k}]") for k, b in enumerate(content)]
    if parts or not absent:
        body["content"] = parts
    return {"toolResult": {**body, **rest}}


def _write_block(block: Block, index: int, field: str) -> dict[str, Any]:
    if isinstance(block, (Text, Summary)):
        return {"text": block.text}
    if isinstance(block, ToolCall):
        return {"toolUse": {"toolUseId": block.id, "name": block.name, "input": dict(block.arguments), **block.extra}}
    if isinstance(block, Opaque) and block.provider == ORIGIN:
        return dict(block.data)
    raise foreign_block(block, index, field, TARGET)


# --------------------------------------------------------------------------- usage


def usage_from_strands(message: Mapping[str, Any]) -> Usage | None:
    """The usage Strands recorded in an assistant message's ``metadata`` (``None`` when there is none).

    Strands' providers differ: OpenAI's ``inputTokens`` includes the cached
    prompt, Anthropic's and Bedrock's leave cache reads and writes out. As
    Strands itself decides, ``inputTokens + outputTokens == totalTokens``
    means the cache is inside ``inputTokens``; otherwise it is added.
    """
    usage = (message.get("metadata") or {}).get("usage") if isinstance(message, Mapping) else None
    if not usage:
        return None
    prompt, output = int(usage.get("inputTokens") or 0), int(usage.get("outputTokens") or 0)
    read = int(usage.get("cacheReadInputTokens") or 0)
    written = int(usage.get("cacheWriteInputTokens") or 0)
    if prompt + output != usage.get("totalTokens"):
        prompt += read + written
    return Usage(prompt_tokens=prompt, output_tokens=output, cache_read_tokens=read, cache_write_tokens=written)
