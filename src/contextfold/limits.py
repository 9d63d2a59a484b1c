"""Model context windows, output limits, and the token count at which to compact.

The registry maps a model name to its :class:`ModelLimits`. Names resolve
exactly, or as a registered name followed by a version tag
(``claude-sonnet-4-5-20250929``, ``gpt-4o-2024-08-06``, ``...-v1:0``,
``...-latest``); a provider prefix (``deepseek/deepseek-chat``,
``us.anthropic.claude-opus-4-5-20251101-v1:0``) is ignored. A name that is neither raises
:class:`UnknownModel` rather than guessing a window.

Figures are the providers' published ones (model pages of Anthropic, OpenAI,
Google, DeepSeek and Alibaba Model Studio, as of mid 2026), in tokens. Windows that providers
offer only behind a beta flag are not assumed; register them to use them. Models
the SDKs name whose window could not be found (``claude-opus-5``,
``claude-sonnet-5``, the ``-5-5`` Claude models, ``claude-mythos-*``,
``claude-fable-*``, ``gpt-5.4-mini``/``-nano``, ``gpt-5.6-*``, ``gpt-6-*``) are
left out: :class:`UnknownModel` asks for their window rather than guess it.

Each model also says which API serves it (:func:`model_provider`), so that
``Context("gpt-4.1")`` writes an OpenAI request, and what it costs
(:func:`model_prices`), so that its cache decisions are made on its own
prices; :func:`resolve_limits` is the one check of a window and reply limit
that every path (library, integrations, commands) goes through.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from .errors import InvalidLimits, ProviderRequired, UnknownModel, UnknownPrice

OUTPUT_RESERVE_CAP_TOKENS = 20_000
"""At most this much of the window is kept free for the reply (Claude Code's reserve)."""

SAFETY_MARGIN_TOKENS = 13_000
"""Kept free besides the reply: estimation error and the compaction request itself."""

SMALL_WINDOW_SHARE_DIVISOR = 3
"""A threshold below this fraction (a third) of the window marks a small window: reserve and margin scale down."""


@dataclass(frozen=True, slots=True)
class ModelLimits:
    """What one model accepts: ``context_window`` (prompt plus reply) and ``max_output_tokens``."""

    context_window: int
    max_output_tokens: int

    def __post_init__(self) -> None:
        for field in ("context_window", "max_output_tokens"):
            check_tokens(field, getattr(self, field))


def check_tokens(field: str, value: object) -> None:
    """:class:`InvalidLimits` naming ``field`` unless ``value`` is a positive whole number of tokens."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise InvalidLimits(field, value)


def reply_within(window: int, reply: int) -> int:
    """A reply limit nobody gave (a model's, a default) made to fit ``window``: itself when it leaves room for a
    prompt, else half the window (see :func:`resolve_limits`)."""
    return reply if reply < window else max(window // 2, 1)


def _family(window: int, output: int, *names: str) -> dict[str, ModelLimits]:
    return {name: ModelLimits(window, output) for name in names}


_REGISTRY: dict[str, ModelLimits] = {
    # Anthropic
    **_family(1_000_000, 128_000, "claude-opus-4-8", "claude-opus-4-7", "claude-opus-4-6", "claude-sonnet-4-6"),
    **_family(200_000, 64_000, "claude-opus-4-5", "claude-sonnet-4-5", "claude-haiku-4-5", "claude-sonnet-4"),
    **_family(200_000, 32_000, "claude-opus-4-1", "claude-opus-4"),
    **_family(200_000, 64_000, "claude-3-7-sonnet"),
    **_family(200_000, 8_192, "claude-3-5-sonnet", "claude-3-5-haiku"),
    **_family(200_000, 4_096, "claude-3-opus", "claude-3-sonnet", "claude-3-haiku"),
    # OpenAI
    **_family(128_000, 16_384, "gpt-4o", "gpt-4o-mini", "gpt-5-chat", "chatgpt-4o"),
    **_family(1_047_576, 32_768, "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano"),
    **_family(400_000, 128_000, "gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5-codex", "gpt-5-pro"),
    **_family(400_000, 128_000, "gpt-5.1", "gpt-5.1-codex", "gpt-5.1-codex-mini", "gpt-5.2"),
    # gpt-5.4 and gpt-5.5 (names from the openai 3.57 SDK's ChatModel / ResponsesModel literals): the windows
    # model listings agreed on in 2026; where they differed (gpt-5.5: 1,000,000 or 1,050,000; 128k or 272k
    # out) the smaller, which never lets a request over the real window.
    **_family(1_050_000, 128_000, "gpt-5.4"),
    **_family(1_000_000, 128_000, "gpt-5.5", "gpt-5.5-pro"),
    **_family(200_000, 100_000, "o1", "o1-pro", "o3", "o3-pro", "o3-mini", "o4-mini"),
    **_family(128_000, 65_536, "o1-mini"),
    # Google
    **_family(1_048_576, 65_536, "gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite"),
    **_family(1_048_576, 8_192, "gemini-2.0-flash", "gemini-2.0-flash-lite"),
    # DeepSeek (API names point at the current V3.x; V4 is served under its own names)
    **_family(128_000, 8_192, "deepseek-chat", "deepseek-v3"),
    **_family(128_000, 65_536, "deepseek-reasoner", "deepseek-r1"),
    **_family(1_048_576, 384_000, "deepseek-v4-pro", "deepseek-v4-flash"),
    # Alibaba Qwen
    **_family(262_144, 65_536, "qwen3-max", "qwen3-coder-480b-a35b-instruct"),
    **_family(1_000_000, 65_536, "qwen3-coder-plus"),
    **_family(1_000_000, 32_768, "qwen-plus"),
    **_family(1_000_000, 16_384, "qwen-turbo"),
    **_family(32_768, 8_192, "qwen-max"),
    **_family(131_072, 8_192, "qwen2.5-72b-instruct"),
}

# What may follow a registered name: dates (20250929, 2024-08-06, 0528,
# 05-06), a version or Bedrock revision (v1:0), latest, preview, exp, in any
# sequence. A lone short number is not a tag: claude-opus-4-9 is not claude-opus-4.
_VERSION_TAG = re.compile(
    r"(?:[-@:](?:\d{4}(?:-\d{2}-\d{2})?|\d{5,8}|\d{2}-\d{2,4}(?:-\d{2,4})?|v\d+(?::\d+)?|latest|preview|exp))+"
)
# Routing prefixes: "deepseek/deepseek-chat", Bedrock's "us.anthropic.claude-...".
_ROUTING_PREFIX = re.compile(r"^(?:.*/)?(?:[a-z]{2,4}\.)?(?:anthropic|openai|google|deepseek|qwen|alibaba)\.|^.*/")


# --------------------------------------------------------------------------- providers

_RESPONSES_ONLY = re.compile(
    r"^(?:o1-pro|o3-pro|gpt-5(?:\.\d+)?-pro|gpt-5(?:\.\d+)?-codex(?:-mini|-max)?|codex-mini)(?:$|[-@:])"
)
"""OpenAI models served by the Responses API alone (their model pages list no Chat Completions endpoint)."""

_PROVIDER_BY_NAME = (
    (re.compile(r"^claude-"), "anthropic"),
    (re.compile(r"^gemini-"), "gemini"),
    (_RESPONSES_ONLY, "responses"),
    (re.compile(r"^(?:gpt-|chatgpt-|o\d(?:$|-))"), "openai"),
    (re.compile(r"^(?:deepseek-|qwen)"), "openai"),
)
"""Which API serves a model, by its name. Claude models: Anthropic Messages; Gemini models: Gemini's
``generateContent``; OpenAI models: Chat Completions, which every OpenAI model but the Responses-only ones
above accepts (and every OpenAI-compatible server speaks), so the Responses API is chosen only where it is
the only one: ask for it with ``provider="responses"``; DeepSeek and Qwen: the OpenAI-compatible Chat
Completions their APIs (DeepSeek's, Alibaba Model Studio's compatible mode) serve."""

_PROVIDER_OF: dict[str, str] = {}
"""Providers given to :func:`register_model`, by name: they win over the name's pattern."""


def model_provider(model: str) -> str | None:
    """The provider (``anthropic``, ``openai``, ``responses``, ``gemini``) whose API serves ``model``, or ``None``
    when neither :func:`register_model` nor the name says (see :data:`_PROVIDER_BY_NAME` for the rule).

    Names resolve as in :func:`model_limits`: a routing prefix (``openai/``, Bedrock's ``us.anthropic.``) and
    version tags are ignored.
    """
    name = _ROUTING_PREFIX.sub("", model.strip().lower(), count=1)
    base = name if name in _PROVIDER_OF else _strip_version(name, _PROVIDER_OF)
    if base is not None:
        return _PROVIDER_OF[base]
    return next((provider for pattern, provider in _PROVIDER_BY_NAME if pattern.search(name)), None)


def require_provider(model: str | None, provider: str | None, known: tuple[str, ...]) -> str:
    """``provider`` when given, else ``model``'s (:func:`model_provider`), else ``anthropic`` when no model is
    named (a window alone: contextfold's reference format); :class:`ProviderRequired` for a model whose provider
    cannot be told."""
    if provider is not None:
        return provider
    if model is None:
        return "anthropic"
    inferred = model_provider(model)
    if inferred is None:
        raise ProviderRequired(model, known)
    return inferred


def register_model(name: str, context_window: int, max_output_tokens: int, provider: str | None = None) -> ModelLimits:
    """Add or replace a model (and its dated variants) in the process-wide registry.

    ``provider`` names the API that serves it (``anthropic``, ``openai``, ``responses``, ``gemini``); without
    it the provider follows from the name as for the registered models (:func:`model_provider`), and
    :class:`~contextfold.Context` asks for one when the name does not tell.
    """
    limits = ModelLimits(context_window, max_output_tokens)
    _REGISTRY[name.lower()] = limits
    if provider is not None:
        _PROVIDER_OF[name.lower()] = provider
    return limits


def model_limits(model: str, overrides: Mapping[str, ModelLimits] | None = None) -> ModelLimits:
    """The limits of ``model``, looked up in ``overrides`` first, then in the registry.

    Raises :class:`UnknownModel` when the name matches neither exactly nor as
    a registered name plus a version tag.
    """
    name = _ROUTING_PREFIX.sub("", model.strip().lower(), count=1)
    tables = [{k.lower(): v for k, v in overrides.items()}] if overrides else []
    tables.append(_REGISTRY)
    for table in tables:
        if name in table:
            return table[name]
        base = _strip_version(name, table)
        if base is not None:
            return table[base]
    raise UnknownModel(model, tuple(difflib.get_close_matches(name, [n for t in tables for n in t], n=3)))


def resolve_limits(model: str | None, window_tokens: int | None = None, max_output_tokens: int | None = None,
                   *, default_max_output_tokens: int = 4_096) -> ModelLimits:
    """The window and reply limit a session runs with: the one check every path goes through.

    The window is ``window_tokens``, else the model's; the reply limit is
    ``max_output_tokens``, else the model's, else ``default_max_output_tokens``.
    Either figure given must be a positive whole number (0 is an error, not
    "unset": :class:`~contextfold.errors.InvalidLimits` naming the field),
    whether a model is named or not. The reply limit must leave room for a
    prompt: one given that is not below the window is refused
    (:class:`~contextfold.errors.InvalidLimits` naming both figures). One
    that was not given (the model's, or the default) and does not fit a
    smaller window given is scaled to half that window: a model's limit
    says what it may write, not what a deliberately smaller window must
    hold, and at half the window every compaction threshold is what it was
    (:func:`compaction_threshold` keeps at most a quarter for the reply there).
    """
    for field, value in (("context_window", window_tokens), ("max_output_tokens", max_output_tokens)):
        if value is not None:
            check_tokens(field, value)
    if model is None and window_tokens is None:
        raise InvalidLimits("context_window", None, "name a model or give window_tokens")
    known = model_limits(model) if model is not None else None
    window = window_tokens if window_tokens is not None else known.context_window  # type: ignore[union-attr]
    if max_output_tokens is not None:
        if max_output_tokens >= window:
            raise InvalidLimits("max_output_tokens", max_output_tokens,
                                f"{max_output_tokens:,} tokens kept for the reply leave no room for a prompt in the "
                                f"{window:,}-token window: give a smaller max_output_tokens or a larger window")
        return ModelLimits(window, max_output_tokens)
    reply = known.max_output_tokens if known is not None else default_max_output_tokens
    return ModelLimits(window, reply_within(window, reply))


def registered_models() -> dict[str, ModelLimits]:
    """Every name in the process-wide registry with its limits (a copy), sorted by name."""
    return dict(sorted(_REGISTRY.items()))


def _strip_version(name: str, table: Mapping[str, object]) -> str | None:
    """The longest registered name that ``name`` is, followed by version tags only."""
    matches = [known for known in table if name.startswith(known) and _VERSION_TAG.fullmatch(name[len(known) :])]
    return max(matches, key=len, default=None)


def compaction_threshold(model: str | ModelLimits, overrides: Mapping[str, ModelLimits] | None = None) -> int:
    """Prompt tokens above which to compact: ``window - min(max_output, 20_000) - 13_000``.

    The reply needs room (at most 20k of it is reserved: longer replies are
    rare and can be asked for), and a margin absorbs estimation error and the
    summary request itself. Both are sized for large windows: below about
    32k they would leave less than a third of the window (nothing at all
    under 17k), and the history would be summarized every few steps, losing
    what the agent goes on to use. There the reserve and the margin scale
    with the window instead (at most a quarter of it for the reply, a tenth
    as margin), as Claude Code also switches to a share of small windows.
    """
    limits = model if isinstance(model, ModelLimits) else model_limits(model, overrides)
    window = limits.context_window
    reserve = min(limits.max_output_tokens, OUTPUT_RESERVE_CAP_TOKENS)
    threshold = window - reserve - SAFETY_MARGIN_TOKENS
    if threshold >= window // SMALL_WINDOW_SHARE_DIVISOR:
        return threshold
    return window - min(reserve, window // 4) - window // 10


# --------------------------------------------------------------------------- prices

PRICES_AS_OF = "2026-11-28"
"""When the price table below was last checked.

Where the figures come from, plainly: the providers' published list prices,
USD per million tokens, for requests that are not batched. Anthropic's from
its pricing page (``platform.claude.com/docs/en/about-claude/pricing``: base
input, 5-minute and 1-hour cache writes, cache hits, output), OpenAI's from
its model pages (input, cached input, output), Google's from the Gemini API
pricing page (``ai.google.dev/gemini-api/docs/pricing``; Gemini 2.5 Pro at
its rate for prompts up to 200k tokens). The figures of 2026-11-26 were
written without network access. On 2026-11-28 Claude Sonnet 4.6, Opus 4.7
and 4.8 were added from a stored copy of Anthropic's page, read that day,
and the Gemini 2.5 models from copies of Google's figures re-published
elsewhere (input and output; a cache hit at a tenth of input, as quoted
from Google's page for 2.5 Pro, $0.125, and taken to be the same tenth for
Flash and Flash-Lite). Check them against the providers' pages before
billing anyone. The SDK packages installed here (``anthropic`` 2.14,
``openai`` 3.57) name the models and say how the prompt cache is billed in
kind (Anthropic's ``cache_control.ttl`` of ``5m`` or ``1h``; OpenAI's
``prompt_cache_options.ttl`` of ``30m`` or ``12h`` from ``gpt-5.6`` on, its
usage's ``cache_write_tokens`` split by those TTLs, and the older
``prompt_cache_retention`` of ``in_memory`` or ``24h``), but they hold no
prices. A model whose list price could not be confirmed is not listed,
however sure a guess from its predecessor would look (the newest families'
prices did not follow their predecessors'): among them every Claude 5 model,
``gpt-5.4``, ``gpt-5.5``, the ``gpt-5.6`` and ``gpt-6`` families.
:func:`model_prices` raises :class:`UnknownPrice` for them (it says so in
words); a :class:`~contextfold.Context` on one warns
(:class:`~contextfold.errors.UnknownPriceWarning`) and prices at the
documented default until ``Policy(prices=Prices(...))`` gives its own.
"""


@dataclass(frozen=True, slots=True)
class ModelPrices:
    """USD per million tokens for one model, and how its prompt cache is billed.

    A cache write costs the input price times the multiplier of the time to
    live it was written with (``cache_write_multipliers``; Anthropic: 1.25 for
    ``5m``, 2 for ``1h``; OpenAI before ``gpt-5.6``: writes cost plain input).
    ``ttl_options`` are the lifetimes the API accepts, ``default_ttl`` the one
    used when none is asked.
    """

    input_per_mtok: float
    output_per_mtok: float
    cache_read_per_mtok: float
    cache_write_multipliers: Mapping[str, float]
    ttl_options: tuple[str, ...]
    default_ttl: str

    def cache_write_per_mtok(self, ttl: str | None = None) -> float:
        """USD per million tokens written to the cache with ``ttl`` (default: :attr:`default_ttl`)."""
        chosen = ttl or self.default_ttl
        if chosen not in self.cache_write_multipliers:
            known = ", ".join(self.cache_write_multipliers) or "none"
            raise ValueError(f"no cache-write price for ttl {chosen!r} (known: {known}; options: "
                             f"{', '.join(self.ttl_options)})")
        return self.input_per_mtok * self.cache_write_multipliers[chosen]


@dataclass(frozen=True, slots=True)
class _CacheBilling:
    multipliers: Mapping[str, float]
    options: tuple[str, ...]
    default: str


_ANTHROPIC_CACHE = _CacheBilling({"5m": 1.25, "1h": 2.0}, ("5m", "1h"), "5m")
_OPENAI_CACHE = _CacheBilling({"in_memory": 1.0, "24h": 1.0}, ("in_memory", "24h"), "in_memory")
_GEMINI_CACHE = _CacheBilling({"implicit": 1.0}, ("implicit",), "implicit")
"""Gemini's implicit cache: nothing extra to write, hits at a tenth of input (an explicit cache's storage is
billed by the hour, which no per-token price says)."""


def _priced(input_: float, output: float, read: float, cache: _CacheBilling, *names: str) -> dict[str, ModelPrices]:
    prices = ModelPrices(input_, output, read, cache.multipliers, cache.options, cache.default)
    return dict.fromkeys(names, prices)


_PRICES: dict[str, ModelPrices] = {
    # Anthropic: cache reads at a tenth of input, writes at 1.25x (5 minutes) or 2x (1 hour)
    **_priced(5.0, 25.0, 0.50, _ANTHROPIC_CACHE, "claude-opus-4-8", "claude-opus-4-7", "claude-opus-4-6",
              "claude-opus-4-5"),
    **_priced(15.0, 75.0, 1.50, _ANTHROPIC_CACHE, "claude-opus-4-1", "claude-opus-4", "claude-3-opus"),
    **_priced(3.0, 15.0, 0.30, _ANTHROPIC_CACHE, "claude-sonnet-4-6", "claude-sonnet-4-5", "claude-sonnet-4",
              "claude-3-7-sonnet", "claude-3-5-sonnet"),
    **_priced(1.0, 5.0, 0.10, _ANTHROPIC_CACHE, "claude-haiku-4-5"),
    **_priced(0.80, 4.0, 0.08, _ANTHROPIC_CACHE, "claude-3-5-haiku"),
    **_priced(0.25, 1.25, 0.03, _ANTHROPIC_CACHE, "claude-3-haiku"),
    # OpenAI: cached input at a tenth (gpt-5 family), a quarter (gpt-4.1, o3, o4-mini) or half (gpt-4o) of input
    **_priced(2.50, 10.0, 1.25, _OPENAI_CACHE, "gpt-4o", "chatgpt-4o"),
    **_priced(0.15, 0.60, 0.075, _OPENAI_CACHE, "gpt-4o-mini"),
    **_priced(2.0, 8.0, 0.50, _OPENAI_CACHE, "gpt-4.1", "o3"),
    **_priced(0.40, 1.60, 0.10, _OPENAI_CACHE, "gpt-4.1-mini"),
    **_priced(0.10, 0.40, 0.025, _OPENAI_CACHE, "gpt-4.1-nano"),
    **_priced(1.10, 4.40, 0.275, _OPENAI_CACHE, "o4-mini"),
    **_priced(1.25, 10.0, 0.125, _OPENAI_CACHE, "gpt-5", "gpt-5-codex", "gpt-5.1", "gpt-5.1-codex", "gpt-5-chat"),
    **_priced(0.25, 2.0, 0.025, _OPENAI_CACHE, "gpt-5-mini", "gpt-5.1-codex-mini"),
    **_priced(0.05, 0.40, 0.005, _OPENAI_CACHE, "gpt-5-nano"),
    **_priced(1.75, 14.0, 0.175, _OPENAI_CACHE, "gpt-5.2"),
    # Google: implicit cache hits at a tenth of input; Gemini 2.5 Pro at its rate for prompts up to 200k tokens
    **_priced(1.25, 10.0, 0.125, _GEMINI_CACHE, "gemini-2.5-pro"),
    **_priced(0.30, 2.50, 0.03, _GEMINI_CACHE, "gemini-2.5-flash"),
    **_priced(0.10, 0.40, 0.01, _GEMINI_CACHE, "gemini-2.5-flash-lite"),
}


def model_prices(model: str) -> ModelPrices:
    """The list prices of ``model`` (names resolve as in :func:`model_limits`).

    :class:`UnknownPrice` (an :class:`UnknownModel`) for one whose price is
    not listed, whether or not its limits are known: no price is guessed.
    """
    name = _ROUTING_PREFIX.sub("", model.strip().lower(), count=1)
    if name in _PRICES:
        return _PRICES[name]
    base = _strip_version(name, _PRICES)
    if base is None:
        raise UnknownPrice(model, PRICES_AS_OF)
    return _PRICES[base]
