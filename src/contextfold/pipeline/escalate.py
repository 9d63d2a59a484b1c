"""The summary that escalates instead of looping.

A summary can leave the request over its target (a long tail, a summarizer
that overshoots). Summarizing again with the same tail would loop, as early
condensers did, and summarizing again with a shorter one pays for a summary
that is thrown away (in a fleet, the same span summarized twice). So
:func:`compact` chooses the tail before the one summarizer call, from what a
summary at its target would leave, then applies the per-kind rules if the
request is still over, and reports whether the target was met. Before any
summary it tries clearing old outputs alone (:func:`clear_first`), which
costs no summarizer call and keeps every turn of the agent. Which stages run
at each rung is the pipeline's ``escalate`` tier (:func:`rungs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..conversation import Conversation
from ..events import Event
from ..reading import is_person, opening, reading_of
from ..summarizers._reports import reports_kept_whole
from .base import Budget, Stage, stage_name
from .running import after_compaction, run_stages
from .stages.persist import persist_old
from .stages.summarize import plan
from .task import task_index
from .tiers import DEFAULT_PIPELINE, SUMMARY_STAGE, Pipeline

def rungs(pipeline: Pipeline) -> tuple[tuple[Stage, ...], Stage | None, tuple[Stage, ...]]:
    """The ``escalate`` tier's three rungs: the stages before the summary, the summary (``None`` when the
    pipeline has none), the stages after it (all of them the first rung when there is no summary)."""
    stages = pipeline.escalate
    at = next((i for i, stage in enumerate(stages) if stage_name(stage) == SUMMARY_STAGE), None)
    if at is None:
        return stages, None, ()
    return stages[:at], stages[at], stages[at + 1:]


def clear_first(conversation: Conversation, budget: Budget, target_tokens: int,
                stages: Sequence[Stage]) -> tuple[Conversation, list[Event]] | None:
    """Over the trigger, the ``stages`` before the summary (snipping and clearing old outputs) alone, when
    that gets far enough below it.

    It keeps every turn of the agent (and, in each placeholder, the lines it
    took from the output) and costs no summarizer call; the prefix is
    rewritten either way. A summary is needed only when this does not make
    room for a while (``Policy.clear_first_max_fraction`` of the target),
    or when the count of messages is over its trigger (clearing removes none).
    The stages are given that room as ``budget.target_tokens``: clearing takes the
    oldest outputs only until the request is there (on the wild sessions, clearing
    every output older than three rounds left the request at 0.3 to 0.45 of the window,
    without the newer reads the agent was writing from), and all of them only when
    the oldest fall short.
    """
    if not stages or budget.over_message_trigger(conversation):
        return None
    room = _room(budget, target_tokens)
    due = replace(budget, compaction_due=True)
    cleared, events = run_stages(conversation, replace(due, target_tokens=room), stages)
    if events and budget.count(cleared) > room:  # the oldest outputs' savings, summed, fell short: every one
        cleared, events = run_stages(conversation, due, stages)
    return _enough_alone(conversation, cleared, events, due, room)


def old_outputs_first(conversation: Conversation, budget: Budget,
                      target_tokens: int) -> tuple[Conversation, list[Event]] | None:
    """Over the trigger, the outputs too large to send whole that went whole for their own request, now older than
    the latest round, previewed alone (:func:`~.stages.persist.persist_old`), when that gets far enough below the
    target (as :func:`clear_first`): every other output and turn stays as it was. An output sent whole pushed the
    request over the trigger; it pays for the room, not the smaller outputs read before it."""
    due = replace(budget, compaction_due=True)
    previewed, events = persist_old(conversation, due)
    return _enough_alone(conversation, previewed, events, due, _room(budget, target_tokens))


def _room(budget: Budget, target_tokens: int) -> int:
    """How far below the target an edit short of a summary must bring the request to be enough alone."""
    return int(budget.policy.clear_first_max_fraction * target_tokens)


def _enough_alone(conversation: Conversation, edited: Conversation, events: list[Event], due: Budget,
                  room: int) -> tuple[Conversation, list[Event]] | None:
    """``edited`` checked as a compaction's result, when the edit changed something and brought the request to
    ``room``; ``None`` when a summary is still needed. The edit's events come last: stats and cache-break causes
    name it."""
    if not events or due.count(edited) > room:
        return None
    checked, more = after_compaction(conversation, edited, due)
    return checked, [*more, *events]


def compact(conversation: Conversation, budget: Budget, target_tokens: int,
            pipeline: Pipeline = DEFAULT_PIPELINE) -> tuple[Conversation, list[Event], bool]:
    """One summary that brings the request to at most ``target_tokens`` if a summary at its target can,
    escalating instead of looping.

    The tail is chosen before the summarizer runs (:func:`tail_for_one_summary`):
    the policy's, else a quarter of it, else only the last unit. A summary
    that still leaves the request over the target (a summarizer overshooting
    its own target) is not made again with a shorter tail: that would pay for
    summaries thrown away, and in a fleet count as work done twice. The
    per-kind rules go on from it instead. Returns the smallest result (never
    one larger than ``conversation`` unless the budget forces a summary, as a
    manual compact does), its events, and whether the target was met.

    Every stage comes from ``pipeline`` (:func:`rungs` of its ``escalate``
    tier; its ``after`` tier follows the first rung and the summary).
    """
    first, summary, last = rungs(pipeline)
    budget = replace(budget, after=pipeline.after)
    if not budget.force_summary:
        cleared = clear_first(conversation, budget, target_tokens, first)
        if cleared is not None:
            return *cleared, True
    start_tokens = budget.count(conversation)
    best, best_tokens, best_events = conversation, start_tokens, []
    tail_tokens, events = (None, []) if summary is None else tail_for_one_summary(conversation, budget,
                                                                                  target_tokens, start_tokens)
    if summary is not None and tail_tokens is not None:
        result, produced = run_stages(conversation, replace(budget, tail_tokens=tail_tokens), (summary,))
        tokens = budget.count(result)
        if produced and (tokens < best_tokens or budget.force_summary):
            best, best_tokens, best_events = result, tokens, [*events, *produced]
        if produced and tokens <= target_tokens:
            return _never_larger(conversation, start_tokens, best, best_tokens, best_events, target_tokens)
    result, produced = run_stages(best, replace(budget, target_tokens=target_tokens), last)
    tokens = budget.count(result)
    if tokens < best_tokens:
        best, best_tokens, best_events = result, tokens, [*best_events, *produced]
    return _never_larger(conversation, start_tokens, best, best_tokens, best_events, target_tokens)


def tail_for_one_summary(
    conversation: Conversation, budget: Budget, target_tokens: int, start_tokens: int,
) -> tuple[int | None, list[Event]]:
    """The longest of the tails (one that keeps the newest delegated reports verbatim, :func:`reports_tail_tokens`;
    one that keeps the person's latest request verbatim, :func:`request_tail_tokens`; the policy's, a quarter of
    it, none but the last unit) with which a summary at its target brings the request to ``target_tokens``, else
    the one that comes closest; ``None`` when no cut leaves any of them. An ``escalated`` event for each tail
    passed over (no summarizer ran for it)."""
    tail = budget.tail_budget_tokens
    longer = sorted({reports_tail_tokens(conversation, budget), request_tail_tokens(conversation, budget)} - {0},
                    reverse=True)
    passed: list[tuple[int, Event]] = []  # (tail tokens, why a summary with it was not made)
    closest: tuple[int, int] | None = None  # (predicted tokens, tail tokens)
    for tail_tokens in (*(tokens for tokens in longer if tokens > tail), tail, tail // 4, 0):
        planned = plan(conversation, replace(budget, tail_tokens=tail_tokens))
        if planned is None:
            continue  # no cut leaves this much tail: a shorter one may
        predicted = planned.predicted_tokens(start_tokens)
        if predicted <= target_tokens:
            return tail_tokens, [event for _, event in passed]
        if closest is None or predicted < closest[0]:
            closest = (predicted, tail_tokens)
        passed.append((tail_tokens, Event(
            "summarize", "escalated", tokens_before=start_tokens, tokens_after=predicted,
            detail=f"a summary at its target with a tail of {tail_tokens:,} tokens would leave {predicted:,} "
                   f"tokens, over {target_tokens:,}")))
    if closest is None:
        return None, []
    return closest[1], [event for tail_tokens, event in passed if tail_tokens != closest[1]]


def reports_tail_tokens(conversation: Conversation, budget: Budget) -> int:
    """The tail that keeps verbatim the newest delegated agents' reports kept whole (from the round of the oldest
    of them on: :func:`~contextfold.summarizers._reports.reports_kept_whole`); 0 when there is none. A report is
    the product of many turns no read fetches again, which the agent is acting on: summarized, the lists and
    tables it copies from it next are gone. Tried first, while a summary with it still reaches its target."""
    whole = reports_kept_whole(conversation.items, budget.count_item, budget.report_whole_tokens)
    if not whole:
        return 0
    start = max(start for start, _ in conversation.units() if start <= min(whole))
    return sum(budget.count_item(item) for item in conversation.items[start:])


def request_tail_tokens(conversation: Conversation, budget: Budget) -> int:
    """The tail from the person's latest request on, when the request is longer than its opening and what the
    agent did since fits the policy's tail; 0 otherwise (no request since the task; one no longer than its opening
    lines, which a summary quotes whole; or work since longer than the policy's tail: then that work is what the
    agent goes on from). The request is what the agent is working on now, and a long one (a specification, code
    or a plan pasted in) is what it writes from next: a summary keeps its opening lines, and the files the agent
    writes from the rest would be written from memory. Tried first, while a summary with it still reaches its
    target, so the request costs only itself."""
    items = conversation.items
    latest = next((index for index in range(len(items) - 1, -1, -1)
                   if items[index].role == "user" and is_person(items[index])), None)
    if latest is None or latest == task_index(conversation):
        return 0
    if not opening(reading_of(items[latest]).words)[1].strip():
        return 0  # the summary quotes it whole
    since = sum(budget.count_item(item) for item in items[latest + 1:])
    if since > budget.tail_budget_tokens:
        return 0
    start = max((start for start, _ in conversation.units() if start <= latest), default=latest)
    return since + sum(budget.count_item(item) for item in items[start:latest + 1])


def _never_larger(
    conversation: Conversation, start_tokens: int, best: Conversation, best_tokens: int, events: list[Event],
    target_tokens: int,
) -> tuple[Conversation, list[Event], bool]:
    """``best``, unless it is larger than what it replaces (a forced summary of a short span): then nothing changes."""
    if best_tokens <= start_tokens:
        return best, events, best_tokens <= target_tokens
    skipped = Event("summarize", "skipped", tokens_before=start_tokens, tokens_after=start_tokens,
                    detail=f"a summary would make the request {best_tokens:,} tokens, from {start_tokens:,}: kept as is",
                    calls=tuple(call for e in events for call in e.calls))  # what was spent is still priced
    return conversation, [skipped], start_tokens <= target_tokens
