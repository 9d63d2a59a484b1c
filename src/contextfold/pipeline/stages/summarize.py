"""summarize: everything between the task and a pair-safe cut becomes one summary.

Runs at a turn boundary only. The task (the first user message) stays first,
verbatim; the span after it up to the cut chosen by :mod:`contextfold.boundary`
is replaced by a summary injected as a user message (never into the system
prompt, so the cached system and tools stay valid); then
:mod:`~contextfold.pipeline.restore` puts back the files the agent was using;
then the recent tail follows verbatim. An earlier summary in the span is
summarized again with its structured state, so facts carry forward.

The order is by how often a part changes: the task (and the header before
it) is the same after every compaction, the summary, restored files and
survival note are rewritten by each, the tail moves every turn; so the
request after a second compaction shares the first part with the first's
(the renderer closes it with a cache breakpoint where the format has them).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace

from ...boundary import Cut, choose_cut
from ...conversation import Conversation, Item, JSONObject, Provenance, Summary
from ...events import Event
from ...lookback.names import names_history_tools
from ...reading.own import POINTER
from ...summarizers._facts import Facts, read_on
from ...summarizers.base import SUMMARY_PREAMBLE, Summarizer, SummaryRequest, SummaryResult
from ...summarizers.extractive import ExtractiveSummarizer
from ..base import Budget
from ..compression import summary_share, summary_target
from ..importance import References
from ..restore import restored_item
from ..running import after_compaction
from ..task import added_by_contextfold, task_index
from .fit import window_limit

STAGE = "summarize"
MIN_SUMMARY_TOKENS = 200

logger = logging.getLogger(__name__)


def _lookback_line(span: list[Item]) -> str:
    """The summary's last line: what it left out can be searched, and the refs of the items it replaces."""
    return (f'\n\n{POINTER}search_history("text") finds their lines; this summary '
            f"replaces {len(span)} items, read_history({json.dumps(span[0].id)}) to "
            f"read_history({json.dumps(span[-1].id)}).")


@dataclass(frozen=True)
class SpanPlan:
    """What a summary would replace and ask for, found before any summarizer runs (so a caller can choose the
    tail it summarizes with once, instead of paying for summaries it then throws away)."""

    start: int
    cut: Cut
    span: list[Item]
    span_tokens: int
    target: int
    share: float
    exemption: str | None

    def predicted_tokens(self, tokens_before: int) -> int:
        """The request's size after a summary that meets its target (before any files are put back)."""
        return tokens_before - self.span_tokens + self.target


def plan(conversation: Conversation, budget: Budget) -> SpanPlan | None:
    """Where the summary cuts with ``budget``'s tail and its target; ``None`` when no cut leaves that tail."""
    p = budget.policy
    task = task_index(conversation)
    start = task + 1 if task is not None else 0
    items = list(conversation.items)
    exemption = _short_span_exemption(budget, conversation)
    cut = choose_cut(
        conversation, start=start, tail_budget_tokens=budget.tail_budget_tokens, count_item=budget.count_item,
        min_index=None if exemption else _after_messages(items, start, p.min_summary_messages),
        max_tail_items=budget.max_tail_messages,
    )
    if cut is None:
        return None
    span = [item for item in items[start : cut.index] if _summarizable(item)]
    # A summary takes the share of what it replaces that its content calls for (see compression).
    target = max(summary_target(span, budget.count_item, min(p.summary_target_tokens, _room(budget))), MIN_SUMMARY_TOKENS)
    return SpanPlan(start, cut, span, sum(budget.count_item(item) for item in span), target,
                    summary_share(span, budget.count_item), exemption)


def summarize(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
    summarizer = budget.summarizer
    if summarizer is None or budget.count_text is None:
        return conversation, []
    planned = plan(conversation, budget)
    if planned is None:
        return conversation, []
    before = budget.count(conversation)
    request = SummaryRequest(planned.span, conversation.header, planned.target, budget.count_text, budget.instructions,
                             next_request=conversation, next_request_tokens=before,
                             history_tools=names_history_tools(budget.policy, conversation.header))
    result = summarizer.summarize(request)
    made = _replace_span(conversation, budget, planned, request, result, summarizer.name)
    fallback = _fallback_for(summarizer)
    if made[2] >= before and fallback is not None and result.fallback is None:
        # a summary no smaller than what it replaces (a model that ignored its target) is of no use: the
        # extractive one is written instead, rather than no compaction at all
        why = (f"{summarizer.name} summary too large to use: {made[2]:,} tokens after it, {before:,} before; "
               f"{getattr(fallback, 'name', 'fallback')} used instead")
        logger.warning("contextfold: %s", why)
        written = fallback.summarize(request)
        result = replace(written, calls=(*result.calls, *written.calls), fallback=why)
        made = _replace_span(conversation, budget, planned, request, result, summarizer.name)
    summarized, checked, _ = made
    return summarized, checked


def _fallback_for(summarizer: Summarizer) -> Summarizer | None:
    """Who writes the summary when a model's is of no use: the summarizer's own ``fallback``, else the
    extractive summarizer; none for an offline summarizer (it is that fallback already)."""
    if getattr(summarizer, "offline", False):
        return None
    fallback: Summarizer | None = getattr(summarizer, "fallback", None)
    return fallback if fallback is not None else ExtractiveSummarizer()


def _replace_span(conversation: Conversation, budget: Budget, planned: SpanPlan, request: SummaryRequest,
                  result: SummaryResult, name: str) -> tuple[Conversation, list[Event], int]:
    """The conversation with ``planned``'s span replaced by ``result``, written by the summarizer ``name`` for
    ``request`` (and the files the span used put back), its events (the ``summarized`` one last), and its size."""
    p = budget.policy
    start, cut, span, span_tokens = planned.start, planned.cut, planned.span, planned.span_tokens
    items = list(conversation.items)
    before = budget.count(conversation)
    short = len(span) < p.min_summary_messages
    tail = items[cut.index :]
    intro = f"{SUMMARY_PREAMBLE}\n\n"
    body = result.text + (_lookback_line(span) if span and request.history_tools else "")
    block = Summary(intro + body, covers=len(span), preamble=len(intro), extra={"state": dict(result.state)},
                    native=result.native, native_provider=result.native_provider)
    summary_item = Item("user", (block,), timestamp=budget.now_s, provenance=Provenance(summary=True, summarizer=name))
    # Restored files may take back a share of what the summary saved: a compaction never grows the request.
    saved = max(span_tokens - budget.count_item(summary_item), 0)
    restore_cap = min(p.restore_total_tokens, _room(budget), int(saved * p.restore_max_share))
    restored = restored_item(
        span, tail, max_files=p.restore_max_files, file_tokens=p.restore_file_tokens, total_tokens=restore_cap,
        count_text=request.count_text, refs=References.of(items), min_weight=p.restore_min_weight,
    )
    kept = items[:start] + [summary_item] + ([restored] if restored is not None else []) + tail
    summarized, checked = after_compaction(conversation, conversation.with_items(kept), budget,
                                           _facts_of(items, start, cut.index, result.state))
    after = budget.count(summarized)
    data = {
        "boundary": cut.index,
        "score": round(cut.score, 3),
        "reasons": list(cut.reasons),
        "summarizer": name,
        "span_items": len(span),
        "span_tokens": span_tokens,
        "summary_tokens": budget.count_item(summary_item),
        "summary_share": round(planned.share, 3),
        "restored_tokens": budget.count_item(restored) if restored is not None else 0,
        "fallback": result.fallback,
        "summary_request": result.request,
        "instructions": budget.instructions,
        "below_min_messages": short,
    }
    detail = f"{len(span)} items summarized, cut at {cut.index} ({', '.join(cut.reasons)})"
    if short:
        detail += f"; fewer than the minimum of {p.min_summary_messages} messages, as {planned.exemption}"
    if result.request:
        detail += f"; {result.request}"
    ids = tuple(item.id for item in span)
    event = Event(STAGE, "summarized", ids, before, after, detail, data, tuple(result.calls))
    return summarized, [*checked, event], after  # the compaction's own event last: stats and cache-break causes name it


def _facts_of(items: list[Item], start: int, cut: int, state: JSONObject) -> Facts | None:
    """The facts of the whole request read on from the summary's (see :func:`~contextfold.summarizers._facts.read_on`),
    when they are those a reading of it finds: what precedes the span is the task (user messages, which bear on
    no error, plan or file) and what the span left out is what contextfold added (restored files, notes)."""
    before = items[:start]
    left_out = [item for item in items[start:cut] if not _summarizable(item)]
    if any(item.role != "user" or item.provenance.summary for item in before + left_out):
        return None
    return read_on(state, items[cut:])


def _room(budget: Budget) -> int:
    """What neither the summary nor the files put back may take: not the room the summary is meant to make."""
    return min(budget.window_tokens // 10, budget.trigger_tokens // 5)


def _short_span_exemption(budget: Budget, conversation: Conversation) -> str | None:
    """Why this summary may cover fewer than the minimum of messages, if it may: a manual compact
    asked for it, or the request is over the window (a short summary beats a refused request)."""
    if budget.force_summary:
        return "a manual compact asked for it"
    if budget.refused or budget.count(conversation) > window_limit(budget, conversation):
        return "the request is over the window"
    return None


def _after_messages(items: list[Item], start: int, count: int) -> int:
    """The first index after ``start`` at which a span would hold ``count`` summarizable messages
    (past the end when it never does)."""
    seen = 0
    for index in range(start, len(items)):
        if seen >= count:
            return index
        seen += _summarizable(items[index])
    return len(items)


def _summarizable(item: Item) -> bool:
    """Whether a summary takes ``item`` in: anything but what contextfold put back (an earlier summary is)."""
    return not added_by_contextfold(item) or bool(item.provenance.summary)
