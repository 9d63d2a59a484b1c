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
an edit pays, whether a summary is due, what a failure costs) lives in
:mod:`contextfold.pipeline`; this class keeps the session's state and runs
the four entry points (:meth:`prepare_view`, :meth:`at_turn_boundary`,
:meth:`compact`, :meth:`retry_request`) down the one guarded path,
:meth:`_step`.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from .adapters import adapter_for, is_prompt_too_long
from .adapters.usage import any_usage
from .codec import header_from_dict, item_from_dict, item_to_dict
from .conversation import Conversation, Header, Item, Summary, Text, new_id
from .errors import (
    ContextfoldError,
    SessionExists,
    SessionNotFound,
    TranscriptCorrupt,
    TranscriptError,
    TranscriptLocked,
    TranscriptUnsafe,
    ViewConflict,
)
from .limits import ModelLimits, model_limits
from .pipeline.base import Budget, Event, Policy
from .pipeline.invariants import InvariantCheck
from .pipeline.persist import offload
from .pipeline.step import MANUAL, PREPARE, RETRY, TURN_BOUNDARY, Occasion, Steward
from .redaction import describe, redact_item
from .rendering import Renderer
from .stores import Store, StoredSession
from .stores.base import VIEW_EVENT
from .summarizers.base import Summarizer
from .tokens import Estimator, TokenCounter
from .transcript import Restored, Transcript
from .usage import Usage

logger = logging.getLogger(__name__)
T = TypeVar("T")

MAX_VIEW_CONFLICTS = 8
"""How many times in a row a view change that another writer got in ahead of is re-decided before it is raised."""
DEFAULT_MAX_OUTPUT_TOKENS = 4_096


def _default_summarizer() -> Summarizer:
    from .summarizers.extractive import ExtractiveSummarizer

    return ExtractiveSummarizer()


class Context:
    """The context of one agent session, kept within its window.

    ``model`` names the model (its window and reply limit come from
    :mod:`contextfold.limits`), or give ``window_tokens`` (and
    ``max_output_tokens``) directly. ``transcript`` is a folder (a transcript
    named after ``session_id`` is created or resumed there), a
    :class:`~contextfold.transcript.Transcript`, or ``None`` to keep nothing
    on disk. ``store`` is a session store or its URL (``sqlite:///sessions.db``,
    ``postgresql://...``, ``redis://...``, a folder; see :mod:`contextfold.stores`):
    a new session ``session_id`` is created there (:meth:`resume` continues
    one), and any number of processes may then add to it. ``results_dir`` is
    where oversized outputs are persisted (default: next to the transcript or
    the SQLite file, else nowhere: they are only cut).
    ``clock`` gives the time in seconds (``None`` when unknown: the prompt
    cache is then taken to be warm).
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
        store: Store | str | Path | None = None,
        session_id: str | None = None,
        results_dir: str | Path | None = None,
        provider: str = "anthropic",
        estimator: Estimator | None = None,
        clock: Callable[[], float | None] = time.time,
    ) -> None:
        if model is None and window_tokens is None:
            raise ContextfoldError("Context needs a model name or window_tokens")
        limits = model_limits(model) if model is not None else ModelLimits(window_tokens, DEFAULT_MAX_OUTPUT_TOKENS)  # type: ignore[arg-type]
        self.limits = ModelLimits(window_tokens or limits.context_window, max_output_tokens or limits.max_output_tokens)
        self.model = model
        self.policy = policy or Policy()
        self.summarizer = summarizer or _default_summarizer()
        self.provider = adapter_for(provider).name
        self.session_id = session_id or new_id("session")
        self.clock = clock
        self.estimator = estimator or Estimator()
        self.counter = TokenCounter(self.estimator)
        self.steward = Steward(self.policy)
        self.history = Conversation()
        self.events: list[Event] = []
        self._subscribers: list[Callable[[Event], None]] = []
        self._by_id: dict[str, Item] = {}  # history items by id, to record views by reference
        self._view = Conversation()  # what is sent: appended to as items arrive, replaced when a stage fires
        self._processed = 0  # view items the cheap stages have seen
        self._check = InvariantCheck()
        self._renderers: dict[str, Renderer] = {}
        self._last_sent: Conversation | None = None
        self._last_request_s: float | None = None
        self._requests = 0
        self._transcript_down = False  # the disk refused a write; the records wait in the transcript for it
        self.transcript = self._open_transcript(transcript, store)
        folder = self.transcript.folder if self.transcript is not None else None
        default_results = folder / f"{self.session_id}-results" if folder is not None else None
        self.results_dir = Path(results_dir) if results_dir is not None else default_results

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

        ``system`` and ``tools`` set the header (Anthropic style; for OpenAI
        formats a leading system message does the same). Every item is in
        the transcript before this returns. The cost does not grow with the
        history: results are matched against the history's live set of call ids.
        """
        self._follow()  # results may answer calls another process added: know them first
        conversation = self._to_conversation(messages, provider, system, tools)
        header = conversation.header
        if header.system or header.tools or header.pinned:
            self.set_header(header)
        items = [self._admitted(item) for item in conversation.items]
        seqs = self._write(lambda transcript: transcript.append_items(items)) if items else None
        if seqs and self.transcript is not None and self.transcript.behind:  # others wrote first: fold in order
            return self._follow(dict(zip(seqs, items)))
        return [self._take(item) for item in items]

    def _admitted(self, item: Item) -> Item:
        """``item`` as the transcript and the history keep it: its secrets taken out when the policy says
        so, and an oversized output saved to disk with only its preview kept (:func:`~.pipeline.persist.offload`)."""
        if self.policy.redact_secrets:
            item, found = redact_item(item)
            if found:
                logger.info("redacted %s from item %s", describe(found), item.id)
                self._emit([Event("redact", "redacted", (item.id,), detail=f"redacted {describe(found)}",
                                  data=dict(found))])
        item, events = offload(item, self.policy, self.results_dir, self.estimator.item)
        self._emit(events)
        return item

    def _take(self, item: Item) -> Item:
        """Put a recorded item into the history and the view."""
        stored = self.history.append(item)
        self._by_id[item.id] = stored
        self._view.append(stored)
        return stored

    def _follow(self, own: Mapping[int, Item] | None = None) -> list[Item]:
        """Fold in what other processes wrote to the session since it was last read, in the session's order.

        ``own`` are the items this context just appended, by sequence number:
        they are taken as they are, and returned as stored. Another writer's
        items join the history and the view; its view change replaces the view.
        """
        own = own or {}
        pulled = self._write(lambda transcript: transcript.pull()) or []
        if self.transcript is None:  # the store failed: what was appended here still goes on in memory
            return [self._take(item) for item in own.values()]
        taken = []
        for entry in pulled:
            record = entry.record
            if record["type"] == "item":
                mine = record["seq"] in own
                item = self._take(own[record["seq"]] if mine else item_from_dict(record["item"]))
                if mine:
                    taken.append(item)
            elif entry.mine:
                continue
            elif record["type"] == "header_update":
                self.history.header = self._view.header = header_from_dict(record["header"])
            elif record["type"] == "event" and record["kind"] == VIEW_EVENT:
                self._view = self._checkpointed_view(record["data"], record["item_count"])
                self._processed = len(self._view) - (len(self.history) - record["item_count"])
        return taken

    def add_response(self, response: Any, provider: str | None = None) -> list[Item]:
        """Add a model reply (an SDK response object or its dict) and record the usage it reports."""
        reply = adapter_for(provider or self.provider).read_response(response)
        items = self.add(reply.conversation)
        if reply.usage is not None:
            self.record_usage(reply.usage)
        return items

    def set_header(self, header: Header) -> None:
        """Replace the system prompt, tools and pinned items (recorded in the transcript)."""
        if header == self.history.header:
            return
        self.history.header = header
        self._view.header = header
        self._write(lambda transcript: transcript.update_header(header))

    def pin(self, text: str) -> None:
        """Keep ``text`` in every request, right after the system prompt, never compacted."""
        header = self.history.header
        self.set_header(replace(header, pinned=(*header.pinned, Item("user", (Text(text),)))))

    def _to_conversation(self, messages: Any, provider: str | None, system: Any, tools: Any) -> Conversation:
        if isinstance(messages, Conversation):
            return messages
        messages = list(messages)
        if messages and all(isinstance(m, Item) for m in messages):
            return Conversation(messages)
        known = self.history.call_ids
        return adapter_for(provider or self.provider).read(messages, system=system, tools=tools, known_call_ids=known)

    # ------------------------------------------------------------------ 2. prepare
    def view(self) -> Conversation:
        """What would be sent now, before this call's stages run (do not modify it)."""
        return self._view

    def prepare(self, provider: str | None = None) -> dict[str, Any]:
        """The request to send now (``system``/``messages``/``tools`` for Anthropic; ``messages``/``tools``
        for OpenAI Chat; ``input``/``tools`` for Responses), after whatever stages are due."""
        return self.render(self.prepare_view(), provider)

    def prepare_view(self) -> Conversation:
        """:meth:`prepare` without the wire format: the conversation that would be sent."""
        return self._step(PREPARE)[0]

    def at_turn_boundary(self) -> list[Event]:
        """Run the summary now if it is due (the agent loop calls this between turns)."""
        return self._step(TURN_BOUNDARY)[1]

    def compact(self, instructions: str | None = None) -> list[Event]:
        """Summarize now, whatever the size, with ``instructions`` for the summarizer."""
        return self._step(MANUAL, instructions=instructions)[1]

    def retry_request(self, error: BaseException | str, provider: str | None = None) -> dict[str, Any] | None:
        """After a provider error: if it says the prompt was too long, compact and return a new request.

        Returns ``None`` for any other error (the caller re-raises it). Call it
        once per failed request: one reactive compaction, one retry. A failing
        summarizer is survived here as in :meth:`prepare`: the request comes back
        uncompacted, and the failure is an event.
        """
        if not is_prompt_too_long(error):
            return None
        cause = Event("reactive", "prompt_too_long", detail=str(error)[:300])
        return self.render(self._step(RETRY, first=cause)[0], provider)

    def _step(self, occasion: Occasion, *, first: Event | None = None, **budget: Any) -> tuple[Conversation, list[Event]]:
        """The one path of every entry point: what other writers added is folded in, the pipeline decides
        (guarded), a request is checked, the view is committed, the request counted, and the events go out.

        A view change another writer got in ahead of is refused by the store
        (nothing written, nothing counted or emitted yet): the session is read
        again and the step decides afresh, up to :data:`MAX_VIEW_CONFLICTS`
        times, each refusal an event; then the conflict is raised.
        """
        for attempt in range(MAX_VIEW_CONFLICTS + 1):
            self._follow()
            view, events = self.steward.run(self._view, self._budget(**budget), occasion)
            events = [first, *events] if first is not None else events
            if occasion.sends:
                view, repaired = self._check.ready(view)
                events.extend(repaired)
            try:
                self._commit(view)
            except ViewConflict as conflict:
                self._emit([Event("store", "conflict", detail=str(conflict))])
                if attempt == MAX_VIEW_CONFLICTS:
                    raise
                continue
            if occasion.sends:
                self._count_request(view, changed=any(e.items for e in events))
            self._emit(events)
            return view, events
        raise AssertionError("unreachable")

    def _budget(self, **overrides: Any) -> Budget:
        now = self.clock()
        idle = now - self._last_request_s if now is not None and self._last_request_s is not None else None
        return Budget(
            policy=self.policy,
            window_tokens=self.window_tokens,
            trigger_tokens=self.trigger_tokens,
            count=self.counter.count,
            count_item=self.estimator.item,
            new_from=self._processed,
            requests_sent=self._requests,
            idle_s=idle,
            now_s=now,
            results_dir=self.results_dir,
            summarizer=self.summarizer,
            count_text=self.estimator.text,
            growth_tokens_per_request=self.steward.growth_tokens_per_request,
            **overrides,
        )

    def _count_request(self, view: Conversation, *, changed: bool) -> None:
        """``view`` goes out now: keep what the usage reported for it will be compared with."""
        self.steward.sent(self.counter.count(view), changed=changed)
        self._last_sent = view.snapshot()
        self._requests += 1
        self._last_request_s = self.clock()

    def _commit(self, view: Conversation) -> None:
        """``view`` is what is sent from now on; a changed view is checkpointed in the transcript.

        The checkpoint names the one it replaces (``base``); the store refuses it
        with :class:`~contextfold.errors.ViewConflict` if that is no longer the
        current one, and the view stays as it was.
        """
        if view is not self._view:
            self._write(lambda transcript: transcript.commit_view({"items": self._view_entries(view),
                                                                   "base": transcript.revision}))
        self._view = view
        self._processed = len(view)

    def _checkpointed_view(self, data: Mapping[str, Any], item_count: int) -> Conversation:
        """The view a checkpoint recorded, followed by the items added after it."""
        view = [self._by_id[e["ref"]] if "ref" in e else item_from_dict(e["item"]) for e in data["items"]]
        view.extend(self.history.items[item_count:])
        return Conversation(view, self.history.header)

    def _view_entries(self, view: Conversation) -> list[dict[str, Any]]:
        """A view as :meth:`resume` reads it back: history items by id; summaries, restored files
        and shortened outputs in full."""
        return [
            {"ref": item.id} if self._by_id.get(item.id) is item else {"item": item_to_dict(item)} for item in view.items
        ]

    # ------------------------------------------------------------------ 3. send
    def render(self, view: Conversation, provider: str | None = None) -> dict[str, Any]:
        """``view`` as a request body for ``provider`` (incrementally: only new messages are rendered)."""
        adapter = adapter_for(provider or self.provider)
        renderer = self._renderers.get(adapter.name)
        if renderer is None:
            renderer = self._renderers[adapter.name] = Renderer(adapter)
        return renderer.render(view)

    # ------------------------------------------------------------------ 4. record
    def record_usage(self, usage: Usage | Mapping[str, Any] | Any) -> None:
        """Take what the provider reported for the last request (anchors the count, detects cache breaks)."""
        if not isinstance(usage, Usage):
            usage = any_usage(usage)
        if self._last_sent is not None:
            self.counter.record_usage(usage, self._last_sent)
        cache_break = self.steward.cache_break(usage)
        if cache_break is not None:
            self._emit([cache_break])

    def subscribe(self, callback: Callable[[Event], None]) -> None:
        """Call ``callback`` with every event from now on."""
        self._subscribers.append(callback)

    def record_events(self, events: Iterable[Event]) -> None:
        """Record events from outside the pipeline (what a provider's own context management did), like any other."""
        self._emit(events)

    def _emit(self, events: Iterable[Event]) -> None:
        for event in events:
            self.events.append(event)
            if event.stage != "transcript":
                self._write(lambda transcript, event=event: transcript.append_event(event.stage, event.to_dict()))
            for callback in self._subscribers:
                callback(event)

    def _write(self, write: Callable[[StoredSession], T]) -> T | None:
        """Every transcript read and write goes through here. When the disk or database fails, writes
        stop and the session goes on in memory (nothing is dropped from the view), with an event that
        says so. A view conflict is no failure: it is raised for :meth:`_step` to resolve."""
        if self.transcript is None:
            return None
        try:
            result = write(self.transcript)
        except ViewConflict:
            raise
        except TranscriptError as error:
            self.transcript = None
            logger.warning("transcript writes stopped for session %s: %s", self.session_id, error)
            self._emit([Event("transcript", "failed", detail=f"transcript writes stopped: {error}")])
            return None
        self._watch_disk()
        return result

    def _watch_disk(self) -> None:
        """Say once when the disk starts refusing records (they wait in the transcript, written first
        once it accepts again), and once when every waiting record is on disk."""
        waiting = self.transcript.waiting if self.transcript is not None else 0
        if waiting and not self._transcript_down:
            self._transcript_down = True
            logger.warning("session %s: the disk refuses transcript writes; %d record(s) wait in memory and are "
                           "retried on the next write", self.session_id, waiting)
            self._emit([Event("transcript", "waiting", detail=f"the disk refused {waiting} record(s); "
                                                               "they are written first once it accepts")])
        elif not waiting and self._transcript_down:
            self._transcript_down = False
            logger.warning("session %s: transcript writes resumed; every waiting record is on disk", self.session_id)
            self._emit([Event("transcript", "recovered", detail="the disk accepted the waiting records")])

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
        )
        child.set_header(self.history.header)
        if keep_history:
            child.add(list(self._view.items))
        return child

    def stats(self) -> dict[str, Any]:
        """Figures for a status line or a report."""
        tokens = self.counter.count(self.view())
        by_stage = Counter(f"{e.stage}:{e.action}" for e in self.events)
        return {
            "session_id": self.session_id,
            "requests": self._requests,
            "items_in_history": len(self.history),
            "items_in_view": len(self._view),
            "tokens": tokens,
            "window_tokens": self.window_tokens,
            "trigger_tokens": self.trigger_tokens,
            "utilization": tokens / self.window_tokens,
            "summaries": sum(1 for item in self._view if any(isinstance(b, Summary) for b in item.blocks)),
            "events": dict(by_stage),
            "tokens_saved": sum(max(e.saved_tokens, 0) for e in self.events if e.items),
            "consecutive_failures": self.steward.failures,
            "breaker_open": self.breaker_open,
            "last_stage": next((e.stage for e in reversed(self.events) if e.items), None),
        }

    @classmethod
    def resume(cls, store: Store | str | Path, session_id: str, model: str | None = None, **options: Any) -> Context:
        """The context of a session recorded in ``store``, as it was: its history, and the view it was sending.

        ``store`` is a transcript folder, a store URL or a :class:`~contextfold.stores.Store`.
        A session that is not there is :class:`~contextfold.errors.SessionNotFound`,
        never a new empty one. ``model`` and ``options`` are those of
        :class:`Context` (the transcript keeps the conversation, not the configuration).
        """
        session = StoredSession.resume(store, session_id)
        try:
            context = cls(model, transcript=session, session_id=session_id, **options)
            context._restore(session.restored)
        except BaseException:  # a failed resume releases the session (its lock) on every path
            session.close()
            raise
        return context

    def _restore(self, restored: Restored) -> None:
        """Take the history and the last usable view checkpoint from what the session held."""
        history = restored.conversation
        self.history = history.with_items(history.items)
        self._by_id = {item.id: item for item in self.history}
        report = restored.report
        for skipped in report.skipped:
            aside = f"; set aside in {report.damaged_saved_to}" if skipped is report.damaged and report.damaged_saved_to else ""
            logger.warning("resuming session %s: skipped %s%s", self.session_id, skipped, aside)
            self._emit([Event("transcript", "skipped", detail=f"skipped {skipped}{aside}")])
        self._view, after = Conversation(self.history.items, self.history.header), 0
        for checkpoint in reversed([e for e in restored.events if e.kind == VIEW_EVENT]):
            try:
                self._view, after = self._checkpointed_view(checkpoint.data, checkpoint.item_count), checkpoint.item_count
                break
            except (KeyError, TypeError, ValueError, AttributeError, ContextfoldError) as error:
                logger.warning("resuming session %s: view checkpoint %d unusable (%s); trying an older one",
                               self.session_id, checkpoint.seq, error)
                self._emit([Event("transcript", "checkpoint_skipped",
                                  detail=f"view checkpoint {checkpoint.seq}: {type(error).__name__}: {error}")])
        self._processed = len(self._view) - (len(self.history) - after)
        self.steward.resumed(self.counter.count(self._view))  # the session priced what it sent as it went

    def _open_transcript(self, transcript: Transcript | StoredSession | str | Path | None,
                         store: Store | str | Path | None) -> StoredSession | None:
        """The session to write to. A fault of the disk or database is survived (an event, in memory
        from then on); asking for a session that is, or is not, there is the caller's error."""
        if transcript is not None and store is not None:
            raise ContextfoldError("give a transcript or a store, not both")
        if isinstance(transcript, StoredSession):
            return transcript
        try:
            if isinstance(transcript, Transcript):
                return StoredSession.adopt(transcript)
            if transcript is not None:  # a folder: a new session, never one already recorded there
                return StoredSession.create(transcript, self.session_id)
            if store is not None:
                return StoredSession.create(store, self.session_id)
        except (SessionExists, SessionNotFound, TranscriptLocked, TranscriptUnsafe, TranscriptCorrupt):
            raise
        except TranscriptError as error:
            logger.warning("session %s: could not open the transcript: %s", self.session_id, error)
            self.events.append(Event("transcript", "failed", detail=f"could not open the transcript: {error}"))
        return None

    def close(self) -> None:
        """Flush and release the transcript (another process may then resume the session).

        The file is released even when the disk still refuses waiting records;
        their loss is logged and recorded as an event.
        """
        session, self.transcript = self.transcript, None
        if session is None:
            return
        try:
            session.close()
        except TranscriptError as error:
            self._emit([Event("transcript", "lost", detail=str(error))])

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
