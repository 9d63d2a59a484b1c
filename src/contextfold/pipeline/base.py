"""What every stage shares: the policy (every knob), the budget it works within, the events it reports.

A stage is a plain function ``(Conversation, Budget) -> (Conversation, list[Event])``.
It never mutates its input, never splits a round, and never touches the
header; it reports every item it changed in an :class:`Event`.
"""

from __future__ import annotations

import json
import math
import typing
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..conversation import Conversation, Item
from ..errors import InvalidPolicy, UnknownPrice, UnknownPriceWarning
from ..events import Event
from ..limits import PRICES_AS_OF, model_prices
from ..private_files import replace_file
from .presets import PRESETS

if TYPE_CHECKING:
    from ..summarizers._facts import Facts
    from ..summarizers.base import Summarizer


@dataclass(frozen=True)
class Prices:
    """USD per million tokens; the defaults (:data:`DEFAULT_PRICES`) are Claude Sonnet 4.5's list prices.

    Only the ratios matter for deciding whether a compaction pays: a cached
    prefix is read at a tenth of the input price and written at 1.25 times it
    (Anthropic's; OpenAI's and Gemini's cache writes cost plain input).
    """

    input_per_mtok: float = 3.0
    cache_write_per_mtok: float = 3.75
    cache_read_per_mtok: float = 0.30
    output_per_mtok: float = 15.0

    @classmethod
    def of(cls, model: str, ttl: str | None = None) -> Prices:
        """``model``'s list prices (:func:`contextfold.limits.model_prices`), cache writes at ``ttl`` (or its default)."""
        listed = model_prices(model)
        return cls(listed.input_per_mtok, listed.cache_write_per_mtok(ttl), listed.cache_read_per_mtok,
                   listed.output_per_mtok)


DEFAULT_PRICES = Prices()
"""What cache decisions are priced at when no model's list price is known: a :class:`~contextfold.Context`
with a window and no model, or a model the price table does not list (which warns,
:class:`~contextfold.errors.UnknownPriceWarning`)."""


DROP, TRUNCATE, NONE = "drop", "truncate", "none"
BACKGROUND_MODES = ("auto", "always", "never")
"""``Policy.background_summaries``: off the loop when the summarizer calls a model (``auto``), always, or never."""
MODES = ("auto", "manual", "off")
"""``Policy.mode``: when the view may be compacted (see :attr:`Policy.mode`)."""
Mode = Literal["auto", "manual", "off"]


@dataclass(frozen=True)
class Rule:
    """A selective rule: what may happen to one kind of content; lower ``priority`` goes first.

    ``kind`` is one of ``thinking``, ``image``, ``tool_result``, ``assistant_text``;
    the newest ``keep_recent`` of that kind are spared.
    """

    kind: str
    action: str = TRUNCATE
    keep_recent: int = 0
    priority: int = 0


DEFAULT_RULES = (
    Rule("thinking", DROP, keep_recent=1, priority=10),
    Rule("image", TRUNCATE, keep_recent=2, priority=20),
    Rule("tool_result", TRUNCATE, keep_recent=3, priority=30),
    Rule("assistant_text", TRUNCATE, keep_recent=5, priority=40),
)


@dataclass(frozen=True)
class Policy:
    """Every knob of the pipeline, each with its unit in its name.

    The defaults follow what production agents ship with (Claude Code's
    compaction, the observation-masking results on SWE-bench agents), tuned
    where the corpus replays showed a better setting. They are the ``balanced``
    preset; :meth:`preset` gives the other measured points (:data:`~.presets.PRESETS`).
    """

    # persist: oversized outputs go to disk, a preview stays
    persist_max_chars: int = 16_000  # raised with the window when that makes it larger (below)
    persist_max_tokens: int = 25_000
    preview_head_chars: int = 2_000
    preview_tail_chars: int = 1_000
    persist_min_fill_fraction: float = 0.0  # ...only once the request, the output whole, is past this share of the
    # trigger (0: always; 1: an output just fetched is sent whole while there is room; off: it cost 3 % more on the
    # held-back sessions for the same strict recall, README "Presets")
    persist_whole_tail_fraction: float = 1.5  # an oversized output that arrived for this request is sent whole, and
    # older turns are compacted to make its room, while the current request's such outputs take at most this share
    # of the verbatim tail a summary keeps (whole_output_tokens: 14.6k tokens at 32k, 6.3k at 16k); past it, it goes
    # to disk with a preview on arrival (0: always, as before issue 28, where a file read previewed as it arrived
    # was edited from by the next reply). Chosen by cross-validation by session on 59 sessions at 32k (README)
    report_whole_fraction: float = 0.0  # the newest reports of delegated agents (Task outputs) are kept whole by
    # the budget for older outputs and by clearing, and a due summary's tail reaches back to keep them verbatim
    # when it still meets its target, while together they take at most this share of the window. 0 (off): at 32k
    # on the 14 sessions that delegate, 0.05 to 0.2 kept as much (strict 0.784-0.787) for 2-9 % more cost,
    # most of it the longer tails; at 200k 0.15 and 0.2 keep on 54bc4295 the sub-agent's plan the agent copies
    # from next (README "Presets")
    # whether previews and summaries name search_history/read_history (see lookback.names.names_history_tools):
    # "auto" when the request offers the agent both; True for a loop that answers them without offering them
    # to contextfold; False never
    history_tools: bool | Literal["auto"] = "auto"
    # truncate: a hard cap on any one tool output
    truncate_max_chars: int = 50_000
    # both character limits grow with the window (Context applies it, see for_window); False keeps them as set
    output_limits_scale_with_window: bool = True
    persist_chars_per_window_token: float = 0.5  # ...the persist limit to this share of the window (truncate's: 1)
    # budget: older outputs get a smaller budget as the window fills
    budget_steps: tuple[tuple[float, int], ...] = ((0.5, 30_000), (0.7, 15_000))
    budget_keep_recent_rounds: int = 3
    # snip: superseded outputs become a placeholder
    snip_keep_search_results: int = 3
    # clear / mask: old outputs cleared, in one batch, when it pays
    clear_keep_recent_rounds: int = 3  # ...in a window up to clear_keep_rounds_window_tokens
    # above that window, the rounds kept grow with it (3 at 64k, 6 at 128k, 9 at 200k; None: never): on Claude Code
    # transcripts at 200k, 3 rounds cleared what the next replies quoted (strict 0.937 to 0.972 on 54bc4295 for
    # 5 % more tokens; README, "Against what Claude Code itself sent")
    clear_keep_rounds_window_tokens: int | None = 64_000
    clear_min_savings_tokens: int = 20_000
    clear_keep_referenced_chars: int = 600  # a cleared output keeps its lines the agent's references point at
    spare_current_turn: bool = True  # under the trigger, clear and budget leave the current turn's outputs whole
    cache_ttl_s: float = 300.0
    exclude_tools: tuple[str, ...] = ()
    mask_window_rounds: int | None = None  # set to enable observation masking (10 in the literature)
    native_clearing: bool = False  # the provider clears outputs (Anthropic context_management): this stage stays off
    # selective: per-kind rules when the request is still over its target
    selective_rules: tuple[Rule, ...] = DEFAULT_RULES
    # summarize: at a turn boundary, over the trigger
    trigger_tokens: int | None = None  # absolute trigger; default is the dynamic threshold
    trigger_fraction: float | None = None  # or a fraction of the window
    trigger_min_fraction: float = 0.9  # the default trigger is at least this share of the window (the reply's room kept)
    trigger_messages: int | None = 500  # ...or over this many messages, however small (None: no count trigger)
    min_summary_messages: int = 10  # a summary covers at least this many (a manual compact may cover less, and says so)
    compact_tool_min_trigger_fraction: float = 0.5  # the agent's compact_context is honoured from this share of the
    # trigger (below it there is too little to gain for a summary's cost: LangChain deepagents allows it from about half)
    tail_fraction: float = 0.35  # recent rounds kept verbatim: as many as fit in this share of the window
    tail_max_trigger_fraction: float = 0.35  # ...and in this share of the trigger (see Budget.tail_budget_tokens)
    summary_target_tokens: int = 4_000
    restore_max_files: int = 5
    restore_file_tokens: int = 5_000
    restore_total_tokens: int = 50_000
    restore_max_share: float = 0.5  # ...and at most this share of what the summary saved
    restore_min_weight: float = 3.0  # only files the agent's recent turns keep naming (see pipeline.importance)
    clear_first_max_fraction: float = 0.7  # over the trigger, clearing old outputs alone is enough if it gets this low
    # survival: after a compaction, put back what the agent still needs and the compaction dropped
    survival_max_tokens: int = 1_600  # lines, not names (with the 35 % tail: README, "Presets")
    survival_max_share: float = 0.25  # ...and at most this share of what the compaction saved
    # economics: change the cached prefix only when the reads it saves outweigh rewriting it
    prices: Prices | None = None  # None: the model's list prices (Context fills them in), else DEFAULT_PRICES
    economic_summaries: bool = False  # summarize below the trigger too, when that pays (the lean preset's; it saves
    # a little and costs what the agent goes on to use: see README, "Presets")
    economic_summary_min_tokens: int = 20_000  # ...but never a request smaller than this
    economic_summary_tail_tokens: int = 4_000  # the tail such a summary keeps (nothing forces a long one)
    economic_summary_rereads: float = 0.0  # ...and pay for reading again this many times what it drops (off: at 200k
    # 1 cost lean 10-15 % more for no strict recall, 3 made it balanced; at 16k and 32k it changed nothing; README)
    price_summaries: bool = True  # price every summary as the model call that would write it, whoever writes it
    horizon_factor: float = 0.5  # requests still to come, as a multiple of those so far (Budget.horizon_requests)
    min_horizon_requests: int = 8
    max_horizon_requests: int = 200
    # background: a summary due below the hard level is made off the agent loop (context/background.py)
    background_summaries: Literal["auto", "always", "never"] = "auto"  # "auto": when the summarizer has a deadline_s (a model's); "always"; "never"
    hard_fill_fraction: float = 0.9  # above this share of the window a step waits for the running summary
    # idle: a session idle until just before its prompt cache expires (cache_ttl_s) compacts then, when a summary
    # written from the warm cache now costs less than the cold prompt the next request would send (context/idle.py)
    idle_compaction: bool = False  # off by default, in chat too (--idle-compaction): it costs recall (README)
    idle_compaction_margin_s: float = 30.0  # ...this long before the cache expires
    # guards
    max_consecutive_failures: int = 3
    # privacy: API keys and bearer tokens in new items are replaced before anything is written (see redaction.py)
    redact_secrets: bool = False
    # when compaction may fire: "auto" (the pipeline decides), "manual" (only when asked: Context.compact(), /compact,
    # the agent's tool), "off" (never); in "manual" and "off" a request over the window is refused with
    # RequestOverWindow instead of compacted. The cheap stages (persist, truncate) still admit every new output
    mode: Mode = "auto"

    def __post_init__(self) -> None:
        check_policy(self)

    @property
    def prices_in_effect(self) -> Prices:
        """What every cache-economics decision is priced at: :attr:`prices`, else :data:`DEFAULT_PRICES`."""
        return self.prices or DEFAULT_PRICES

    def for_window(self, window_tokens: int) -> Policy:
        """This policy for a window of ``window_tokens``: with :attr:`output_limits_scale_with_window`, the persist
        limit is at least :attr:`persist_chars_per_window_token` characters per token of it and the truncate limit
        at least one. An output of 30,000 characters is a seventh of a 32k window but a fortieth of a 200k one: on a
        long Claude Code transcript at 200k, persisting from 100,000 or 200,000 characters kept strict recall 0.937
        and kwic far 0.944 where 30,000 kept 0.909 and 0.909; at 32k, persisting from 16,000 characters rather
        than 32,000 cost 6 % less on ten sessions for the same strict recall (README, "Presets")."""
        if not self.output_limits_scale_with_window:
            return self
        persist = max(self.persist_max_chars, int(window_tokens * self.persist_chars_per_window_token))
        truncate = max(self.truncate_max_chars, window_tokens)
        if (persist, truncate) == (self.persist_max_chars, self.truncate_max_chars):
            return self
        return replace(self, persist_max_chars=persist, truncate_max_chars=truncate)

    def for_model(self, model: str | None) -> Policy:
        """This policy priced for ``model``: unchanged when it has :attr:`prices` (or no model is named), else
        with the model's list prices; a model the price table does not list keeps :data:`DEFAULT_PRICES`, with
        an :class:`~contextfold.errors.UnknownPriceWarning` saying so."""
        if self.prices is not None or model is None:
            return self
        try:
            return replace(self, prices=Prices.of(model))
        except UnknownPrice:
            warnings.warn(f"no list price is known for model {model!r} (contextfold's price table as of "
                          f"{PRICES_AS_OF}): its cache decisions use the default prices (Claude Sonnet 4.5's: input "
                          f"{DEFAULT_PRICES.input_per_mtok:g}, cache write {DEFAULT_PRICES.cache_write_per_mtok:g}, "
                          f"cache read {DEFAULT_PRICES.cache_read_per_mtok:g}, output "
                          f"{DEFAULT_PRICES.output_per_mtok:g} USD per million tokens) until "
                          "Policy(prices=Prices(...)) gives its own", UnknownPriceWarning, stacklevel=3)
            return self

    def to_json(self) -> dict[str, Any]:
        """This policy as a policy file holds it: every knob (nested values as JSON objects and lists) and the
        file's :data:`POLICY_FILE_VERSION`. Every knob is written, not only those off their defaults, so a file
        keeps meaning what was measured when a later release moves a default."""
        return {"version": POLICY_FILE_VERSION, "policy": asdict(self)}

    @classmethod
    def from_json(cls, data: Any) -> Policy:
        """The policy :meth:`to_json` wrote. A knob left out takes its default; an unknown key, a value of the
        wrong type or out of range, or another version is an :class:`~contextfold.errors.InvalidPolicy` naming
        it (the file then fails where it is read, not deep in a step)."""
        if not isinstance(data, dict):
            raise InvalidPolicy("version", f"a policy file holds a JSON object, not {type(data).__name__}")
        for key in data.keys() - {"version", "policy"}:
            raise InvalidPolicy(key, "not a key of a policy file (version, policy)")
        if data.get("version") != POLICY_FILE_VERSION:
            raise InvalidPolicy("version", f"{POLICY_FILE_VERSION} is the version this contextfold reads, "
                                f"not {data.get('version')!r}")
        knobs = data.get("policy")
        if not isinstance(knobs, dict):
            raise InvalidPolicy("policy", f"an object of knobs is needed, not {knobs!r}")
        defaults = {knob.name: getattr(_DEFAULTS, knob.name) for knob in fields(cls)}
        for key in knobs.keys() - defaults.keys():
            raise InvalidPolicy(key, "no such knob")
        return cls(**{name: _knob_from_json(name, value, defaults[name]) for name, value in knobs.items()})

    def save(self, path: str | Path) -> Path:
        """Write this policy to ``path`` as JSON (:meth:`to_json`), replacing it atomically; what :meth:`load`
        reads back equal."""
        data = self.to_json()
        knobs = ",\n".join(f"  {json.dumps(name)}: {json.dumps(value)}" for name, value in data["policy"].items())
        with replace_file(path) as file:  # one knob a line: a file a person reads and edits
            file.write(f'{{\n "version": {data["version"]},\n "policy": {{\n{knobs}\n }}\n}}\n'.encode())
        return Path(path)

    @classmethod
    def load(cls, path: str | Path) -> Policy:
        """The policy saved at ``path`` (:meth:`save`, ``contextfold tune``): ``Context(policy=Policy.load(p))``.
        A file that is not JSON, or holds a bad knob, is an :class:`~contextfold.errors.InvalidPolicy` naming
        the key and the file."""
        try:
            return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))
        except InvalidPolicy as error:
            raise InvalidPolicy(error.field, f"{error.reason} (in {path})") from error
        except ValueError as error:  # not JSON (or not UTF-8): json's own error is not one callers catch
            raise InvalidPolicy("version", f"{path} is not a JSON policy file: {error}") from error

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> Policy:
        """The policy at preset ``name`` (:data:`~.presets.PRESETS`: ``lean``, the cheapest; ``balanced`` = the defaults;
        ``thorough``, which spends more of the window on what the agent quotes next: longer summaries, more files
        restored and larger outputs sent whole), with any knob overridden by
        keyword: ``Policy.preset("lean", summary_target_tokens=3_000)``."""
        knobs = PRESETS.get(name)
        if knobs is None:
            raise InvalidPolicy("preset", f"one of {', '.join(PRESETS)} is needed, not {name!r}")
        known = {knob.name for knob in fields(cls)}
        for knob in overrides:
            if knob not in known:
                raise InvalidPolicy(knob, "no such knob")
        return cls(**{**knobs, **overrides})


_COUNTS_FROM_1 = ("persist_max_chars", "persist_max_tokens", "truncate_max_chars", "summary_target_tokens",
                  "min_summary_messages", "max_consecutive_failures", "max_horizon_requests")
_COUNTS_FROM_0 = ("preview_head_chars", "preview_tail_chars", "budget_keep_recent_rounds", "snip_keep_search_results",
                  "clear_keep_recent_rounds", "clear_min_savings_tokens", "clear_keep_referenced_chars",
                  "restore_max_files", "restore_file_tokens", "restore_total_tokens", "survival_max_tokens",
                  "economic_summary_min_tokens", "economic_summary_tail_tokens", "min_horizon_requests")
_OPTIONAL_COUNTS_FROM_1 = ("mask_window_rounds", "trigger_tokens", "trigger_messages",
                           "clear_keep_rounds_window_tokens")
_SHARES = ("persist_min_fill_fraction", "trigger_min_fraction", "tail_fraction", "tail_max_trigger_fraction",
           "restore_max_share", "survival_max_share", "clear_first_max_fraction", "hard_fill_fraction",
           "compact_tool_min_trigger_fraction", "report_whole_fraction")
"""Shares of something, from 0 to 1; the other real knobs below are non-negative."""
_NON_NEGATIVE = ("cache_ttl_s", "restore_min_weight", "horizon_factor", "economic_summary_rereads",
                 "idle_compaction_margin_s", "persist_chars_per_window_token", "persist_whole_tail_fraction")


def check_policy(policy: Policy) -> None:
    """Raise :class:`~contextfold.errors.InvalidPolicy`, naming the knob, for a value out of its range, of the
    wrong type, or in conflict with another: a misspelt setting fails where it is made, not deep in a step."""
    for name in _COUNTS_FROM_1 + _COUNTS_FROM_0 + _OPTIONAL_COUNTS_FROM_1:
        value = getattr(policy, name)
        if value is None and name in _OPTIONAL_COUNTS_FROM_1:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidPolicy(name, f"a whole number is needed, not {value!r}")
        if value < (0 if name in _COUNTS_FROM_0 else 1):
            raise InvalidPolicy(name, f"{value} is below {0 if name in _COUNTS_FROM_0 else 1}")
    for name in _SHARES + _NON_NEGATIVE:
        _check_real(name, getattr(policy, name), 0.0, 1.0 if name in _SHARES else None)
    if policy.trigger_fraction is not None:
        _check_real("trigger_fraction", policy.trigger_fraction, 0.0, 1.0)
        if policy.trigger_fraction == 0:
            raise InvalidPolicy("trigger_fraction", "0 would summarize on every turn; use a share above 0")
        if policy.trigger_tokens is not None:
            raise InvalidPolicy("trigger_fraction", f"set with trigger_tokens={policy.trigger_tokens}: "
                                "set one trigger, not both (the window's share or the absolute size)")
    _check_budget_steps(policy.budget_steps)
    if not (isinstance(policy.history_tools, bool) or policy.history_tools == "auto"):
        raise InvalidPolicy("history_tools", f'"auto", True or False is needed, not {policy.history_tools!r}')
    if policy.background_summaries not in BACKGROUND_MODES:
        raise InvalidPolicy("background_summaries", f"one of {', '.join(BACKGROUND_MODES)} is needed, "
                            f"not {policy.background_summaries!r}")
    if not isinstance(policy.idle_compaction, bool):
        raise InvalidPolicy("idle_compaction", f"True or False is needed, not {policy.idle_compaction!r}")
    if policy.mode not in MODES:
        raise InvalidPolicy("mode", f"one of {', '.join(MODES)} is needed, not {policy.mode!r}")
    if policy.hard_fill_fraction == 0:
        raise InvalidPolicy("hard_fill_fraction", "0 would wait for every background summary; use a share above 0")
    if policy.prices is not None and not isinstance(policy.prices, Prices):
        raise InvalidPolicy("prices", f"a Prices (or None: the model's list prices) is needed, not {policy.prices!r}")


def _check_real(name: str, value: object, low: float, high: float | None) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
        raise InvalidPolicy(name, f"a number is needed, not {value!r}")
    if value < low or (high is not None and value > high):
        raise InvalidPolicy(name, f"{value} is outside {low:g} to {high:g}" if high is not None
                            else f"{value} is below {low:g}")


def _check_budget_steps(steps: object) -> None:
    """``((fraction of the window, chars allowed), ...)``, fractions rising."""
    if not isinstance(steps, tuple):
        raise InvalidPolicy("budget_steps", f"a tuple of (window fraction, chars) pairs is needed, not {steps!r}")
    previous = 0.0
    for position, step in enumerate(steps):
        where = f"budget_steps[{position}]"
        if not (isinstance(step, tuple) and len(step) == 2):
            raise InvalidPolicy(where, f"a (window fraction, chars) pair is needed, not {step!r}")
        _check_real(where, step[0], previous, 1.0)
        if not isinstance(step[1], int) or isinstance(step[1], bool) or step[1] < 1:
            raise InvalidPolicy(where, f"the chars allowed must be a whole number from 1, not {step[1]!r}")
        previous = float(step[0])


POLICY_FILE_VERSION = 1
"""The version of the policy file :meth:`Policy.save` writes and :meth:`Policy.load` reads."""

_DEFAULTS = Policy()


def _knob_from_json(name: str, value: Any, default: Any) -> Any:
    """A knob's JSON value as the policy holds it (lists become tuples, objects the records they were), its type
    checked here where :func:`check_policy` does not: a flag, a list of names, a rule, the prices."""
    if name == "prices":
        return None if value is None else _record(Prices, value, name)
    if name == "selective_rules":
        return tuple(_record(Rule, rule, f"{name}[{i}]") for i, rule in enumerate(_list(value, name)))
    if name == "budget_steps":  # each pair checked by check_policy, naming its position
        return tuple(tuple(step) if isinstance(step, list) else step for step in _list(value, name))
    if isinstance(default, tuple):
        names = tuple(_list(value, name))
        for i, entry in enumerate(names):
            if not isinstance(entry, str):
                raise InvalidPolicy(f"{name}[{i}]", f"a name is needed, not {entry!r}")
        return names
    if isinstance(default, bool) and not isinstance(value, bool):
        raise InvalidPolicy(name, f"true or false is needed, not {value!r}")
    return value


def _list(value: Any, name: str) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidPolicy(name, f"a list is needed, not {value!r}")
    return value


def _record(cls: type[Any], value: Any, where: str) -> Any:
    """``cls`` (a frozen record of plain fields: :class:`Rule`, :class:`Prices`) from its JSON object, each field of
    its declared type."""
    if not isinstance(value, dict):
        raise InvalidPolicy(where, f"an object is needed, not {value!r}")
    hints = typing.get_type_hints(cls)
    for key, entry in value.items():
        hint = hints.get(key)
        if hint is None:
            raise InvalidPolicy(f"{where}.{key}", f"not a field of {cls.__name__}")
        fits = isinstance(entry, (int, float)) if hint is float else isinstance(entry, hint)
        if not fits or isinstance(entry, bool):
            raise InvalidPolicy(f"{where}.{key}", f"a {hint.__name__} is needed, not {entry!r}")
    try:
        return cls(**value)
    except TypeError as error:  # a required field left out
        raise InvalidPolicy(where, f"{cls.__name__} needs {', '.join(h for h in hints if h not in value)}") from error


@dataclass(frozen=True)
class Budget:
    """What a stage may spend, and the facts it needs to decide.

    ``count`` measures a whole request in tokens (anchored on reported usage
    when the facade has some); ``count_item`` measures one item.
    ``new_from`` is the index of the first item no stage has seen yet, so
    per-item stages only look at what is new. ``idle_s`` is the time since the
    previous request (``None`` when unknown: the cache is assumed warm).
    ``summarizer``, ``count_text`` and ``tail_tokens`` are for the summarize
    stage. ``target_tokens`` is what the ``escalate`` tier's stages work down
    to (the clearing before a summary, the stages after it); ``compacted_from`` (and
    ``compacted_facts``) is what an ``after`` stage compares the compacted
    request with; ``after`` is the pipeline's ``after`` tier, which a stage
    that compacts (the summary) hands its result to. ``original`` gives an item as the history holds it (a
    cleared output whole), by its id.
    """

    policy: Policy
    window_tokens: int
    trigger_tokens: int
    count: Callable[[Conversation], int]
    count_item: Callable[[Item], int]
    new_from: int = 0
    requests_sent: int = 0
    idle_s: float | None = None
    now_s: float | None = None
    results_dir: Path | None = None
    force_summary: bool = False
    instructions: str | None = None
    summarizer: Summarizer | None = None
    tail_tokens: int | None = None  # overrides the policy's tail share (escalation uses it)
    count_text: Callable[[str], int] | None = None
    count_estimated: Callable[[Conversation], int] | None = None  # how much of count() is an estimate (see window_limit)
    growth_tokens_per_request: float | None = None  # how fast the request grows, when known
    compaction_due: bool = False  # over the trigger: the prefix is about to be rewritten whatever a stage does
    refused: bool = False  # the provider refused the request as too long: the window is at stake whatever the count
    target_tokens: int | None = None  # the size an escalation's stages work down to (None: the trigger)
    compacted_from: Conversation | None = None  # for an ``after`` stage: the request the compaction started from
    compacted_facts: Facts | None = None  # ...and its facts, when the compaction read them already (a summary's)
    after: tuple[Stage, ...] | None = None  # the stages a compaction's result goes through (None: the default's)
    original: Callable[[str], Item | None] | None = None  # the item the history holds under an id: a cleared
    # output whole, for the put_back stage (None: no history to read, nothing is put back)

    @property
    def cache_cold(self) -> bool:
        return self.idle_s is not None and self.idle_s > self.policy.cache_ttl_s

    @property
    def prefix_rewritten(self) -> bool:
        """The cached prefix is lost anyway (cold, or a compaction is due): an edit breaks nothing more."""
        return self.cache_cold or self.compaction_due

    @property
    def horizon_requests(self) -> int:
        """How many more requests a change made now can be counted on to serve.

        Unknown in advance. For durations with heavy tails, a session that has
        run n requests runs at least k more with a chance of about n / (n + k):
        n more is an even bet. A compaction's cost is paid at once and its
        saving only if the session goes on, so it is counted over the
        requests the session reaches two times in three: half as many more
        (``horizon_factor``, clamped). On the corpus replays an even bet
        summarized near the end of a session too often (a summary whose
        saving never came); at two in three it summarized less and lost less.
        """
        p = self.policy
        return max(p.min_horizon_requests, min(p.max_horizon_requests, round(self.requests_sent * p.horizon_factor)))

    def requests_until_trigger(self, tokens: int) -> float | None:
        """How many requests a request of ``tokens`` grows for before it reaches the trigger (and is summarized).

        A saving made now lasts only until then: the summary would have made it anyway.
        """
        growth = self.growth_tokens_per_request
        if not growth or growth <= 0:
            return None
        return max(self.trigger_tokens - tokens, 0) / growth

    def over_message_trigger(self, conversation: Conversation) -> bool:
        """More messages than the policy's count trigger: a summary is due however few tokens they take
        (every message costs the model attention, and clients slow down on very long lists)."""
        limit = self.policy.trigger_messages
        return limit is not None and len(conversation) > limit

    @property
    def max_tail_messages(self) -> int | None:
        """At most this many messages stay verbatim after a summary: half the count trigger, so one
        summary puts the request well under it."""
        limit = self.policy.trigger_messages
        return None if limit is None else max(limit // 2, 1)

    @property
    def clear_keep_rounds(self) -> int:
        """The recent rounds clearing leaves whole: the policy's, and in a window larger than
        ``Policy.clear_keep_rounds_window_tokens`` as many more as the window is larger. A 200k window holds
        six times the rounds of a 32k one; keeping only the last 3 there cleared outputs the agent's next replies
        quoted, in a request far under the trigger."""
        p = self.policy
        scale = p.clear_keep_rounds_window_tokens
        if scale is None or self.window_tokens <= scale:
            return p.clear_keep_recent_rounds
        return p.clear_keep_recent_rounds * self.window_tokens // scale

    @property
    def tail_budget_tokens(self) -> int:
        """Tokens the verbatim tail may take after a summary.

        The policy's share of the window, capped at a share of the trigger.
        Everything kept after a summary is re-read on every later request and
        shortens the run to the next compaction, which rewrites the whole
        request; but what the agent quotes next is mostly in its latest rounds,
        which an extractive summary keeps only in part. On 43 sessions at 32k
        (33 nobody had tuned on) a tail of 35 % of the trigger rather than a
        tenth, cross-validated by session, kept more of what the agent went on
        to use for about 3 points more of the full history's cost (README,
        "Presets"); with both shares at 35 %, the trigger's binds.
        """
        if self.tail_tokens is not None:
            return self.tail_tokens
        return policy_tail_tokens(self.policy, self.window_tokens, self.trigger_tokens)

    @property
    def report_whole_tokens(self) -> int:
        """How many tokens the newest reports of delegated agents may take together and be kept whole
        (:attr:`Policy.report_whole_fraction` of the window)."""
        return int(self.policy.report_whole_fraction * self.window_tokens)

    @property
    def whole_output_tokens(self) -> int:
        """How many tokens the oversized outputs that arrived for this request may take and still be sent whole
        (:func:`whole_output_tokens`)."""
        return whole_output_tokens(self.policy, self.window_tokens, self.trigger_tokens)


def policy_tail_tokens(policy: Policy, window_tokens: int, trigger_tokens: int) -> int:
    """The verbatim tail a summary keeps by the policy's shares (:attr:`Budget.tail_budget_tokens`)."""
    return min(int(policy.tail_fraction * window_tokens), int(policy.tail_max_trigger_fraction * trigger_tokens))


def whole_output_tokens(policy: Policy, window_tokens: int, trigger_tokens: int) -> int:
    """How many tokens the oversized outputs that arrived for one request may take and still be sent whole:
    :attr:`Policy.persist_whole_tail_fraction` of the verbatim tail a summary keeps. A summary always keeps the
    last round whole (:func:`~contextfold.boundary.choose_cut`), so older turns compacted at this request make
    their room, and the agent's next reply, which quotes them, sees them whole. 0 when the policy's mode does
    not compact on its own (nothing would make that room)."""
    if policy.mode != "auto":
        return 0
    return int(policy.persist_whole_tail_fraction * policy_tail_tokens(policy, window_tokens, trigger_tokens))


Stage = Callable[[Conversation, Budget], "tuple[Conversation, list[Event]]"]
"""Every stage of every tier: a function ``(Conversation, Budget) -> (Conversation, list[Event])``."""
Tier = Literal["cheap", "batch", "escalate", "after"]
"""Where in a step a stage runs (:class:`~contextfold.pipeline.tiers.Pipeline`)."""
TIERS: tuple[Tier, ...] = ("cheap", "batch", "escalate", "after")


def stage_name(stage: object) -> str:
    """What a stage is called in errors and when a pipeline is edited: its function's name."""
    return str(getattr(stage, "__name__", repr(stage)))
