"""The history tools (``search_history``, ``read_history``) and ``compact_context`` as the plain functions a
framework makes tools of.

Every framework builds a tool from a typed Python function and its docstring
(pydantic-ai, Strands, LangChain, Google ADK) or from a JSON schema (the
Agents SDK). :func:`history_functions` gives the two functions, bound to
the Context an integration holds *now* (``get_context``: a mirror may start
a fresh Context when the framework rewrites its history), and answering a
bad argument with a text that says why (the model calls again) rather than
an exception each framework would report its own way. :func:`compact_function`
is ``compact_context`` the same way (:mod:`contextfold.pipeline.asked`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from ..context import Context
from ..conversation import Header, JSONObject, ToolSpec
from ..errors import HistoryQueryError, InvalidToolArguments
from ..lookback.history import DEFAULT_LIMIT
from ..lookback.tools import READ, READ_SPEC, SEARCH, SEARCH_SPEC
from ..pipeline.asked import COMPACT, COMPACT_SPEC
from ..pipeline.base import Policy

GetContext = Callable[[], Context]


def answer(get_context: GetContext, name: str, arguments: JSONObject) -> str:
    """The text answering a call of history tool ``name``; a bad argument is answered with why."""
    try:
        return get_context().call_history_tool(name, {k: v for k, v in arguments.items() if v is not None})
    except HistoryQueryError as error:
        return f"{name} failed: {error}"


def tool_doc(spec: ToolSpec) -> str:
    """A history tool's docstring, its arguments under ``Args:`` (the form the frameworks read descriptions from)."""
    arguments = "\n".join(f"    {name}: {schema['description']}" for name, schema in spec.parameters["properties"].items())
    return f"{spec.description}\n\nArgs:\n{arguments}\n"


def history_functions(get_context: GetContext) -> list[Callable[..., str]]:
    """``search_history`` and ``read_history`` as typed functions with docstrings, answering from ``get_context()``."""

    def search_history(query: str, limit: int = DEFAULT_LIMIT, regex: bool = False, ignore_case: bool = False) -> str:
        return answer(get_context, SEARCH, {"query": query, "limit": limit, "regex": regex, "ignore_case": ignore_case})

    def read_history(ref: str, lines: str = "") -> str:
        return answer(get_context, READ, {"ref": ref, "lines": lines or None})

    search_history.__doc__, read_history.__doc__ = tool_doc(SEARCH_SPEC), tool_doc(READ_SPEC)
    return [search_history, read_history]


def compact_function(get_context: GetContext) -> Callable[[str], str]:
    """``compact_context`` as a typed function with a docstring: the next request ``get_context()`` prepares is
    compacted first with the focus (from the policy's share of the trigger; below it the answer says so)."""

    def compact_context(focus: str) -> str:
        try:
            return get_context().compact_context(focus)
        except InvalidToolArguments as error:
            return f"{COMPACT} failed: {error}"

    compact_context.__doc__ = tool_doc(COMPACT_SPEC)
    return compact_context


def offering(options: Mapping[str, Any], offered: bool) -> dict[str, Any]:
    """Context ``options`` whose policy names the history tools when the integration gives them to the agent.

    A framework's requests do not always reach the Context with its tools (a history processor sees messages
    only), so ``Policy.history_tools="auto"`` could not see them offered and summaries would not name them:
    an integration that offers them says so here. A ``history_tools`` the user set to ``True`` or ``False``
    is kept."""
    policy = options.get("policy") or Policy()
    if not offered or policy.history_tools != "auto":
        return dict(options)
    return {**options, "policy": replace(policy, history_tools=True)}


def offered_header(context: Context, names: Iterable[str]) -> Header:
    """``context``'s header with the tools a framework gives its agent, by name: for a framework that sends
    its tools itself, what the Context needs of them is whether the history tools are among them (see
    :func:`~contextfold.lookback.names.names_history_tools`). Its system items stay."""
    return replace(context.history.header, tools=tuple(ToolSpec(name) for name in names))
