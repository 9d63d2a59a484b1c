"""What every stage shares: the policy (every knob), the budget it works within, the events it reports.

A stage is a plain function ``(Conversation, Budget) -> (Conversation, list[Event])``.
It never mutates its input, never splits a round, and never touches the
header; it reports every item it changed in an :class:`Event`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..conversation import Conversation, Item
from ..events import Event

if TYPE_CHECKING:
    from ..summarizers.base import Summarizer


@dataclass(frozen=True)
class Prices:
    """USD per million tokens; the defaults are Claude Sonnet's list prices.

    Only the ratios matter for deciding whether a compaction pays: a cached
    prefix is read at a tenth of the input price and written at 1.25 times it.
    """

    input_per_mtok: float = 3.0
    cache_write_per_mtok: float = 3.75
    cache_read_per_mtok: float = 0.30
    output_per_mtok: float = 15.0


DROP, TRUNCATE, NONE = "drop", "truncate", "none"


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
    where the corpus replays showed a better setting.
    """

    # persist: oversized outputs go to disk, a preview stays
    persist_max_chars: int = 30_000
    persist_max_tokens: int = 25_000
    preview_head_chars: int = 2_000
    preview_tail_chars: int = 1_000
    # truncate: a hard cap on any one tool output
    truncate_max_chars: int = 50_000
    # budget: older outputs get a smaller budget as the window fills
    budget_steps: tuple[tuple[float, int], ...] = ((0.5, 30_000), (0.7, 15_000))
    budget_keep_recent_rounds: int = 3
    # snip: superseded outputs become a placeholder
    snip_keep_search_results: int = 3
    # clear / mask: old outputs cleared, in one batch, when it pays
    clear_keep_recent_rounds: int = 3
    clear_min_savings_tokens: int = 20_000
    clear_keep_referenced_chars: int = 600  # a cleared output keeps its lines the agent's references point at
    cache_ttl_s: float = 300.0
    exclude_tools: tuple[str, ...] = ()
    mask_window_rounds: int | None = None  # set to enable observation masking (10 in the literature)
    native_clearing: bool = False  # the provider clears outputs (Anthropic context_management): this stage stays off
    # selective: per-kind rules when the request is still over its target
    selective_rules: tuple[Rule, ...] = DEFAULT_RULES
    # summarize: at a turn boundary, over the trigger
    trigger_tokens: int | None = None  # absolute trigger; default is the dynamic threshold
    trigger_fraction: float | None = None  # or a fraction of the window
    trigger_messages: int | None = 500  # ...or over this many messages, however small (None: no count trigger)
    min_summary_messages: int = 10  # a summary covers at least this many (a manual compact may cover less, and says so)
    tail_fraction: float = 0.25  # recent rounds kept verbatim: as many as fit in this share of the window
    tail_max_trigger_fraction: float = 0.1  # ...and in this share of the trigger (see Budget.tail_budget_tokens)
    summary_target_tokens: int = 4_000
    restore_max_files: int = 5
    restore_file_tokens: int = 5_000
    restore_total_tokens: int = 50_000
    restore_max_share: float = 0.5  # ...and at most this share of what the summary saved
    restore_min_weight: float = 3.0  # only files the agent's recent turns keep naming (see pipeline.importance)
    clear_first_max_fraction: float = 0.7  # over the trigger, clearing old outputs alone is enough if it gets this low
    # survival: after a compaction, put back what the agent still needs and the compaction dropped
    survival_max_tokens: int = 2_000
    survival_max_share: float = 0.25  # ...and at most this share of what the compaction saved
    # economics: change the cached prefix only when the reads it saves outweigh rewriting it
    prices: Prices = field(default_factory=Prices)
    economic_summaries: bool = True  # summarize below the trigger too, when that pays
    economic_summary_min_tokens: int = 20_000  # ...but never a request smaller than this
    economic_summary_tail_tokens: int = 4_000  # the tail such a summary keeps (nothing forces a long one)
    price_summaries: bool = True  # price every summary as the model call that would write it, whoever writes it
    horizon_factor: float = 0.5  # requests still to come, as a multiple of those so far (Budget.horizon_requests)
    min_horizon_requests: int = 8
    max_horizon_requests: int = 200
    # guards
    max_consecutive_failures: int = 3
    # privacy: API keys and bearer tokens in new items are replaced before anything is written (see redaction.py)
    redact_secrets: bool = False


@dataclass(frozen=True)
class Budget:
    """What a stage may spend, and the facts it needs to decide.

    ``count`` measures a whole request in tokens (anchored on reported usage
    when the facade has some); ``count_item`` measures one item.
    ``new_from`` is the index of the first item no stage has seen yet, so
    per-item stages only look at what is new. ``idle_s`` is the time since the
    previous request (``None`` when unknown: the cache is assumed warm).
    ``summarizer``, ``count_text`` and ``tail_tokens`` are for the summarize
    stage.
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
    growth_tokens_per_request: float | None = None  # how fast the request grows, when known
    compaction_due: bool = False  # over the trigger: the prefix is about to be rewritten whatever a stage does
    refused: bool = False  # the provider refused the request as too long: the window is at stake whatever the count

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
    def tail_budget_tokens(self) -> int:
        """Tokens the verbatim tail may take after a summary.

        The policy's share of the window, capped at a share of the trigger.
        Everything kept after a summary is re-read on every later request and
        shortens the run to the next compaction, which rewrites the whole
        request; on the corpus replays a tail of a tenth of the trigger was
        cheaper than a quarter of the window at every window size (the cap
        binds from 32k to 200k) with the same facts surviving, since the
        summary carries them and the latest output is always kept.
        """
        if self.tail_tokens is not None:
            return self.tail_tokens
        p = self.policy
        return min(int(p.tail_fraction * self.window_tokens), int(p.tail_max_trigger_fraction * self.trigger_tokens))


Stage = Callable[[Conversation, Budget], "tuple[Conversation, list[Event]]"]
