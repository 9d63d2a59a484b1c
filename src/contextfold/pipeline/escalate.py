"""Running stages in order, and the summary that escalates instead of looping.

A summary can leave the request over its target (a long tail, a summarizer
that overshoots). Summarizing again with the same tail would loop, as early
condensers did; :func:`compact` shortens the tail instead, then applies the
per-kind rules, and reports whether the target was met. Before any summary
it tries clearing old outputs alone (:func:`clear_first`), which costs no
summarizer call and keeps every turn of the agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..conversation import Conversation
from ..errors import InvalidPipeline
from ..events import Event
from .base import Budget, Stage, stage_name
from .stages.clear import clear
from .stages.selective import selective
from .stages.snip import snip
from .stages.summarize import summarize
from .stages.survival import survive
from .task import task_index


def run_stages(conversation: Conversation, budget: Budget, stages: Sequence[Stage]) -> tuple[Conversation, list[Event]]:
    """Each stage in turn on the previous one's output; all their events."""
    events: list[Event] = []
    for stage in stages:
        result = stage(conversation, budget)
        if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], Conversation)
                and isinstance(result[1], list) and all(isinstance(e, Event) for e in result[1])):
            raise InvalidPipeline(stage_name(stage), f"returned {_shape(result)}, not (Conversation, list[Event])")
        conversation, produced = result
        events.extend(produced)
    return conversation, events


def _shape(value: object) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(type(v).__name__ for v in value) + ")"
    return type(value).__name__


def clear_first(conversation: Conversation, budget: Budget, target_tokens: int) -> tuple[Conversation, list[Event]] | None:
    """Over the trigger, snipping and clearing old outputs alone, when that gets far enough below it.

    It keeps every turn of the agent (and, in each placeholder, the lines it
    took from the output) and costs no summarizer call; the prefix is
    rewritten either way. A summary is needed only when this does not make
    room for a while (``Policy.clear_first_max_fraction`` of the target),
    or when the count of messages is over its trigger (clearing removes none).
    """
    if budget.over_message_trigger(conversation):
        return None
    due = replace(budget, compaction_due=True)
    cleared, events = run_stages(conversation, due, (snip, clear))
    if not events or budget.count(cleared) > budget.policy.clear_first_max_fraction * target_tokens:
        return None
    checked, more = survive(conversation, cleared, due, task_index=task_index(conversation))
    return checked, [*more, *events]  # the clearing last: stats and cache-break causes name it


def compact(conversation: Conversation, budget: Budget, target_tokens: int) -> tuple[Conversation, list[Event], bool]:
    """Summarize until the request is at most ``target_tokens``, escalating instead of looping.

    First with the policy's tail, then a quarter of it, then only the last
    unit; then the per-kind rules on the smallest result. Returns the
    smallest result (never one larger than ``conversation`` unless the
    budget forces a summary, as a manual compact does), the events of the
    attempts that made it, and whether the target was met.
    """
    if not budget.force_summary:
        cleared = clear_first(conversation, budget, target_tokens)
        if cleared is not None:
            return *cleared, True
    tail = budget.tail_budget_tokens
    start_tokens = budget.count(conversation)
    best, best_tokens, best_events = conversation, start_tokens, []
    events: list[Event] = []
    for attempt, tail_tokens in enumerate((tail, tail // 4, 0)):
        result, produced = summarize(conversation, replace(budget, tail_tokens=tail_tokens))
        if not produced:
            continue  # no cut leaves this much tail: a shorter one may
        tokens = budget.count(result)
        if tokens < best_tokens or (budget.force_summary and best is conversation):
            best, best_tokens, best_events = result, tokens, produced
        if tokens <= target_tokens:
            return _never_larger(conversation, start_tokens, best, best_tokens, [*events, *best_events], target_tokens)
        kept = best_events is produced
        events.append(  # an attempt not kept still cost its model calls: they ride on this event
            Event("summarize", "escalated", tokens_before=start_tokens, tokens_after=tokens,
                  detail=f"attempt {attempt + 1} left {tokens:,} tokens, over {target_tokens:,}",
                  calls=() if kept else tuple(call for e in produced for call in e.calls))
        )
    result, produced = selective(best, budget, target_tokens=target_tokens)
    tokens = budget.count(result)
    if tokens < best_tokens:
        best, best_tokens, best_events = result, tokens, [*best_events, *produced]
    return _never_larger(conversation, start_tokens, best, best_tokens, [*events, *best_events], target_tokens)


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
