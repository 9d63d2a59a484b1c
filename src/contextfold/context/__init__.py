"""The facade an agent loop holds: one agent step, top to bottom.

One agent step, as this class runs it::

    context.add(new_messages)          # 1. add: each item goes to the transcript first, then to the view
    request = context.prepare()        # 2. prepare: the pipeline decides (pipeline/step.py), invariants are
                                       #    checked, the view is committed; 3. send: rendered for the wire
    response = client.messages.create(**request, model=..., max_tokens=...)
    context.add_response(response)     # 4. record: the reply, and the usage it reports (anchors the count)

The history (every item ever added) is never changed; what is sent is a view
of it, kept between calls so that the cached prefix stays byte-stable until a
stage decides a change is worth it. Every decision (which stage runs, whether
an edit pays, whether a summary is due, what a failure costs, what a new
item becomes) lives in :mod:`contextfold.pipeline`; this class runs the four
entry points (:meth:`prepare_view`, :meth:`at_turn_boundary`,
:meth:`compact`, :meth:`retry_request`) down the one guarded path,
:meth:`_step`. Two helpers keep the session's state: :mod:`.timeline` (the
history and the view, and their checkpoints) and :mod:`.journal` (every
read and write of the stored session, and what happens when the disk fails).
On an asyncio loop the ``a``-methods (:meth:`aadd`, :meth:`aprepare`,
:meth:`acompact`...) run the very same calls off the loop (:mod:`.off_loop`).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..adapters import PROVIDERS, Adapter, adapter_for, is_prompt_too_long
from ..adapters.reminders import checked as checked_reminders
from ..adapters.reminders import wrapped as wrapped_reminder
from ..conversation import (
    Conversation,
    Header,
    Item,
    Provenance,
    Summary,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
    new_id,
)
from ..errors import HistoryQueryError, InvalidPipeline, SummaryInProgress, UnknownRole, ViewConflict
from ..events import Event
from ..limits import require_provider, resolve_limits
from ..lookback import history as lookback
from ..lookback import tools as history_tools
from ..lookback.offloaded import offloaded_output
from ..pipeline.admit import admit, observe
from ..pipeline.base import Budget, Policy
from ..pipeline.invariants import InvariantCheck
from ..pipeline.stages.fit import COUNT_MARGIN
from ..pipeline.step import (
    DEFAULT_PIPELINE,
    DUE,
    MANUAL,
    PREPARE,
    RETRY,
    SETTLE,
    TURN_BOUNDARY,
    Occasion,
    Pipeline,
    Steward,
)
from ..rendering import Renderer
from ..stores import AsyncStore, Store, StoredSession
from ..stores.transcript import Transcript, validate_session_id
from ..summarizers.base import Summarizer
from ..tokens import Estimator, TokenCounter
from ..usage import Usage
from . import diagnostics, native
from .background import POOL, Job, Outcome, on_event_loop, on_loop, splice, wait_bound_s
from .journal import Journal, OnStoreFailure
from .off_loop import off_loop
from .single_flight import Flight
from .timeline import Timeline

logger = logging.getLogger("contextfold.context")

__all__ = ["DEFAULT_MAX_OUTPUT_TOKENS", "MAX_VIEW_CONFLICTS", "Context", "is_prompt_too_long"]

MAX_VIEW_CONFLICTS = 8
"""How many times in a row a view change that another writer got in ahead of is re-decided before it is raised."""
DEFAULT_MAX_OUTPUT_TOKENS = 4_096


def _not_applied(why: str, session_id: str) -> Event:
    """The event (and log line) of a provider compaction that could not be put in the view."""
    logger.warning("session %s: a provider compaction was not applied: %s", session_id, why)
    return Event(native.STAGE, "discarded", detail=f"compaction not applied: {why}")


def _default_summarizer() -> Summarizer:
    from ..summarizers.extractive import ExtractiveSummarizer

    return ExtractiveSummarizer()


class Context:
    """The context of one agent session, kept within its window.

    ``model`` names the model: its window, reply limit, list prices and the
    API that serves it come from :mod:`contextfold.limits`. Or give
    ``window_tokens`` (and ``max_output_tokens``) directly; given with a
    model they replace its figures, checked once for every path
    (:func:`~contextfold.limits.resolve_limits`: 0 is an error, a reply
    limit must leave room for a prompt). ``provider`` (``anthropic``,
    ``openai`` for Chat Completions, ``responses``, ``gemini``) is the
    format requests are written in; by default the model's
    (:func:`~contextfold.limits.model_provider`: a Claude model Anthropic's,
    an OpenAI model Chat Completions unless it is served by the Responses API
    alone, a Gemini model Gemini's), ``anthropic`` with no model named, and
    :class:`~contextfold.errors.ProviderRequired` for a model whose API its
    name does not tell. A policy without ``prices`` gets the model's list
    prices (:meth:`~contextfold.pipeline.base.Policy.for_model`), so every
    cache decision is made on them, and its output limits scaled with the window
    (:meth:`~contextfold.pipeline.base.Policy.for_window`). ``transcript`` is a folder (a transcript
    named after ``session_id`` is created or resumed there), a
    :class:`~contextfold.stores.transcript.Transcript`, or ``None`` to keep nothing
    on disk. ``store`` is a session store or its URL (``sqlite:///sessions.db``,
    ``postgresql://...``, ``redis://...``, a folder; see :mod:`contextfold.stores`):
    a new session ``session_id`` is created there (:meth:`resume` continues
    one), and any number of processes may then add to it. An oversized output
    is kept as a blob of the session's store (the JSONL folder: a file next to
    the transcript), so any worker that resumes the session reads it back
    (``saved_output(item, context.transcript)``) and retention removes it with
    the session; ``results_dir`` puts such outputs in that folder instead.
    With no store, and no ``results_dir``, they are only cut.
    ``clock`` gives the time in seconds (``None`` when unknown: the prompt
    cache is then taken to be warm). ``pipeline`` is the stages to run,
    :data:`~contextfold.pipeline.DEFAULT_PIPELINE` with stages added, replaced
    or removed (:class:`~contextfold.pipeline.step.Pipeline`); whatever they
    make passes the invariant check before it is sent.
    ``cache_diagnostics`` asks the provider, on every request, why it missed
    the previous one's cached prefix; each reported miss is an event with the
    miss contextfold predicted beside it (:mod:`.diagnostics`).
    ``on_store_failure`` says what a write
    the store cannot make durable (a full disk, a database out of reach) does
    once retried: ``"raise"`` (default) raises
    :class:`~contextfold.errors.StoreUnavailable` from the call that wrote,
    ``"memory"`` goes on in memory with an event; either way the records wait
    in memory, are written first once the store accepts, and :meth:`close`
    raises while some still wait (see :mod:`.journal`).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        window_tokens: int | None = None,
        max_output_tokens: int | None = None,
        policy: Policy | None = None,
        summarizer: Summarizer | None = None,
        transcript: Transcript | StoredSession | str | Path | None = None,
        store: Store | AsyncStore | str | Path | None = None,
        session_id: str | None = None,
        results_dir: str | Path | None = None,
        provider: str | None = None,
        estimator: Estimator | None = None,
        clock: Callable[[], float | None] = time.time,
        pipeline: Pipeline | None = None,
        on_store_failure: OnStoreFailure = "raise",
        cache_diagnostics: bool = False,
    ) -> None:
        self.limits = resolve_limits(model, window_tokens, max_output_tokens,
                                     default_max_output_tokens=DEFAULT_MAX_OUTPUT_TOKENS)
        self.model = model
        self.provider = adapter_for(require_provider(model, provider, PROVIDERS)).name
        self.policy = (policy or Policy()).for_model(model).for_window(self.limits.context_window)
        self.summarizer = summarizer or _default_summarizer()
        self.session_id = validate_session_id(session_id) if session_id else new_id("session")  # names files
        self.clock = clock
        self.estimator = estimator or Estimator()
        self.counter = TokenCounter(self.estimator)
        if pipeline is not None and not isinstance(pipeline, Pipeline):
            raise InvalidPipeline("pipeline", f"Context(pipeline=...) takes a Pipeline (DEFAULT_PIPELINE.add(...)), "
                                  f"not {type(pipeline).__name__}")
        self.steward = Steward(self.policy, pipeline or DEFAULT_PIPELINE)
        self.events: list[Event] = []
        self._subscribers: list[Callable[[Event], None]] = []
        self._timeline = Timeline()  # the history, and the view that is sent
        self._check = InvariantCheck()
        self._interrupted: frozenset[str] = frozenset()  # calls open when the session was resumed
        self._renderers: dict[str, Renderer] = {}
        self._last_sent: Conversation | None = None
        self._sent_before: Conversation | None = None  # the request before the last: what a diagnosis compares with
        self._last_response_id: str | None = None
        self.cache_diagnostics = cache_diagnostics
        self._last_request_s: float | None = None
        self._requests = 0
        self._reminder_tokens = 0  # the estimated size of the reminders attached to the last request
        self._journal = Journal.open(transcript, store, self.session_id, self._emit, on_store_failure)
        self._emit(self._journal.opening)
        self._flight = Flight(lambda: self._journal.session)
        self._job: Job | None = None  # the summary running in the background, if any (see .background)
        self._wait_for: Job | None = None  # the job this step must wait for: the view is above the hard level
        self._waited = False  # this step has waited for its job once
        self._in_loop = False  # this step was called through the async API: a job's model call runs on its loop
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop of the last async call
        if self._in_background():
            POOL.warm()  # a thread waits for the first summary: no step waits for one to start
        folder = self._journal.folder
        default_results = folder / f"{self.session_id}-results" if folder is not None else None
        self.results_dir = Path(results_dir) if results_dir is not None else default_results
        self._results_given = results_dir is not None  # else oversized outputs go to the session's blobs

    @property
    def window_tokens(self) -> int:
        return self.limits.context_window

    @property
    def trigger_tokens(self) -> int:
        """Above this many prompt tokens a summary is due (policy override, else the dynamic threshold)."""
        return self.steward.trigger_tokens(self.limits)

    @property
    def breaker_open(self) -> bool:
        """Automatic compaction has failed too often in a row and is off until a manual compact succeeds."""
        return self.steward.breaker_open

    @property
    def history(self) -> Conversation:
        """Every item ever added, in order (never changed; do not modify it)."""
        return self._timeline.history

    @property
    def transcript(self) -> StoredSession | None:
        """The stored session this context writes to; ``None`` when nothing is kept, or the disk failed."""
        return self._journal.session

    # ------------------------------------------------------------------ 1. add
    def add(
        self,
        messages: Sequence[Mapping[str, Any]] | Sequence[Item] | Conversation,
        provider: str | None = None,
        *,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[Item]:
        """Add messages (in ``provider``'s format, or items) and return the items stored.

        ``system`` and ``tools`` set those parts of the header (Anthropic style;
        system messages that open the session do the same in every format, see
        :meth:`_opening_system`); pinned items
        and a split system prompt of the same text are kept (see
        :meth:`~contextfold.conversation.Header.overlaid`). Every item is in
        the transcript before this returns. The cost does not grow with the
        history: results are matched against the history's live set of call ids.
        """
        self._journal.follow(self._timeline)  # results may answer calls another process added: know them first
        conversation = self._to_conversation(messages, provider, system, tools)
        header = conversation.header
        if header.system or header.tools or header.pinned:
            self.set_header(self.history.header.overlaid(header))
        items = []
        for item in conversation.items:
            blobs = self._journal.session if not self._results_given else None
            item = self.history.linked(item)  # which tool answered decides what admission does with it
            item, events = admit(item, self.policy, self.history.header, self.results_dir, self.estimator.item, blobs)
            self._emit(events)
            items.append(item)
        added = self._journal.append(self._timeline, items)
        observe(added)  # read once as they arrive, not at the next compaction
        self._journal.acknowledge()  # StoreUnavailable if they could not be made durable (they wait in memory)
        return added

    async def aadd(
        self,
        messages: Sequence[Mapping[str, Any]] | Sequence[Item] | Conversation,
        provider: str | None = None,
        *,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[Item]:
        """:meth:`add` for an asyncio loop: the same call, made off the loop (the items are in the store,
        fsynced or committed, when it returns; the loop never waited for that)."""
        return await off_loop(lambda: self.add(messages, provider, system=system, tools=tools))

    def add_response(self, response: Any, provider: str | None = None) -> list[Item]:
        """Add a model reply (an SDK response object or its dict) and record the usage it reports.

        A reply holding the provider's own compaction (Anthropic's
        ``compact_20260112`` edit fired, or a Responses request ended by a
        ``compaction_trigger``) summarized everything the request sent: those
        items leave the view and the reply leads it (see :mod:`.native`).
        """
        reply = adapter_for(provider or self.provider).read_response(response)
        items = self.add(reply.conversation)
        if reply.usage is not None:
            self.record_usage(reply.usage)
        if reply.cache_miss is not None and self.cache_diagnostics and self._last_sent is not None:
            self.record_events([diagnostics.miss_event(reply.cache_miss, self._sent_before, self._last_sent,
                                                       self.counter.count)])
        self._last_response_id = reply.response_id or self._last_response_id
        sent = self._last_sent
        if sent is not None and any(native.native_summary(item) is not None for item in items):
            replacement = native.readable(items, sent, self.policy.summary_target_tokens, self.estimator.text)
            self._fold([*sent.items, *items], replacement, sent, "the provider compacted the conversation in this reply")
        return items

    async def aadd_response(self, response: Any, provider: str | None = None) -> list[Item]:
        """:meth:`add_response` for an asyncio loop, made off the loop like :meth:`aadd`."""
        return await off_loop(lambda: self.add_response(response, provider))

    # ------------------------------------------------------------------ the provider's own compaction
    def start_compaction(self, *, instructions: str | None = None, shape: str | None = None,
                         provider: str | None = None) -> native.PendingCompaction:
        """Ask for the provider's own compaction of the view as it is now; the conversation goes on meanwhile.

        Returns the request and the items it covers. Send it
        (``pending.call(client, model=..., max_tokens=...).send()``, in a thread
        or a task if the agent should not wait) while steps go on as usual, then
        give the answer to :meth:`apply_compaction`.
        """
        name = adapter_for(provider or self.provider).name
        view = self._timeline.view
        request = self.render(view, name)
        return native.PendingCompaction(name, request, view.snapshot(), instructions, shape)

    def apply_compaction(self, pending: native.PendingCompaction, response: Any) -> list[Event]:
        """Swap a provider's compaction in: exactly the items it was asked on go, what it returned takes their place.

        Nothing changes (an event says why) when the answer holds no
        compaction, or when the view no longer starts with those items.
        """
        reply = adapter_for(pending.provider).read_response(response)
        returned = list(reply.conversation.items)
        if not any(native.native_summary(item) is not None for item in returned):
            event = Event(native.STAGE, "discarded", detail=f"the provider returned no compaction (stop reason "
                                                            f"{reply.stop!r}); the view is unchanged")
            self.record_events([event])
            return [event]
        replacement = native.readable(returned, pending.snapshot, self.policy.summary_target_tokens, self.estimator.text)
        return self._fold(pending.snapshot.items, replacement, pending.snapshot,
                          "the provider compacted the conversation on request", reply.usage)

    def _fold(self, replaced: Sequence[Item], replacement: Sequence[Item], covered: Conversation, detail: str,
              usage: Usage | None = None) -> list[Event]:
        """Commit the view with ``replaced`` swapped for ``replacement`` (see :func:`.native.folded`), or discard."""
        try:
            self._journal.follow(self._timeline)
            view = self._timeline.view
            new = native.folded(view, replaced, replacement)
            if isinstance(new, str):
                event = _not_applied(new, self.session_id)
            else:
                try:
                    self._flight.take()
                    self._commit(new)
                except (ViewConflict, SummaryInProgress) as refused:
                    event = _not_applied(str(refused), self.session_id)
                else:
                    summaries = [s for s in map(native.native_summary, replacement) if s is not None]
                    data = {"provider": summaries[0].native_provider if summaries else None,
                            "replaced_items": len(covered), "summary_chars": sum(len(s.text) for s in summaries)}
                    event = Event(native.STAGE, "compacted", tuple(item.id for item in covered.items),
                                  self.counter.count(view), self.counter.count(new), detail, data,
                                  ((covered, usage),) if usage else ())
            self.record_events([event])
            return [event]
        finally:
            self._flight.end_step()

    def set_header(self, header: Header) -> None:
        """Replace the system prompt, tools and pinned items (recorded in the transcript)."""
        if header == self.history.header:
            return
        self._timeline.set_header(header)
        self._journal.write(lambda session: session.update_header(header))
        self._journal.acknowledge()

    def set_system(self, static: str, dynamic: str | None = None) -> None:
        """Give the system prompt in two parts: ``static``, the same in every session, then ``dynamic``.

        The static part (the agent's rules) goes first and is cached on a
        breakpoint of its own, so every session that starts with it reads it
        from the cache; the dynamic part (the tool lists of MCP servers, the
        user's language, the working directory) follows it. Tools and pinned
        items are kept; recorded in the transcript like any header.
        """
        parts = [Item("system", (Text(static),), provenance=Provenance(static=True))]
        if dynamic:
            parts.append(Item("system", (Text(dynamic),)))
        self.set_header(replace(self.history.header, system=tuple(parts)))

    def pin(self, text: str) -> None:
        """Keep ``text`` in every request, right after the system prompt, never compacted."""
        header = self.history.header
        self.set_header(replace(header, pinned=(*header.pinned, Item("user", (Text(text),)))))

    def _to_conversation(self, messages: Any, provider: str | None, system: Any, tools: Any) -> Conversation:
        if isinstance(messages, Conversation):
            return messages
        if isinstance(messages, Iterable) and not isinstance(messages, (str, bytes, Mapping)):
            messages = list(messages)  # anything else the adapter refuses, naming the field
        adapter = adapter_for(provider or self.provider)
        if isinstance(messages, list) and messages and all(isinstance(m, Item) for m in messages):
            # items carry no header: ``system`` and ``tools`` still set it (the tools decide what previews name)
            given = system is not None or tools is not None
            return Conversation(messages, adapter.read([], system=system, tools=tools).header if given else None)
        read = adapter.read(messages, system=system, tools=tools, known_call_ids=self.history.call_ids)
        return self._opening_system(read, adapter, given=system is not None)

    def _opening_system(self, conversation: Conversation, adapter: Adapter, *, given: bool) -> Conversation:
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
        system prompt itself is changed by :meth:`set_system`, or ``system=``
        (``given``) where the format has that field.
        """
        items, header = conversation.items, conversation.header
        lead = next((k for k, item in enumerate(items) if item.role not in ("system", "developer")), len(items))
        from_messages = (*(() if given else header.system), *items[:lead])
        if not from_messages:
            return conversation
        opening = replace(header, system=(*header.system, *items[:lead]))
        if not len(self.history) or opening.system_text == self.history.header.system_text:
            return Conversation(items[lead:], opening)
        if not adapter.system_messages:
            raise UnknownRole(0, "role", f"{adapter.title} has no system message, and this session has started: "
                                         "give the instruction as a user message, or set the system prompt "
                                         "(system=, set_system) knowing every later request's cached prefix changes")
        return Conversation([*from_messages, *items[lead:]], replace(header, system=header.system if given else ()))

    # ------------------------------------------------------------------ 2. prepare
    def view(self) -> Conversation:
        """What would be sent now, before this call's stages run (do not modify it)."""
        return self._timeline.view

    def prepare(self, provider: str | None = None, *, reminders: Sequence[str] = ()) -> dict[str, Any]:
        """The request to send now (``system``/``messages``/``tools`` for Anthropic; ``messages``/``tools``
        for OpenAI Chat; ``input``/``tools`` for Responses), after whatever stages are due.

        ``reminders`` are texts for this request only (the todo list, the files
        changed, the time, a mode): attached after its last message, each in a
        ``<system-reminder>`` tag, where they move no cached prefix; they never
        enter the history or the transcript (:mod:`contextfold.adapters.reminders`).
        The room they take is kept free of the window for this request.
        """
        texts = self._reminders(reminders)
        return self._sendable(self._step(PREPARE, reserve_tokens=self._reminder_tokens)[0], provider, texts)

    def prepare_view(self) -> Conversation:
        """:meth:`prepare` without the wire format: the conversation that would be sent."""
        self._reminder_tokens = 0
        return self._step(PREPARE)[0]

    def _reminders(self, reminders: Sequence[str]) -> tuple[str, ...]:
        """``reminders`` checked, and their size kept: reserved in the window, taken out of the usage reported."""
        texts = checked_reminders(reminders)
        self._reminder_tokens = sum(self.estimator.text(wrapped_reminder(text)) for text in texts)
        return texts

    def at_turn_boundary(self) -> list[Event]:
        """Run the summary now if it is due (the agent loop calls this between turns)."""
        return self._step(TURN_BOUNDARY)[1]

    async def aprepare(self, provider: str | None = None, *, reminders: Sequence[str] = ()) -> dict[str, Any]:
        """:meth:`prepare` for an asyncio loop: the same step, run off the loop, so the store's writes and
        fsyncs, database round trips (an :class:`~contextfold.stores.AsyncStore`'s awaited on the loop) and
        the stages' work never stall it; a summary made in the background has its model call made by the
        summarizer's coroutine on the running loop, and a step above the hard level waits for it off the
        loop. ``reminders`` as in :meth:`prepare`."""
        texts = self._reminders(reminders)
        view = (await self._astep(PREPARE, reserve_tokens=self._reminder_tokens))[0]
        return self._sendable(view, provider, texts)

    async def aprepare_view(self) -> Conversation:
        """:meth:`prepare_view` for an asyncio loop (see :meth:`aprepare`)."""
        self._reminder_tokens = 0
        return (await self._astep(PREPARE))[0]

    async def aat_turn_boundary(self) -> list[Event]:
        """:meth:`at_turn_boundary` for an asyncio loop (see :meth:`aprepare`)."""
        return (await self._astep(TURN_BOUNDARY))[1]

    def compact(self, instructions: str | None = None) -> list[Event]:
        """Summarize now, whatever the size, with ``instructions`` for the summarizer."""
        return self._step(MANUAL, instructions=instructions)[1]

    async def acompact(self, instructions: str | None = None) -> list[Event]:
        """:meth:`compact` for an asyncio loop (see :meth:`aprepare`)."""
        return (await self._astep(MANUAL, instructions=instructions))[1]

    def retry_request(self, error: BaseException | str, provider: str | None = None, *,
                      reminders: Sequence[str] = ()) -> dict[str, Any] | None:
        """After a provider error: if it says the prompt was too long, compact and return a new request.

        Returns ``None`` for any other error (the caller re-raises it). Call it
        once per failed request: one reactive compaction, one retry. A failing
        summarizer is survived here as in :meth:`prepare`: the request comes back
        uncompacted, and the failure is an event. ``reminders`` are those of the
        refused request, attached again as :meth:`prepare` does.
        """
        if adapter_for(provider or self.provider).prompt_too_long(error) is None:
            return None
        texts = self._reminders(reminders)
        cause = Event("reactive", "prompt_too_long", detail=str(error)[:300])
        view = self._step(RETRY, first=cause, reserve_tokens=self._reminder_tokens)[0]
        return self._sendable(view, provider, texts)

    def _step(self, occasion: Occasion, *, first: Event | None = None, **budget: Any) -> tuple[Conversation, list[Event]]:
        """The one path of every entry point: what other writers added is folded in, a finished background
        summary is put in, the pipeline decides (guarded), a request is checked, the view is committed, the
        request counted, and the events go out.

        A view change another writer got in ahead of is refused by the store
        (nothing written, nothing counted or emitted yet): the session is read
        again and the step decides afresh, up to :data:`MAX_VIEW_CONFLICTS`
        times, each refusal an event; then the conflict is raised. Above the
        hard level, the step waits for the background summary once (bounded by
        the summarizer's deadline), then decides afresh.
        """
        try:
            while True:
                decided = self._decide_and_commit(occasion, first, budget)
                if not isinstance(decided, Job):
                    return decided
                self._waited_for(decided, decided.wait(self._wait_bound()))
        finally:
            self._end_step()

    async def _astep(self, occasion: Occasion, **budget: Any) -> tuple[Conversation, list[Event]]:
        """:meth:`_step` for the async API: the same step, run off the loop (see :mod:`.off_loop`); a
        background summary's model call is the summarizer's coroutine, a task of the running loop."""
        self._loop = asyncio.get_running_loop()

        def step() -> tuple[Conversation, list[Event]]:
            self._in_loop = True
            try:
                return self._step(occasion, **budget)
            finally:
                self._in_loop = False

        return await off_loop(step)

    def _end_step(self) -> None:
        self._flight.end_step()  # the summary lease, if this step took it (a background summary keeps it)
        self._wait_for, self._waited = None, False

    def _decide_and_commit(self, occasion: Occasion, first: Event | None,
                           budget: dict[str, Any]) -> tuple[Conversation, list[Event]] | Job:
        """:meth:`_step`'s loop: decide on the session as read now, until the store takes the view; or the
        background job to wait for, before anything is committed, when the view is above the hard level.

        A summary another worker was making (its lease, see :mod:`.single_flight`)
        is waited for once, then the session is read again and the step decides afresh.
        """
        elsewhere_seen = False
        for attempt in range(MAX_VIEW_CONFLICTS + 1):
            self._journal.follow(self._timeline)
            base, landing, new_from = self._landing(occasion)
            defer = self._defer if occasion.summary == DUE and self._in_background() else None
            # While a summary runs in the background no batch edit is priced: the summary rewrites the prefix
            # anyway, and an edit of its span would only get it discarded.
            deciding = replace(occasion, edits=False) if self.summary_running else occasion
            view, events = self.steward.run(base, self._budget(new_from=new_from, **budget), deciding, defer)
            if self._wait_for is not None:  # nothing decided here is kept: the step decides afresh after waiting
                bound = self._wait_bound()
                logger.info("session %s: the view is above the hard level (%d tokens): waiting for the background "
                            "summary%s", self.session_id, self.hard_tokens, f" up to {bound:g} s" if bound else "")
                self._emit([Event("summarize", "waiting", detail=f"the view is above the hard level "
                                  f"({self.hard_tokens:,} tokens): waiting for the background summary")])
                return self._wait_for
            if view is not self._timeline.view:
                try:  # a view change holds the lease too, so it cannot overtake another worker's summary
                    self._flight.take()
                except SummaryInProgress as busy:
                    if elsewhere_seen and occasion is not RETRY:  # waited once: keep the view, change it next step
                        view, events, landing = self._timeline.view, [e for e in events if not e.items], []
                    events.append(Event("summarize", "elsewhere", detail=str(busy)))
            if not elsewhere_seen and any(e.stage == "summarize" and e.action == "elsewhere" for e in events):
                elsewhere_seen = True
                self._emit([e for e in events if e.stage == "summarize" and e.action == "elsewhere"])
                continue
            events = [*landing, *events]
            events = [first, *events] if first is not None else events
            if occasion.sends:
                view, repaired = self._check.ready(view, self._interrupted)
                events.extend(repaired)
            try:
                self._commit(view)
            except ViewConflict as conflict:
                self._emit([Event("store", "conflict", detail=str(conflict))])
                if attempt == MAX_VIEW_CONFLICTS:
                    raise
                continue
            if landing:
                self._finish_job()
            if occasion.sends:
                self._count_request(view, changed=any(e.items for e in events))
            self._emit(events)
            self._journal.acknowledge()  # StoreUnavailable if the view or an event could not be made durable
            return view, events
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ summaries in the background
    def _in_background(self) -> bool:
        """Whether a due summary below the hard level is made off the loop (``Policy.background_summaries``)."""
        mode = self.policy.background_summaries
        return mode == "always" or (mode == "auto" and wait_bound_s(self.summarizer) is not None)

    @property
    def hard_tokens(self) -> int:
        """Above this many prompt tokens a step waits for the summary running in the background (never above
        the largest request that surely fits the window: a request is not sent over it to spare a wait)."""
        window = self.window_tokens
        return min(int(self.policy.hard_fill_fraction * window), window - int(window * COUNT_MARGIN))

    @property
    def summary_running(self) -> bool:
        """A summary is being made in the background (the next step after it ends puts it in)."""
        return self._job is not None and not self._job.done()

    def _wait_bound(self) -> float | None:
        return wait_bound_s(self.summarizer)

    def _defer(self, view: Conversation, budget: Budget, target: int) -> bool:
        """A summary is due on ``view``: whether this step leaves it to the background (started now, or running).

        Above the hard level it does not: the step waits for the running job
        (once) or summarizes inline, as it would without a background.
        """
        job = self._job
        if self.counter.count(view) > self.hard_tokens:
            if job is not None and not self._waited:
                self._wait_for = job
                return True
            return False
        if job is not None:
            return True
        try:
            self._flight.take(wait=False)
        except SummaryInProgress as busy:  # another worker summarizes: its view is read next step
            logger.info("session %s: no background summary started: %s", self.session_id, busy)
            return True
        self._flight.keep(True)
        snapshot = view.snapshot()  # the committed view is appended to in place; the job's must not move
        summarizer = on_loop(self.summarizer, self._loop) if self._in_loop and self._loop else self.summarizer
        counter = copy.copy(self.counter)  # the loop's counter learns from usage as the job counts: its own copy
        work_budget = replace(budget, summarizer=summarizer, count=counter.count, new_from=len(snapshot))

        def work() -> Outcome:
            return Outcome(*self.steward.summary_off_loop(snapshot, work_budget, target))

        self._job = Job(snapshot, work)
        tokens = self.counter.count(view)
        logger.info("session %s: a summary of %d item(s) (%d tokens) started in the background; the loop goes on "
                    "with the full view until it is done", self.session_id, len(snapshot), tokens)
        self._emit([Event("summarize", "started", tokens_before=tokens, data={"snapshot_items": len(snapshot),
                          "target_tokens": target, "hard_tokens": self.hard_tokens},
                          detail=f"summarizing a snapshot of {len(snapshot)} item(s) in the background")])
        return True

    def _landing(self, occasion: Occasion) -> tuple[Conversation, list[Event], int]:
        """The view this step starts from, the events of a background summary put in or discarded, and the
        index from which the cheap stages have not yet seen the view (the summary moves it)."""
        current, processed = self._timeline.view, self._timeline.processed
        job = self._job
        if job is None:
            return current, [], processed
        if not job.done():
            if occasion.summary == DUE or occasion is SETTLE:
                return current, [], processed
            why = "a manual compact" if occasion is MANUAL else "a reactive compaction after 'prompt too long'"
            return current, self._drop_job(f"superseded by {why}", []), processed
        outcome = job.outcome()
        if job.accounted is None:  # once, however many times a view conflict makes the step land it
            job.accounted = self.steward.landed(outcome.events, outcome.fits, self.counter.count(outcome.view))
        events = [*outcome.events, *job.accounted]
        if outcome.view is job.snapshot or not any(e.items for e in outcome.events):
            self._drop_job(None, [])  # nothing to put in: it failed, or there was too little to summarize
            return current, events, processed
        placed = splice(job.snapshot.items, outcome.view.items, current.items)
        if isinstance(placed, str) or placed.end > processed:
            why = placed if isinstance(placed, str) else "it replaces items no stage has seen yet"
            calls = tuple(call for e in outcome.events for call in e.calls)  # what it cost is still priced
            return current, self._drop_job(why, [e for e in events if not e.items], calls), processed
        view = placed.apply(current)
        before, after = self.counter.count(current), self.counter.count(view)
        logger.info("session %s: the background summary is applied: %d item(s) replaced, %d -> %d tokens",
                    self.session_id, placed.end - placed.start, before, after)
        applied = Event("summarize", "applied", tokens_before=before, tokens_after=after,
                        detail=f"the background summary replaced {placed.end - placed.start} item(s) of the view",
                        data={"start": placed.start, "replaced": placed.end - placed.start, "made": len(placed.items)})
        return view, [*events, applied], processed + len(placed.items) - (placed.end - placed.start)

    def _drop_job(self, why: str | None, events: list[Event], calls: tuple[Any, ...] = ()) -> list[Event]:
        """Let the background summary go (its result, if it comes, is never used); ``events`` and a
        ``discarded`` event saying ``why``, if there is a reason to tell."""
        self._finish_job()
        if why is None:
            return events
        logger.warning("session %s: the background summary is discarded: %s", self.session_id, why)
        return [*events, Event("summarize", "discarded", detail=why, calls=calls)]

    def _finish_job(self) -> None:
        self._job = None
        self._flight.keep(False)  # released when the step ends

    def _waited_for(self, job: Job, done: bool) -> None:
        """After a step above the hard level waited: it decides afresh, inline if the job is still not done."""
        self._waited, self._wait_for = True, None
        if not done and self._job is job:
            bound = self._wait_bound()
            waited = f"within {bound:g} s of waiting " if bound is not None and not on_event_loop() else ""
            self._emit(self._drop_job(f"not finished {waited}above the hard level ({self.hard_tokens:,} tokens): "
                                      "summarized inline instead", []))

    def settle(self) -> list[Event]:
        """Wait for the summary running in the background, if any, and put it in now; its events.

        Nothing else is decided. Useful before :meth:`fork` or to read
        :meth:`view` with the summary in; an agent loop need not call it.
        """
        job = self._job
        if job is not None:
            job.wait(None)
        return self._step(SETTLE)[1]

    async def asettle(self) -> list[Event]:
        """:meth:`settle` for the async API."""
        job = self._job
        if job is not None:
            await job.wait_async(None)
        return (await self._astep(SETTLE))[1]

    def _budget(self, new_from: int | None = None, reserve_tokens: int = 0, **overrides: Any) -> Budget:
        """What the stages may spend; ``reserve_tokens`` of the window are kept for what is attached after them."""
        now = self.clock()
        idle = now - self._last_request_s if now is not None and self._last_request_s is not None else None
        return Budget(
            policy=self.policy,
            window_tokens=self.window_tokens - reserve_tokens,
            trigger_tokens=self.trigger_tokens,
            count=self.counter.count,
            count_item=self.estimator.item,
            new_from=self._timeline.processed if new_from is None else new_from,
            requests_sent=self._requests,
            idle_s=idle,
            now_s=now,
            results_dir=self.results_dir,
            summarizer=self._flight.guard(self.summarizer),
            count_text=self.estimator.text,
            growth_tokens_per_request=self.steward.growth_tokens_per_request,
            **overrides,
        )

    def _count_request(self, view: Conversation, *, changed: bool) -> None:
        """``view`` goes out now: keep what the usage reported for it will be compared with."""
        self.steward.sent(self.counter.count(view), changed=changed)
        self._sent_before, self._last_sent = self._last_sent, view.snapshot()
        self._requests += 1
        self._last_request_s = self.clock()

    def _commit(self, view: Conversation) -> None:
        """``view`` is what is sent from now on; a changed view is checkpointed in the transcript.

        The checkpoint names the one it replaces (``base``); the store refuses it
        with :class:`~contextfold.errors.ViewConflict` if that is no longer the
        current one, and the view stays as it was.
        """
        if view is not self._timeline.view:
            self._journal.commit_view(self._timeline.entries(view))
        self._timeline.commit(view)

    # ------------------------------------------------------------------ 3. send
    def _sendable(self, view: Conversation, provider: str | None, reminders: Sequence[str]) -> dict[str, Any]:
        """``view`` rendered with ``reminders``, asking for the provider's cache diagnostics against the last reply
        when enabled."""
        request = self.render(view, provider, reminders=reminders)
        if not self.cache_diagnostics:
            return request
        return adapter_for(provider or self.provider).with_cache_diagnostics(request, self._last_response_id)

    def render(self, view: Conversation, provider: str | None = None, *,
               reminders: Sequence[str] = ()) -> dict[str, Any]:
        """``view`` as a request body for ``provider`` (incrementally: only new messages are rendered),
        with ``reminders`` attached for this request only (see :meth:`prepare`)."""
        adapter = adapter_for(provider or self.provider)
        renderer = self._renderers.get(adapter.name)
        if renderer is None:
            renderer = self._renderers[adapter.name] = Renderer(adapter)
        return renderer.render(view, checked_reminders(reminders))

    # ------------------------------------------------------------------ 4. record
    def record_usage(self, usage: Usage | Mapping[str, Any] | Any, provider: str | None = None) -> None:
        """Take what the provider reported for the last request (anchors the count, detects cache breaks).

        ``usage`` is a :class:`Usage`, or the provider's own usage object (read by its adapter).
        """
        if not isinstance(usage, Usage):
            usage = adapter_for(provider or self.provider).read_usage(usage)
        if self._last_sent is not None:  # the count is of the view: the reminders sent with it are not part of it
            view_tokens = max(usage.prompt_tokens - self._reminder_tokens, 1) if usage.prompt_tokens > 0 else 0
            self.counter.record_usage(replace(usage, prompt_tokens=view_tokens), self._last_sent)
        cache_break = self.steward.cache_break(usage)
        if cache_break is not None:
            self._emit([cache_break])

    async def arecord_usage(self, usage: Usage | Mapping[str, Any] | Any, provider: str | None = None) -> None:
        """:meth:`record_usage` for an asyncio loop: a cache break it reports is written off the loop."""
        await off_loop(lambda: self.record_usage(usage, provider))

    def subscribe(self, callback: Callable[[Event], None]) -> None:
        """Call ``callback`` with every event from now on."""
        self._subscribers.append(callback)

    def record_events(self, events: Iterable[Event]) -> None:
        """Record events from outside the pipeline (what a provider's own context management did), like any other."""
        self._emit(events)
        self._journal.acknowledge()

    def _emit(self, events: Iterable[Event]) -> None:
        for event in events:
            self.events.append(event)
            self._journal.record(event)
            for callback in self._subscribers:
                callback(event)

    # ------------------------------------------------------------------ looking back
    def search_history(self, query: str, limit: int = lookback.DEFAULT_LIMIT, *, regex: bool = False,
                       ignore_case: bool = False) -> str:
        """The agent's ``search_history`` tool: lines of the history the view no longer holds whole that match
        ``query`` (a literal, or with ``regex`` a linear-time regular expression), newest first, each with its
        ref, turn and the call that produced it (:mod:`contextfold.lookback.history`).

        :class:`~contextfold.errors.HistoryQueryError` names a bad argument.
        """
        history = self.history
        by_id = {item.id: item for item in history.items}
        in_view = frozenset(item.id for item in self.view().items if by_id.get(item.id) is item)
        return lookback.search_history(history, query, limit=limit, regex=regex, ignore_case=ignore_case,
                                       in_view=in_view, count_text=self.estimator.text,
                                       read_offloaded=self._read_offloaded).text

    def read_history(self, ref: str, lines: str | None = None) -> str:
        """The agent's ``read_history`` tool: lines ``lines`` (``"120-160"``) of the item ``ref`` names, verbatim."""
        return lookback.read_history(self.history, ref, lines, read_offloaded=self._read_offloaded)

    async def asearch_history(self, query: str, limit: int = lookback.DEFAULT_LIMIT, *, regex: bool = False,
                              ignore_case: bool = False) -> str:
        """:meth:`search_history` for an asyncio loop: offloaded outputs are read back from the store off the loop."""
        return await off_loop(lambda: self.search_history(query, limit, regex=regex, ignore_case=ignore_case))

    async def aread_history(self, ref: str, lines: str | None = None) -> str:
        """:meth:`read_history` for an asyncio loop, off the loop like :meth:`asearch_history`."""
        return await off_loop(lambda: self.read_history(ref, lines))

    def _read_offloaded(self, item: Item) -> str | None:
        """An offloaded output read back from this session's store (any worker's), or its file."""
        return offloaded_output(item, self._journal.session)

    def history_tools(self, provider: str | None = None) -> list[dict[str, Any]]:
        """The definitions of ``search_history`` and ``read_history`` in ``provider``'s tool format (add them to
        the request's tools, or pass them to :meth:`add` as ``tools``; :meth:`answer_tool_call` answers them)."""
        header = Header(tools=history_tools.SPECS)
        return list(adapter_for(provider or self.provider).write_header(header).fields.get("tools", []))

    @staticmethod
    def history_tool_specs() -> tuple[ToolSpec, ...]:
        """The two history tools as neutral :class:`~contextfold.ToolSpec` s (name, description, JSON schema)."""
        return history_tools.SPECS

    def call_history_tool(self, name: str, arguments: object) -> str:
        """The text answering a call of a history tool; :class:`~contextfold.errors.HistoryQueryError` names a
        bad argument (an unknown tool name included)."""
        return history_tools.answer(name, arguments, self.search_history, self.read_history)

    def answer_tool_call(self, call: ToolCall) -> Item | None:
        """The result item answering ``call`` when it calls a history tool (``None`` for any other tool).

        A bad argument becomes an error result that says why, so the model can call again; add the item
        like any other result (it is compacted like any other).
        """
        if call.name not in history_tools.NAMES:
            return None
        try:
            text, failed = self.call_history_tool(call.name, call.arguments), False
        except HistoryQueryError as error:
            text, failed = f"{call.name} failed: {error}", True
        return Item("tool", (ToolResult(call.id, text, is_error=failed, tool_name=call.name,
                                        arguments=call.arguments),))

    async def aanswer_tool_call(self, call: ToolCall) -> Item | None:
        """:meth:`answer_tool_call` for an asyncio loop, off the loop like :meth:`asearch_history`."""
        return await off_loop(lambda: self.answer_tool_call(call))

    # ------------------------------------------------------------------ sessions
    def fork(self, *, session_id: str | None = None, keep_history: bool = False) -> Context:
        """A context for a subagent: same model, policy and header, its own budget, counter and transcript.

        It starts empty (``keep_history=True`` copies the current view) and
        compacts on its own; the parent sees only what the caller adds back.
        """
        child_id = session_id or f"{self.session_id}.sub-{new_id('f')[2:]}"
        child = Context(
            self.model,
            window_tokens=self.window_tokens,
            max_output_tokens=self.limits.max_output_tokens,
            policy=self.policy,
            summarizer=self.summarizer,
            transcript=self.transcript.sibling(child_id) if self.transcript is not None else None,
            session_id=child_id,
            provider=self.provider,
            estimator=Estimator(self.estimator.text, self.estimator.costs),
            clock=self.clock,
            pipeline=self.steward.pipeline,
            on_store_failure=self._journal.on_store_failure,
            cache_diagnostics=self.cache_diagnostics,
        )
        child.set_header(self.history.header)
        if keep_history:
            child.add(list(self.view().items))
        return child

    def stats(self) -> dict[str, Any]:
        """Figures for a status line or a report."""
        tokens = self.counter.count(self.view())
        by_stage = Counter(f"{e.stage}:{e.action}" for e in self.events)
        return {
            "session_id": self.session_id,
            "requests": self._requests,
            "items_in_history": len(self.history),
            "items_in_view": len(self.view()),
            "tokens": tokens,
            "window_tokens": self.window_tokens,
            "trigger_tokens": self.trigger_tokens,
            "utilization": tokens / self.window_tokens,
            "summaries": sum(1 for item in self.view() if any(isinstance(b, Summary) for b in item.blocks)),
            "events": dict(by_stage),
            "tokens_saved": sum(max(e.saved_tokens, 0) for e in self.events if e.items),
            "cache_misses": dict(diagnostics.totals(self.events)),
            "consecutive_failures": self.steward.failures,
            "breaker_open": self.breaker_open,
            "last_stage": next((e.stage for e in reversed(self.events) if e.items), None),
        }

    @classmethod
    def resume(cls, store: Store | AsyncStore | str | Path, session_id: str, model: str | None = None,
               **options: Any) -> Context:
        """The context of a session recorded in ``store``, as it was: its history, and the view it was sending.

        ``store`` is a transcript folder, a store URL or a :class:`~contextfold.stores.Store`.
        A session that is not there is :class:`~contextfold.errors.SessionNotFound`,
        never a new empty one. ``model`` and ``options`` are those of
        :class:`Context` (the transcript keeps the conversation, not the configuration).
        """
        return cls._restored(StoredSession.resume(store, session_id), model, **options)

    @classmethod
    def open(cls, store: Store | str | Path, session_id: str, model: str | None = None, **options: Any) -> Context:
        """The session ``session_id`` of ``store``, resumed as :meth:`resume` does if it is there, else started.

        What a service handling "the next message of session X" calls: the same line serves the first
        request and every later one (``Context(store=..., session_id=...)`` refuses a session that exists,
        :meth:`resume` one that does not). Two workers opening a new session at once share it.
        """
        return cls._restored(StoredSession.open(store, session_id), model, **options)

    @classmethod
    def _restored(cls, session: StoredSession, model: str | None, **options: Any) -> Context:
        """The context over ``session``, with its history and view restored (empty for a new session)."""
        session_id = session.session_id
        try:
            context = cls(model, transcript=session, session_id=session_id, **options)
            context._emit(context._timeline.restore(session.restored, session_id))
            context._interrupted = context._open_calls()
            context.steward.resumed(context.counter.count(context.view()))  # the session priced what it sent as it went
        except BaseException:  # a failed resume releases the session (its lock) on every path
            session.close()
            raise
        return context

    @classmethod
    async def acreate(cls, model: str | None = None, **options: Any) -> Context:
        """``Context(model, **options)`` for an asyncio loop: the session is created in its store off the
        loop (the way to make a Context on an :class:`~contextfold.stores.AsyncStore`)."""
        return await off_loop(lambda: cls(model, **options))

    @classmethod
    async def aresume(cls, store: Store | AsyncStore | str | Path, session_id: str, model: str | None = None,
                      **options: Any) -> Context:
        """:meth:`resume` for an asyncio loop: the session is read off the loop."""
        return await off_loop(lambda: cls.resume(store, session_id, model, **options))

    def _open_calls(self) -> frozenset[str]:
        """Calls of the resumed history without a result: the process that ran them is gone (a crash
        between the model's reply and its tools' results, or a transcript written before batches were
        atomic). Unless results for them are added, the next request answers them with an error result."""
        open_calls = frozenset(v.call_id for v in self.history.validate() if v.kind == "unanswered_call" and v.call_id)
        if open_calls:
            logger.warning("session %s resumed with %d tool call(s) never answered (%s); they get an error result "
                           "unless their results are added", self.session_id, len(open_calls), ", ".join(sorted(open_calls)))
            self._emit([Event("transcript", "interrupted", detail="tool call(s) without a result when the session was "
                                                                   f"resumed: {', '.join(sorted(open_calls))}")])
        return open_calls

    def close(self) -> None:
        """Write what waits and release the transcript (another process may then resume the session).

        A summary still running in the background is discarded (:meth:`settle` first to keep it).
        :class:`~contextfold.errors.StoreUnavailable` while the store still refuses waiting records;
        the session is kept open then, so ``close()`` can be called again once it accepts.
        """
        if self._job is not None:
            self._emit(self._drop_job("the context was closed before it finished", []))
            self._flight.end_step()
        self._journal.close()

    async def aclose(self) -> None:
        """:meth:`close` for an asyncio loop: what waits is written off the loop."""
        await off_loop(self.close)

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
