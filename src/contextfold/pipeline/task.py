"""Which item is the task, and which items contextfold wrote itself.

Every stage that may change user messages must leave the task alone (the
first thing the person asked, verbatim), and must tell it from what
contextfold put back into the conversation (a summary, restored files, a
survival note), which are user items too, and from what the harness wrote
in the person's place before it (a slash-command caveat, an IDE note, a
demonstration: :mod:`contextfold.reading`). Kept apart from the stages so
each can ask without importing another.

A person often opens with a message that asks nothing yet (a bare path, a
word, a greeting), the agent asks what they want, and the request follows:
the task is then that request, and what came before it stays in front with
it (the opening message is the person's too), when it is short.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..conversation import Conversation, Item, readable_text
from ..reading import LOCAL_COMMANDS, added_by_contextfold, asks_something, is_person, reading_of, typed_command

__all__ = ["PROLOGUE_CHARS", "REQUEST_CHARS", "added_by_contextfold", "task_index"]

PROLOGUE_CHARS = 6_000
"""The most text (characters, outputs and calls included) between a person's first message that asks nothing and
their first that asks something for the latter to be the task. Everything before the task is kept in front
verbatim: an exchange this short ("./mcp", an empty folder, "what should I build?") costs about 1,500 tokens; after
longer work the opening message stays the task, and the request is summarized like any later one."""

REQUEST_CHARS = 20_000
"""The longest request that becomes the task after an opener (about 5,000 tokens, what a summary's state keeps of a
task): a longer one (a log pasted after "hi") is summarized like any request, its opening kept whole, rather than
pinned in every request whatever the window."""


def task_index(conversation: Conversation) -> int | None:
    """Index of the task: the person's first message, if no assistant turn (nor a summary of some) comes before it;
    when that message asks nothing (``./mcp``, "hi": :func:`~contextfold.reading.asks_something`), their
    first message that does, if at most :data:`PROLOGUE_CHARS` of text comes between (and no summary) and it is at
    most :data:`REQUEST_CHARS` long.

    A custom slash command arrives as two user messages: its echo (what the person typed, the command and its
    arguments) and the text of the command's prompt file, which the person invoked but did not write; the task
    is then the echo, a line, and the prompt's text (often thousands of tokens) is summarized like any request. A
    built-in command that sends no prompt (``/clear``, :data:`~contextfold.reading.LOCAL_COMMANDS`) is followed by
    the person's own message: that is the task.

    A view that starts with a summary had no task when it was compacted: the
    user message after the summary is not one either, or the next compaction
    would keep the old summary and that message in front of the new summary
    instead of summarizing them (the order of what survives would be wrong).
    An echo the summary (or the agent's reply) follows directly is the task: its
    prompt was summarized, and the echo is what the person typed, kept in front.
    """
    command: int | None = None  # the echo of a slash command the person typed, just before
    items = conversation.items
    for index, item in enumerate(items):
        if item.role == "assistant" or item.provenance.summary:
            return command
        if item.role == "user" and is_person(item):
            if command is not None or asks_something(reading_of(item).words):
                return command if command is not None else index
            return _request_after(items, index)
        typed = typed_command(item.text) if item.role == "user" else None
        command = index if typed is not None and typed not in LOCAL_COMMANDS else None  # /clear sends no prompt
    return None


def _request_after(items: Sequence[Item], first: int) -> int:
    """The task when the person's first message, ``first``, asks nothing: their next message that does,
    if no summary and at most :data:`PROLOGUE_CHARS` of text come between and it is at most :data:`REQUEST_CHARS`
    long; else ``first``."""
    between = 0
    for index in range(first + 1, len(items)):
        item = items[index]
        if item.provenance.summary or item.kind == "summary":  # ours, or one the application passed in
            return first
        if item.role == "user" and is_person(item) and asks_something(reading_of(item).words):
            return index if len(readable_text(item)) <= REQUEST_CHARS else first
        between += len(readable_text(item))
        if between > PROLOGUE_CHARS:
            return first
    return first
