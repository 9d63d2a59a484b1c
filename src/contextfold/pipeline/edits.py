"""Small, shared ways of changing a tool result that every stage uses.

A changed result keeps its item id (it is the same logical output, shown
differently) and records in ``provenance.compacted`` which stage changed it, so
a later stage never re-processes it and the transcript can explain the view.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from ..actions import item_failure_line, result_action
from ..conversation import Block, Conversation, Item, Provenance, Text
from ..events import Event
from ..reading.own import MARK as MARK  # every placeholder and marker a stage writes starts with it
from ..summarizers._text import head_end_at, tail_start_at
from .base import Budget

def result_text(item: Item) -> str:
    result = item.tool_result
    return result.text if result is not None else ""


def with_result(item: Item, content: str, stage: str, *, keep_media: bool = True) -> Item:
    """``item`` (a tool item) with its text output replaced by ``content``, marked as compacted by ``stage``.

    Images and documents in the output stay unless ``keep_media`` is false. Public
    (``contextfold.with_result``): the ``compacted`` mark keeps later stages from processing it again. The line
    the output reported its failure with is kept in the provenance (unless a stage recorded it already): the
    placeholder, read as an output, is no failure line ("[contextfold: output snipped…]" as "the last error").
    """
    result = item.tool_result
    assert result is not None, "only tool items have outputs to replace"
    kept: tuple[Block, ...] = ()
    if keep_media and not isinstance(result.content, str):
        kept = tuple(b for b in result.content if not isinstance(b, Text))
    new_content: str | tuple[Block, ...] = (Text(content), *kept) if kept else content
    provenance = compacted_by(item, stage)
    if provenance.failure_line is None:
        action = result_action(item)
        provenance = replace(provenance, failure_line=item_failure_line(item, action.kind if action else None) or "")
    return replace(item, blocks=(replace(result, content=new_content),), provenance=provenance)


def head_tail(text: str, head_chars: int, tail_chars: int, note: str = "",
              middle: Callable[[str], str] | None = None) -> str:
    """``text`` cut to its head and tail with a marker saying what was left out (unchanged if it fits);
    ``middle`` gives what to show of the omitted part after the marker (its error lines, say). Both cuts fall
    between two words (:func:`~contextfold.summarizers._text.head_end_at`): a head ending "type a messa" says less
    than one ending a word earlier."""
    if len(text) <= head_chars + tail_chars:
        return text
    head_end = head_end_at(text, head_chars)
    tail_start = tail_start_at(text, len(text) - tail_chars) if tail_chars else len(text)
    tail_start = max(tail_start, head_end)
    omitted = text[head_end:tail_start]
    marker = f"\n{MARK}: {len(omitted):,} characters, {omitted.count(chr(10)):,} lines omitted{note}]\n"
    shown = middle(omitted) if middle is not None else ""
    return text[:head_end] + marker + shown + text[tail_start:]


PLACEHOLDER_STAGES = frozenset({"snip", "clear", "mask"})
"""Stages that replace an output by a one-line placeholder: nothing is left to shrink."""


def compacted_by(item: Item, stage: str) -> Provenance:
    """``item``'s provenance marked as changed by ``stage``."""
    return replace(item.provenance, compacted=stage)


def is_compacted(item: Item) -> bool:
    return item.provenance.compacted is not None


def is_placeholder(item: Item) -> bool:
    return item.provenance.compacted in PLACEHOLDER_STAGES


def recent_round_start(conversation: Conversation, keep_rounds: int) -> int:
    """Index of the first item of the ``keep_rounds`` most recent rounds (``len`` when 0)."""
    if keep_rounds <= 0:
        return len(conversation)
    rounds = conversation.rounds()
    if len(rounds) <= keep_rounds:
        return rounds[0].start if rounds else len(conversation)
    return rounds[-keep_rounds].start


def current_turn_start(items: Sequence[Item]) -> int:
    """Index of the first item of the current turn: the one after the newest message of the person (a user
    item contextfold did not write: no summary, restored files or survival note) or reply of the agent that called
    no tool (a turn handed back); 0 when none.

    What the agent fetched since is what it is working from, and what its next reply quotes: a customer-service
    agent that looked up eight products answers with their prices.
    """
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if item.role == "user" and not item.provenance.by_contextfold:
            return index + 1
        if item.role == "assistant" and not item.tool_calls and item.text.strip():
            return index + 1
    return 0


def spared_from(conversation: Conversation, budget: Budget) -> int:
    """Index from which no output is cleared or cut: the current turn's (:func:`current_turn_start`) while the
    request is under the trigger; once a compaction is due the window is at stake, and nothing is spared (nor
    ever with ``Policy.spare_current_turn`` off, as Claude Code's clearing spares nothing)."""
    if not budget.policy.spare_current_turn or budget.compaction_due:
        return len(conversation)
    if budget.count(conversation) > budget.trigger_tokens:
        return len(conversation)
    return current_turn_start(conversation.items)


def latest_result_index(items: Sequence[Item]) -> int | None:
    """Index of the most recent tool result: never cleared, whatever a stage decides."""
    for index in range(len(items) - 1, -1, -1):
        if items[index].role == "tool":
            return index
    return None


def apply_changes(
    conversation: Conversation,
    budget: Budget,
    changes: dict[int, Item],
    stage: str,
    action: str,
    detail: str,
) -> tuple[Conversation, list[Event]]:
    """Swap the changed items in, measure before and after, and describe it in one event.

    What a stage returns to report an edit (public: ``contextfold.apply_changes``): ``changes`` maps an
    index of ``conversation`` to the item that replaces it (same id: the same logical item, shown
    differently); the event names ``stage`` and ``action``, the changed ids, and the request's tokens
    before and after by ``budget.count``. No change, no event.
    """
    if not changes:
        return conversation, []
    before = budget.count(conversation)
    items = list(conversation.items)
    for index, item in changes.items():
        items[index] = item
    changed = conversation.with_items(items)
    after = budget.count(changed)
    ids = tuple(items[i].id for i in sorted(changes))
    return changed, [Event(stage, action, ids, before, after, detail)]


def tool_items(conversation: Conversation, indices: Iterable[int]) -> Iterable[tuple[int, Item]]:
    for index in indices:
        item = conversation[index]
        if item.role == "tool":
            yield index, item
