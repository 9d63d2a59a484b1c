"""What a replayed request costs with prompt caching, and the rule for what the cache serves.

The cache model is Anthropic's with a breakpoint on the last message: every
request writes its whole prompt to the cache, and the next request reads from
it the longest run of leading segments (the tool definitions, then whole
messages in order) that is unchanged, provided it comes within the cache's
time to live; the rest of the prompt is written anew. A first request, or
one after a pause longer than the TTL, reads nothing. Providers' minimum
cacheable lengths (1,024 tokens on Anthropic) are ignored by default; a
:class:`~contextfold.usage.CacheRule` (the adapter's ``cache_rule``) prices
the automatic caches of OpenAI's APIs, which read nothing under 1,024 tokens
and then in steps of 128.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, fields
from typing import Generic, TypeVar

from ..pipeline.base import DEFAULT_PRICES as DEFAULT_PRICES  # the replay's default prices are the pipeline's
from ..pipeline.base import Prices
from ..usage import EVERY_TOKEN, CacheRule

DEFAULT_CACHE_TTL_S = 300.0
"""Seconds a cached prefix lives after its last use (Anthropic's default 5 minutes)."""

T = TypeVar("T")



_PRICE_KEYS = {"input": "input_per_mtok", "cache_write": "cache_write_per_mtok",
               "cache_read": "cache_read_per_mtok", "output": "output_per_mtok"}


def cost_usd(prices: Prices, *, cache_read: int, cache_write: int, output: int, uncached: int = 0) -> float:
    """USD for one request: cached reads, cache writes, input read without the cache, and output tokens."""
    return (
        cache_read * prices.cache_read_per_mtok
        + cache_write * prices.cache_write_per_mtok
        + uncached * prices.input_per_mtok
        + output * prices.output_per_mtok
    ) / 1e6


def warm(previous_s: float | None, now_s: float | None, ttl_s: float) -> bool:
    """Whether the previous request's cache is still alive; an unknown time counts as within the TTL."""
    return previous_s is None or now_s is None or now_s - previous_s <= ttl_s


def common_prefix(previous: Sequence[T], current: Sequence[T], same: Callable[[T, T], bool]) -> int:
    """How many leading elements of ``current`` are ``same`` as those of ``previous``."""
    count = 0
    for old, new in zip(previous, current):
        if not same(old, new):
            break
        count += 1
    return count


@dataclass(frozen=True)
class Prompt(Generic[T]):
    """A request as the cache sees it: its tool definitions (a key), its messages, the tokens of each, its time."""

    tools: Hashable
    tools_tokens: int
    messages: Sequence[T]
    tokens: Sequence[int]
    time_s: float | None

    @property
    def input_tokens(self) -> int:
        return self.tools_tokens + sum(self.tokens)


class PromptCache(Generic[T]):
    """The cache as one kind of request finds it: what the previous request of the kind left there.

    ``same`` says whether two messages are the same (default ``==``); ``rule`` how much of the common prefix
    is served.
    """

    def __init__(self, ttl_s: float, same: Callable[[T, T], bool] = operator.eq, rule: CacheRule = EVERY_TOKEN) -> None:
        self.ttl_s = ttl_s
        self.same = same
        self.rule = rule
        self.previous: Prompt[T] | None = None

    def read(self, prompt: Prompt[T]) -> int:
        """Tokens of ``prompt`` served from the cache; ``prompt`` is what the cache holds afterwards."""
        previous, self.previous = self.previous, prompt
        return self.served(previous, prompt)

    def served(self, previous: Prompt[T] | None, prompt: Prompt[T]) -> int:
        """Tokens of ``prompt`` a cache holding ``previous`` serves, by this cache's rule (nothing is kept)."""
        if previous is None or previous.tools != prompt.tools or not warm(previous.time_s, prompt.time_s, self.ttl_s):
            return 0
        return self.rule.serves(
            prompt.tools_tokens + sum(prompt.tokens[: common_prefix(previous.messages, prompt.messages, self.same)]))


def parse_prices(text: str, base: Prices = DEFAULT_PRICES) -> Prices:
    """Prices from ``"input=3,cache_write=3.75,cache_read=0.3,output=15"`` (USD per million tokens).

    Keys left out keep ``base``'s value. Raises :class:`ValueError` naming the
    part that is not ``key=number`` with a known key.
    """
    values = {f.name: getattr(base, f.name) for f in fields(Prices)}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, number = part.partition("=")
        if not sep or key.strip() not in _PRICE_KEYS:
            raise ValueError(f"price {part!r}: expected key=number with key one of {', '.join(_PRICE_KEYS)}")
        try:
            values[_PRICE_KEYS[key.strip()]] = float(number)
        except ValueError:
            raise ValueError(f"price {part!r}: {number.strip()!r} is not a number") from None
    return Prices(**values)
