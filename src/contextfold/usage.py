"""What a provider reported it charged for one call, in one shape for all providers.

:class:`Usage` always holds the whole prompt in ``prompt_tokens`` and its
cached parts beside it, so the rest of the library never has to remember
which provider it is talking to; the adapters read each provider's own
``usage`` object into it (:meth:`contextfold.adapters.Adapter.read_usage`).
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
