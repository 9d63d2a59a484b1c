"""fit: the last steps down when even a summary leaves the request over the window.

The trigger is a target; the window is a limit. When a summary and the
per-kind rules cannot bring the request under the window (a tiny window, a
huge latest output, a task that takes most of the room), this stage keeps
going instead of giving up: every rule with nothing spared, then the latest
output cut to what fits, head and tail, then the longest message of the person
other than the task (a CI log pasted whole into the latest turn) cut to its
opening, its last line and the errors it pastes. If the request is still over
the window, nothing contextfold may remove is left, and it says so with a typed
error naming the smallest request it could make: a request the provider
would refuse is never sent silently.
"""

from __future__ import annotations

from dataclasses import replace

from ...conversation import Conversation, Item, Text
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
    current, cut = _cut_longest_message(current, budget, limit)
    events += cut
    after = budget.count(current)
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
    tokens = budget.count(conversation)
    if not candidates or tokens <= limit:
        return conversation, []
    _, index, position = max(candidates)
    original = conversation[index]
    block = original.blocks[position]
    assert isinstance(block, Text)  # chosen above
    text = block.text
    start, current = tokens, conversation
    for _ in range(4):
        share = 1 - (tokens - limit) / max(budget.count_item(current[index]), 1)  # of the message that may stay
        keep = max(int(len(text) * share * 0.95) - 200, 0)
        items = list(current.items)
        items[index] = _with_text(original, position, _cut_note(text, keep))
        current = current.with_items(items)
        tokens = budget.count(current)
        if tokens <= limit or keep == 0:
            break
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
