"""contextfold's own pipeline, driven through the public :class:`~contextfold.context.Context`.

Exactly what an agent using contextfold would send: the replay adds each
step's new items, asks for the request, and reports the simulated usage
back, so the anchored counter and the cache economics work as in production.
With ``Policy.idle_compaction`` the recording's real gaps are idle periods:
one longer than the cache's life gets the idle compaction a live loop would
have made just before expiry (:mod:`contextfold.context.idle`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ...context import Context, Storage
from ...conversation import Header, Item
from ...pipeline.base import Policy
from ...usage import Usage
from ..base import Sent, Step, StrategyConfig


class Pipeline:
    """One :class:`Context` per replayed session; the clock is the recording's."""

    name = "default"

    def __init__(self, config: StrategyConfig) -> None:
        self.config = config
        self._now: float | None = None
        self.context = Context(
            window_tokens=config.window_tokens,
            max_output_tokens=config.max_output_tokens,
            storage=Storage(results_dir=config.results_dir),
            summarizer=config.summarizer,
            # a summary is priced at the step it fires, never later; the replayed agent is one offered the history
            # tools (recoverable recall measures what one search_history gets back), so its summaries name them.
            # Their definitions are not added to the recording's header: counted in every request (about 170
            # tokens), they move when compactions fire, and every figure with them
            policy=replace(config.policy or Policy(), background_summaries="never", history_tools=True),
            clock=lambda: self._now,
        )

    def start(self, header: Header) -> None:
        self.context.set_header(header)

    def step(self, step: Step) -> Sent:
        seen = len(self.context.events)
        idle_at, rest = self._idle(step)
        self._now = step.time_s
        self.context.add(list(rest))
        view = self.context.prepare_view()
        events = tuple(self.context.events[seen:])
        calls = tuple(call for event in events for call in event.calls)
        return Sent(view, calls, events, self.context.search_history, summarized_at_s=idle_at)

    def _idle(self, step: Step) -> tuple[float | None, Sequence[Item]]:
        """With ``Policy.idle_compaction``, a recorded gap longer than the cache's life is replayed as it would
        have gone: what arrived before the idle compaction was due is added, the Context is asked at that time
        (:meth:`~contextfold.Context.compact_if_idle`), then the rest comes. Returns when a summary was made
        (``None``: none) and the items still to add."""
        due = self.context.idle_compaction_at()
        if due is None or step.time_s is None or step.time_s <= due:
            return None, step.new_items
        arrived = 0
        for item in step.new_items:
            if item.timestamp is None or item.timestamp > due:
                break
            arrived += 1
        self._now = due
        self.context.add(list(step.new_items[:arrived]))
        fired = self.context.compact_if_idle()
        summarized = any(event.stage == "summarize" and event.action == "summarized" for event in fired)
        return due if summarized else None, step.new_items[arrived:]

    def record_usage(self, usage: Usage) -> None:
        self.context.record_usage(usage)


def create(config: StrategyConfig) -> Pipeline:
    return Pipeline(config)
