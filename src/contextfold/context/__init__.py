"""The facade an agent loop holds: one agent step, top to bottom.

One agent step, as this class runs it::

    context.add(new_messages)          # 1. add: each item goes to the transcript first, then to the view
    request = context.prepare()        # 2. prepare: the pipeline decides (pipeline/step.py), invariants are
                                       #    checked, the view is committed; 3. send: rendered for the wire
    response = client.messages.create(**request, model=..., max_tokens=...)
    context.add_response(response)     # 4. record: the reply, and the usage it reports (anchors the count)

The history (every item ever added) is never changed; what is sent is a view
of it, kept between calls so that the cached prefix stays byte-stable until a
stage decides a change is worth it. Every decision lives in
:mod:`contextfold.pipeline`; this class is a facade over the parts of the
``context`` package, each with one job: :mod:`.step` (the one guarded path
of the entry points :meth:`prepare_view`, :meth:`at_turn_boundary`,
:meth:`compact`, :meth:`retry_request`), :mod:`.background` (a summary made
off the loop), :mod:`.native` (the provider's own compaction),
:mod:`.timeline` (the history and the view), :mod:`.journal` and
:mod:`.storage` (the stored session), and the history tools
(:class:`~contextfold.lookback.tools.HistoryTools`). On an asyncio loop the
``a``-methods (:meth:`aadd`, :meth:`aprepare`, :meth:`acompact`...) run the
very same calls off the loop (:mod:`.off_loop`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Concatenate, NoReturn, ParamSpec, TypeVar

from ..adapters import PROVIDERS, adapter_for, is_prompt_too_long
from ..conversation import Conversation, Header, Item, ToolCall, ToolSpec, new_id
from ..errors import InvalidPipeline
from ..events import Event
from ..limits import require_provider, resolve_limits
from ..lookback.history import DEFAULT_LIMIT
from ..lookback.tools import HistoryTools
from ..pipeline import asked as asked_compaction
from ..pipeline.base import Policy
from ..pipeline.consent import CompactionNotice, OnCompaction, consent_of
from ..pipeline.receipts import Receipt, receipts_in
from ..pipeline.step import DEFAULT_PIPELINE, MANUAL, PREPARE, RETRY, SETTLE, TURN_BOUNDARY, Pipeline, Steward
from ..stores import AsyncStore, Store, StoredSession
from ..summarizers.base import Summarizer
from ..tokens import Estimator, TokenCounter
from ..usage import Usage
from . import native
from .background import Background
from .incoming import Incoming
from .off_loop import off_loop
from .parts import Parts
from .sending import Sending
from .single_flight import Flight
from .step import MAX_VIEW_CONFLICTS, Step
from .storage import Storage, storage_of
from .timeline import Timeline

__all__ = ["DEFAULT_MAX_OUTPUT_TOKENS", "MAX_VIEW_CONFLICTS", "Context", "Storage", "is_prompt_too_long"]

DEFAULT_MAX_OUTPUT_TOKENS = 4_096
P = ParamSpec("P")
R = TypeVar("R")


def _twin(method: Callable[Concatenate[Context, P], R]) -> Callable[Concatenate[Context, P], Coroutine[object, object, R]]:
    """``method`` for an asyncio loop: the same call, made off the loop (:mod:`.off_loop`), so the loop never waits
    for a store's write, an fsync, a round trip or the stages' work; a background summary it starts makes its model
    call with the summarizer's coroutine on the loop, and a step above the hard level waits for it off the loop."""
    async def twin(self: Context, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await self._background.off_loop(lambda: method(self, *args, **kwargs))

    twin.__doc__ = f":meth:`{method.__name__}` for an asyncio loop: the same call, made off the loop."
    return twin


def _default_summarizer() -> Summarizer:
    from ..summarizers.extractive import ExtractiveSummarizer

    return ExtractiveSummarizer()


class Context:
    """The context of one agent session, kept within its window.

    ``model`` names the model (its window, reply limit, prices and API: :mod:`contextfold.limits`), or
    ``window_tokens`` and ``max_output_tokens`` replace its figures. ``provider`` is the format requests are
    written in (by default the model's: :func:`~contextfold.limits.require_provider`). ``storage`` says where the
    session is kept (:class:`~.storage.Storage`: its transcript or store, its id, where oversized outputs go, what a
    failed write does; nothing by default). ``clock`` gives the time in seconds (``None``: the
    prompt cache is taken to be warm); ``pipeline`` the stages to run (:data:`~contextfold.pipeline.DEFAULT_PIPELINE`
    with stages added, replaced or removed); ``cache_diagnostics`` asks the provider why it missed a cached prefix.
    ``on_compaction`` is told before each automatic compaction, with its receipt, and in ``"ask"`` mode may
    decline it (:mod:`contextfold.pipeline.consent`); :attr:`last_receipt` is what the last one did. Every other
    keyword is :class:`~contextfold.errors.InvalidOption` (``transcript=``... names ``storage=Storage(...)``).
    """

    def __init__(self, model: str | None = None, *, window_tokens: int | None = None,
                 max_output_tokens: int | None = None, policy: Policy | None = None,
                 summarizer: Summarizer | None = None, storage: Storage | None = None, provider: str | None = None,
                 estimator: Estimator | None = None, clock: Callable[[], float | None] = time.time,
                 pipeline: Pipeline | None = None, cache_diagnostics: bool = False,
                 on_compaction: OnCompaction | Callable[[CompactionNotice], object] | None = None,
                 **removed: NoReturn) -> None:
        self.limits = resolve_limits(model, window_tokens, max_output_tokens,
                                     default_max_output_tokens=DEFAULT_MAX_OUTPUT_TOKENS)
        self.model, self.clock, self.window_tokens = model, clock, self.limits.context_window
        self.cache_diagnostics, self.on_compaction = cache_diagnostics, on_compaction
        self.provider = adapter_for(require_provider(model, provider, PROVIDERS)).name
        self.policy = (policy or Policy()).for_model(model).for_window(self.limits.context_window)
        self.estimator = estimator or Estimator()
        self.counter = TokenCounter(self.estimator)
        self.steward = Steward(self.policy, _checked(pipeline))
        self.summarizer = summarizer or _default_summarizer()
        self.events: list[Event] = []
        self._subscribers: list[Callable[[Event], None]] = []
        self._timeline = Timeline()  # the history, and the view that is sent
        self.storage = storage_of(storage, removed)  # Context(transcript=...) names Context(storage=Storage(...))
        self.session_id, self._journal = self.storage.open(self._emit)
        self._emit(self._journal.opening)
        self.results_dir = self.storage.results_folder(self._journal, self.session_id)
        self._parts = Parts(self.session_id, self.limits, self.policy, lambda: self.summarizer, self.estimator,
                            self.counter, self.steward, self._timeline, self._journal,
                            Flight(lambda: self._journal.session), clock, self._emit, self.results_dir,
                            consent_of(on_compaction))
        self._incoming = Incoming(self._parts, lambda: self.storage.blobs(self._journal))
        self._background = Background(self._parts)
        self._sending = Sending(self.provider, self.estimator.text, lambda: self.cache_diagnostics)
        self._step = Step(self._parts, self._background, self._sending)
        self._native = native.NativeCompaction(self._parts, self._step.commit)
        self.lookback = HistoryTools(lambda: self.history, self.view, self.estimator.text,
                                     lambda: self._journal.session, self.provider)

    @property
    def trigger_tokens(self) -> int:
        """Above this many prompt tokens a summary is due (policy override, else the dynamic threshold)."""
        return self._parts.trigger_tokens

    @property
    def hard_tokens(self) -> int:
        """Above this many prompt tokens a step waits for the summary running in the background."""
        return self._parts.hard_tokens

    @property
    def breaker_open(self) -> bool:
        """Automatic compaction has failed too often in a row and is off until a manual compact succeeds."""
        return self.steward.breaker_open

    @property
    def summary_running(self) -> bool:
        """A summary is being made in the background (the next step after it ends puts it in)."""
        return self._background.running

    @property
    def last_receipt(self) -> Receipt | None:
        """What the last compaction did, and how to read back each item it took out (:mod:`contextfold.pipeline.receipts`)."""
        return next(iter(receipts_in(e for e in reversed(self.events) if e.stage == "receipt")), None)

    @property
    def history(self) -> Conversation:
        """Every item ever added, in order (never changed; do not modify it)."""
        return self._timeline.history

    @property
    def transcript(self) -> StoredSession | None:
        """The stored session this context writes to; ``None`` when nothing is kept, or the disk failed."""
        return self._journal.session

    # ------------------------------------------------------------------ 1. add (.incoming)
    def add(self, messages: Sequence[Mapping[str, object]] | Sequence[Item] | Conversation, provider: str | None = None,
            *, system: object = None, tools: Sequence[Mapping[str, object]] | None = None) -> list[Item]:
        """Add messages (in ``provider``'s format, or items) and return the items stored, each in the transcript.
        ``system`` and ``tools`` set those parts of the header (:func:`.incoming.opening_system`)."""
        return self._incoming.add(messages, adapter_for(provider or self.provider), system, tools)

    def add_response(self, response: object, provider: str | None = None) -> list[Item]:
        """Add a model reply (an SDK response object or its dict) and record the usage it reports. A reply holding
        the provider's own compaction summarized what its request sent: those items leave the view (:mod:`.native`)."""
        reply = adapter_for(provider or self.provider).read_response(response)
        items = self.add(reply.conversation)
        if reply.usage is not None:
            self.record_usage(reply.usage)
        if reply.cache_miss is not None and self.cache_diagnostics and self._step.last_sent is not None:
            self.record_events([self._step.cache_miss(reply.cache_miss)])
        self._sending.last_response_id = reply.response_id or self._sending.last_response_id
        self._native.in_reply(items, self._step.last_sent)
        return items

    def start_compaction(self, *, instructions: str | None = None, shape: str | None = None,
                         provider: str | None = None) -> native.PendingCompaction:
        """Ask for the provider's own compaction of the view as it is now; the conversation goes on meanwhile.
        Send ``pending.call(client, model=..., max_tokens=...)``, then give the answer to :meth:`apply_compaction`."""
        name, view = adapter_for(provider or self.provider).name, self._timeline.view
        return native.PendingCompaction(name, self.render(view, name), view.snapshot(), instructions, shape)

    def apply_compaction(self, pending: native.PendingCompaction, response: object) -> list[Event]:
        """Swap a provider's compaction in: exactly the items it was asked on go, what it returned takes their
        place; or, if the answer holds none or the view no longer starts with those items, an event says why."""
        return self._native.apply(pending, response)

    def set_header(self, header: Header) -> None:
        """Replace the system prompt, tools and pinned items (recorded in the transcript)."""
        self._incoming.set_header(header)

    def set_system(self, static: str, dynamic: str | None = None) -> None:
        """Give the system prompt in two parts: ``static``, the same in every session (cached on a breakpoint of
        its own, so every session reads it from the cache), then ``dynamic`` (tool lists, the working directory)."""
        self._incoming.set_system(static, dynamic)

    def pin(self, text: str) -> None:
        """Keep ``text`` in every request, right after the system prompt, never compacted."""
        self._incoming.pin(text)

    # ------------------------------------------------------------------ 2. prepare (.step) and 3. send (.sending)
    def view(self) -> Conversation:
        """What would be sent now, before this call's stages run (do not modify it)."""
        return self._timeline.view

    def prepare(self, provider: str | None = None, *, reminders: Sequence[str] = ()) -> dict[str, Any]:
        """The request to send now, after whatever stages are due. ``reminders`` are texts for this request only,
        attached after its last message where they move no cached prefix (:mod:`contextfold.adapters.reminders`)."""
        return self._step.request(PREPARE, provider, reminders)

    def prepare_view(self) -> Conversation:
        """:meth:`prepare` without the wire format: the conversation that would be sent."""
        self._step.reserved_tokens = 0
        return self._step.run(PREPARE)[0]

    def at_turn_boundary(self) -> list[Event]:
        """Run the summary now if it is due (the agent loop calls this between turns)."""
        return self._step.run(TURN_BOUNDARY)[1]

    def compact(self, instructions: str | None = None) -> list[Event]:
        """Summarize now, whatever the size, with ``instructions`` for the summarizer."""
        return self._step.run(MANUAL, instructions=instructions)[1]

    def retry_request(self, error: BaseException | str, provider: str | None = None, *,
                      reminders: Sequence[str] = ()) -> dict[str, Any] | None:
        """After a provider error saying the prompt was too long, compact (once) and return a new request with the
        refused one's ``reminders``; ``None`` for any other error (the caller re-raises it)."""
        if adapter_for(provider or self.provider).prompt_too_long(error) is None:
            return None
        cause = Event("reactive", "prompt_too_long", detail=str(error)[:300])
        return self._step.request(RETRY, provider, reminders, first=cause)

    def settle(self) -> list[Event]:
        """Wait for the summary running in the background, if any, and put it in now; its events."""
        self._background.wait()
        return self._step.run(SETTLE)[1]

    def render(self, view: Conversation, provider: str | None = None, *,
               reminders: Sequence[str] = ()) -> dict[str, Any]:
        """``view`` as a request body for ``provider``, with ``reminders`` attached for this request only."""
        return self._sending.render(view, provider, reminders)

    # ------------------------------------------------------------------ 4. record
    def record_usage(self, usage: object, provider: str | None = None) -> None:
        """Take what the provider reported for the last request (a :class:`Usage`, or the provider's own usage
        object): it anchors the count, and a fall in cached tokens is reported as a cache break."""
        if not isinstance(usage, Usage):
            usage = adapter_for(provider or self.provider).read_usage(usage)
        self._emit(self._step.record_usage(usage))

    def subscribe(self, callback: Callable[[Event], None]) -> None:
        """Call ``callback`` with every event from now on."""
        self._subscribers.append(callback)

    def record_events(self, events: Iterable[Event]) -> None:
        """Record events from outside the pipeline (what a provider's own context management did), like any other."""
        self._parts.record(events)

    def _emit(self, events: Iterable[Event]) -> None:
        for event in events:
            self.events.append(event)
            self._journal.record(event)
            for callback in self._subscribers:
                callback(event)

    # ------------------------------------------------------------------ looking back (lookback.tools.HistoryTools)
    def search_history(self, query: str, limit: int = DEFAULT_LIMIT, *, regex: bool = False,
                       ignore_case: bool = False) -> str:
        return self.lookback.search(query, limit, regex=regex, ignore_case=ignore_case)

    def read_history(self, ref: str, lines: str | None = None) -> str:
        return self.lookback.read(ref, lines)

    def history_tools(self, provider: str | None = None) -> list[dict[str, Any]]:
        return self.lookback.definitions(provider)

    @staticmethod
    def history_tool_specs() -> tuple[ToolSpec, ...]:
        return HistoryTools.specs

    def call_history_tool(self, name: str, arguments: object) -> str:
        return self.lookback.call(name, arguments)

    def answer_tool_call(self, call: ToolCall) -> Item | None:
        """The result answering a call of a history tool or ``compact_context`` (``None`` for any other tool)."""
        if call.name == asked_compaction.COMPACT:
            return asked_compaction.answered(call, self.compact_context)
        return self.lookback.answer(call)

    # ------------------------------------------------------------------ compaction on demand (.step, .idle)
    def compact_context(self, focus: str) -> str:
        """The agent's ``compact_context`` tool: from ``Policy.compact_tool_min_trigger_fraction`` of the trigger the
        next request is compacted first, ``focus`` quoted for the summarizer; below it the answer gives the figures."""
        return self._step.asked.ask(focus, self.counter.count(self.view()), self.trigger_tokens, self.policy)

    def compact_tool(self, provider: str | None = None) -> dict[str, Any]:
        """The definition of ``compact_context`` in ``provider``'s tool format (:meth:`answer_tool_call` answers it)."""
        return asked_compaction.definition(adapter_for(provider or self.provider))

    def idle_compaction_at(self) -> float | None:
        """When (on ``clock``) to call :meth:`compact_if_idle`: just before the prompt cache of the last request
        expires (``None``: ``Policy.idle_compaction`` is off, no request was sent, or this idle period is decided)."""
        return self._step.idle_compaction_at()

    def compact_if_idle(self) -> list[Event]:
        """Compact now if idle until :meth:`idle_compaction_at` and a warm summary pays (an ``idle`` event says)."""
        return self._step.compact_if_idle()

    # ------------------------------------------------------------------ sessions
    def fork(self, *, session_id: str | None = None, keep_history: bool = False) -> Context:
        """A context for a subagent: same model, policy and header, its own budget, counter and transcript; empty
        (``keep_history=True`` copies the view). The parent sees only what the caller adds back."""
        return _forked(self, session_id, keep_history)

    def stats(self) -> dict[str, Any]:
        """Figures for a status line or a report."""
        return self._step.stats(self.events)

    @classmethod
    def resume(cls, store: Store | AsyncStore | str | Path, session_id: str, model: str | None = None,
               **options: Any) -> Context:
        """The context of a session recorded in ``store`` as it was: its history, and the view it was sending
        (:class:`~contextfold.errors.SessionNotFound` if it is not there). ``options`` are those of Context."""
        return _restored(cls, StoredSession.resume(store, session_id), model, **options)

    @classmethod
    def open(cls, store: Store | str | Path, session_id: str, model: str | None = None, **options: Any) -> Context:
        """The session ``session_id`` of ``store``, resumed as :meth:`resume` does if it is there, else started:
        what a service handling "the next message of session X" calls (two workers opening it at once share it)."""
        return _restored(cls, StoredSession.open(store, session_id), model, **options)

    @classmethod
    async def acreate(cls, model: str | None = None, **options: Any) -> Context:
        """``Context(model, **options)`` for an asyncio loop: the session is created in its store off the loop."""
        return await off_loop(lambda: cls(model, **options))

    @classmethod
    async def aresume(cls, store: Store | AsyncStore | str | Path, session_id: str, model: str | None = None,
                      **options: Any) -> Context:
        """:meth:`resume` for an asyncio loop: the session is read off the loop."""
        return await off_loop(lambda: cls.resume(store, session_id, model, **options))

    def close(self) -> None:
        """Write what waits and release the session; a summary still running is discarded (:meth:`settle` keeps
        it). :class:`~contextfold.errors.StoreUnavailable` (the session kept open) while the store refuses."""
        self._background.close()
        self._journal.close()

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    aadd, aadd_response, arecord_usage = _twin(add), _twin(add_response), _twin(record_usage)
    aprepare, aprepare_view, aat_turn_boundary = _twin(prepare), _twin(prepare_view), _twin(at_turn_boundary)
    acompact, asettle, aclose = _twin(compact), _twin(settle), _twin(close)
    asearch_history, aread_history = _twin(search_history), _twin(read_history)
    aanswer_tool_call, acompact_if_idle = _twin(answer_tool_call), _twin(compact_if_idle)


def _checked(pipeline: Pipeline | None) -> Pipeline:
    """``Context(pipeline=...)``, or the default; anything but a :class:`Pipeline` is :class:`InvalidPipeline`."""
    if pipeline is not None and not isinstance(pipeline, Pipeline):
        raise InvalidPipeline("pipeline", f"Context(pipeline=...) takes a Pipeline (DEFAULT_PIPELINE.add(...)), "
                              f"not {type(pipeline).__name__}")
    return pipeline or DEFAULT_PIPELINE


def _forked(parent: Context, session_id: str | None, keep_history: bool) -> Context:
    """:meth:`Context.fork`: the subagent's context, kept beside the parent's session under its own id."""
    storage = parent.storage.forked(parent.transcript, session_id or f"{parent.session_id}.sub-{new_id('f')[2:]}")
    child = Context(parent.model, window_tokens=parent.window_tokens,
                    max_output_tokens=parent.limits.max_output_tokens, policy=parent.policy,
                    summarizer=parent.summarizer, storage=storage, provider=parent.provider,
                    estimator=Estimator(parent.estimator.text, parent.estimator.costs), clock=parent.clock,
                    pipeline=parent.steward.pipeline, cache_diagnostics=parent.cache_diagnostics,
                    on_compaction=parent.on_compaction)
    child.set_header(parent.history.header)
    if keep_history:
        child.add(list(parent.view().items))
    return child


def _restored(cls: type[Context], session: StoredSession, model: str | None, *, storage: Storage | None = None,
              **options: Any) -> Context:
    """The context over ``session``, with its history and view restored (empty for a new session); ``storage``
    gives where outputs go and what a failed write does (:meth:`Storage.resumed`)."""
    try:
        context = cls(model, storage=storage_of(storage, {}).resumed(session), **options)
        context._emit(context._timeline.restore(session.restored, session.session_id))
        context._step.resumed()
        context.steward.resumed(context.counter.count(context.view()))  # the session priced what it sent as it went
    except BaseException:  # a failed resume releases the session (its lock) on every path
        session.close()
        raise
    return context
