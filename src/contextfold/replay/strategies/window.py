"""The sliding window: the system prompt, the task, and the newest rounds that fit.

The simplest strategy that never overflows on its own account: before each
request the oldest rounds after the task are dropped until the request fits
the window minus the reply's reserve. Rounds are dropped whole, so every
call keeps its result. When the task and the newest round alone are over the
budget they are sent anyway (an overflow the replay counts): a request
without the latest result would be useless to the agent.

Every request that drops something starts its history at a new place, so
the cached prefix ends after the task on each of them.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...conversation import Conversation, Item
from ..base import Sent, Step, StrategyConfig
from ._baseline import Baseline


def task_index(items: Sequence[Item]) -> int | None:
    """The first user item: the task."""
    return next((index for index, item in enumerate(items) if item.role == "user"), None)


class SlidingWindow(Baseline):
    name = "window"

    def prepare(self, step: Step, new_from: int) -> Sent:
        history = self.view
        budget = self.config.window_tokens - self.config.max_output_tokens
        if self.counter.count(history) <= budget:
            return Sent(history)
        task = task_index(history.items)
        head = [] if task is None else [history[task]]
        starts = [start for start, _ in history.units() if task is None or start > task]
        if not starts:
            return Sent(history)

        def request(first_unit: int) -> Conversation:
            return history.with_items([*head, *history.items[starts[first_unit] :]])

        # The most units that fit: the request shrinks as its first unit moves later.
        low, high = 0, len(starts) - 1
        while low < high:
            middle = (low + high) // 2
            if self.counter.count(request(middle)) <= budget:
                high = middle
            else:
                low = middle + 1
        return Sent(request(low))


def create(config: StrategyConfig) -> SlidingWindow:
    return SlidingWindow(config)
