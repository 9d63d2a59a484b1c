"""The history tools' names, and whether previews and summaries may name them to the agent.

``search_history`` and ``read_history`` (:mod:`.tools`) are named in a
preview ("read_history(ref) reads its lines") and in a summary only when the
agent can call them (:func:`names_history_tools`): the stages that write
those texts ask here, as the history tools themselves do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..conversation import Header, Opaque, ToolSpec

if TYPE_CHECKING:  # the pipeline imports this module (its stages write the previews); a policy is only read here
    from ..pipeline.base import Policy

HISTORY_TOOLS = frozenset({"search_history", "read_history"})
"""The history tools (:mod:`contextfold.lookback`). Their results are bounded already and never offloaded: a
read of an offloaded output that came back as another preview would send the agent round in a circle."""


def names_history_tools(policy: Policy, header: Header) -> bool:
    """Whether previews and summaries tell the agent to call ``search_history``/``read_history``.

    Naming a tool the agent was not given makes the model call it, and the framework then answers with an
    error or stops the run on an unknown tool; so by default (``"auto"``) they are named only when the
    request offers both. ``True`` is for a loop that answers them without giving them to contextfold."""
    if policy.history_tools == "auto":
        return HISTORY_TOOLS <= offered_tool_names(header)
    return bool(policy.history_tools)


def offered_tool_names(header: Header) -> frozenset[str]:
    """The names of the function tools ``header`` offers: a :class:`ToolSpec`'s name, and the names an
    :class:`Opaque` tool carries as its format wrote it (a top-level ``name``, chat's ``function``/``custom``
    object, Gemini's ``function_declarations``)."""
    names: set[str] = set()
    for tool in header.tools:
        if isinstance(tool, ToolSpec):
            names.add(tool.name)
        elif isinstance(tool, Opaque):
            names.update(_opaque_names(tool.data))
    return frozenset(names)


def _opaque_names(data: object) -> list[str]:
    if not isinstance(data, dict):
        return []
    nested = [data.get("function"), data.get("custom"), *(data.get("function_declarations") or ())]
    return [name for name in (data.get("name"), *(part.get("name") for part in nested if isinstance(part, dict)))
            if isinstance(name, str)]
