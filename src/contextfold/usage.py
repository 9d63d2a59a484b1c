"""What a provider reported it charged for one call, in one shape for all providers.

:class:`Usage` always holds the whole prompt in ``prompt_tokens`` and its
cached parts beside it, so the rest of the library never has to remember
which provider it is talking to; the adapters read each provider's own
``usage`` object into it (:meth:`contextfold.adapters.Adapter.read_usage`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

from .conversation import JSONObject
from .errors import InvalidContent


def token_count(value: object, field: str) -> int:
    """A reported number of tokens: a whole number, at least 0 (absent or ``null`` is 0).

    Anything else (a string, a list, a negative or fractional number) is an
    :class:`~contextfold.errors.InvalidContent` naming ``field``: a count read
    wrong would skew every estimate anchored on it.
    """
    if value is None:
        return 0
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0
            or (isinstance(value, float) and not value.is_integer())):
        shown = repr(value)[:40] if isinstance(value, (int, float, str)) else f"a {type(value).__name__}"
        raise InvalidContent(None, field, f"expected a whole number of tokens, got {shown}")
    return int(value)


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage of one model call.

    ``prompt_tokens`` is the whole prompt (cached, written to cache and
    uncached); ``cache_read_tokens`` and ``cache_write_tokens`` are parts of it.
    ``cache_write_ttl_s`` is how long the provider said the write keeps the prefix (Anthropic's
    ``cache_creation`` reports 5-minute and 1-hour writes apart), ``None`` when it did not say: an idle
    compaction times itself by it rather than by the price table's guess (:mod:`contextfold.context.idle`).
    """

    prompt_tokens: int
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_ttl_s: float | None = None

    @property
    def uncached_prompt_tokens(self) -> int:
        return self.prompt_tokens - self.cache_read_tokens - self.cache_write_tokens

    def to_dict(self) -> dict[str, float]:
        """The counts, and the write's lifetime when the provider said it."""
        return {key: value for key, value in asdict(self).items() if value is not None}

    @classmethod
    def from_dict(cls, data: JSONObject) -> Usage:
        if not isinstance(data, Mapping):
            raise InvalidContent(None, "usage", f"expected an object, got {type(data).__name__}")
        names = ("prompt_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
        ttl = data.get("cache_write_ttl_s")
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0):
            raise InvalidContent(None, "usage.cache_write_ttl_s", f"expected a number of seconds, got {str(ttl)[:40]!r}")
        return cls(**{name: token_count(data.get(name), f"usage.{name}") for name in names},
                   cache_write_ttl_s=None if ttl is None else float(ttl))


@dataclass(frozen=True)
class CacheRule:
    """How much of a cached prefix a provider serves: nothing under ``minimum`` tokens, then whole steps of
    ``increment`` above it (each adapter's ``cache_rule``; the replay prices with it)."""

    minimum: int = 0
    increment: int = 1

    def serves(self, prefix_tokens: int) -> int:
        if prefix_tokens < self.minimum or prefix_tokens <= 0:
            return 0
        return self.minimum + (prefix_tokens - self.minimum) // self.increment * self.increment


EVERY_TOKEN = CacheRule()
"""A common prefix served whole."""
