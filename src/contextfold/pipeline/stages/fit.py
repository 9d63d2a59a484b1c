"""fit: the last steps down when even a summary leaves the request over the window.

The trigger is a target; the window is a limit. When a summary and the
per-kind rules cannot bring the request under the window (a tiny window, a
huge latest output, a task that takes most of the room), this stage keeps
going instead of giving up: every rule with nothing spared, then the latest
output cut to what fits, head and tail. If the request is still over the
window, nothing contextfold may remove is left, and it says so with a typed
error naming the smallest request it could make: a request the provider
would refuse is never sent silently.
"""

from __future__ import annotations

from dataclasses import replace

from ...conversation import Conversation
from ...errors import ContextOverflow
from ...events import Event
from ..base import Budget
from ..edits import head_tail, latest_result_index, result_text, with_result
from .selective import selective

STAGE = "fit"
COUNT_MARGIN = 0.03
"""Kept free under the window. Only the prompt the provider last reported is counted exactly; what was added
since is an estimate, and on a small window one new output of code or logs is most of the request: the corpus
replays at 8k showed the estimate short by 2.5 %, which a 1 % margin let through as a request over the window."""


def fit_window(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
    """``conversation`` brought under the window, or :class:`~contextfold.errors.ContextOverflow`."""
    limit = window_limit(budget)
    before = budget.count(conversation)
    if before <= limit:
        return conversation, []
    rules = tuple(replace(rule, keep_recent=0) for rule in budget.policy.selective_rules)
    current, events = selective(conversation, replace(budget, policy=replace(budget.policy, selective_rules=rules),
                                                      target_tokens=limit))
    current, cut = _cut_latest_output(current, budget, limit)
    events += cut
    after = budget.count(current)
    if after > limit:
        raise ContextOverflow(after, budget.window_tokens, "the system prompt, tools, task and the latest round alone are this large")
    return current, events


def window_limit(budget: Budget) -> int:
    """The largest request that surely fits the window."""
    return budget.window_tokens - int(budget.window_tokens * COUNT_MARGIN)


def _cut_latest_output(conversation: Conversation, budget: Budget, limit: int) -> tuple[Conversation, list[Event]]:
    """The latest output cut, head and tail, by what the request is over ``limit`` (a few tries)."""
    index = latest_result_index(conversation.items)
    tokens = budget.count(conversation)
    if index is None or tokens <= limit:
        return conversation, []
    start, current = tokens, conversation
    for _ in range(4):
        text = result_text(current[index])
        share = 1 - (tokens - limit) / max(budget.count_item(current[index]), 1)  # of the output that may stay
        keep = max(int(len(text) * share * 0.95) - 100, 0)
        items = list(current.items)
        items[index] = with_result(current[index], head_tail(text, keep * 2 // 3, keep // 3), STAGE)
        current = current.with_items(items)
        tokens = budget.count(current)
        if tokens <= limit or keep == 0:
            break
    event = Event(STAGE, "cut_latest_output", (current[index].id,), start, tokens,
                  "the latest output did not fit the window: its head and tail are kept")
    return current, [event]
