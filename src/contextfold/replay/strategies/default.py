"""contextfold's own pipeline, driven through the public :class:`~contextfold.context.Context`.

Exactly what an agent using contextfold would send: the replay adds each
step's new items, asks for the request, and reports the simulated usage
back, so the anchored counter and the cache economics work as in production.
"""

from __future__ import annotations

from dataclasses import replace

from ...context import Context
from ...conversation import Header
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
            results_dir=config.results_dir,
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
        self._now = step.time_s
        self.context.add(list(step.new_items))
        seen = len(self.context.events)
        view = self.context.prepare_view()
        events = tuple(self.context.events[seen:])
        calls = tuple(call for event in events for call in event.calls)
        return Sent(view, calls, events, self.context.search_history)

    def record_usage(self, usage: Usage) -> None:
        self.context.record_usage(usage)


def create(config: StrategyConfig) -> Pipeline:
    return Pipeline(config)
