"""fit: the last steps down when even a summary leaves the request over the window.

The trigger is a target; the window is a limit. When a summary and the
per-kind rules cannot bring the request under the window (a tiny window, a
huge latest output, a task that takes most of the room), this stage keeps
going instead of giving up: every rule with nothing spared, then the latest
output cut to what fits, head and tail, then the long text values of the
arguments of a call already answered (a file written whole, a workflow's JSON),
then the longest message of the person other than the task (a CI log pasted
whole into the latest turn) cut to its opening, its last line and the errors it
pastes. The task is never cut. If the request is still over
the window, nothing contextfold may remove is left, and it says so with a typed
error naming the smallest request it could make: a request the provider
would refuse is never sent silently.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

from ...conversation import Conversation, Item, JSONObject, JSONValue, Text, ToolCall
from ...errors import ContextOverflow
from ...events import Event
from ...summarizers._text import shorten_message
from ..base import Budget
from ..edits import MARK, compacted_by, head_tail, latest_result_index, result_text, with_result
from ..task import added_by_contextfold, task_index
from .selective import selective

STAGE = "fit"
COUNT_MARGIN = 0.03
"""Kept free under the window. Only the prompt the provider last reported is counted exactly; what was added
since is an estimate, and on a small window one new output of code or logs is most of the request: the corpus
replays at 8k showed the estimate short by 2.5 %, which a 1 % margin let through as a request over the window."""


def fit_window(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
    """``conversation`` brought under the window, or :class:`~contextfold.errors.ContextOverflow`."""
    limit = window_limit(budget, conversation)
    before = budget.count(conversation)
    if before <= limit:
        return conversation, []
    rules = tuple(replace(rule, keep_recent=0) for rule in budget.policy.selective_rules)
    current, events = selective(conversation, replace(budget, policy=replace(budget.policy, selective_rules=rules),
                                                      target_tokens=limit))
    current, cut = _cut_latest_output(current, budget, limit)
    events += cut
    current, cut = _cut_call_arguments(current, budget, limit)
    events += cut
    current, cut = _cut_longest_message(current, budget, limit)
    events += cut
    after = budget.count(current)
    # The margin was set by what the request before the cuts only estimated; what is sent may estimate less of
    # itself (an estimated output cut away), and its own margin is the one that covers its count's error.
    limit = max(limit, window_limit(budget, current))
    if after > limit:
        raise ContextOverflow(after, budget.window_tokens,
                              "the system prompt, tools, task and the latest round alone are this large", limit)
    return current, events


ESTIMATE_SHORTFALL = 0.10
"""How far an estimate of text the provider has not reported on may fall short, as a share of it: the heuristic
counts Markdown documentation 4-10 % under o200k (a 54,000-character skill file loaded into the latest turn at 16k
went out at 16,440 tokens for a count under 15,520: the window's margin alone covers a few thousand new tokens)."""


def window_limit(budget: Budget, conversation: Conversation | None = None) -> int:
    """The largest request that surely fits the window: less :data:`COUNT_MARGIN` of it or, when more,
    :data:`ESTIMATE_SHORTFALL` of what the count of ``conversation`` estimated rather than read from a report."""
    margin = budget.window_tokens * COUNT_MARGIN
    if conversation is not None and budget.count_estimated is not None:
        margin = max(margin, ESTIMATE_SHORTFALL * budget.count_estimated(conversation))
    return budget.window_tokens - int(margin)


def _cut_latest_output(conversation: Conversation, budget: Budget, limit: int) -> tuple[Conversation, list[Event]]:
    """The latest output cut, head and tail, by what the request is over ``limit`` (a few tries)."""
    index = latest_result_index(conversation.items)
    tokens = budget.count(conversation)
    if index is None or tokens <= limit:
        return conversation, []
    start, current = tokens, conversation
    for _ in range(4):
        text = result_text(current[index])
        share = 1 - (tokens - limit) / max(budget.count_item(current[index]), 1)  # of the output that may stay
        keep = max(int(len(text) * share * 0.95) - 100, 0)
        items = list(current.items)
        items[index] = with_result(current[index], head_tail(text, keep * 2 // 3, keep // 3), STAGE)
        current = current.with_items(items)
        tokens = budget.count(current)
        if tokens <= limit or keep == 0:
            break
    event = Event(STAGE, "cut_latest_output", (current[index].id,), start, tokens,
                  "the latest output did not fit the window: its head and tail are kept")
    return current, [event]


def _cut_call_arguments(conversation: Conversation, budget: Budget, limit: int) -> tuple[Conversation, list[Event]]:
    """The longest arguments of calls already answered, their long text values cut by what the request is over,
    the longest call first, then the next (an agent writes several files in parallel calls of one turn).

    Only reached when everything else is at its least, so the calls are in the latest round: an agent that wrote
    a file whole or sent a workflow's JSON in one call (replayed at a smaller window than it ran in, or on a
    small model) leaves a round larger than the window. Its arguments are the agent's own output, already
    carried out, and its result says what came of it: each value longer than what may stay is cut head and
    tail, the arguments stay an object of the same keys (the call is still well-formed for every provider), and
    the whole call stays in the session's history."""
    events: list[Event] = []
    cut: set[str] = set()
    for _ in range(_MOST_CALLS_CUT):
        conversation, event = _cut_one_call(conversation, budget, limit, cut)
        if event is None:
            break
        events.append(event)
    return conversation, events


_MOST_CALLS_CUT = 16
"""Calls whose arguments one request may have cut: a turn of parallel writes is a handful."""


def _cut_one_call(conversation: Conversation, budget: Budget, limit: int, cut: set[str]
                  ) -> tuple[Conversation, Event | None]:
    """The longest arguments of an answered call not ``cut`` yet, cut by what the request is over (its id added)."""
    answered = {item.tool_result.call_id for item in conversation.items if item.tool_result is not None}
    candidates = [(len(json.dumps(call.arguments)), index, position)
                  for index, item in enumerate(conversation.items)
                  if item.role == "assistant" and not added_by_contextfold(item)
                  for position, call in enumerate(item.blocks)
                  if isinstance(call, ToolCall) and call.id in answered and call.id not in cut]
    start, chosen = _largest_if_over(conversation, budget, limit, candidates)
    if chosen is None:
        return conversation, None
    size, index, position = chosen
    original = conversation[index]
    call = original.blocks[position]
    assert isinstance(call, ToolCall)  # chosen above
    cut.add(call.id)

    def shortened_call(keep: int) -> Item:
        shortened = replace(call, arguments=_shortened(call.arguments, _longest_kept(_sizes(call.arguments), keep)),
                            raw_arguments=None)
        blocks = tuple(shortened if at == position else block for at, block in enumerate(original.blocks))
        return replace(original, blocks=blocks, provenance=compacted_by(original, STAGE))

    current, tokens = _shrink(conversation, budget, limit, index, size, shortened_call)
    return current, Event(STAGE, "cut_call_arguments", (original.id,), start, tokens,
                          f"the arguments of a call already answered ({call.name}) did not fit the window: the head "
                          "and tail of each long value are kept")


def _largest_if_over(conversation: Conversation, budget: Budget, limit: int, candidates: list[tuple[int, int, int]]
                     ) -> tuple[int, tuple[int, int, int] | None]:
    """The request's tokens, and the largest of ``candidates`` (size, item index, block position) when it is over
    ``limit`` (``None`` when under it, or nothing to cut)."""
    tokens = budget.count(conversation)
    return tokens, max(candidates) if candidates and tokens > limit else None


def _shrink(conversation: Conversation, budget: Budget, limit: int, index: int, size: int,
            cut: Callable[[int], Item]) -> tuple[Conversation, int]:
    """The item at ``index`` remade by ``cut`` with fewer characters kept of its ``size`` (from its largest part)
    until the request is under ``limit`` or nothing is left to keep (a few tries, each by what is still over)."""
    current, tokens, keep = conversation, budget.count(conversation), size
    for _ in range(4):
        share = 1 - (tokens - limit) / max(budget.count_item(current[index]), 1)  # of the item as it is now
        keep = max(int(keep * share * 0.95) - 200, 0)
        items = list(current.items)
        items[index] = cut(keep)
        current = current.with_items(items)
        tokens = budget.count(current)
        if tokens <= limit or keep == 0:
            break
    return current, tokens


def _sizes(arguments: JSONObject) -> list[int]:
    """The length of each argument's value as it is sent (a text's own length, anything else its JSON's)."""
    return [len(_as_text(value)) for value in arguments.values()]


def _as_text(value: JSONValue) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _longest_kept(lengths: list[int], total: int) -> int:
    """The longest a value may stay so that all of them together take at most ``total`` characters."""
    kept, remaining, count = 0, total, len(lengths)
    for length in sorted(lengths):  # the short ones stay whole while the rest share what is left
        if length * count > remaining:
            return max(remaining // count, kept)
        kept, remaining, count = length, remaining - length, count - 1
    return kept


def _shortened(arguments: JSONObject, cap: int) -> JSONObject:
    """``arguments`` with each value longer than ``cap`` cut to its head and tail, keys and order kept: a text
    as text, a nested object or list (a workflow's JSON) as the head and tail of its JSON, a text now. The call is
    history, carried out already, and no provider checks a past call's arguments against the tool's schema."""
    return {key: head_tail(_as_text(value), cap * 2 // 3, cap // 3)
            if len(_as_text(value)) > max(cap, _KEPT_WHOLE_CHARS) else value
            for key, value in arguments.items()}


_KEPT_WHOLE_CHARS = 200
"""An argument this short stays whole (a path, a name, a flag): its marker would be longer than what it saves."""


def _cut_longest_message(conversation: Conversation, budget: Budget, limit: int) -> tuple[Conversation, list[Event]]:
    """The longest text of a user message, not the task nor contextfold's own, cut by what the request is over.

    Only reached when everything else is at its least: the message is in the latest round (older ones were
    summarized). What a person pastes is mostly a log or a file; :func:`shorten_message` keeps what they report
    and ask (the opening, the last line, the errors), and the whole message stays in the transcript."""
    task = task_index(conversation)
    candidates = [(len(block.text), index, position)
                  for index, item in enumerate(conversation.items)
                  if item.role == "user" and index != task and not added_by_contextfold(item)
                  for position, block in enumerate(item.blocks) if isinstance(block, Text)]
    start, chosen = _largest_if_over(conversation, budget, limit, candidates)
    if chosen is None:
        return conversation, []
    _, index, position = chosen
    original = conversation[index]
    block = original.blocks[position]
    assert isinstance(block, Text)  # chosen above
    text = block.text
    current, tokens = _shrink(conversation, budget, limit, index, len(text),
                              lambda keep: _with_text(original, position, _cut_note(text, keep)))
    event = Event(STAGE, "cut_longest_message", (original.id,), start, tokens,
                  "a message did not fit the window: its opening, last line and the errors it pastes are kept")
    return current, [event]


def _cut_note(text: str, keep_chars: int) -> str:
    kept = shorten_message(text, keep_chars) if keep_chars else ""
    return f"{kept}\n{MARK}: this message was cut to fit the window; the whole of it is in the session's history]"


def _with_text(item: Item, position: int, text: str) -> Item:
    """``item`` with the text of its ``position``-th block (a :class:`Text`) replaced, marked as changed by this stage."""
    blocks = tuple(replace(block, text=text) if at == position and isinstance(block, Text) else block
                   for at, block in enumerate(item.blocks))
    return replace(item, blocks=blocks, provenance=compacted_by(item, STAGE))
