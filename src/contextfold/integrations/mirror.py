"""A :class:`~contextfold.context.Context` kept in step with a history that an agent framework owns.

Frameworks hand their whole message history to an extension point before
every model call (the Agents SDK's ``call_model_input_filter``, pydantic-ai's
history processor, a Strands conversation manager, LangChain's ``wrap_model_call``). A
:class:`Mirror` turns that into contextfold's append-only model: it finds the
part of the list it has already seen, adds only the new messages to its
Context, and returns the Context's prepared view in the framework's types.

Two prefixes count as "already seen":

* the list the framework gave last time (the framework keeps its raw history
  and our view is transient, as with ``call_model_input_filter``);
* the list this mirror returned last time (the framework adopted our view as
  its history, as pydantic-ai and Strands do).

Anything else (a new conversation, a history the framework rewrote itself)
starts a fresh Context over the whole list, with an event saying so. Reading
and writing the framework's types is done by the two functions it is given,
which live in :mod:`contextfold.adapters`; the mirror itself knows no format.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

from ..context import Context
from ..context.off_loop import off_loop
from ..conversation import Conversation, Header
from ..events import Event
from ..pipeline.receipts import Receipt, receipts_in

M = TypeVar("M")

Read = Callable[[Sequence[M], Iterable[str]], Conversation]
"""Framework messages -> Conversation; the second argument names calls made in messages read before."""
Write = Callable[[Conversation], list[M]]
"""Conversation -> framework messages."""


class Mirror(Generic[M]):
    """One session's Context, fed from the framework's full history on every call (see the module docstring).

    ``make_context`` builds the Context (model, window, policy, summarizer,
    transcript); it is called again when the framework's history stops
    matching what the mirror has seen.
    """

    def __init__(self, make_context: Callable[[], Context], read: Read[M], write: Write[M]) -> None:
        self.make_context = make_context
        self.read = read
        self.write = write
        self.context = make_context()
        self._given: list[M] = []  # what the framework handed over last time
        self._returned: list[M] = []  # what this mirror handed back last time
        self.last_read = 0  # framework messages the last sync read
        self.fresh = True  # whether the last sync read the framework's list from its start

    @property
    def events(self) -> list[Event]:
        return self.context.events

    @property
    def returned(self) -> list[M]:
        """What this mirror handed back last time (do not modify it)."""
        return self._returned

    def adopt(self, messages: Sequence[M]) -> None:
        """Continue from ``messages`` as if this mirror had returned them (a session restored from storage)."""
        self.sync(messages)
        self._returned = copy.deepcopy(list(messages))

    def continue_from(self, messages: Sequence[M]) -> None:
        """The framework's history was replaced by ``messages``, which stand for everything seen so far (the
        integration compacted the stored history itself): later lists continue from them, and the Context keeps
        the history it has (so what the rewrite dropped can still be searched)."""
        self._given = copy.deepcopy(list(messages))
        self._returned = []

    def sync(self, messages: Sequence[M], header: Header | None = None) -> Conversation:
        """Add what is new in ``messages`` to the Context and return its view (no stage runs here).

        ``header`` (the system prompt and tools the framework sends beside the messages) is set first, so an
        output offloaded as it is added is previewed for the tools the request offers."""
        messages = list(messages)
        start = 0 if not (self._given or self._returned) else _after(messages, self._given)
        if start is None:
            start = _after(messages, self._returned)
        if start is None:
            self._restart(len(messages))
            start = 0
        if header is not None:
            self.context.set_header(header)
        new = messages[start:]
        self.last_read, self.fresh = len(new), start == 0
        if new:
            self.context.add(self.read(new, self.context.history.call_ids))
        self._given = copy.deepcopy(messages)
        return self.context.view()

    def prepare(self, messages: Sequence[M], header: Header | None = None) -> list[M]:
        """What to send instead of ``messages``: the new ones added, the stages due run, calls paired.

        ``header`` is the system prompt and tools of a framework that passes
        them beside the messages (LangChain's request), set before the new
        messages are added and the stages run.
        """
        self.sync(messages, header)
        out = self.write(self.context.prepare_view())
        self._returned = copy.deepcopy(out)
        return out

    async def aprepare(self, messages: Sequence[M], header: Header | None = None) -> list[M]:
        """:meth:`prepare` for a framework hook on an asyncio loop: run off the loop as one step of the
        Context's async API (:mod:`contextfold.context.off_loop`), so its store I/O never stalls the loop."""
        return await off_loop(lambda: self.prepare(messages, header))

    def compacted(self, messages: Sequence[M], *, force: bool = False, instructions: str | None = None,
                  header: Header | None = None) -> list[M]:
        """``messages`` compacted for storage: summarized if over the trigger (or ``force``), else as they were;
        ``header`` as :meth:`sync` takes it."""
        self.sync(messages, header)
        if force:
            self.context.compact(instructions)
        else:
            self.context.at_turn_boundary()
        out = self.write(self.context.view())
        self._returned = copy.deepcopy(out)
        return out

    async def acompacted(self, messages: Sequence[M], *, force: bool = False, instructions: str | None = None,
                         header: Header | None = None) -> list[M]:
        """:meth:`compacted` for an asyncio loop, off the loop like :meth:`aprepare`."""
        return await off_loop(lambda: self.compacted(messages, force=force, instructions=instructions, header=header))

    def record_usage(self, usage: object) -> None:
        """What the provider reported for the last request (keeps the token count anchored)."""
        self.context.record_usage(usage)

    async def arecord_usage(self, usage: object) -> None:
        """:meth:`record_usage` for an asyncio loop (a cache break it reports is written off the loop)."""
        await self.context.arecord_usage(usage)

    def _restart(self, size: int) -> None:
        had = len(self.context.history)
        self.context.close()
        self.context = self.make_context()
        self._given, self._returned = [], []
        if had:
            self.context.record_events([Event(
                "integration", "restarted",
                detail=f"the framework's history ({size} messages) does not continue the {had} seen; read it afresh",
            )])


def _after(messages: list[M], prefix: list[M]) -> int | None:
    """Where ``messages`` goes on past ``prefix``, or ``None`` when it does not start with it."""
    if not prefix or len(messages) < len(prefix) or messages[: len(prefix)] != prefix:
        return None
    return len(prefix)


class Mirrored:
    """What an integration holding one :class:`Mirror` shows its user: the Context and its events."""

    mirror: Mirror[Any]

    @property
    def context(self) -> Context:
        return self.mirror.context

    @property
    def events(self) -> list[Event]:
        return self.mirror.events

    @property
    def receipts(self) -> list[Receipt]:
        """What each compaction took out, and how to read it back (:mod:`contextfold.pipeline.receipts`)."""
        return receipts_in(self.mirror.events)
