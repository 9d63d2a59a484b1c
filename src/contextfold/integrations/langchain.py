"""LangChain v1: a middleware that sends every model call through contextfold, and a summarizer for LangChain's own.

:class:`ContextfoldMiddleware` is an ``AgentMiddleware`` for ``create_agent``.

* ``wrap_model_call`` (always): the request's messages go through a
  :class:`~contextfold.integrations.mirror.Mirror` kept per conversation
  (the one mechanism every integration uses to follow a framework's
  history), whose :class:`~contextfold.Context` runs the whole
  pipeline (oversized outputs cut, old ones cleared when it pays, a summary
  at a turn boundary over the trigger, every call kept with its result, the
  task kept) and repairs what the history itself breaks (a call left without
  its result by an interrupted run gets an error result in the request). The
  change is transient: the graph state keeps the raw history, and the
  context is kept between calls, so the request prefix stays byte-stable
  for the prompt cache until a stage decides a change pays. The usage the
  model reports anchors the token count.
* ``before_model`` (with ``persist=True``): when the state's history is over
  the trigger, its summarized span is replaced in the state itself (a
  ``RemoveMessage`` of everything, then the task, the summary, the restored
  files and the tail, with their ids), the way ``SummarizationMiddleware``
  persists its summaries; a checkpointed thread then stays small.

With ``history_tools=True`` the middleware also registers ``search_history``
and ``read_history`` (its ``tools``), answered from the Context of the
conversation that calls them, so the model can look back at what compaction
took out of its requests. Summaries and previews name those tools only when
the agent has them (``Policy.history_tools``): with ``history_tools=True``, or
when the model call's tools include them. ``compact_tool=True`` registers
``compact_context(focus)``: the conversation's next model call is compacted
first, with the agent's focus (:mod:`contextfold.pipeline.asked`).

:class:`ContextfoldSummary` is a plain callable ``(messages) -> str`` for
``SummarizationMiddleware(summarizer=...)``, for who keeps LangChain's
middleware (its trigger, its ``keep`` and its cut) and wants contextfold's
structured summary; pass ``trim_tokens_to_summarize=None`` so it sees every
message.

Messages are converted through :mod:`contextfold.adapters.langchain`;
contextfold's events go to ``on_event`` and the ``contextfold.integrations`` logger.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from ..adapters.langchain import from_langchain, message_id, to_langchain, tools_from_langchain, usage_from_langchain
from ..context import Context
from ..conversation import Conversation, Header, Item, JSONObject
from ..events import Event
from ..lookback.history import DEFAULT_LIMIT
from ..lookback.tools import READ, READ_SPEC, SEARCH, SEARCH_SPEC
from ..pipeline.asked import COMPACT, COMPACT_SPEC
from ..summarizers.base import Summarizer, SummaryRequest
from ..tokens import Estimator
from ._fold import Settings, SummaryStates, fold
from ._framework import missing_framework
from .lookback import answer, compact_function, offering
from .mirror import Mirror

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain.tools import ToolRuntime, tool
    from langchain_core.messages import AIMessage, AnyMessage, RemoveMessage, ToolMessage
    from langchain_core.tools import BaseTool
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
except ImportError as error:
    raise missing_framework("langchain", "langchain") from error

__all__ = ["ContextfoldMiddleware", "ContextfoldSummary"]

MAX_THREADS = 64
"""Conversations whose context is kept between calls (the least recently used is dropped beyond it)."""


class ContextfoldMiddleware(AgentMiddleware):
    """Keeps a LangChain agent's model calls within the window (see the module docstring).

    ``model`` and ``options`` are those of :class:`~contextfold.Context`
    (``window_tokens``, ``policy``, ``summarizer``...); ``on_event`` receives
    every contextfold event; ``persist=True`` also writes summaries into the state; ``history_tools=True``
    gives the agent ``search_history`` and ``read_history``, ``compact_tool=True`` ``compact_context``.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        on_event: Callable[[Event], None] | None = None,
        persist: bool = False,
        history_tools: bool = False,
        compact_tool: bool = False,
        **options: Any,
    ) -> None:
        super().__init__()
        # the tools it registers reach the model call's header, but not the state that ``persist`` summarizes
        self.settings = Settings(model, offering(options, history_tools), on_event)
        self.persist = persist
        self.states = SummaryStates()
        self._threads: OrderedDict[str | None, Mirror[AnyMessage]] = OrderedDict()
        self.tools: Sequence[BaseTool] = [*(self.history_tools() if history_tools else []),
                                          *([self.compact_tool()] if compact_tool else [])]

    def history_tools(self) -> list[BaseTool]:
        """``search_history`` and ``read_history`` as LangChain tools, answered from the Context of the
        conversation (the graph state's messages) that calls them."""

        def context_of(runtime: ToolRuntime) -> Context:
            return self._mirror(runtime.state["messages"]).context

        @tool(SEARCH, description=SEARCH_SPEC.description)
        def search_history(query: str, runtime: ToolRuntime, limit: int = DEFAULT_LIMIT, regex: bool = False,
                           ignore_case: bool = False) -> str:
            arguments: JSONObject = {"query": query, "limit": limit, "regex": regex, "ignore_case": ignore_case}
            return answer(lambda: context_of(runtime), SEARCH, arguments)

        @tool(READ, description=READ_SPEC.description)
        def read_history(ref: str, runtime: ToolRuntime, lines: str = "") -> str:
            return answer(lambda: context_of(runtime), READ, {"ref": ref, "lines": lines or None})

        return [search_history, read_history]

    def compact_tool(self) -> BaseTool:
        """``compact_context`` as a LangChain tool: the next model call of the conversation that calls it is
        compacted first, with its focus (transient, like every call's compaction; ``persist`` summarizes the state
        by the trigger only)."""

        @tool(COMPACT, description=COMPACT_SPEC.description)
        def compact_context(focus: str, runtime: ToolRuntime) -> str:
            return compact_function(lambda: self._mirror(runtime.state["messages"]).context)(focus)

        return compact_context

    # ------------------------------------------------------------------ transient, per call
    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse | AIMessage:
        mirror, prepared = self._prepare(request)
        response = handler(prepared)
        _record(mirror, response)
        return response

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse | AIMessage:
        mirror, prepared = self._prepare(request)
        response = await handler(prepared)
        _record(mirror, response)
        return response

    def context(self, messages: Sequence[AnyMessage]) -> Context | None:
        """The context kept for the conversation these messages belong to (for ``stats()`` and events)."""
        mirror = self._threads.get(messages[0].id if messages else None)
        return mirror.context if mirror is not None else None

    def _prepare(self, request: ModelRequest) -> tuple[Mirror[AnyMessage], ModelRequest]:
        mirror = self._mirror(request.messages)
        system = from_langchain([request.system_message] if request.system_message is not None else []).header
        header = Header(system.system, tools_from_langchain(request.tools), meta=system.meta)
        return mirror, request.override(messages=mirror.prepare(request.messages, header))

    def _mirror(self, messages: Sequence[AnyMessage]) -> Mirror[AnyMessage]:
        """The mirror of the conversation these messages belong to, known by the id of its first message."""
        key = messages[0].id if messages else None
        mirror = self._threads.get(key)
        if mirror is None:
            mirror = self._threads[key] = Mirror(self.settings.context, self._read, _write)
        self._threads.move_to_end(key)
        while len(self._threads) > MAX_THREADS:
            self._threads.popitem(last=False)
        return mirror

    def _read(self, messages: Sequence[AnyMessage], known: Iterable[str]) -> Conversation:
        """The state's messages as items: its system messages stay where they are, and a summary this
        middleware persisted is a summary again."""
        read = from_langchain(list(messages), known_call_ids=known)
        return Conversation([self.states.revive(item) for item in (*read.header.system, *read)])

    # ------------------------------------------------------------------ persisted, in the state
    def before_model(self, state: Any, runtime: object) -> dict[str, Any] | None:
        return self._persist(state["messages"]) if self.persist else None

    async def abefore_model(self, state: object, runtime: object) -> dict[str, Any] | None:
        return self.before_model(state, runtime)

    def _persist(self, messages: Sequence[AnyMessage]) -> dict[str, Any] | None:
        """The state update that replaces the summarized span, or ``None`` while the history is under the trigger.

        The fold names each item as the conversation's own context does (by the id of the message it was read
        from), so the ``read_history`` references of its receipt and summary are ones the history tools answer."""
        conversation = from_langchain(messages)
        known = self._threads.get(messages[0].id if messages else None)
        # the state holds no tools: the last model call's (which the summary may then name) stand for them
        header = conversation.header if known is None else \
            replace(conversation.header, tools=known.context.history.header.tools)
        conversation = conversation.with_items((self.states.revive(item) for item in conversation), header)
        probe = self.settings.context()
        reported = next((usage_from_langchain(m.usage_metadata).prompt_tokens for m in reversed(messages)
                         if isinstance(m, AIMessage) and m.usage_metadata), 0)
        if max(probe.counter.count(conversation), reported) <= probe.trigger_tokens:
            return None
        mirror = self._mirror(messages)  # the context the history tools answer from, which keeps what the fold drops
        mirror.sync(messages)
        conversation = conversation.with_items(_named_as(conversation, mirror.context.history), header)
        folded = fold(conversation, self.settings)
        if folded is None:
            return None
        self.states.remember(folded.summary)
        inserted = to_langchain(Conversation([folded.summary] + ([folded.restored] if folded.restored else [])))
        for message in inserted:
            message.id = str(uuid.uuid4())
        covered = {item.id for item in folded.span}
        lead = len(messages) - len(conversation)  # the leading system messages became the header
        kept: list[AnyMessage] = list(messages[:lead])
        for item, message in zip(conversation, messages[lead:]):
            if item.id not in covered:
                kept.append(message)
            elif inserted:
                kept.extend(inserted)
                inserted = []
        mirror.continue_from(kept)  # the conversation's context keeps its history: what the state drops stays readable
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *kept]}


def _named_as(conversation: Conversation, history: Conversation) -> list[Item]:
    """``conversation``'s items with the ids ``history`` gives the messages they were read from (matched by the
    message's LangChain id); an item whose message ``history`` does not hold keeps its own."""
    ids = {message: item.id for item in history if (message := message_id(item)) is not None}
    return [replace(item, id=ids.get(message_id(item) or "", item.id)) for item in conversation]


def _write(view: Conversation) -> list[AnyMessage]:
    """The view's messages without its header: LangChain passes the system message and tools apart."""
    return to_langchain(view.with_items(view.items, Header()))


def _record(mirror: Mirror[AnyMessage], response: object) -> None:
    """The usage the model reported anchors the context's count."""
    result = getattr(getattr(response, "model_response", response), "result", [response])
    for message in result:
        if isinstance(message, AIMessage) and message.usage_metadata:
            mirror.record_usage(usage_from_langchain(message.usage_metadata))


class ContextfoldSummary:
    """A summarizer for ``SummarizationMiddleware(summarizer=ContextfoldSummary())``: messages in, summary text out.

    It writes contextfold's structured summary (the extractive one by
    default, or ``summarizer``) within ``target_tokens``. LangChain chooses
    the messages; a span that begins with tool messages whose calls were cut
    off is read as it is.
    """

    def __init__(self, summarizer: Summarizer | None = None, *, target_tokens: int = 4_000) -> None:
        if summarizer is None:
            from ..summarizers.extractive import ExtractiveSummarizer

            summarizer = ExtractiveSummarizer()
        self.summarizer = summarizer
        self.target_tokens = target_tokens
        self.estimator = Estimator()

    def __call__(self, messages: list[AnyMessage]) -> str:
        answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
        conversation = from_langchain(messages, known_call_ids=answered)
        request = SummaryRequest(list(conversation), conversation.header, self.target_tokens, self.estimator.text)
        return self.summarizer.summarize(request).text
