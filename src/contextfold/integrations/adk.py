"""Google ADK: contextfold writes the summaries of ADK's own event compaction.

ADK compacts a session by appending a *compaction event*: the raw events stay
in the session (append-only), and every request built afterwards reads the
summary in place of the events whose timestamps fall in its range. Which
events are offered, and when, is ADK's business (``EventsCompactionConfig``:
a token threshold checked before every model call and after each invocation,
or a sliding window of invocations); what the summary says and which of the
offered events it replaces is the summarizer's. :class:`ContextfoldSummarizer`
is that summarizer:

* it reads the offered events through :func:`contextfold.adapters.gemini.from_adk_events`;
* it keeps the task (the first user message) and a recent tail within the
  policy's budget out of the range, cutting only between whole tool rounds
  (:mod:`contextfold.boundary`), so the range never separates a function
  call from its response;
* it summarizes the rest with contextfold's summarizer (the offline
  extractive one by default; an LLM summarizer falls back to it), an earlier
  summary included, so facts carry forward;
* it returns one compaction event whose content (role ``user``, as
  contextfold injects summaries; see :data:`SUMMARY_ROLE`) holds the summary
  and the files the agent was working with.

:func:`compaction_config` gives the ``EventsCompactionConfig`` to pass to
``App``: the trigger is contextfold's for the window, and ADK keeps no raw
events of its own (``event_retention_size=0``) because the cut chooses the
tail. Every compaction emits contextfold's events to ``on_event`` and the
``contextfold.integrations`` logger.

:func:`history_tools` gives the agent ``search_history`` and
``read_history`` as ADK ``FunctionTool`` s (``LlmAgent(tools=[...,
*history_tools()])``): they read the session's own events (ADK keeps every
raw event; a compaction only hides a range of them from requests), search
the ones a compaction hid, and name each by a ref made from its event's id,
stable across calls. Summaries name them only with
``ContextfoldSummarizer(history_tools=True)`` (a summarizer sees no tools);
the offload plugin's previews, only when the request offers them.

:func:`compact_tool` gives the agent ``compact_context(focus)``: the tool
appends a compaction event made with the agent's focus (over the events
before its call), so the next request sends the summary in their place.

:class:`ContextfoldOffload` (``App(plugins=[...])``) offloads a tool output
too large to send whole, as a :class:`~contextfold.Context` does when an item
is added (:func:`~contextfold.pipeline.stages.persist.offload`, the same
policy): the output becomes a blob of the contextfold session named after
the ADK session, in the plugin's store (a folder or a store URL), and the
function response the session records, and every request sends, is its
preview, ending with the ref to pass to ``read_history`` (when the agent has
it; else with nothing it could not call). The ref and the
blob's digest ride in that event's state delta (:data:`OFFLOADED_KEY`), so
``history_tools(offload)`` reads the whole output back from any process
that opens the same ADK session and store.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..adapters.gemini import adk_event_id, from_adk_events, from_genai, tools_from_genai
from ..context.off_loop import off_loop
from ..conversation import Conversation, Header, Item, JSONObject, JSONValue, Offloaded
from ..errors import ContextfoldError, HistoryQueryError, InvalidToolArguments, StorageError
from ..events import Event
from ..lookback import history as lookback
from ..lookback.offloaded import offloaded_output
from ..lookback.tools import READ, READ_SPEC, SEARCH, SEARCH_SPEC, answer
from ..pipeline.asked import COMPACT, COMPACT_SPEC, Asked
from ..pipeline.base import Policy
from ..pipeline.stages.persist import offload
from ..stores import StoredSession
from ..stores.session import Location
from ..tokens import Estimator
from ._fold import Folded, Settings, SummaryStates, fold, log, report
from ._framework import missing_framework
from .lookback import offering, tool_doc

try:
    from google.adk.agents.callback_context import CallbackContext
    from google.adk.apps.app import EventsCompactionConfig
    from google.adk.apps.base_events_summarizer import BaseEventsSummarizer
    from google.adk.events.event import Event as AdkEvent
    from google.adk.events.event_actions import EventActions, EventCompaction
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.plugins.base_plugin import BasePlugin
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.function_tool import FunctionTool
    from google.adk.tools.tool_context import ToolContext
    from google.genai import types
except ImportError as error:
    raise missing_framework("google.adk", "adk") from error

ADK_EXPERIMENTAL = r"\[EXPERIMENTAL\] EventsCompactionConfig:"
"""ADK's warning on every ``EventsCompactionConfig`` made (compaction is experimental in ADK): contextfold makes
the config for the user, who asked for compaction by using this module, so :func:`compaction_config` silences it."""

__all__ = ["ContextfoldOffload", "ContextfoldSummarizer", "compact_tool", "compaction_config", "history_tools"]

SUMMARY_ROLE = "user"
"""The role of the summary's content. Not ``model`` (what ADK's own summarizer writes): the kept tail usually
opens with the model's function call, and Gemini rejects a function call turn that follows a model turn."""


class ContextfoldSummarizer(BaseEventsSummarizer):
    """An ADK events summarizer that compacts the way contextfold does (see the module docstring).

    ``model`` and ``options`` are those of :class:`~contextfold.Context`
    (``window_tokens``, ``policy``, ``summarizer``...); ``on_event`` receives
    every contextfold event; ``instructions`` go to the summarizer. ``history_tools=True`` says the agent has
    :func:`history_tools`: a summarizer sees events, not the agent's tools, so only then do its summaries end
    by naming ``search_history``/``read_history``.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        on_event: Callable[[Event], None] | None = None,
        instructions: str | None = None,
        history_tools: bool = False,
        **options: Any,
    ) -> None:
        self.settings = Settings(model, offering(options, history_tools), on_event)
        self.instructions = instructions
        self.states = SummaryStates()
        self.compactions = 0

    @property
    def trigger_tokens(self) -> int:
        """Prompt tokens above which contextfold would summarize (the threshold :func:`compaction_config` sets)."""
        return self.settings.context().trigger_tokens

    async def maybe_summarize_events(self, *, events: list[AdkEvent]) -> AdkEvent | None:
        return await self._summarized(events, self.instructions)

    async def _summarized(self, events: list[AdkEvent], instructions: str | None) -> AdkEvent | None:
        """The compaction event of ``events`` summarized with ``instructions`` (``None``: nothing to summarize)."""
        conversation = self._conversation(events)
        folded = await off_loop(lambda: fold(conversation, self.settings, instructions))  # ADK's loop goes on
        if folded is None:
            return None
        span = _event_range(events, folded, conversation)
        if span is None:
            return None
        self.states.remember(folded.summary)
        self.compactions += 1
        content = types.Content(role=SUMMARY_ROLE, parts=[types.Part(text=text) for text in folded.texts])
        compaction = EventCompaction(start_timestamp=span[0], end_timestamp=span[1], compacted_content=content)
        return AdkEvent(author="user", actions=EventActions(compaction=compaction), invocation_id=AdkEvent.new_id())

    def _conversation(self, events: Sequence[AdkEvent]) -> Conversation:
        """The offered events as a conversation; the summary ADK puts first (its seed) is a summary again."""
        answered = {r.id for event in events for r in event.get_function_responses() if r.id}
        conversation = from_adk_events(events, known_call_ids=answered)  # a range may open with a call's response
        # the ids the history tools give these items (session_history), so the receipt's refs and the summary's are theirs
        items = _with_event_refs(conversation, _offloaded(events))
        return conversation.with_items(self.states.revive(item) for item in items)


def _event_range(events: Sequence[AdkEvent], folded: Folded, conversation: Conversation) -> tuple[float, float] | None:
    """The timestamps the compaction covers: from the span's first event to its last.

    ADK hides every raw event whose timestamp falls in the range, so the
    range must stop before the first kept event; when two events share a
    timestamp across the cut, no compaction is made (and a warning says why).
    """
    covered = {item.id for item in folded.span}
    stamps = [item.timestamp for item in folded.span if item.timestamp is not None]
    kept = [item.timestamp for item in conversation if item.id not in covered and item.timestamp is not None]
    if not stamps:
        return None
    start, end = min(stamps), max(stamps)
    if any(start <= stamp <= end for stamp in kept):
        log.warning("no compaction: an event kept after the cut has the timestamp of a summarized one")
        return None
    return start, end


def compaction_config(summarizer: ContextfoldSummarizer, **options: Any) -> EventsCompactionConfig:
    """The ``EventsCompactionConfig`` for ``App``: ADK offers every event once the prompt passes contextfold's trigger.

    ``options`` override the config's fields (``token_threshold``, or the
    sliding-window pair ``compaction_interval``/``overlap_size``).
    """
    fields: dict[str, Any] = {"token_threshold": summarizer.trigger_tokens, "event_retention_size": 0, **options}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=ADK_EXPERIMENTAL, category=UserWarning)
        return EventsCompactionConfig(summarizer=summarizer, **fields)


def compact_tool(summarizer: ContextfoldSummarizer) -> FunctionTool:
    """``compact_context`` as an ADK function tool (``LlmAgent(tools=[..., compact_tool(summarizer)])``, with the
    summarizer the App's :func:`compaction_config` holds): from the policy's share of the trigger (the last prompt
    ADK recorded) it appends a compaction event made with the agent's focus, covering the session's events before
    the call, so the next request sends the summary in their place (:mod:`contextfold.pipeline.asked`)."""

    async def compact_context(focus: str, tool_context: ToolContext) -> str:
        session = tool_context.session
        probe = summarizer.settings.context()
        asked = Asked()
        try:
            answer = asked.ask(focus, _last_prompt_tokens(session.events), probe.trigger_tokens, probe.policy)
        except InvalidToolArguments as error:
            return f"{COMPACT} failed: {error}"
        if asked.pending is None:
            return answer
        event = await summarizer._summarized(_uncompacted(session.events, tool_context.function_call_id),
                                             asked.pending.instructions)
        service = getattr(getattr(tool_context, "_invocation_context", None), "session_service", None)
        if event is None or service is None:
            return f"{COMPACT}: there is nothing to summarize before this call yet"
        await service.append_event(session=session, event=event)
        return answer

    compact_context.__doc__ = tool_doc(COMPACT_SPEC)
    return FunctionTool(compact_context)


def _last_prompt_tokens(events: Sequence[AdkEvent]) -> int:
    """The prompt size ADK recorded last (0 before any model call, or right after a compaction)."""
    for event in reversed(events):
        if event.actions and event.actions.compaction:
            return 0
        usage = event.usage_metadata
        if usage is not None and usage.prompt_token_count is not None:
            return usage.prompt_token_count
    return 0


def _uncompacted(events: Sequence[AdkEvent], call_id: str | None) -> list[AdkEvent]:
    """What a compaction made now covers, as ADK offers it to a summarizer: the last compaction's summary (its
    seed), then the raw events after it, up to the event holding the call ``call_id`` (the call and its answer stay)."""
    last = next((e.actions.compaction for e in reversed(events) if e.actions and e.actions.compaction), None)
    end = last.end_timestamp if last is not None and last.end_timestamp is not None else float("-inf")
    raw = []
    for event in events:
        if call_id and any(call.id == call_id for call in event.get_function_calls()):
            break
        if not (event.actions and event.actions.compaction) and event.timestamp > end:
            raw.append(event)
    if last is None or last.compacted_content is None or last.start_timestamp is None:
        return raw
    return [AdkEvent(timestamp=last.start_timestamp, author="user", content=last.compacted_content), *raw]


OFFLOADED_KEY = "contextfold.offloaded."
"""The session-state key (then the function call's id) under which :class:`ContextfoldOffload` records an
offloaded output's ref and blob: it lands in the state delta of the event that holds the preview."""


class ContextfoldOffload(BasePlugin):
    """An ADK plugin that offloads tool outputs too large to send whole (see the module docstring).

    ``store`` is where the blobs go: a folder (a JSONL transcript folder: one file per blob) or a store URL
    (``sqlite:///...``, ``postgresql://...``, ``redis://...``), one contextfold session per ADK session, so
    ``sessions prune`` removes them with it. ``policy`` says what is too large and how long the preview
    is (:class:`~contextfold.pipeline.base.Policy`, as ``Context`` takes it); ``on_event`` hears each offload.
    """

    def __init__(self, store: Location, *, policy: Policy | None = None,
                 on_event: Callable[[Event], None] | None = None) -> None:
        super().__init__(name="contextfold_offload")
        self.store = store
        self.policy = policy or Policy()
        self.on_event = on_event
        self._estimator = Estimator()
        self._sessions: dict[str, StoredSession] = {}
        self._offered: dict[str, Header] = {}

    def blobs(self, session_id: str) -> StoredSession | None:
        """The contextfold session keeping ``session_id``'s offloaded outputs (created or continued on first
        use); ``None``, and a warning, when the store cannot be opened now (the next call tries again)."""
        if session_id not in self._sessions:
            try:
                self._sessions[session_id] = StoredSession.open(self.store, session_id)
            except (StorageError, OSError) as error:
                log.warning("session %s: the offload store cannot be opened; outputs stay whole: %s", session_id, error)
                return None
        return self._sessions[session_id]

    async def before_model_callback(self, *, callback_context: CallbackContext,
                                    llm_request: LlmRequest) -> LlmResponse | None:
        """Remember the tools this session's request offers: a preview names ``search_history``/``read_history``
        only when the agent has them (``Policy.history_tools``); the call whose output it previews follows."""
        self._offered[callback_context.session.id] = Header(tools=tools_from_genai(llm_request.config.tools))
        return None

    async def after_tool_callback(self, *, tool: BaseTool, tool_args: JSONObject, tool_context: ToolContext,
                                  result: JSONObject) -> dict[str, JSONValue] | None:
        """The preview in place of an oversized ``result`` (``None``: ADK keeps the result as it is)."""
        call_id = tool_context.function_call_id or ""
        item = _output_item(call_id, tool.name, result)
        if item is None:
            return None
        session_id = tool_context.session.id
        header = self._offered.get(session_id, Header())
        kept, events = await off_loop(  # the blob is written to the store off ADK's loop
            lambda: offload(item, self.policy, header, None, self._estimator.item, self.blobs(session_id)))
        for event in events:
            report(event)
            if self.on_event is not None:
                self.on_event(event)
        output = kept.tool_result
        if kept is item or output is None:
            return None  # not oversized, or kept whole: the store refused the blob (logged)
        where = _offloaded_record(kept.provenance.offloaded)
        if where:
            tool_context.state[OFFLOADED_KEY + call_id] = {"ref": kept.id, **where}
        return {"error" if output.is_error else "result": output.text}

    async def close(self) -> None:
        sessions = list(self._sessions.values())
        self._sessions.clear()
        for session in sessions:
            await off_loop(session.close)


def _output_item(call_id: str, name: str, result: object) -> Item | None:
    """A tool's result as the tool item the session's history will read (its text as Gemini's adapter reads a
    function response); ``None`` for a result that is not JSON (media parts: ADK sends them its own way)."""
    response = result if isinstance(result, dict) else {"result": result}
    content = {"role": "user", "parts": [{"function_response": {"id": call_id, "name": name, "response": response}}]}
    try:
        items = from_genai([content], known_call_ids=[call_id]).items
    except (ContextfoldError, TypeError, ValueError):
        return None
    return items[0] if len(items) == 1 and items[0].tool_result is not None else None


def session_history(events: Sequence[AdkEvent]) -> tuple[Conversation, frozenset[str]]:
    """A session's raw events as a history whose item ids come from the events' ids (``it_<event id>_<n>``, the
    same on every call; an offloaded output's is the ref its preview names), and the ids of the items no
    compaction hides (the requests still hold them)."""
    read = from_adk_events([event for event in events if not (event.actions and event.actions.compaction)])
    items = _with_event_refs(read, _offloaded(events))
    ranges = [(e.actions.compaction.start_timestamp, e.actions.compaction.end_timestamp) for e in events
              if e.actions and e.actions.compaction]
    hidden = {item.id for item in items if item.timestamp is not None
              and any(start <= item.timestamp <= end for start, end in ranges if start is not None and end is not None)}
    return Conversation(items, read.header), frozenset(item.id for item in items if item.id not in hidden)


def _with_event_refs(read: Conversation, offloaded: Mapping[str, tuple[str, Offloaded | None]]) -> list[Item]:
    """``read``'s items with ids from their events' ids (``it_<event id>_<n>``, the same on every reading; an
    offloaded output's is the ref its preview names): the history tools and a compaction's receipt name them alike."""
    counts: dict[str, int] = {}
    items = []
    for item in read:
        event = adk_event_id(item)
        counts[event] = counts.get(event, 0) + 1
        result = item.tool_result
        record = offloaded.get(result.call_id) if result is not None else None
        ref, where = record if record is not None else (f"it_{event}_{counts[event]}", None)
        provenance = item.provenance if where is None else replace(item.provenance, offloaded=where)
        items.append(Item(item.role, item.blocks, id=ref, timestamp=item.timestamp, meta=item.meta,
                          provenance=provenance))
    return items


def _offloaded_record(where: Offloaded | None) -> dict[str, str]:
    """Where an output is kept, as the session state records it (``blob``, ``saved_to``)."""
    if where is None:
        return {}
    return {key: value for key, value in (("blob", where.blob), ("saved_to", where.saved_to)) if value is not None}


def _offloaded(events: Sequence[AdkEvent]) -> dict[str, tuple[str, Offloaded | None]]:
    """What :class:`ContextfoldOffload` recorded, by function call id: the ref, and where the output is kept."""
    found: dict[str, tuple[str, Offloaded | None]] = {}
    for event in events:
        for key, value in (event.actions.state_delta.items() if event.actions else ()):
            if not key.startswith(OFFLOADED_KEY) or not isinstance(value, dict) or not isinstance(value.get("ref"), str):
                continue
            blob, saved_to = (value.get(name) for name in ("blob", "saved_to"))
            where = Offloaded(blob if isinstance(blob, str) else None, saved_to if isinstance(saved_to, str) else None)
            found[key[len(OFFLOADED_KEY):]] = (value["ref"], None if where == Offloaded() else where)
    return found


def history_tools(offload: ContextfoldOffload | None = None) -> list[FunctionTool]:
    """``search_history`` and ``read_history`` as ADK function tools over the calling session's events; with the
    ``offload`` plugin the App runs, they read offloaded outputs whole from its store."""

    def call(tool_context: ToolContext, name: str, arguments: JSONObject) -> str:
        history, in_view = session_history(tool_context.session.events)
        blobs = offload.blobs(tool_context.session.id) if offload is not None else None

        def whole(item: Item) -> str | None:
            return offloaded_output(item, blobs)

        try:
            return answer(name, arguments,
                          lambda query, **kw: lookback.search_history(history, query, in_view=in_view,
                                                                      read_offloaded=whole, **kw).text,
                          lambda ref, lines: lookback.read_history(history, ref, lines, read_offloaded=whole))
        except HistoryQueryError as error:
            return f"{name} failed: {error}"

    # coroutines, so ADK awaits them on its loop: an offloaded output is read back from the store off that loop
    async def search_history(query: str, tool_context: ToolContext, limit: int = lookback.DEFAULT_LIMIT,
                             regex: bool = False, ignore_case: bool = False) -> str:
        arguments: JSONObject = {"query": query, "limit": limit, "regex": regex, "ignore_case": ignore_case}
        return await off_loop(lambda: call(tool_context, SEARCH, arguments))

    async def read_history(ref: str, tool_context: ToolContext, lines: str = "") -> str:
        return await off_loop(lambda: call(tool_context, READ, {"ref": ref, "lines": lines or None}))

    search_history.__doc__, read_history.__doc__ = tool_doc(SEARCH_SPEC), tool_doc(READ_SPEC)
    return [FunctionTool(search_history), FunctionTool(read_history)]
