"""Per-request reminders: text attached to one request only, after everything the prompt cache holds.

An agent tells the model things that are true for one turn (the todo list,
the files changed since it last looked, the time, a mode it is in). Put into
the history they would be sent again on every later request, grow it, and be
compacted like conversation; put before the cached prefix they would break
it. So they are never items: :meth:`contextfold.Context.prepare` hands them
to the adapter, which attaches them to the request it is writing, after the
last message (Anthropic: as blocks at the end of the last user message,
after its cache breakpoint), each wrapped in a ``<system-reminder>`` tag as
the coding agents' own harnesses do. The next request is written without
them, so the prefix the provider cached is the conversation's alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..conversation import Item, Text
from ..errors import InvalidContent

TAG = "system-reminder"


def wrapped(text: str) -> str:
    """``text`` inside the ``<system-reminder>`` tag a model is told to read as the harness speaking."""
    return f"<{TAG}>\n{text}\n</{TAG}>"


def checked(reminders: Sequence[str]) -> tuple[str, ...]:
    """``reminders`` as a tuple of non-empty strings; anything else is :class:`InvalidContent` naming its position."""
    if isinstance(reminders, (str, bytes)):
        raise InvalidContent(None, "reminders", "expected a list of strings, got one string")
    texts = tuple(reminders)
    for position, text in enumerate(texts):
        if not isinstance(text, str):
            raise InvalidContent(None, f"reminders[{position}]", f"expected a string, got {type(text).__name__}")
        if not text.strip():
            raise InvalidContent(None, f"reminders[{position}]", "a reminder must hold text (providers refuse empty text)")
    return texts


def reminder_item(reminders: Sequence[str]) -> Item:
    """One user item holding each reminder, wrapped, as a block of its own (never added to a conversation)."""
    return Item("user", tuple(Text(wrapped(text)) for text in reminders), meta={"reminder": True})
