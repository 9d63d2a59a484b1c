"""The providers' prompt caches, modelled for the scripted servers: what a request reads from cache and writes to it.

A test of cache-aware code needs a server that reports cache reads and writes
the way the provider would for the same sequence of requests, so that a
request shaped differently from the one before it visibly reads nothing.
:class:`PromptCache` keeps what earlier requests left in the cache and
answers, for each new request, how many of its prompt tokens were read from
the cache, written to it, or neither (:class:`CacheUse`), by the provider's
rules:

* **Anthropic Messages** caches explicitly. The prompt is read in the order
  tools, system, messages, one segment per tool and content block. Only a
  prefix ending at a block with ``cache_control`` (at most four; a top-level
  ``cache_control`` marks the last block) is written, and only when it is at
  least the model's minimum cacheable length (:data:`ANTHROPIC_MINIMUM`).
  A breakpoint reads the longest prefix already written that ends on one of
  the :data:`LOOKBACK_BLOCKS` block boundaries before it; what lies between
  that and the last breakpoint is written. A change of ``tool_choice``
  keeps the tools and system cached but not the messages (the provider's
  documented invalidation). Entries are shared by every request to the same
  model, as an organisation's are.
* **OpenAI Chat Completions and Responses** cache automatically: every
  prompt of at least :data:`OPENAI_MINIMUM` tokens is cached, keyed by the
  model and ``prompt_cache_key``; a later request of the same key reads its
  longest common prefix with an earlier one, in steps of
  :data:`OPENAI_INCREMENT` tokens above the minimum. Nothing is read below
  the minimum. Reported writes are the prompt tokens not read.
* **Gemini** caches implicitly, like OpenAI without a key or increments.

Token counts are deterministic and local: each segment is its canonical JSON
(cache marks left out) counted by ``count`` (default: a quarter of its
characters, rounded up; :func:`content_tokens` counts only its strings with
a given text counter, such as contextfold's own). Prefixes are compared segment by segment, so a
partial match inside a segment counts for nothing. Nothing expires: the
tests run within any time to live.

The servers use one instance each (:attr:`ScriptedModel.cache
<contextfold.testing.scripted.ScriptedModel.cache>`); the usage they report
comes from :meth:`PromptCache.use`.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..conversation import JSONObject, JSONValue

CHARS_PER_TOKEN = 4
LOOKBACK_BLOCKS = 20
"""How many block boundaries before a breakpoint Anthropic checks for an earlier cache entry."""
MAX_BREAKPOINTS = 4
ANTHROPIC_MINIMUM: tuple[tuple[str, int], ...] = (
    ("claude-opus-4-5", 4096), ("claude-opus-4-6", 4096), ("claude-haiku-4-5", 4096),
    ("claude-3-5-haiku", 2048), ("claude-3-haiku", 2048),
)
"""Minimum cacheable prompt length by model name prefix; other Claude models: :data:`ANTHROPIC_DEFAULT_MINIMUM`."""
ANTHROPIC_DEFAULT_MINIMUM = 1024
OPENAI_MINIMUM = 1024
OPENAI_INCREMENT = 128
GEMINI_MINIMUM = 1024
PROVIDERS = ("anthropic", "openai", "responses", "gemini")
"""Provider names as :mod:`.scripted` spells them (``openai`` is Chat Completions)."""


def approximate_tokens(text: str) -> int:
    """The default count: a quarter of the characters, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def content_tokens(count: Callable[[str], int]) -> Callable[[str], int]:
    """A segment count that bills the segment's strings (its values, not the JSON keys and punctuation around them).

    Providers bill what their tokenizer sees of the content, not the wire's
    JSON. Given contextfold's own text counter (``Estimator().text``), the
    server counts a request's text the way contextfold and its replay do, so
    that a comparison of what the server reported with what a replay priced
    compares pricing rules rather than two tokenizers.
    """

    def counted(segment: str) -> int:
        return sum(count(text) for text in _strings(json.loads(segment)))

    return counted


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@dataclass(frozen=True)
class CacheUse:
    """What one request did with the cache, in tokens: ``prompt`` in all, ``read`` from cache, ``written`` to it.

    ``uncached`` is the rest (processed without the cache). ``ttl`` is the
    time to live the writes asked for (Anthropic's ``"5m"`` or ``"1h"``).
    """

    prompt: int
    read: int = 0
    written: int = 0
    ttl: str = "5m"

    @property
    def uncached(self) -> int:
        return self.prompt - self.read - self.written

    @property
    def read_share(self) -> float:
        return self.read / self.prompt if self.prompt else 0.0

    def capped(self, prompt: int) -> CacheUse:
        """The same use when the prompt is counted ``prompt`` by another count (reads and writes fit inside it)."""
        read = min(self.read, prompt)
        return CacheUse(prompt, read, min(self.written, prompt - read), self.ttl)


@dataclass(frozen=True)
class _Segment:
    """One tool or block of a prompt: its canonical text, whether it counts tokens, the TTL of a mark ending there."""

    text: str
    counted: bool = True
    breakpoint: str | None = None


@dataclass
class PromptCache:
    """The caches of one server, all providers (see the module docstring). Thread-safe."""

    count: Callable[[str], int] = approximate_tokens
    _entries: set[tuple[str, ...]] = field(default_factory=set, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def use(self, provider: str, body: JSONObject) -> CacheUse:
        """Read and write the cache for ``body`` (a request of ``provider``), and say what it did."""
        if provider not in PROVIDERS:
            raise ValueError(f"no prompt-cache model for {provider!r}; known: {', '.join(PROVIDERS)}")
        segments = list(SEGMENTS[provider](body))
        tokens = [self.count(segment.text) if segment.counted else 0 for segment in segments]
        model = str(body.get("model", ""))
        with self._lock:
            if provider == "anthropic":
                return self._explicit(model, segments, tokens)
            key = str(body.get("prompt_cache_key") or "") if provider != "gemini" else ""
            minimum, step = (GEMINI_MINIMUM, 1) if provider == "gemini" else (OPENAI_MINIMUM, OPENAI_INCREMENT)
            return self._automatic((provider, model, key), segments, tokens, minimum, step)

    def prompt_tokens(self, provider: str, body: JSONObject) -> int:
        """The prompt's size by this cache's count, without touching the cache."""
        return sum(self.count(segment.text) for segment in SEGMENTS[provider](body) if segment.counted)

    def clear(self) -> None:
        """Forget every entry (as if the time to live had passed)."""
        with self._lock:
            self._entries.clear()

    # ------------------------------------------------------------------ the two kinds of cache
    def _explicit(self, model: str, segments: list[_Segment], tokens: list[int]) -> CacheUse:
        keys, totals = _prefixes(("anthropic", model), segments, tokens)
        prompt = totals[-1]
        marks = [index for index, segment in enumerate(segments) if segment.breakpoint][:MAX_BREAKPOINTS]
        if not marks or totals[marks[-1] + 1] < _anthropic_minimum(model):
            return CacheUse(prompt)
        read = 0
        for mark in marks:
            for end in range(mark + 1, max(mark + 1 - LOOKBACK_BLOCKS, 0), -1):  # the prefix segments[:end]
                if keys[end] in self._entries:
                    read = max(read, totals[end])
                    break
        minimum = _anthropic_minimum(model)
        self._entries.update(keys[mark + 1] for mark in marks if totals[mark + 1] >= minimum)
        last = marks[-1]
        return CacheUse(prompt, read, max(totals[last + 1] - read, 0), segments[last].breakpoint or "5m")

    def _automatic(
        self, key: tuple[str, ...], segments: list[_Segment], tokens: list[int], minimum: int, step: int
    ) -> CacheUse:
        keys, totals = _prefixes(key, segments, tokens)
        prompt = totals[-1]
        if prompt < minimum:
            return CacheUse(prompt)
        common = next((totals[end] for end in range(len(segments), 0, -1) if keys[end] in self._entries), 0)
        read = minimum + (common - minimum) // step * step if common >= minimum else 0
        self._entries.update(keys[1:])
        return CacheUse(prompt, read, prompt - read)


def _prefixes(
    key: tuple[str, ...], segments: Sequence[_Segment], tokens: Sequence[int]
) -> tuple[list[tuple[str, ...]], list[int]]:
    """The cache key of every prefix (``keys[n]``: the first n segments) and its tokens."""
    digest = hashlib.sha256(json.dumps(key).encode())
    keys: list[tuple[str, ...]] = [(*key, digest.hexdigest())]
    totals = [0]
    for segment, count in zip(segments, tokens):
        digest.update(b"\x00" + segment.text.encode())
        keys.append((*key, digest.hexdigest()))
        totals.append(totals[-1] + count)
    return keys, totals


def _anthropic_minimum(model: str) -> int:
    return next((tokens for prefix, tokens in ANTHROPIC_MINIMUM if model.startswith(prefix)), ANTHROPIC_DEFAULT_MINIMUM)


# --------------------------------------------------------------------------- each provider's prompt, as segments

MARK = "cache_control"


def _segment(value: object) -> _Segment:
    mark = value.get(MARK) if isinstance(value, Mapping) else None
    if isinstance(value, Mapping) and MARK in value:
        value = {k: v for k, v in value.items() if k != MARK}
    text = json.dumps(value, sort_keys=True)
    ttl = (mark.get("ttl") or "5m") if isinstance(mark, Mapping) else None
    return _Segment(text, breakpoint=ttl)


def _anthropic(body: Mapping[str, Any]) -> Iterator[_Segment]:
    for tool in body.get("tools") or []:
        yield _segment(tool)
    system = body.get("system")
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system or []:
        yield _segment(block)
    # tool_choice: no tokens, but a change of it breaks the messages' cache and no more
    yield _Segment(json.dumps(["tool_choice", body.get("tool_choice") or {"type": "auto"}], sort_keys=True), counted=False)
    blocks = []
    for message in body.get("messages") or []:
        content = message.get("content")
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
            blocks.append(_segment({"role": message.get("role"), **block} if isinstance(block, Mapping) else block))
    top = body.get(MARK)
    if isinstance(top, Mapping) and blocks and not blocks[-1].breakpoint:  # top-level: the last block is marked
        blocks[-1] = _Segment(blocks[-1].text, breakpoint=top.get("ttl") or "5m")
    yield from blocks


def _chat(body: Mapping[str, Any]) -> Iterator[_Segment]:
    for tool in body.get("tools") or []:
        yield _segment(tool)
    for message in body.get("messages") or []:
        yield _segment(message)


def _responses(body: Mapping[str, Any]) -> Iterator[_Segment]:
    for tool in body.get("tools") or []:
        yield _segment(tool)
    if body.get("instructions"):
        yield _segment({"instructions": body["instructions"]})
    given = body.get("input")
    for item in [{"role": "user", "content": given}] if isinstance(given, str) else given or []:
        yield _segment(item)


def _gemini(body: Mapping[str, Any]) -> Iterator[_Segment]:
    for tool in body.get("tools") or []:
        yield _segment(tool)
    if body.get("systemInstruction"):
        yield _segment(body["systemInstruction"])
    for content in body.get("contents") or []:
        yield _segment(content)


SEGMENTS: Mapping[str, Callable[[JSONObject], Iterator[_Segment]]] = {
    "anthropic": _anthropic, "openai": _chat, "responses": _responses, "gemini": _gemini}


# --------------------------------------------------------------------------- usage as each provider reports it


def anthropic_usage(use: CacheUse, output_tokens: int) -> dict[str, JSONValue]:
    """A Messages ``usage``: ``input_tokens`` excludes what was read from or written to the cache."""
    one_hour = use.written if use.ttl == "1h" else 0
    return {"input_tokens": use.uncached, "cache_read_input_tokens": use.read,
            "cache_creation_input_tokens": use.written, "output_tokens": output_tokens,
            "cache_creation": {"ephemeral_5m_input_tokens": use.written - one_hour, "ephemeral_1h_input_tokens": one_hour}}


def chat_usage(use: CacheUse, output_tokens: int) -> dict[str, JSONValue]:
    """A Chat Completions ``usage``: ``prompt_tokens`` includes the cached ones."""
    return {"prompt_tokens": use.prompt, "completion_tokens": output_tokens, "total_tokens": use.prompt + output_tokens,
            "prompt_tokens_details": {"cached_tokens": use.read, "cache_write_tokens": use.written}}


def responses_usage(use: CacheUse, output_tokens: int) -> dict[str, JSONValue]:
    """A Responses ``usage``: ``input_tokens`` includes the cached ones."""
    return {"input_tokens": use.prompt, "output_tokens": output_tokens, "total_tokens": use.prompt + output_tokens,
            "input_tokens_details": {"cached_tokens": use.read, "cache_write_tokens": use.written},
            "output_tokens_details": {"reasoning_tokens": 0}}


USAGE: Mapping[str, Callable[[CacheUse, int], dict[str, JSONValue]]] = {
    "anthropic": anthropic_usage, "openai": chat_usage, "responses": responses_usage}
"""Each provider's usage object for a :class:`CacheUse` and an output size (Gemini's is in :mod:`.gemini_wire`)."""
