"""Reported token usage, from each provider's ``usage`` object to :class:`~contextfold.usage.Usage`.

Anthropic reports ``input_tokens`` *excluding* cache reads and writes; OpenAI
(Chat and Responses) reports the prompt *including* cached tokens. The
neutral :class:`Usage` always holds the whole prompt, its cached parts beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..usage import Usage


def usage_data(usage: Any) -> Mapping[str, Any]:
    """A usage object (SDK model or mapping) as a mapping."""
    return usage.model_dump() if hasattr(usage, "model_dump") else usage


def anthropic_usage(usage: Any) -> Usage:
    """From a Messages API ``usage`` object (input excludes cache reads and writes)."""
    data = usage_data(usage)
    read = int(data.get("cache_read_input_tokens") or 0)
    write = int(data.get("cache_creation_input_tokens") or 0)
    return Usage(
        prompt_tokens=int(data.get("input_tokens") or 0) + read + write,
        output_tokens=int(data.get("output_tokens") or 0),
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


def openai_usage(usage: Any) -> Usage:
    """From a Chat Completions or Responses ``usage`` object (prompt includes cached; DeepSeek's hit count too)."""
    data = usage_data(usage)
    prompt = data.get("prompt_tokens", data.get("input_tokens")) or 0
    output = data.get("completion_tokens", data.get("output_tokens")) or 0
    details = data.get("prompt_tokens_details") or data.get("input_tokens_details") or {}
    cached = details.get("cached_tokens") or data.get("prompt_cache_hit_tokens") or 0
    return Usage(prompt_tokens=int(prompt), output_tokens=int(output), cache_read_tokens=int(cached))


def any_usage(usage: Any) -> Usage:
    """Whichever provider's shape ``usage`` is in (a caller that does not say which)."""
    data = usage_data(usage)
    if "input_tokens" in data and ("cache_read_input_tokens" in data or "cache_creation_input_tokens" in data):
        return anthropic_usage(data)
    if "prompt_tokens" in data or "input_tokens_details" in data:
        return openai_usage(data)
    return anthropic_usage(data)
