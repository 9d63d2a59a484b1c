"""contextfold for Strands Agents (``python3 -m pip install -e '.[strands]'``): a ``ConversationManager``.

``Agent(conversation_manager=ContextfoldConversationManager(...))``. Strands
lets a conversation manager own ``agent.messages``, so this one does:

* before every model call (a ``BeforeModelCallEvent`` hook) the new messages
  go into a contextfold Context and ``agent.messages`` becomes the Context's
  view: the task, a summary, the recent tail, every tool call with its
  result. Long tool loops inside one invocation are compacted as they run;
* after every model call (``AfterModelCallEvent``) the usage Strands
  reports is recorded, so the count stays anchored on the provider's figure;
* ``apply_management`` (the end of an invocation) and ``reduce_context``
  without an error (Strands' proactive call) compact when over the trigger;
  ``reduce_context`` with an error (the model said the context overflowed)
  summarizes whatever the size, and re-raises the error if nothing could be
  cut;
* ``get_state``/``restore_from_session`` keep a session manager consistent:
  the state holds the view (the messages to prepend) and, as
  ``removed_message_count``, how many of the session's stored messages that
  view stands for, so a restored agent has exactly the history it had.

With ``history_tools=True`` the manager also registers ``search_history``
and ``read_history`` with the agent it manages (when the agent is
initialized), so the model can look back at what compaction took out;
``history_tools()`` gives the same tools for ``Agent(tools=[...])``. Summaries
and previews name the history tools only when the agent has them, either way
(the agent's tool names are the Context's header: ``Policy.history_tools``).
``compact_tool=True`` registers ``compact_context(focus)`` the same way (or
``compact_tool()`` for ``Agent(tools=[...])``): the next model call is
compacted first, with the agent's focus (:mod:`contextfold.pipeline.asked`).

Messages are read and written by :mod:`contextfold.adapters.strands`. Strands
is imported lazily: importing this module needs only contextfold.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..adapters.strands import from_strands, to_strands, usage_from_strands
from ..context import Context
from ..conversation import Conversation, Header, JSONObject, JSONValue
from ._framework import require_framework
from .lookback import compact_function, history_functions, offered_header
from .mirror import Mirror, Mirrored

if TYPE_CHECKING:
    from strands import Agent
    from strands.hooks import AfterModelCallEvent, BeforeModelCallEvent
    from strands.types.tools import AgentTool

require_framework("strands", "strands")  # the framework is imported when used; its absence is told now


def _base() -> type:
    from strands.agent.conversation_manager import ConversationManager

    return ConversationManager


def __getattr__(name: str) -> Any:
    """``ContextfoldConversationManager`` is built on first access, when Strands is imported."""
    if name == "ContextfoldConversationManager":
        cls = _manager_class()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Manager(Mirrored):
    """What the Strands manager does with its Mirror, apart from the ``ConversationManager`` interface (which
    calls its Strands base class, only known once Strands is imported: :func:`_manager_class`)."""

    offers_history_tools: bool
    offers_compact_tool: bool
    removed_message_count: int  # the Strands base class's: stored session messages the history stands for
    _covered: int

    def history_tools(self) -> list[AgentTool]:
        """``search_history`` and ``read_history`` as Strands tools answered from this manager's Context."""
        from strands import tool

        return [tool(function) for function in history_functions(lambda: self.mirror.context)]

    def offered_tools(self) -> list[AgentTool]:
        """The tools this manager registers with its agent: the history tools, ``compact_context``, as asked."""
        return [*(self.history_tools() if self.offers_history_tools else []),
                *([self.compact_tool()] if self.offers_compact_tool else [])]

    def compact_tool(self) -> AgentTool:
        """``compact_context`` as a Strands tool: the agent's next model call is compacted first, with its focus."""
        from strands import tool

        return tool(compact_function(lambda: self.mirror.context))

    def _offered(self, agent: Agent) -> Header:
        """The Context's header with the agent's tools, by name: summaries and previews name the history
        tools only when the agent has them (registered by ``history_tools=True`` or given in ``tools``)."""
        return offered_header(self.mirror.context, agent.tool_names)

    def _before_model_call(self, event: BeforeModelCallEvent) -> None:
        self._adopt(event.agent, self.mirror.prepare(event.agent.messages, self._offered(event.agent)))

    def _after_model_call(self, event: AfterModelCallEvent) -> None:
        response = getattr(event, "stop_response", None)
        usage = usage_from_strands(response.message) if response is not None else None
        if usage is not None:
            self.mirror.record_usage(usage)

    def _adopt(self, agent: Any, messages: list[Any]) -> None:
        """Make ``messages`` the agent's history; the session's stored messages so far are now stood for."""
        self._covered = self.mirror.last_read + (0 if self.mirror.fresh else self._covered)
        self.removed_message_count = self._covered
        agent.messages[:] = messages


def _manager_class() -> type:
    class ContextfoldConversationManager(_Manager, _base()):  # type: ignore[misc]
        """A Strands ``ConversationManager`` backed by a contextfold Context (see the module docstring).

        ``model`` and ``options`` are those of :class:`~contextfold.Context` (``window_tokens``, ``policy``...);
        ``history_tools`` registers the history tools with the agent, ``compact_tool`` ``compact_context``.
        """

        def __init__(self, model: str | None = None, *, history_tools: bool = False, compact_tool: bool = False,
                     **options: Any) -> None:
            super().__init__()
            self.offers_history_tools, self.offers_compact_tool = history_tools, compact_tool
            self._make_context = lambda: Context(model, **options)
            self.mirror: Mirror[Any] = Mirror(self._make_context, _read, to_strands)
            self._covered = 0  # stored session messages the mirror's last view stands for

        # -------------------------------------------------------------- hooks
        def register_hooks(self, registry: Any, **kwargs: Any) -> None:
            from strands.hooks import AfterModelCallEvent, AgentInitializedEvent, BeforeModelCallEvent

            super().register_hooks(registry, **kwargs)
            registry.add_callback(BeforeModelCallEvent, self._before_model_call)
            registry.add_callback(AfterModelCallEvent, self._after_model_call)
            if offered := self.offered_tools():
                registry.add_callback(AgentInitializedEvent,
                                      lambda event: event.agent.tool_registry.process_tools(offered))

        # -------------------------------------------------------------- the ConversationManager interface
        def apply_management(self, agent: Any, **kwargs: Any) -> None:
            """At the end of an invocation: summarize if the history is over the trigger."""
            self._adopt(agent, self.mirror.compacted(agent.messages, header=self._offered(agent)))

        def reduce_context(self, agent: Any, e: Exception | None = None, **kwargs: Any) -> None:
            """Proactive (``e`` is None): as :meth:`apply_management`. Reactive: summarize now, or re-raise ``e``."""
            if e is None:
                self.apply_management(agent)
                return
            before = list(agent.messages)
            after = self.mirror.compacted(before, force=True, header=self._offered(agent))
            if after == before:
                raise e
            self._adopt(agent, after)

        def get_state(self) -> dict[str, JSONValue]:
            return {
                **super().get_state(),
                "removed_message_count": self._covered,
                "messages": copy.deepcopy(self.mirror.returned),
            }

        def restore_from_session(self, state: dict[str, Any]) -> list[Any] | None:
            """The messages to put before the session's messages from ``removed_message_count`` on (the view)."""
            super().restore_from_session(state)
            messages = list(state.get("messages") or [])
            self.mirror = Mirror(self._make_context, _read, to_strands)
            self.mirror.adopt(messages)
            self._covered = self.removed_message_count
            return messages

    return ContextfoldConversationManager


def _read(messages: Sequence[JSONObject], known: Iterable[str]) -> Conversation:
    return from_strands(list(messages), known_call_ids=known)
