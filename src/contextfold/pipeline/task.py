"""Which item is the task, and which items contextfold wrote itself.

Every stage that may change user messages must leave the task alone (the
first thing the person asked, verbatim), and must tell it from what
contextfold put back into the conversation (a summary, restored files, a
survival note), which are user items too, and from what the harness wrote
in the person's place before it (a slash-command caveat, an IDE note, a
demonstration: :mod:`contextfold.reading`). Kept apart from the stages so
each can ask without importing another.
"""

from __future__ import annotations

from ..conversation import Conversation
from ..reading import added_by_contextfold, is_person

__all__ = ["added_by_contextfold", "task_index"]


def task_index(conversation: Conversation) -> int | None:
    """Index of the task: the person's first message, if no assistant turn (nor a summary of some) comes before it.

    A view that starts with a summary had no task when it was compacted: the
    user message after the summary is not one either, or the next compaction
    would keep the old summary and that message in front of the new summary
    instead of summarizing them (the order of what survives would be wrong).
    """
    for index, item in enumerate(conversation.items):
        if item.role == "assistant" or item.meta.get("summary"):
            return None
        if item.role == "user" and is_person(item):
            return index
    return None
