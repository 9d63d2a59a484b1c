"""contextfold for the OpenAI Agents SDK (``python3 -m pip install -e '.[openai-agents]'``).

Two pieces, used together or apart:

* :class:`ContextfoldInputFilter`, a ``RunConfig(call_model_input_filter=...)``:
  before every model call it adds the new Responses input items to a
  contextfold Context and returns the Context's view instead of the full list.
  Nothing is persisted: the runner, its ``RunResult`` and any Session keep the
  raw items. Its :attr:`~ContextfoldInputFilter.hooks` (``Runner.run(...,
  hooks=...)``) pass each response's usage back, so the token count stays
  anchored on what the provider reported.
* :class:`ContextfoldSession`, a wrapper around any ``Session`` (SQLite,
  Redis, OpenAI Conversations...) that adds ``run_compaction``: the runner
  calls it after a turn that ends without local tool outputs (the end of a
  run), and it replaces the stored history by contextfold's compacted view
  when the history is over the trigger (or always, with ``force``). The next
  run starts from the task, a summary and the recent tail.

Items go through the Responses adapter (``adapter_for("responses")``) unchanged unless
a stage changed them: reasoning, ``compaction`` items from OpenAI's server and
other item types contextfold does not model pass through as they came.
The SDK is imported lazily, on first use.

The agent can look back at what compaction took out of its requests:
``Agent(tools=[..., *compactor.history_tools()])`` adds ``search_history``
and ``read_history`` as function tools answered from the calling agent's Context.
Summaries and previews name them only when the agent has them: the filter
sees the agent's tools; a :class:`ContextfoldSession` is told with
``history_tools=True``. ``Agent(tools=[..., compactor.compact_tool()])`` lets the agent ask for a
compaction itself (``compact_context(focus)``): the agent's next model call is compacted first.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..adapters import adapter_for
from ..context import Context
from ..context.off_loop import off_loop
from ..conversation import Conversation, JSONObject, JSONValue
from ..errors import InvalidToolArguments
from ..events import Event
from ..pipeline.asked import COMPACT, COMPACT_SPEC, focus_of
from ..pipeline.receipts import Receipt, receipts_in
from ..usage import Usage
from ._framework import require_framework
from .lookback import answer, offered_header, offering
from .mirror import Mirror, Mirrored

if TYPE_CHECKING:
    from agents import FunctionTool
    from agents.usage import Usage as AgentsUsage

require_framework("agents", "openai-agents")  # the framework is imported when used; its absence is told now

logger = logging.getLogger(__name__)


_RESPONSES = adapter_for("responses")


def _read(items: Sequence[JSONObject], known: Iterable[str]) -> Conversation:
    return _RESPONSES.read(list(items), known_call_ids=known)


def _write(conversation: Conversation) -> list[JSONObject]:
    items: list[JSONObject] = _RESPONSES.write(conversation)[_RESPONSES.messages_key]  # the Responses input list
    return items


def _mirror(make_context: Callable[[], Context]) -> Mirror[Any]:
    return Mirror(make_context, _read, _write)


def _context_factory(model: str | None, options: dict[str, Any]) -> Callable[[], Context]:
    """A Context per conversation, with the caller's model and options; Responses is the format."""
    return lambda: Context(model, provider="responses", **options)


def _usage(usage: AgentsUsage) -> Usage:
    """The SDK's ``Usage`` object, read as the Responses usage it was summed from."""
    details = getattr(usage, "input_tokens_details", None)
    return _RESPONSES.read_usage({
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "input_tokens_details": {"cached_tokens": getattr(details, "cached_tokens", 0) or 0},
    })


class ContextfoldInputFilter:
    """``call_model_input_filter`` that sends contextfold's view of the run's input (one Context per agent).

    ``model`` and ``options`` are those of :class:`~contextfold.Context`
    (``window_tokens``, ``policy``, ``summarizer``, ``transcript``...).
    """

    def __init__(self, model: str | None = None, **options: Any) -> None:
        self._make_context = _context_factory(model, options)
        self.mirrors: dict[str, Mirror[Any]] = {}
        self._hooks: Any = None

    async def __call__(self, data: Any) -> Any:
        """The SDK awaits the filter on its loop: the Context's work (its store's writes and round trips
        included) runs off that loop (:meth:`Mirror.aprepare`)."""
        from agents.run_config import ModelInputData

        mirror = await off_loop(lambda: self.mirror(data.agent.name))  # a new agent's Context opens its store
        # the agent's tools, by name: summaries and previews name the history tools only when it has them
        offered = offered_header(mirror.context, (getattr(tool, "name", "") for tool in data.agent.tools))
        return ModelInputData(input=await mirror.aprepare(data.model_data.input, offered),
                              instructions=data.model_data.instructions)

    def mirror(self, agent_name: str) -> Mirror[Any]:
        """The mirror (and so the Context: ``.context``) of one agent's model calls."""
        if agent_name not in self.mirrors:
            self.mirrors[agent_name] = _mirror(self._make_context)
        return self.mirrors[agent_name]

    def history_tools(self) -> list[FunctionTool]:
        """``search_history`` and ``read_history`` as the SDK's ``FunctionTool`` s (add them to the agent's tools):
        each answers from the Context of the agent that calls it."""
        from agents import FunctionTool

        def invoke(name: str) -> Callable[[object, str], Awaitable[str]]:
            async def on_invoke_tool(tool_context: object, arguments: str) -> str:
                mirror = self._calling(tool_context)
                if mirror is None:
                    return f"{name} failed: no model call has been made yet, so there is no history"
                try:
                    given = json.loads(arguments or "{}")
                except ValueError as error:
                    return f"{name} failed: the arguments are not JSON: {error}"
                arguments_given = given if isinstance(given, dict) else {"": given}
                # an offloaded output is read back from the store: off the loop
                return await off_loop(lambda: answer(lambda: mirror.context, name, arguments_given))

            return on_invoke_tool

        return [FunctionTool(name=spec.name, description=spec.description or "", params_json_schema=dict(spec.parameters),
                             on_invoke_tool=invoke(spec.name), strict_json_schema=False)
                for spec in Context.history_tool_specs()]

    def compact_tool(self) -> FunctionTool:
        """``compact_context`` as the SDK's ``FunctionTool`` (add it to the agent's tools): the next model call of the
        agent that calls it is compacted first, with the focus it gave (:mod:`contextfold.pipeline.asked`)."""
        from agents import FunctionTool

        async def on_invoke_tool(tool_context: object, arguments: str) -> str:
            mirror = self._calling(tool_context)
            if mirror is None:
                return f"{COMPACT} failed: no model call has been made yet, so there is nothing to compact"
            try:
                return mirror.context.compact_context(focus_of(json.loads(arguments or "{}")))
            except (ValueError, InvalidToolArguments) as error:  # not JSON, or not what compact_context takes
                return f"{COMPACT} failed: {error}"

        return FunctionTool(name=COMPACT, description=COMPACT_SPEC.description or "",
                            params_json_schema=dict(COMPACT_SPEC.parameters), on_invoke_tool=on_invoke_tool,
                            strict_json_schema=False)

    def _calling(self, tool_context: object) -> Mirror[Any] | None:
        """The mirror of the agent a tool call came from (the only one, for a context that does not say)."""
        agent = getattr(tool_context, "agent", None)
        return self.mirror(agent.name) if agent is not None else next(iter(self.mirrors.values()), None)

    @property
    def events(self) -> list[Event]:
        """Every event of every agent's Context, in order per agent."""
        return [event for mirror in self.mirrors.values() for event in mirror.events]

    @property
    def receipts(self) -> list[Receipt]:
        """Every agent's compactions' receipts (:mod:`contextfold.pipeline.receipts`), in order per agent."""
        return receipts_in(self.events)

    @property
    def hooks(self) -> Any:
        """``RunHooks`` that record each model response's usage in the agent's Context (pass to ``Runner.run``)."""
        if self._hooks is None:
            from agents.lifecycle import RunHooks

            owner = self

            class UsageHooks(RunHooks[Any]):
                async def on_llm_end(self, context: object, agent: Any, response: Any) -> None:
                    await owner.mirror(agent.name).arecord_usage(_usage(response.usage))

            self._hooks = UsageHooks()
        return self._hooks


class ContextfoldSession(Mirrored):
    """A ``Session`` that stores through ``session`` and compacts what it stored with contextfold.

    The four Session methods pass through; ``run_compaction(args)`` reads the
    stored items, compacts them (over the trigger, or whenever
    ``args["force"]``) and, if anything changed, replaces the stored items;
    should writing the new items fail, the old ones are put back and the error
    raised. ``model`` and ``options`` are those of :class:`~contextfold.Context`. ``history_tools=True``
    says the agent has ``history_tools()``: the session sees no tools, so only then do the summaries it
    stores name ``search_history``/``read_history``.
    """

    def __init__(self, session: Any, model: str | None = None, *, history_tools: bool = False,
                 **options: Any) -> None:
        self.session = session
        self.session_id = session.session_id
        self.session_settings = getattr(session, "session_settings", None)
        self.mirror = _mirror(_context_factory(model, offering(options, history_tools)))

    async def get_items(self, limit: int | None = None) -> list[Any]:
        items: list[JSONValue] = await self.session.get_items(limit)
        return items

    async def add_items(self, items: list[Any]) -> None:
        await self.session.add_items(items)

    async def pop_item(self) -> Any:
        return await self.session.pop_item()

    async def clear_session(self) -> None:
        await self.session.clear_session()

    async def run_compaction(self, args: JSONObject | None = None) -> None:
        """Compact the stored history (the runner calls this after a turn; ``force`` compacts whatever the size)."""
        stored = await self.session.get_items()
        if not stored:
            return
        compacted = await self.mirror.acompacted(stored, force=bool((args or {}).get("force")))
        if compacted == stored:
            return
        await self.session.clear_session()
        try:
            await self.session.add_items(compacted)
        except Exception:
            logger.warning("storing the compacted history of %s failed; the previous history is put back", self.session_id)
            await self.session.clear_session()
            await self.session.add_items(stored)
            raise
