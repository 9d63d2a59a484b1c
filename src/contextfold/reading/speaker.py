"""Who speaks in a user-role message, read once per item.

A user-role item is not always the person: the harness writes there too
(:mod:`.harness`), a text-mode agent gets its tool outputs there, SWE-agent
shows a demonstration there, and contextfold itself puts its summaries and
restored files there. Every reader that needs "what the person asked" (the
task a compaction must keep, the user messages a summary quotes, the
``asked`` measure of a replay) takes it from :func:`reading_of`, so the
question is answered in one place and the same way everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..conversation import Document, Image, Item, Text
from ..readings import Key
from .harness import EMPTY_BLOCK, Rule, Speaker, matching_rule, stand_in, without_wrappers

_READING: Key[UserReading] = Key("speaker")
"""Where an item keeps its reading (items never change, so it is read once)."""


@dataclass(frozen=True)
class UserReading:
    """What a user-role item is: who speaks, the person's own words (empty unless the person speaks) and, for
    anything else, the harness rule that recognised it (None: an empty message, or contextfold's own)."""

    speaker: Speaker
    words: str
    rule: Rule | None = None

    @property
    def person(self) -> bool:
        """Whether the person wrote this: a request the agent is to act on."""
        return self.speaker is Speaker.PERSON


def read_text(text: str, attachments: int = 0) -> UserReading:
    """Who wrote a user message of ``text`` (with ``attachments`` images or documents), and the person's words.

    A message the person sent only with attachments is the person's; a
    message with no text and nothing attached, or whose only text was a
    harness wrapper (an IDE note, a reminder), is the harness's."""
    text = text.replace("\r\n", "\n").strip()
    rule = matching_rule(text)
    if rule is not None:
        return UserReading(rule.speaker, "", rule)
    words = without_wrappers(text).strip()
    if attachments:
        words = f"{words}\n[{attachments} attachment{'s' if attachments > 1 else ''}: images or documents]".strip()
    return UserReading(Speaker.PERSON if words else Speaker.HARNESS, words)


def reading_of(item: Item) -> UserReading:
    """The reading of a user-role ``item`` (computed once per item object). Anything contextfold wrote itself (a
    summary, restored files, a survival note) and any other role is not the person."""
    known = item.readings.get(_READING)
    if known is not None:
        return known
    if item.role != "user" or added_by_contextfold(item):
        reading = UserReading(Speaker.HARNESS, "")
    else:
        reading = read_text(item.text, sum(isinstance(b, (Image, Document)) for b in item.blocks))
    return item.readings.set(_READING, reading)


def heading_of(reading: UserReading) -> str:
    """How a note that quotes a user-role message names who wrote it: the person, or what the harness put there in
    their place (Claude Code's continuation summary is not "the user wrote")."""
    if reading.person:
        return "The user wrote:"
    if reading.speaker is Speaker.OBSERVATION:
        return "A tool's output, sent as a user message:"
    if reading.speaker is Speaker.DEMONSTRATION:
        return "A demonstration of another task:"
    return f"The harness wrote ({reading.rule.name}):" if reading.rule is not None else "The harness wrote:"


def added_by_contextfold(item: Item) -> bool:
    """Whether contextfold wrote ``item`` (a summary, restored files, a survival note), not the user."""
    return item.provenance.by_contextfold


def is_person(item: Item) -> bool:
    """Whether ``item`` is the person speaking (see :class:`UserReading`)."""
    return reading_of(item).person


def is_stand_in_reply(item: Item) -> bool:
    """Whether an assistant ``item`` is the harness's reply in the agent's place (an API error, a usage limit):
    text only, no tool call, and a shape of :data:`~.harness.STAND_INS`."""
    return item.role == "assistant" and not item.tool_calls and stand_in(item.text.strip()) is not None


def agent_words(item: Item) -> str:
    """What the agent wrote in an assistant ``item``: its text blocks, without those a harness wrote for an empty
    one (:data:`~.harness.EMPTY_BLOCK`)."""
    return "\n".join(b.text for b in item.blocks if isinstance(b, Text) and b.text.strip() != EMPTY_BLOCK)


REASONING_ARGUMENTS = ("scratch_pad", "thought", "thoughts", "reasoning")
"""Arguments in which an agent writes its reasoning into a call rather than into text: moatless-tools' every action
(``scratch_pad``), a think tool's ``thought``."""


def reasoning_in_calls(item: Item) -> str:
    """What the agent wrote in its calls' reasoning arguments (:data:`REASONING_ARGUMENTS`), in order: the words of
    an agent whose turns have no text (moatless-tools: "The change has been applied, but it introduced a lint error
    due to the use of `unicode`")."""
    return "\n".join(value.strip() for call in item.tool_calls for key in REASONING_ARGUMENTS
                     if isinstance(value := call.arguments.get(key), str) and value.strip())
