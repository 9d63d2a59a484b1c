"""What a provider reported it charged for one call, in one shape for all providers.

Anthropic reports ``input_tokens`` *excluding* cache reads and writes; OpenAI
reports ``prompt_tokens`` *including* cached ones. :class:`Usage` always holds
the whole prompt in ``prompt_tokens`` and its cached parts beside it, so the
rest of the library never has to remember which provider it is talking to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage of one model call.

    ``prompt_tokens`` is the whole prompt (cached, written to cache and
    uncached); ``cache_read_tokens`` and ``cache_write_tokens`` are parts of it.
    """

    prompt_tokens: int
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def uncached_prompt_tokens(self) -> int:
        return self.prompt_tokens - self.cache_read_tokens - self.cache_write_tokens

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        return cls(**{k: int(data.get(k) or 0) for k in ("prompt_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")})

    @classmethod
    def from_anthropic(cls, usage: Mapping[str, Any]) -> Usage:
        """From a Messages API ``usage`` object (input excludes cache reads and writes)."""
        read = int(usage.get("cache_read_input_tokens") or 0)
        write = int(usage.get("cache_creation_input_tokens") or 0)
        return cls(
            prompt_tokens=int(usage.get("input_tokens") or 0) + read + write,
            output_tokens=int(usage.get("output_tokens") or 0),
            cache_read_tokens=read,
            cache_write_tokens=write,
        )

    @classmethod
    def from_openai(cls, usage: Mapping[str, Any]) -> Usage:
        """From a Chat Completions or Responses ``usage`` object (prompt includes cached)."""
        prompt = usage.get("prompt_tokens", usage.get("input_tokens")) or 0
        output = usage.get("completion_tokens", usage.get("output_tokens")) or 0
        details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details") or {}
        cached = (details or {}).get("cached_tokens") or usage.get("prompt_cache_hit_tokens") or 0
        return cls(prompt_tokens=int(prompt), output_tokens=int(output), cache_read_tokens=int(cached))

    @classmethod
    def from_any(cls, usage: Mapping[str, Any]) -> Usage:
        """Whichever of the two shapes ``usage`` is in."""
        if "input_tokens" in usage and ("cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage):
            return cls.from_anthropic(usage)
        if "prompt_tokens" in usage or "input_tokens_details" in usage:
            return cls.from_openai(usage)
        return cls.from_anthropic(usage)
