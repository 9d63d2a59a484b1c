"""The agent loop: ask the model, run the tools it calls, repeat until it answers.

This is the module to read to wire contextfold into a loop of your own; it
uses only the public API. The :class:`~contextfold.Context` holds the
session. Each step is ``prepare()`` (compaction happens in there, at a turn
boundary, when the request outgrows its trigger), one model call,
``add_response()`` (the reply, and the usage that anchors the token count),
then the tool results as one ``add()``. A prompt the provider finds too long
gets one reactive compaction and one retry. The ``task`` tool runs this same
loop for a subagent on a forked context, which compacts on its own; the
parent only sees the subagent's final answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from contextfold import Context, ContextfoldError, Event, Header, Item, Text, ToolCall, ToolResult, Usage
from contextfold.adapters import adapter_for
from contextfold.pipeline.asked import COMPACT, COMPACT_SPEC
from contextfold.redaction import redact_credentials

from .models import ModelClient
from .tools import Tool, ToolError, Workspace

SYSTEM_PROMPT = """You are a coding agent working in the folder {root}.
Use the tools to read, search, edit and run code there; keep a todo list for multi-step work; hand
self-contained investigations to the task tool. When the work is done, answer with a short report."""

SUBAGENT_PROMPT = """You are a subagent of a coding agent, working in the folder {root}.
Do the task you are given with the tools, then answer with exactly what the task asks you to report:
the agent that called you sees only your final answer."""


class TurnLimit(ContextfoldError):
    """The model was still calling tools after the allowed number of requests."""


class Display(Protocol):
    """Where the loop reports what happens; ``agent`` names who (``agent``, ``task-1``, ...)."""

    def reply(self, agent: str, items: list[Item]) -> None: ...

    def tool_result(self, agent: str, call: ToolCall, result: ToolResult) -> None: ...

    def event(self, agent: str, event: Event) -> None: ...


def header(prompt: str, tools: Mapping[str, Tool]) -> Header:
    """The part of every request no compaction touches: the system prompt and the tool definitions."""
    return Header(system=(Item("system", (Text(prompt),)),), tools=tuple(tool.spec for tool in tools.values()))


def with_history_tools(context: Context, tools: Mapping[str, Tool]) -> dict[str, Tool]:
    """``tools``, the two tools that search and read ``context``'s own history (what compaction took out), and
    ``compact_context``, with which the model asks for a compaction of ``context`` when it finished a subtask."""
    own = {spec.name: Tool(spec, partial(_history_call, context, spec.name)) for spec in context.history_tool_specs()}
    return {**tools, **own, COMPACT: Tool(COMPACT_SPEC, context.compact_context)}


def _history_call(context: Context, name: str, **arguments: object) -> str:
    return context.call_history_tool(name, arguments)


@dataclass
class Agent:
    """A coding agent on one :class:`~contextfold.Context`; ``usage`` lists what every model call reported."""

    context: Context
    model: ModelClient
    workspace: Workspace
    display: Display
    max_turns: int = 50
    usage: list[Usage] = field(default_factory=list)
    subagents: int = 0

    def __post_init__(self) -> None:
        self.tools = self.workspace.tools(subagent=self.delegate)
        self.header = header(SYSTEM_PROMPT.format(root=self.workspace.root), with_history_tools(self.context, self.tools))
        self.attach(self.context)

    def attach(self, context: Context) -> None:
        """Make ``context`` the session's context (a fresh one after ``/clear``), with the agent's header."""
        context.set_header(self.header)
        context.subscribe(lambda event: self.display.event("agent", event))
        self.context = context

    def ask(self, text: str) -> str:
        """One user turn: ``text`` in, the model's final answer out (tools run in between)."""
        self.context.add([Item("user", (Text(text),))])
        return self.run(self.context, self.tools, "agent")

    def run(self, context: Context, tools: Mapping[str, Tool], name: str) -> str:
        """Request, run the calls, add the results; until a reply calls no tool. Its text is the answer.

        Besides ``tools``, the model may search and read ``context``'s own history (``search_history``,
        ``read_history``): what a summary left out is still there to look up.
        """
        tools = with_history_tools(context, tools)
        for _ in range(self.max_turns):
            reply = context.add_response(self.complete(context))
            self.display.reply(name, reply)
            calls = [call for item in reply for call in item.tool_calls]
            if not calls:
                return "\n".join(item.text for item in reply if item.text).strip()
            results: list[ToolResult] = []
            try:
                for call in calls:
                    results.append(self.execute(tools, call))
                    self.display.tool_result(name, call, results[-1])
            finally:  # interrupted or not, every call gets its result: the conversation stays valid
                results += [
                    ToolResult(call.id, "interrupted before it ran", is_error=True) for call in calls[len(results) :]
                ]
                context.add([Item("tool", (result,)) for result in results])
        raise TurnLimit(f"{name} was still calling tools after {self.max_turns} requests")

    def complete(self, context: Context) -> object:
        """One model call for what ``context`` holds; a too-long prompt is compacted and retried once."""
        request = context.prepare()
        try:
            response = self.model.create(request)
        except self.model.request_errors as error:
            retry = context.retry_request(error)
            if retry is None:
                raise
            response = self.model.create(retry)
        usage = adapter_for(self.model.provider).reported_usage(response)
        if usage is not None:
            self.usage.append(usage)
        return response

    def execute(self, tools: Mapping[str, Tool], call: ToolCall) -> ToolResult:
        """Run one call; a refusal or failure becomes an error result that says why."""
        reported: tuple[type[BaseException], ...] = (ToolError, OSError, ValueError, *self.model.api_errors)
        try:
            tool = tools.get(call.name)
            if tool is None:
                raise ToolError(f"there is no tool {call.name!r}; the tools are {', '.join(tools)}")
            return ToolResult(call.id, tool(call.arguments), is_error=False)
        except reported as error:
            return ToolResult(call.id, f"{call.name} failed: {self.error_text(error)}", is_error=True)

    def error_text(self, error: BaseException) -> str:
        """``error``'s message with every credential masked, the model's API key too: a gateway may echo it."""
        sdk = adapter_for(self.model.provider).require_client("the reference agent").sdk
        return redact_credentials(str(error), known=[sdk.api_key()])

    def delegate(self, prompt: str) -> str:
        """The ``task`` tool: a subagent on a forked context, with every tool but ``task``; its final answer."""
        self.subagents += 1
        name = f"task-{self.subagents}"
        tools = {key: tool for key, tool in self.tools.items() if key != "task"}
        child = self.context.fork()
        child.set_header(header(SUBAGENT_PROMPT.format(root=self.workspace.root), with_history_tools(child, tools)))
        child.subscribe(lambda event: self.display.event(name, event))
        child.add([Item("user", (Text(prompt),))])
        try:
            return self.run(child, tools, name)
        except TurnLimit as error:
            raise ToolError(f"the subagent gave no answer: {error}") from None
        finally:
            child.close()
