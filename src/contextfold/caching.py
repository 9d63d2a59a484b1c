"""Anthropic prompt-cache breakpoints: where to put the (at most four) ``cache_control`` marks.

The marks go on the last tool definition, the last system block, the latest
summary and the last message. The first three sit on content that changes
only when a stage fires, so every request reads them from the cache; the
fourth moves forward each turn, so the whole history up to it is cached for
the next request. The marks are not part of what the cache keys on, so
moving the last one does not break the prefix.
"""

from __future__ import annotations

import json
from typing import Any

from .summarizers.base import SUMMARY_PREAMBLE

EPHEMERAL = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4


def _mark_last_block(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not content:
        return message
    blocks = [dict(b) for b in content]
    if blocks[-1].get("type") in ("thinking", "redacted_thinking"):
        return message  # thinking blocks cannot carry cache_control
    blocks[-1]["cache_control"] = EPHEMERAL
    return {**message, "content": blocks}


def _is_summary(message: dict[str, Any]) -> bool:
    content = message.get("content")
    text = content if isinstance(content, str) else " ".join(b.get("text", "") for b in content or [] if isinstance(b, dict))
    return message.get("role") == "user" and SUMMARY_PREAMBLE[:60] in text


def place_breakpoints(request: dict[str, Any]) -> dict[str, Any]:
    """A copy of an Anthropic request (``system``/``messages``/``tools``) with cache breakpoints placed.

    A request that already carries ``cache_control`` marks (the caller placed
    its own) is returned as it is: adding ours could exceed the limit of four.
    """
    if '"cache_control"' in json.dumps(request, default=str):
        return request
    out = dict(request)
    tools = list(request.get("tools") or [])
    if tools:
        tools[-1] = {**tools[-1], "cache_control": EPHEMERAL}
        out["tools"] = tools
    system = request.get("system")
    if system:
        blocks = [{"type": "text", "text": system}] if isinstance(system, str) else [dict(b) for b in system]
        blocks[-1]["cache_control"] = EPHEMERAL
        out["system"] = blocks
    messages = list(request.get("messages") or [])
    summary_at = max((i for i, m in enumerate(messages) if _is_summary(m)), default=None)
    for index in {summary_at, len(messages) - 1} - {None, -1}:
        messages[index] = _mark_last_block(messages[index])
    out["messages"] = messages
    return out
