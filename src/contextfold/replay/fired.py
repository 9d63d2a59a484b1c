"""What a strategy did during a replay: the events of each step, and the stages that fired, in figures.

The replayer keeps figures, not events; a person watching a replay (``contextfold
demo``, ``contextfold replay``) wants to know which stages fired, how often,
what they saved and how many summaries were written. :class:`Recorder` wraps
any strategy to keep the events of each step; :func:`stage_counts` totals them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..conversation import Header
from ..events import Event
from ..usage import Usage
from .base import Sent, Step, Strategy

SUMMARY_ACTIONS = frozenset({"summarized", "condensed"})
"""Event actions that stand for one summary written (contextfold's summarize stage, the OpenHands condenser)."""


@dataclass
class Recorder:
    """A strategy that is ``inner`` in every way, keeping the events of each step that touched items.

    Only the events: a request is not kept (a strategy may change it in place
    later, and a long replay would hold every request in memory).
    """

    inner: Strategy
    by_step: dict[int, list[Event]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.inner.name

    def start(self, header: Header) -> None:
        self.inner.start(header)

    def step(self, step: Step) -> Sent:
        sent = self.inner.step(step)
        self.by_step[step.number] = [e for e in sent.events if e.items]
        return sent

    def record_usage(self, usage: Usage) -> None:
        self.inner.record_usage(usage)

    def events(self, number: int) -> list[Event]:
        """The events of step ``number`` that touched items."""
        return self.by_step.get(number, [])

    def all_events(self) -> list[Event]:
        return [event for events in self.by_step.values() for event in events]


@dataclass(frozen=True)
class StageCount:
    """One stage over a replay: how many times it fired and the tokens it saved in all."""

    stage: str
    times: int
    saved_tokens: int


def stage_counts(events: Iterable[Event]) -> list[StageCount]:
    """Each stage that fired, in the order it first fired."""
    counts: dict[str, list[int]] = {}
    for event in events:
        totals = counts.setdefault(event.stage, [0, 0])
        totals[0] += 1
        totals[1] += event.saved_tokens
    return [StageCount(stage, times, saved) for stage, (times, saved) in counts.items()]


def summaries(events: Iterable[Event]) -> int:
    """How many summaries the events record."""
    return sum(event.action in SUMMARY_ACTIONS for event in events)
