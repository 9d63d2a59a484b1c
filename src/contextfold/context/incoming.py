"""Step 1, add: what ``Context.add`` is given, read into items, admitted, and recorded before it is kept.

Provider messages (or items) are read by the provider's adapter into one
conversation, whose header takes ``system``, ``tools`` and the system messages
that open the session (:func:`opening_system`). Each item is admitted
(:func:`~contextfold.pipeline.admit.admit`: secrets redacted, an oversized
output saved to the session's store or ``results_dir``), written to the
transcript first, then appended to the history and the view, and read once
for what compactions ask of it (:func:`~contextfold.pipeline.admit.observe`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from ..adapters import Adapter
from ..conversation import Conversation, Header, Item, Provenance, Text
from ..errors import UnknownRole
from ..pipeline.admit import admit, observe
from ..stores import StoredSession
from .parts import Parts


class Incoming:
    """Where one Context's items come in: ``blobs`` gives the session that keeps oversized outputs (``None``:
    files in ``results_dir``, or only cut)."""

    def __init__(self, parts: Parts, blobs: Callable[[], StoredSession | None]) -> None:
        self._parts = parts
        self._blobs = blobs

    def add(self, messages: Any, adapter: Adapter, system: Any, tools: Any) -> list[Item]:
        """``messages`` read, admitted and recorded; the items as the history stored them. Every item is in the
        transcript before this returns, and the cost does not grow with the history (results are matched against
        its live set of call ids)."""
        parts, history = self._parts, self._parts.timeline.history
        parts.journal.follow(parts.timeline)  # results may answer calls another process added: know them first
        conversation = to_conversation(messages, adapter, history, system, tools)
        header = conversation.header
        if header.system or header.tools or header.pinned:
            self.set_header(history.header.overlaid(header))
        items = []
        for item in conversation.items:
            item = history.linked(item)  # which tool answered decides what admission does with it
            item, events = admit(item, parts.policy, history.header, parts.results_dir, parts.estimator.item,
                                 self._blobs(), parts.whole_output_tokens)
            parts.emit(events)
            items.append(item)
        added = parts.journal.append(parts.timeline, items)
        observe(added)  # read once as they arrive, not at the next compaction
        parts.journal.acknowledge()  # StoreUnavailable if they could not be made durable (they wait in memory)
        return added

    def set_system(self, static: str, dynamic: str | None) -> None:
        """The system prompt in two parts: ``static`` first, on a cache breakpoint of its own, then ``dynamic``."""
        parts = [Item("system", (Text(static),), provenance=Provenance(static=True))]
        if dynamic:
            parts.append(Item("system", (Text(dynamic),)))
        self.set_header(replace(self._parts.timeline.history.header, system=tuple(parts)))

    def pin(self, text: str) -> None:
        """``text`` kept in every request, right after the system prompt."""
        header = self._parts.timeline.history.header
        self.set_header(replace(header, pinned=(*header.pinned, Item("user", (Text(text),)))))

    def set_header(self, header: Header) -> None:
        """Replace the system prompt, tools and pinned items (recorded in the transcript)."""
        parts = self._parts
        if header != parts.timeline.history.header:
            parts.timeline.set_header(header)
            parts.journal.write(lambda session: session.update_header(header))
            parts.journal.acknowledge()


def to_conversation(messages: Any, adapter: Adapter, history: Conversation, system: Any,
                    tools: Any) -> Conversation:
    """``messages`` (in ``adapter``'s format, or items) as a conversation whose header holds ``system`` and
    ``tools``, and the system messages that open the session (see :func:`opening_system`)."""
    if isinstance(messages, Conversation):
        return messages
    if isinstance(messages, Iterable) and not isinstance(messages, (str, bytes, Mapping)):
        messages = list(messages)  # anything else the adapter refuses, naming the field
    if isinstance(messages, list) and messages and all(isinstance(m, Item) for m in messages):
        # items carry no header: ``system`` and ``tools`` still set it (the tools decide what previews name)
        given = system is not None or tools is not None
        return Conversation(messages, adapter.read([], system=system, tools=tools).header if given else None)
    read = adapter.read(messages, system=system, tools=tools, known_call_ids=history.call_ids)
    return opening_system(read, adapter, history, given=system is not None)


def opening_system(conversation: Conversation, adapter: Adapter, history: Conversation, *,
                   given: bool) -> Conversation:
    """System messages that open a session go to the header; one in a session already started stays where it
    is, or is refused where the format has no system message.

    Before the first user or assistant message a system message is the
    system prompt, whatever format it came in: Anthropic and Gemini take
    it only in the header (``system``, ``system_instruction``), where the
    OpenAI formats' readers put the system messages that open a list; so
    is one that repeats the system prompt (a loop that passes it on every
    turn). Once the session has started, any other system message is an
    instruction at that point of it, not a new system prompt: rewriting
    the header would change what every earlier request began with (and
    lose the prompt cache). Anthropic Messages and the OpenAI formats carry
    it where it stands; Gemini has no such message, so it is refused
    (:class:`~contextfold.errors.UnknownRole`, naming the message). The
    system prompt itself is changed by ``Context.set_system``, or ``system=``
    (``given``) where the format has that field.
    """
    items, header = conversation.items, conversation.header
    lead = next((k for k, item in enumerate(items) if item.role not in ("system", "developer")), len(items))
    from_messages = (*(() if given else header.system), *items[:lead])
    if not from_messages:
        return conversation
    opening = replace(header, system=(*header.system, *items[:lead]))
    if not len(history) or opening.system_text == history.header.system_text:
        return Conversation(items[lead:], opening)
    if not adapter.system_messages:
        raise UnknownRole(0, "role", f"{adapter.title} has no system message, and this session has started: "
                                     "give the instruction as a user message, or set the system prompt "
                                     "(system=, set_system) knowing every later request's cached prefix changes")
    return Conversation([*from_messages, *items[lead:]], replace(header, system=header.system if given else ()))
