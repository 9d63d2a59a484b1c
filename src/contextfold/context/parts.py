"""What the parts of one Context share: its settings, its counter and steward, its record of the session.

:class:`~contextfold.context.Context` is a facade: the step (:mod:`.step`),
the background summary (:mod:`.background`) and the provider's own compaction
(:mod:`.native`) each do one job on the same session. They are given this one
value instead of the Context itself, so none of them reaches into another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..events import Event
from ..limits import ModelLimits
from ..pipeline.base import Policy, whole_output_tokens
from ..pipeline.consent import Consent
from ..pipeline.stages.fit import COUNT_MARGIN
from ..pipeline.step import Steward
from ..summarizers.base import Summarizer
from ..tokens import Estimator, TokenCounter
from .journal import Emit, Journal
from .single_flight import Flight
from .timeline import Timeline


@dataclass(frozen=True)
class Parts:
    """One session's settings and state, as the Context made them (the state objects change; the value does not)."""

    session_id: str
    limits: ModelLimits
    policy: Policy
    summarizer: Callable[[], Summarizer]
    """The Context's summarizer now (``context.summarizer`` may be replaced between steps)."""
    estimator: Estimator
    counter: TokenCounter
    steward: Steward
    timeline: Timeline
    journal: Journal
    flight: Flight
    clock: Callable[[], float | None]
    emit: Emit
    """Every event goes out through it: kept, written to the session, given to the subscribers."""
    results_dir: Path | None
    consent: Consent | None
    """What is asked before a compaction is kept, and told of one made (``Context(on_compaction=...)``)."""

    @property
    def window_tokens(self) -> int:
        return self.limits.context_window

    @property
    def trigger_tokens(self) -> int:
        """Above this many prompt tokens a summary is due (policy override, else the dynamic threshold)."""
        return self.steward.trigger_tokens(self.limits)

    @property
    def whole_output_tokens(self) -> int:
        """How many tokens the oversized outputs that arrive for one request may take and still be sent whole
        (:func:`~contextfold.pipeline.base.whole_output_tokens`)."""
        return whole_output_tokens(self.policy, self.window_tokens, self.trigger_tokens)

    @property
    def hard_tokens(self) -> int:
        """Above this many prompt tokens a step waits for the summary running in the background (never above
        the largest request that surely fits the window: a request is not sent over it to spare a wait)."""
        window = self.window_tokens
        return min(int(self.policy.hard_fill_fraction * window), window - int(window * COUNT_MARGIN))

    def record(self, events: Iterable[Event]) -> None:
        """Emit ``events`` and say whether the store took them (:class:`~contextfold.errors.StoreUnavailable`)."""
        self.emit(events)
        self.journal.acknowledge()
