"""Anthropic prompt-cache marks: finding the caller's, and placing contextfold's breakpoints.

Anthropic caches a prefix only up to a block carrying ``cache_control``, at
most four per request. Whether the caller placed marks is read from the
neutral model (the ``extra`` of blocks and tools read from Anthropic), never
from rendered JSON: a tool argument that happens to be named
``cache_control`` is data, not a mark. Where contextfold's own breakpoints go
(the latest summary, the last message) is the renderer's decision; this
module only writes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...conversation import Block, Header, Item, Opaque, ToolResult, ToolSpec

MARK = "cache_control"
EPHEMERAL = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4
"""Anthropic's limit per request; two go to the tools and the system prompt."""


def item_marked(item: Item, origin: str) -> bool:
    """Whether an item read from Anthropic (``origin``) carries a mark that will be written back."""
    return item.meta.get("origin") == origin and any(_block_marked(block) for block in item.blocks)


def header_marked(header: Header, origin: str) -> bool:
    """Whether the system prompt, pinned items or tool definitions carry a mark that will be written back."""
    if any(item_marked(item, origin) for item in (*header.system, *header.pinned)):
        return True
    same = header.meta.get("origin") == origin
    return any(_tool_marked(tool, same, origin) for tool in header.tools)


def _block_marked(block: Block) -> bool:
    if isinstance(block, Opaque):
        return MARK in block.data
    if isinstance(block, ToolResult) and not isinstance(block.content, str):
        return MARK in block.extra or any(_block_marked(inner) for inner in block.content)
    return MARK in block.extra


def _tool_marked(tool: ToolSpec | Opaque, same: bool, origin: str) -> bool:
    if isinstance(tool, Opaque):
        return tool.provider == origin and MARK in tool.data
    return same and MARK in tool.extra


def with_breakpoints(request: dict[str, Any], messages_at: Sequence[int]) -> dict[str, Any]:
    """``request`` with breakpoints on the last tool, the last system block and the messages at ``messages_at``."""
    tools = request.get("tools")
    if tools:
        request["tools"] = [*tools[:-1], {**tools[-1], MARK: EPHEMERAL}]
    system = request.get("system")
    if system:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": system}] if isinstance(system, str) else [dict(b) for b in system]
        blocks[-1][MARK] = EPHEMERAL
        request["system"] = blocks
    messages = request["messages"]
    for index in sorted(set(messages_at))[: MAX_BREAKPOINTS - 2]:
        messages[index] = _mark_last_block(messages[index])
    return request


def _mark_last_block(message: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``message`` whose last content block carries a breakpoint (thinking blocks cannot)."""
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not content:
        return dict(message)
    blocks = list(content)
    if blocks[-1].get("type") in ("thinking", "redacted_thinking"):
        return dict(message)
    blocks[-1] = {**blocks[-1], MARK: EPHEMERAL}
    return {**message, "content": blocks}
