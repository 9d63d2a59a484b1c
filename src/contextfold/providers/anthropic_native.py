"""Anthropic's own context management, as an option beside contextfold's pipeline, never silently mixed with it.

The Messages API can edit the context server-side (beta): clear old tool
uses (``clear_tool_uses_20250919``), clear old thinking
(``clear_thinking_20251015``), or summarize the conversation itself
(``compact_20260112``). :func:`with_context_management` adds these edits,
and the beta headers they need, to a request :meth:`Context.prepare
<contextfold.context.Context.prepare>` built; :func:`native_events` turns
what the response reports (``context_management.applied_edits``, and
``compaction`` blocks) into events::

    request, headers = with_context_management(
        context.prepare(), ClearToolUses(trigger_tokens=30_000, keep_tool_uses=3), policy=context.policy
    )
    response = client.beta.messages.create(model=MODEL, max_tokens=4_096, **request, extra_headers=headers)
    context.add_response(response)                  # a compaction block stays in the history and transcript
    context.record_events(native_events(response))

One clearing authority at a time: a request may carry ``clear_tool_uses``
only when the context's policy has ``native_clearing=True``, which turns
contextfold's own clear stage off; otherwise both would clear, each
invalidating the other's cached prefix. The server does not return the
cleared request, so contextfold's token count goes on counting the full
history until the next usage report anchors it.

Field names and beta header values are those of the ``anthropic`` SDK's
types (``BetaContextManagementConfigParam`` and the edit params) and of
Anthropic's context-editing and compaction documentation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..errors import ContextfoldError
from ..pipeline.base import Event, Policy

CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
"""The beta header value for the clearing edits."""
COMPACTION_BETA = "compact-2026-01-12"
"""The beta header value for server-side compaction."""
STAGE = "native"
"""The stage name of the events this module makes."""


class Edit(Protocol):
    """One context-management edit: its wire form, the beta it needs, whether it clears tool outputs."""

    beta: str
    clears_tool_outputs: bool

    def to_wire(self) -> dict[str, Any]: ...


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

    def to_wire(self) -> dict[str, Any]:
        edit: dict[str, Any] = {"type": "clear_tool_uses_20250919"}
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
        if self.clear_tool_inputs:
            edit["clear_tool_inputs"] = self.clear_tool_inputs if self.clear_tool_inputs is True else list(self.clear_tool_inputs)
        return edit


@dataclass(frozen=True)
class ClearThinking:
    """``clear_thinking_20251015``: thinking is kept for the newest ``keep_turns`` assistant turns (or ``"all"``)."""

    keep_turns: int | Literal["all"] | None = None

    beta = CONTEXT_MANAGEMENT_BETA
    clears_tool_outputs = False

    def to_wire(self) -> dict[str, Any]:
        edit: dict[str, Any] = {"type": "clear_thinking_20251015"}
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

    def to_wire(self) -> dict[str, Any]:
        edit: dict[str, Any] = {"type": "compact_20260112"}
        if self.trigger_tokens is not None:
            edit["trigger"] = {"type": "input_tokens", "value": self.trigger_tokens}
        if self.instructions:
            edit["instructions"] = self.instructions
        if self.pause_after_compaction:
            edit["pause_after_compaction"] = True
        return edit


def with_context_management(
    request: Mapping[str, Any], *edits: Edit, policy: Policy
) -> tuple[dict[str, Any], dict[str, str]]:
    """``request`` with ``context_management`` edits, and the ``anthropic-beta`` header they need.

    ``policy`` is the policy of the context that built the request: a
    clearing edit needs ``policy.native_clearing`` (contextfold's clear stage
    off), else :class:`ContextfoldError` says so. An edit type given twice is
    an error too.
    """
    if not edits:
        raise ValueError("with_context_management needs at least one edit")
    wire = [edit.to_wire() for edit in edits]
    types = [edit["type"] for edit in wire]
    if len(set(types)) != len(types):
        raise ContextfoldError(f"each context-management edit may be given once; got {types}")
    if any(edit.clears_tool_outputs for edit in edits) and not policy.native_clearing:
        raise ContextfoldError(
            "clear_tool_uses would clear tool outputs while contextfold's own clear stage also does: configure one "
            "clearing authority at a time (Policy(native_clearing=True) turns contextfold's off)"
        )
    betas = sorted({edit.beta for edit in edits})
    return {**request, "context_management": {"edits": wire}}, {"anthropic-beta": ",".join(betas)}


def native_events(response: Any) -> list[Event]:
    """Events for what the server did to the context: each applied edit, each compaction block.

    ``response`` is an SDK message object or its dict.
    """
    data = response.model_dump() if hasattr(response, "model_dump") else dict(response)
    events = []
    for edit in (data.get("context_management") or {}).get("applied_edits") or ():
        cleared = int(edit.get("cleared_input_tokens") or 0)
        what = {"clear_tool_uses_20250919": f"{edit.get('cleared_tool_uses', 0)} tool uses",
                "clear_thinking_20251015": f"{edit.get('cleared_thinking_turns', 0)} thinking turns"}
        detail = f"the provider cleared {what.get(edit.get('type'), edit.get('type'))} ({cleared:,} input tokens)"
        events.append(Event(STAGE, "cleared", tokens_before=cleared, detail=detail, data=dict(edit)))
    iterations = (data.get("usage") or {}).get("iterations")
    for block in data.get("content") or ():
        if block.get("type") != "compaction":
            continue
        content = block.get("content")
        detail = ("the provider compacted the conversation server-side; the compaction block stands for what came before"
                  if content is not None else "the provider's compaction produced no summary (the block is a no-op)")
        summary = {"summary_chars": len(content or ""), "failed": content is None, "usage_iterations": iterations}
        events.append(Event(STAGE, "compacted", detail=detail, data=summary))
    return events
