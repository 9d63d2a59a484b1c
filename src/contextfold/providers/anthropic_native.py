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

The edits and what the reply reports are read and written by the Anthropic
adapter (:mod:`contextfold.adapters.anthropic.context`); this module decides
who clears and turns the report into events.
"""

from __future__ import annotations

from typing import Any

from ..adapters.anthropic.context import (
    COMPACTION_BETA,
    CONTEXT_MANAGEMENT_BETA,
    ClearThinking,
    ClearToolUses,
    Edit,
    ServerCompaction,
)
from ..adapters.registry import ANTHROPIC
from ..conversation import JSONObject
from ..errors import ContextfoldError
from ..events import Event
from ..pipeline.base import Policy

__all__ = [
    "COMPACTION_BETA",
    "CONTEXT_MANAGEMENT_BETA",
    "ClearThinking",
    "ClearToolUses",
    "Edit",
    "ServerCompaction",
    "native_events",
    "with_context_management",
]

STAGE = "native"
"""The stage name of the events this module makes."""


def with_context_management(
    request: JSONObject, *edits: Edit, policy: Policy
) -> tuple[dict[str, Any], dict[str, str]]:
    """``request`` with ``context_management`` edits, and the ``anthropic-beta`` header they need.

    ``policy`` is the policy of the context that built the request: a
    clearing edit needs ``policy.native_clearing`` (contextfold's clear stage
    off), else :class:`ContextfoldError` says so. An edit type given twice is
    an error too.
    """
    if not edits:
        raise ValueError("with_context_management needs at least one edit")
    if any(edit.clears_tool_outputs for edit in edits) and not policy.native_clearing:
        raise ContextfoldError(
            "clear_tool_uses would clear tool outputs while contextfold's own clear stage also does: configure one "
            "clearing authority at a time (Policy(native_clearing=True) turns contextfold's off)"
        )
    return ANTHROPIC.with_context_edits(request, edits)


def native_events(response: object) -> list[Event]:
    """Events for what the server did to the context: each applied edit, each compaction block.

    ``response`` is an SDK message object or its dict.
    """
    report = ANTHROPIC.read_context_report(response)
    events = [
        Event(STAGE, "cleared", tokens_before=edit.cleared_tokens, data=dict(edit.report),
              detail=f"the provider cleared {edit.cleared} ({edit.cleared_tokens:,} input tokens)")
        for edit in report.applied
    ]
    for chars in report.compactions:
        detail = ("the provider's compaction produced no summary (the block is a no-op)" if chars is None else
                  "the provider compacted the conversation server-side; the compaction block stands for what came before")
        summary = {"summary_chars": chars or 0, "failed": chars is None, "usage_iterations": report.usage_iterations}
        events.append(Event(STAGE, "compacted", detail=detail, data=summary))
    return events
