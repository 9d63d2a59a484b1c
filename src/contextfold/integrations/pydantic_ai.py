"""contextfold for pydantic-ai (``python3 -m pip install -e '.[pydantic-ai]'``): a history processor.

``Agent(model, capabilities=[ContextfoldHistory(...).capability()])`` on
current releases (the ``ProcessHistory`` capability), or
``Agent(model, history_processors=[ContextfoldHistory(...)])`` on releases
that still take plain processors: the object is the processor either way.

Before every model request pydantic-ai hands over the run's messages; the new
ones go into a contextfold Context and the Context's view comes back: the
task, a summary of what was cut, the recent tail, every ``ToolCallPart`` with
its ``ToolReturnPart``, parts contextfold does not model (provider
compaction, built-in tools, files) as they came. pydantic-ai makes the
processed list the run's history, so ``result.all_messages()`` is the
compacted history, valid as the next run's ``message_history``. The usage of
each ``ModelResponse`` is recorded as it arrives, so the count stays anchored
on the provider's figures.

With ``history_tools=True`` the capability also gives the agent
``search_history`` and ``read_history`` (a toolset answered from this
Context), so it can look back at what compaction took out; ``toolset()`` is
the same toolset for ``Agent(toolsets=[...])``. Summaries and previews name
the history tools only when the agent has them: the capability reads the
run's tools; the bare processor sees messages only, so there
``history_tools=True`` says the agent has them. With ``compact_tool=True`` the
agent also gets ``compact_context(focus)``: the run's next model request is
compacted first, with its focus (:mod:`contextfold.pipeline.asked`).

Messages are read and written by :mod:`contextfold.adapters.pydantic_ai`;
pydantic-ai is imported only when the capability is asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..adapters.pydantic_ai import from_pydantic_ai, to_pydantic_ai, usage_from_pydantic_ai
from ..context import Context
from ..context.off_loop import off_loop
from ._framework import require_framework
from .lookback import compact_function, history_functions, offered_header, offering
from .mirror import Mirror, Mirrored

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

require_framework("pydantic_ai", "pydantic-ai")  # the framework is imported when used; its absence is told now


class ContextfoldHistory(Mirrored):
    """A pydantic-ai history processor backed by one contextfold Context (one conversation).

    ``model`` and ``options`` are those of :class:`~contextfold.Context`
    (``window_tokens``, ``policy``, ``summarizer``, ``transcript``...);
    ``history_tools`` adds the history tools to :meth:`capability` and has summaries and previews name them;
    ``compact_tool`` adds ``compact_context``.
    """

    def __init__(self, model: str | None = None, *, history_tools: bool = False, compact_tool: bool = False,
                 **options: Any) -> None:
        self.history_tools = history_tools
        self.compact_tool = compact_tool
        self.mirror: Mirror[Any] = Mirror(
            lambda: Context(model, **offering(options, history_tools)),  # a processor sees messages, not tools
            lambda messages, known: from_pydantic_ai(messages, known_call_ids=known),
            to_pydantic_ai,
        )
        self._recorded: ModelMessage | None = None  # the response whose usage was recorded last

    def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """The messages to send: contextfold's view of ``messages``."""
        return self._prepare(messages, None)

    def _prepare(self, messages: list[ModelMessage], tools: Iterable[str] | None) -> list[ModelMessage]:
        """The view of ``messages``; ``tools``, the names of the agent's tools when the run tells them."""
        latest = next((m for m in reversed(messages) if getattr(m, "kind", None) == "response"), None)
        usage = usage_from_pydantic_ai(latest) if latest is not None and latest is not self._recorded else None
        if usage is not None:
            self.mirror.record_usage(usage)
            self._recorded = latest
        return self.mirror.prepare(messages, None if tools is None else offered_header(self.mirror.context, tools))

    def capability(self) -> Any:
        """This processor as pydantic-ai's ``ProcessHistory`` capability (with the history tools' toolset when
        ``history_tools`` was asked for). As a capability it is handed the run's context, whose tool manager
        names the agent's tools: summaries and previews then name the history tools when the agent has them,
        however they were given (``toolset()`` in ``Agent(toolsets=[...])`` too)."""
        from pydantic_ai import RunContext
        from pydantic_ai.capabilities import CombinedCapability, ProcessHistory, Toolset

        async def process(ctx: object, messages: list[ModelMessage]) -> list[ModelMessage]:
            tools = getattr(getattr(ctx, "tool_manager", None), "tools", None)
            names = list(tools) if isinstance(tools, Mapping) else None
            # a coroutine, so pydantic-ai awaits it on its loop: the Context's work runs off that loop
            return await off_loop(lambda: self._prepare(messages, names))

        # pydantic-ai passes the run's context to a processor whose first parameter is annotated RunContext;
        # the annotation is given as the object, since this module's annotations are strings it cannot resolve
        process.__annotations__ = {"ctx": RunContext[Any], "messages": list[Any], "return": list[Any]}
        processor = ProcessHistory(process)
        offered = self.history_tools or self.compact_tool
        return CombinedCapability([processor, Toolset(self.toolset())]) if offered else processor

    def toolset(self) -> Any:
        """The tools asked for as a pydantic-ai ``FunctionToolset`` answered from this Context: ``search_history``
        and ``read_history`` (``history_tools``; both when neither was asked for), ``compact_context`` (``compact_tool``)."""
        from pydantic_ai.toolsets import FunctionToolset

        def context() -> Context:
            return self.mirror.context

        history = history_functions(context) if self.history_tools or not self.compact_tool else []
        return FunctionToolset([*history, *([compact_function(context)] if self.compact_tool else [])])
