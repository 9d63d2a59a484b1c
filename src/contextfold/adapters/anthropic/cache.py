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

from ...conversation import Block, Header, Item, JSONValue, Opaque, ToolResult, ToolSpec

MARK = "cache_control"
EPHEMERAL = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4
"""Anthropic's limit per request."""


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


def with_breakpoints(request: dict[str, Any], messages_at: Sequence[int], static_blocks: int = 0) -> dict[str, JSONValue]:
    """``request`` with at most four breakpoints, ordered by how long what they close stays the same.

    The prefix is read in the order tools, system, messages, so one mark on
    the system prompt caches the tools too. First the part every session
    shares: the end of the static system blocks (the first ``static_blocks``)
    of a split system prompt, else the end of the system prompt, else the last
    tool. Then the messages at ``messages_at``, most wanted first (the
    renderer's: the last message, the end of what no compaction rewrites, the
    latest summary). Marks left over go to the end of a split system prompt,
    then to the last tool.
    """
    tools = request.get("tools")
    system = request.get("system")
    blocks: list[dict[str, JSONValue]] = []
    if system:
        blocks = [{"type": "text", "text": system}] if isinstance(system, str) else [dict(b) for b in system]
    split = 0 < static_blocks < len(blocks)
    header_marks: list[tuple[str, int]] = []  # ("system", block index) or ("tools", -1), most wanted first
    if blocks:
        header_marks.append(("system", static_blocks - 1 if split else len(blocks) - 1))
    elif tools:
        header_marks.append(("tools", -1))
    messages = request["messages"]
    wanted = list(dict.fromkeys(messages_at))[: MAX_BREAKPOINTS - len(header_marks)]
    spare = MAX_BREAKPOINTS - len(header_marks) - len(wanted)
    extra = ([("system", len(blocks) - 1)] if split else []) + ([("tools", -1)] if blocks and tools else [])
    header_marks += extra[:spare]
    for place, index in header_marks:
        if place == "tools" and tools:
            request["tools"] = [*tools[:-1], {**tools[-1], MARK: EPHEMERAL}]
        else:
            blocks[index][MARK] = EPHEMERAL
    if blocks:
        request["system"] = blocks
    for index in wanted:
        messages[index] = _mark_last_block(messages[index])
    return request


def _mark_last_block(message: Mapping[str, Any]) -> dict[str, JSONValue]:
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


def with_reminder_blocks(request: Mapping[str, Any], rendered: Sequence[Mapping[str, Any]]) -> dict[str, JSONValue]:
    """``request`` with the blocks of ``rendered`` (a user message of reminders) after the last user message's blocks.

    Appended after the breakpoint the renderer put on that message, they are
    outside every prefix the provider caches. A request whose messages hold no
    user message gets them as a user message at the end.
    """
    messages = list(request["messages"])
    added = [block for message in rendered for block in _blocks(message)]
    last = next((k for k in range(len(messages) - 1, -1, -1) if messages[k].get("role") == "user"), None)
    if last is None:
        return {**request, "messages": [*messages, *rendered]}
    messages[last] = {**messages[last], "content": [*_blocks(messages[last]), *added]}
    return {**request, "messages": messages}


def _blocks(message: Mapping[str, Any]) -> list[dict[str, JSONValue]]:
    """A message's content as a list of blocks (a bare string is one text block)."""
    content = message.get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content or ()]
