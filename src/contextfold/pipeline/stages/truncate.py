"""truncate: a hard cap on any one tool output, keeping its head and tail.

The backstop behind persist (when persisting is off or the output slipped
under its limits in tokens but not in characters). Runs on new items only.
"""

from __future__ import annotations

from ...conversation import Conversation, Item
from ...events import Event
from ..base import Budget
from ..edits import apply_changes, head_tail, is_compacted, result_text, tool_items, with_result

STAGE = "truncate"


def truncate(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
    cap = budget.policy.truncate_max_chars
    changes: dict[int, Item] = {}
    for index, item in tool_items(conversation, range(budget.new_from, len(conversation))):
        text = result_text(item)
        if len(text) > cap and not is_compacted(item):
            changes[index] = with_result(item, head_tail(text, cap * 2 // 3, cap // 3), STAGE)
    return apply_changes(conversation, budget, changes, STAGE, "truncated", f"{len(changes)} outputs over {cap:,} characters")
