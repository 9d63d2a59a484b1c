"""Which item is the task, and which items contextfold wrote itself.

Every stage that may change user messages must leave the task alone (the
first thing the user asked, verbatim), and must tell it from what
contextfold put back into the conversation (a summary, restored files, a
survival note), which are user items too. Kept apart from the stages so each
can ask without importing another.
"""

from __future__ import annotations

from ..conversation import Conversation, Item


def task_index(conversation: Conversation) -> int | None:
    """Index of the task: the first user item, if no assistant turn (nor a summary of some) comes before it.

    A view that starts with a summary had no task when it was compacted: the
    user message after the summary is not one either, or the next compaction
    would keep the old summary and that message in front of the new summary
    instead of summarizing them (the order of what survives would be wrong).
    """
    for index, item in enumerate(conversation.items):
        if item.role == "assistant" or item.meta.get("summary"):
            return None
        if item.role == "user" and not added_by_contextfold(item):
            return index
    return None


def added_by_contextfold(item: Item) -> bool:
    """Whether contextfold wrote ``item`` (a summary, restored files, a survival note), not the user."""
    return bool(item.meta.get("summary") or item.meta.get("restored") or item.meta.get("survival"))
