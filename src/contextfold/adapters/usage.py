"""Reported token usage, from each provider's ``usage`` object to :class:`~contextfold.usage.Usage`.

Anthropic reports ``input_tokens`` *excluding* cache reads and writes; OpenAI
(Chat and Responses) reports the prompt *including* cached tokens. The
neutral :class:`Usage` always holds the whole prompt, its cached parts beside it.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..conversation import JSONObject
from ..errors import InvalidContent
from ..usage import Usage, token_count


def usage_data(usage: object) -> JSONObject:
    """A usage object (SDK model or mapping) as a mapping."""
    data = usage.model_dump() if hasattr(usage, "model_dump") else usage
    if not isinstance(data, Mapping):
        raise InvalidContent(None, "usage", f"expected an object, got {type(data).__name__}")
    return data


def usage_count(data: JSONObject, *keys: str) -> int:
    """The first of ``keys`` the usage reports, as a token count (0 when none is)."""
    for key in keys:
        if data.get(key) is not None:
            return token_count(data[key], f"usage.{key}")
    return 0


ANTHROPIC_WRITE_LIFETIMES_S = {"ephemeral_5m_input_tokens": 300.0, "ephemeral_1h_input_tokens": 3_600.0}
"""The parts of a Messages ``usage.cache_creation``, and how long a write of each keeps the prefix."""


def anthropic_usage(usage: object) -> Usage:
    """From a Messages API ``usage`` object (input excludes cache reads and writes)."""
    data = usage_data(usage)
    read = usage_count(data, "cache_read_input_tokens")
    write = usage_count(data, "cache_creation_input_tokens")
    return Usage(
        prompt_tokens=usage_count(data, "input_tokens") + read + write,
        output_tokens=usage_count(data, "output_tokens"),
        cache_read_tokens=read,
        cache_write_tokens=write,
        cache_write_ttl_s=anthropic_write_lifetime_s(data),
    )


def anthropic_write_lifetime_s(data: JSONObject) -> float | None:
    """How long the write reported in ``usage.cache_creation`` keeps the prefix: the lifetime of the larger of its
    5-minute and 1-hour parts (``None``: nothing written, or the split not reported, as by an older API)."""
    split = data.get("cache_creation")
    if split is None:
        return None
    if not isinstance(split, Mapping):
        raise InvalidContent(None, "usage.cache_creation", f"expected an object, got {type(split).__name__}")
    written = {lifetime: usage_count(split, key) for key, lifetime in ANTHROPIC_WRITE_LIFETIMES_S.items()}
    most = max(written, key=lambda lifetime: (written[lifetime], lifetime))
    return most if written[most] > 0 else None


def openai_usage(usage: object) -> Usage:
    """From a Chat Completions or Responses ``usage`` object (prompt includes cached; DeepSeek's hit count too)."""
    data = usage_data(usage)
    details = data.get("prompt_tokens_details") or data.get("input_tokens_details") or {}
    if not isinstance(details, Mapping):
        raise InvalidContent(None, "usage.prompt_tokens_details", f"expected an object, got {type(details).__name__}")
    cached = usage_count(details, "cached_tokens") or usage_count(data, "prompt_cache_hit_tokens")
    return Usage(
        prompt_tokens=usage_count(data, "prompt_tokens", "input_tokens"),
        output_tokens=usage_count(data, "completion_tokens", "output_tokens"),
        cache_read_tokens=cached,
    )

