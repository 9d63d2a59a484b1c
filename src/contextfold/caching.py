"""Anthropic prompt-cache breakpoints: the pieces :mod:`contextfold.rendering` places them with.

The (at most four) ``cache_control`` marks go on the last tool definition,
the last system block, the latest summary and the last message. The first
three sit on content that changes only when a stage fires, so every request
reads them from the cache; the fourth moves forward each turn, so the whole
history up to it is cached for the next request. The marks are not part of
what the cache keys on, so moving the last one does not break the prefix.
"""

from __future__ import annotations

from typing import Any

from .summarizers.base import SUMMARY_PREAMBLE

EPHEMERAL = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4
_SUMMARY_MARK = SUMMARY_PREAMBLE[:60]


def mark_last_block(message: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``message`` whose last content block carries a breakpoint (thinking blocks cannot)."""
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not content:
        return message
    blocks = list(content)
    if blocks[-1].get("type") in ("thinking", "redacted_thinking"):
        return message
    blocks[-1] = {**blocks[-1], "cache_control": EPHEMERAL}
    return {**message, "content": blocks}


def is_summary_message(message: dict[str, Any]) -> bool:
    """Whether a wire message is a summary contextfold wrote (it starts with the summary preamble)."""
    if message.get("role") != "user":
        return False
    content = message.get("content")
    if isinstance(content, str):
        return content.startswith(_SUMMARY_MARK)
    first = content[0] if content else None
    return isinstance(first, dict) and str(first.get("text", "")).startswith(_SUMMARY_MARK)
