"""budget: as the window fills, older tool outputs get a smaller allowance.

The allowance steps down with utilization (by default 30,000 characters from
50 % of the window, 15,000 from 70 %). Outputs of the most recent rounds keep
their full size: the model is most likely working from them, and so do the
outputs of the current turn while the request is under the trigger, and the
newest reports of delegated agents while they fit ``Policy.report_whole_fraction``
of the window (:func:`~contextfold.summarizers._reports.reports_kept_whole`).
"""

from __future__ import annotations

from ...conversation import Conversation, Item
from ...events import Event
from ...summarizers._reports import reports_kept_whole
from ..base import Budget
from ..edits import apply_changes, head_tail, recent_round_start, result_text, spared_from, tool_items, with_result

STAGE = "budget"


def allowance_chars(utilization: float, steps: tuple[tuple[float, int], ...]) -> int | None:
    """The per-output allowance at this utilization, or ``None`` below the first step."""
    allowed = None
    for threshold, chars in sorted(steps):
        if utilization >= threshold:
            allowed = chars
    return allowed


def budget_outputs(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
    p = budget.policy
    allowed = allowance_chars(budget.count(conversation) / budget.window_tokens, p.budget_steps)
    if allowed is None:
        return conversation, []
    changes: dict[int, Item] = {}
    end = min(recent_round_start(conversation, p.budget_keep_recent_rounds), spared_from(conversation, budget))
    whole = reports_kept_whole(conversation.items, budget.count_item, budget.report_whole_tokens)
    for index, item in tool_items(conversation, range(end)):
        text = result_text(item)
        if len(text) > allowed and index not in whole:
            changes[index] = with_result(item, head_tail(text, allowed * 2 // 3, allowed // 3), STAGE)
    return apply_changes(conversation, budget, changes, STAGE, "shrunk", f"older outputs cut to {allowed:,} characters")
