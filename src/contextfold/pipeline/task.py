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
from ..reading import added_by_contextfold, is_person, typed_command

__all__ = ["added_by_contextfold", "task_index"]


def task_index(conversation: Conversation) -> int | None:
    """Index of the task: the person's first message, if no assistant turn (nor a summary of some) comes before it.

    A custom slash command arrives as two user messages: its echo (what the person typed, the command and its
    arguments) and the text of the command's prompt file, which the person invoked but did not write; the task
    is then the echo, a line, and the prompt's text (often thousands of tokens) is summarized like any request.

    A view that starts with a summary had no task when it was compacted: the
    user message after the summary is not one either, or the next compaction
    would keep the old summary and that message in front of the new summary
    instead of summarizing them (the order of what survives would be wrong).
    An echo the summary (or the agent's reply) follows directly is the task: its
    prompt was summarized, and the echo is what the person typed, kept in front.
    """
    command: int | None = None  # the echo of a slash command the person typed, just before
    for index, item in enumerate(conversation.items):
        if item.role == "assistant" or item.provenance.summary:
            return command
        if item.role == "user" and is_person(item):
            return command if command is not None else index
        command = index if item.role == "user" and typed_command(item.text) else None
    return None
