"""Anthropic's server-side context management on the wire: the edits a request asks for, and what the reply reports.

The Messages API can edit the context itself (beta): clear old tool uses
(``clear_tool_uses_20250919``), clear old thinking
(``clear_thinking_20251015``), or summarize the conversation
(``compact_20260112``). Each edit is a small dataclass that writes its own
request field (:meth:`to_wire`); :func:`with_edits` adds them and the beta
header they need to a request; :func:`read_context_report` reads what the
server did (``context_management.applied_edits``, ``compaction`` blocks) in
neutral terms. The choice of when to use them, and the events, are
:mod:`contextfold.providers.anthropic_native`'s.

Field names and beta header values are those of the ``anthropic`` SDK's
types (``BetaContextManagementConfigParam`` and the edit params) and of
Anthropic's context-editing and compaction documentation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from ...conversation import JSONObject, JSONValue
from ...errors import ContextfoldError
from ..base import as_data

CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
"""The beta header value for the clearing edits."""
COMPACTION_BETA = "compact-2026-01-12"
"""The beta header value for server-side compaction (the ``compact_20260112`` edit)."""
ON_DEMAND_COMPACTION_BETA = "compact-2026-09-04"
"""The beta header value for an on-demand ``compaction`` request (the SDK's tool runner names it for
``compact_before_next_turn``)."""


class Edit(Protocol):
    """One context-management edit: its wire form, the beta it needs, whether it clears tool outputs."""

    beta: str
    clears_tool_outputs: bool

    def to_wire(self) -> dict[str, JSONValue]: ...


@dataclass(frozen=True)
class ClearToolUses:
    """``clear_tool_uses_20250919``: the server replaces old tool results (and, if asked, inputs) by a placeholder.

    Trigger on ``trigger_tokens`` input tokens or ``trigger_tool_uses`` tool
    uses (one of them, or neither for the server's default); keep the newest
    ``keep_tool_uses``; clear only when at least ``clear_at_least_tokens``
    go (so the cache break pays); never clear ``exclude_tools``;
    ``clear_tool_inputs`` clears the calls' inputs too (``True``, or for the
    tools named). ``None`` leaves a field to the server's default.
    """

    trigger_tokens: int | None = None
    trigger_tool_uses: int | None = None
    keep_tool_uses: int | None = None
    clear_at_least_tokens: int | None = None
    exclude_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool | tuple[str, ...] = False

    beta = CONTEXT_MANAGEMENT_BETA
    clears_tool_outputs = True

    def __post_init__(self) -> None:
        if self.trigger_tokens is not None and self.trigger_tool_uses is not None:
            raise ValueError("ClearToolUses triggers on input tokens or on tool uses, not both")

    def to_wire(self) -> dict[str, JSONValue]:
        edit: dict[str, JSONValue] = {"type": "clear_tool_uses_20250919"}
        if self.trigger_tokens is not None:
            edit["trigger"] = {"type": "input_tokens", "value": self.trigger_tokens}
        if self.trigger_tool_uses is not None:
            edit["trigger"] = {"type": "tool_uses", "value": self.trigger_tool_uses}
        if self.keep_tool_uses is not None:
            edit["keep"] = {"type": "tool_uses", "value": self.keep_tool_uses}
        if self.clear_at_least_tokens is not None:
            edit["clear_at_least"] = {"type": "input_tokens", "value": self.clear_at_least_tokens}
        if self.exclude_tools:
            edit["exclude_tools"] = list(self.exclude_tools)
        if isinstance(self.clear_tool_inputs, tuple):
            if self.clear_tool_inputs:
                edit["clear_tool_inputs"] = list(self.clear_tool_inputs)
        elif self.clear_tool_inputs:
            edit["clear_tool_inputs"] = True
        return edit


@dataclass(frozen=True)
class ClearThinking:
    """``clear_thinking_20251015``: thinking is kept for the newest ``keep_turns`` assistant turns (or ``"all"``)."""

    keep_turns: int | Literal["all"] | None = None

    beta = CONTEXT_MANAGEMENT_BETA
    clears_tool_outputs = False

    def to_wire(self) -> dict[str, JSONValue]:
        edit: dict[str, JSONValue] = {"type": "clear_thinking_20251015"}
        if self.keep_turns == "all":
            edit["keep"] = "all"
        elif self.keep_turns is not None:
            edit["keep"] = {"type": "thinking_turns", "value": self.keep_turns}
        return edit


@dataclass(frozen=True)
class ServerCompaction:
    """``compact_20260112``: past ``trigger_tokens`` input tokens the server summarizes the conversation itself.

    The answer then carries a ``compaction`` block; sent back in the history
    (``Context.add_response`` keeps it), it stands for everything before it.
    ``pause_after_compaction`` makes the server return right after
    compacting (stop reason ``compaction``).
    """

    trigger_tokens: int | None = None
    instructions: str | None = None
    pause_after_compaction: bool = False

    beta = COMPACTION_BETA
    clears_tool_outputs = False

    def to_wire(self) -> dict[str, JSONValue]:
        edit: dict[str, JSONValue] = {"type": "compact_20260112"}
        if self.trigger_tokens is not None:
            edit["trigger"] = {"type": "input_tokens", "value": self.trigger_tokens}
        if self.instructions:
            edit["instructions"] = self.instructions
        if self.pause_after_compaction:
            edit["pause_after_compaction"] = True
        return edit


def with_edits(request: JSONObject, edits: tuple[Edit, ...]) -> tuple[dict[str, JSONValue], dict[str, str]]:
    """``request`` with the ``context_management`` edits, and the ``anthropic-beta`` header they need.

    An edit type given twice is a :class:`ContextfoldError`.
    """
    wire = [edit.to_wire() for edit in edits]
    types = [edit["type"] for edit in wire]
    if len(set(types)) != len(types):
        raise ContextfoldError(f"each context-management edit may be given once; got {types}")
    betas = sorted({edit.beta for edit in edits})
    return {**request, "context_management": {"edits": wire}}, {"anthropic-beta": ",".join(betas)}


def with_compaction(request: JSONObject, instructions: str | None) -> tuple[dict[str, JSONValue], dict[str, str]]:
    """``request`` as an on-demand compaction request (``compaction={"type": "summarize"}``), and its beta header.

    The reply holds only a ``compaction`` block (stop reason ``compaction``)
    summarizing every message sent. The API refuses ``context_management``
    beside it, so any edits are left out; blank ``instructions`` count as
    none (the server's own prompt is used).
    """
    config: dict[str, JSONValue] = {"type": "summarize"}
    if instructions and instructions.strip():
        config["instructions"] = instructions
    body = {key: value for key, value in request.items() if key != "context_management"}
    return {**body, "compaction": config}, {"anthropic-beta": ON_DEMAND_COMPACTION_BETA}


@dataclass(frozen=True)
class AppliedEdit:
    """An edit the server applied: what it cleared, in words, the input tokens that freed, its report as received."""

    cleared: str
    cleared_tokens: int
    report: JSONObject


@dataclass(frozen=True)
class ContextReport:
    """What the server did to the context of one request, and the usage iterations it reported with it.

    ``compactions`` has one entry per ``compaction`` block: the length of its
    summary, or ``None`` when it holds none (the compaction failed).
    """

    applied: tuple[AppliedEdit, ...] = ()
    compactions: tuple[int | None, ...] = ()
    usage_iterations: JSONValue = None


_CLEARED = {"clear_tool_uses_20250919": ("cleared_tool_uses", "tool uses"),
            "clear_thinking_20251015": ("cleared_thinking_turns", "thinking turns")}


def read_context_report(response: object) -> ContextReport:
    """What a reply (an SDK message object or its dict) reports the server did to the context."""
    data = as_data(response)
    applied = []
    for edit in (data.get("context_management") or {}).get("applied_edits") or ():
        count_key, unit = _CLEARED.get(edit.get("type"), (None, None))
        cleared = f"{edit.get(count_key, 0)} {unit}" if count_key else str(edit.get("type"))
        applied.append(AppliedEdit(cleared, int(edit.get("cleared_input_tokens") or 0), dict(edit)))
    compactions = [None if block.get("content") is None else len(block["content"])
                   for block in data.get("content") or () if block.get("type") == "compaction"]
    return ContextReport(tuple(applied), tuple(compactions), (data.get("usage") or {}).get("iterations"))
