"""The contract between the replayer and a context strategy.

The replayer walks a recorded session request by request: before each
recorded assistant reply it hands the strategy what was added since the
previous request (the previous reply, tool results, user messages) and gets
back exactly the request the strategy would send. The strategy never sees
the future of the session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..conversation import Conversation, Header, Item
from ..events import Event
from ..usage import Usage

if TYPE_CHECKING:
    from ..pipeline.base import Policy
    from ..summarizers.base import Summarizer


@dataclass(frozen=True)
class Step:
    """One request point: ``index`` of the recorded reply it precedes, items new since the last one."""

    number: int
    index: int
    new_items: Sequence[Item]
    time_s: float | None = None


@dataclass(frozen=True)
class Sent:
    """What a strategy sent for one step: the agent's request, and any summarizer requests it made first."""

    request: Conversation
    summarizer_calls: Sequence[tuple[Conversation, Usage | None]] = ()
    events: Sequence[Event] = field(default_factory=tuple)
    search: Callable[[str], str] | None = None
    """The agent's ``search_history`` as it stands at this request (query in, what it reads out), for a
    strategy that offers one: what recoverable recall asks (:mod:`.recall`)."""
    summarized_at_s: float | None = None
    """When the request's new summaries were made, if earlier than the request (an idle compaction before the
    cache expired): they are priced as written then, from the cache as it was."""


@dataclass(frozen=True)
class StrategyConfig:
    """What every strategy is told about the run: the window, the reply reserve, where to write files, the summarizer."""

    window_tokens: int
    max_output_tokens: int = 4_096
    results_dir: str | None = None
    summarizer: Summarizer | None = None
    """Who writes summaries, for strategies that summarize (default: their own choice)."""
    policy: Policy | None = None
    """The pipeline's knobs, for the strategy that runs contextfold's pipeline (default: :class:`Policy`'s)."""


class Strategy(Protocol):
    """A context-management strategy under replay."""

    @property
    def name(self) -> str:
        """Its name in reports (read-only: a wrapper such as the recorder passes its strategy's on)."""
        ...

    def start(self, header: Header) -> None:
        """Called once, before the first step, with the recording's header."""

    def step(self, step: Step) -> Sent:
        """The request to send before the reply at ``step.index``."""

    def record_usage(self, usage: Usage) -> None:
        """What the (simulated) provider reported for the request just sent."""
