"""OpenHands' LLM-summarizing condenser, written from its public description, our summarizer in place of its LLM.

The rule (OpenHands ``LLMSummarizingCondenser``): when the view holds more
than ``max_size`` events (120), keep the first ``keep_first`` (4), keep the
newest ``max_size // 2 - keep_first - 1`` and replace everything in between
by one summary message, placed right after the kept head; both ends of the
forgotten range move forward to the next boundary between atomic units, so
no call is parted from its result. The previous summary sits right after the
head, so the next condensation summarizes it again with the new events.
The summary is a plain user message holding the summary text.

Counting events: OpenHands' view starts with the system prompt event, so a
recording with a system prompt counts it as the first event (and as one of
the ``keep_first``); each item is one event. The trigger is the event count
only (OpenHands' optional token limit is off by default), so a session whose
events are large overflows the window before it reaches 120 of them.
"""

from __future__ import annotations

from ...conversation import Conversation, Item, Provenance, Summary
from ...events import Event
from ...summarizers.base import SummaryRequest
from ..base import Sent, Step, StrategyConfig
from ._baseline import Baseline

MAX_SIZE_EVENTS = 120
KEEP_FIRST_EVENTS = 4
SUMMARY_TARGET_TOKENS = 4_000
"""The stand-in summary's length at most; and never more than a fifth of what it replaces."""


def next_boundary(conversation: Conversation, index: int) -> int:
    """The first unit boundary at or after ``index`` (the end of the conversation at the latest)."""
    starts = [start for start, _ in conversation.units() if start >= index]
    return starts[0] if starts else len(conversation)


class Condenser(Baseline):
    name = "openhands"

    def __init__(self, config: StrategyConfig, max_size: int = MAX_SIZE_EVENTS, keep_first: int = KEEP_FIRST_EVENTS) -> None:
        super().__init__(config)
        if max_size // 2 - keep_first - 1 <= 0:
            raise ValueError("keep_first must be less than max_size // 2 to leave room for condensation")
        self.max_size = max_size
        self.keep_first = keep_first

    def prepare(self, step: Step, new_from: int) -> Sent:
        system_events = 1 if self.view.header.system else 0
        if system_events + len(self.view) <= self.max_size:
            return Sent(self.view)
        keep_tail = self.max_size // 2 - self.keep_first - 1
        start = next_boundary(self.view, max(self.keep_first - system_events, 0))
        end = next_boundary(self.view, len(self.view) - keep_tail)
        forgotten = list(self.view.items[start:end])
        if not forgotten:  # one tool loop spans the whole middle: nothing can be condensed yet
            return Sent(self.view)
        span_tokens = sum(self.estimator.item(item) for item in forgotten)
        target = max(min(SUMMARY_TARGET_TOKENS, span_tokens // 5), 200)
        result = self.summarizer.summarize(SummaryRequest(forgotten, self.view.header, target, self.estimator.text))
        block = Summary(result.text, covers=len(forgotten), extra={"state": dict(result.state)})
        summary = Item("user", (block,), timestamp=step.time_s, provenance=Provenance(summary=True, summarizer=self.summarizer.name))
        before = self.counter.count(self.view)
        self.view = self.view.with_items([*self.view.items[:start], summary, *self.view.items[end:]])
        event = Event("openhands", "condensed", tuple(item.id for item in forgotten), before, self.counter.count(self.view),
                      f"{len(forgotten)} events from {start} summarized")
        return Sent(self.view, tuple(result.calls), (event,))


def create(config: StrategyConfig) -> Condenser:
    return Condenser(config)
