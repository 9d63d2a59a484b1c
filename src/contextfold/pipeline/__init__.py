"""The tiered compaction pipeline, cheapest first.

:data:`DEFAULT_PIPELINE` is the order a request meets the stages in, and the
one :class:`~contextfold.context.Context` runs:

* its ``cheap`` stages run on every request, on new items only: an oversized
  output is persisted or truncated before it is ever sent, so they never
  break the cached prefix.
* its ``batch`` stages edit the middle of the history (shrink older outputs,
  snip superseded ones, clear old ones). They are run together, and their
  combined result is kept only when it pays for rewriting the prefix
  (:mod:`~contextfold.pipeline.economics`), so the cache breaks at most once
  per batch and only for a real saving.
* its ``escalate`` stages run when a summary is due: :func:`compact`
  summarizes at a turn boundary when the request is over the trigger (or on
  demand), clearing old outputs first when that is enough, escalating to a
  shorter tail, then to per-kind rules, instead of looping.
* its ``after`` stages run on what a compaction made (survival puts back what
  the agent still needs).

A user's stage reports its edit with :func:`apply_changes` (the changed items
swapped in and one event with the request's tokens before and after) and
changes a tool output with :func:`with_result` (see docs/architecture.md,
"How to add a stage").

:class:`~contextfold.pipeline.step.Steward` makes those decisions for one
session, on the one guarded path every entry point of the facade shares.
"""

from __future__ import annotations

from ..events import Event
from .base import DEFAULT_RULES, TIERS, Budget, Policy, Prices, Rule, Stage, Tier
from .edits import apply_changes, with_result
from .escalate import compact
from .running import run_stages
from .tiers import DEFAULT_PIPELINE, Pipeline

__all__ = [
    "DEFAULT_PIPELINE",
    "DEFAULT_RULES",
    "Budget",
    "Event",
    "Pipeline",
    "Policy",
    "Prices",
    "Rule",
    "Stage",
    "TIERS",
    "Tier",
    "apply_changes",
    "compact",
    "run_stages",
    "with_result",
]
