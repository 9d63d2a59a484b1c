"""survival: after a compaction, check that what the agent needs is still there, and put back what is not.

A summary (by a model or by extraction) and a batch of cleared outputs both
decide what to keep without knowing what the next turns will use. Before the
compacted request leaves, this check reads the request as it was and lists
what must survive: the task's identifiers, the files edited, the errors no
later step resolved (their line verbatim), the open plan items, and the
references the agent and the user kept using (:mod:`..importance`). Whatever
of that the compacted request no longer holds is put back in one short note,
within a bounded budget (heaviest first), and an event says what was missing.

The note is a user item placed right after the summary (or before the first
changed round), so it sits in the part of the prompt the compaction rewrote
anyway and costs no further cache break.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ...conversation import Conversation, Item, Text, readable_text
from ...events import Event
from ...summarizers._facts import Facts
from ..base import Budget
from ..edits import MARK
from ..importance import References, item_tokens, specific_tokens

STAGE = "survival"
MAX_ERRORS = 3
MAX_PLAN_ITEMS = 10
ERROR_CHARS = 400
PLAN_CHARS = 200


@dataclass
class Needs:
    """What must survive a compaction, each list most important first."""

    errors: list[str] = field(default_factory=list)
    plan: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    task: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {name: len(values) for name, values in vars(self).items() if values}


def needs(conversation: Conversation, task_index: int | None) -> Needs:
    """What of ``conversation`` must survive any compaction of it."""
    facts = Facts()
    facts.read(conversation.items, concepts=False)
    errors = [e.line[:ERROR_CHARS] for e in facts.errors if e.resolved is None][-MAX_ERRORS:][::-1]
    plan = [t["text"][:PLAN_CHARS] for t in facts.todos or () if t["status"] != "completed"][:MAX_PLAN_ITEMS]
    files = [path for path, _ in facts.edited_files()]
    task = sorted(specific_tokens(conversation[task_index].text)) if task_index is not None else []
    references = References.of(conversation.items).ranked()
    return Needs(errors, plan, files, task, references)


def missing(needed: Needs, text: str, present: frozenset[str] | None = None) -> Needs:
    """The part of ``needed`` that ``text`` does not hold (substring search, like a reader would).

    ``present`` are the specific tokens of ``text`` when known (the survival
    check takes them from each item, where they are memoized, so an item kept
    from the request before costs no second reading). Errors, plan items and
    files are searched for in the text; the task's tokens and the references
    are specific tokens themselves, so they can only stand inside one of the
    text's own, and are searched for among those, a far shorter text.
    """
    present = specific_tokens(text) if present is None else present
    tokens = "\n".join(present)

    def absent(values: Sequence[str], within: str) -> list[str]:
        return [v for v in values if v not in present and v not in within]

    return Needs(absent(needed.errors, text), absent(needed.plan, text), absent(needed.files, text),
                 absent(needed.task, tokens), absent(needed.references, tokens))


def note_text(lost: Needs, max_tokens: int, count_text: Callable[[str], int]) -> str | None:
    """The note putting back ``lost``, within ``max_tokens``: errors, plan, files, task, then references."""
    header = f"{MARK}: checked after compaction; these were no longer in the context and are kept here]"
    lines: list[str] = []
    if lost.errors:
        lines.append("Unresolved errors, verbatim:\n" + "\n".join(f"    {e}" for e in lost.errors))
    if lost.plan:
        lines.append("Open plan items:\n" + "\n".join(f"- {p}" for p in lost.plan))
    if lost.files:
        lines.append("Files edited: " + ", ".join(lost.files))
    if lost.task:
        lines.append("Named in the task: " + ", ".join(lost.task))
    fixed = "\n".join([header, *lines])
    spent = count_text(fixed)
    if spent > max_tokens:
        return None
    references = _within(lost.references, max_tokens - spent, count_text)
    if references:
        lines.append("Identifiers, paths and values in use, most used first: " + ", ".join(references))
    return "\n".join([header, *lines]) if lines else None


def _within(values: list[str], max_tokens: int, count_text: Callable[[str], int]) -> list[str]:
    """The longest prefix of ``values`` whose comma-joined text fits ``max_tokens``.

    Each value is counted on its own (the same references come back in every
    note, so the counter has most of them already) with one token for its
    separator, and a margin for where the pieces would merge.
    """
    spent = 16
    for keep, value in enumerate(values):
        spent += count_text(value) + 1
        if spent > max_tokens:
            return values[:keep]
    return values


def survive(before: Conversation, after: Conversation, budget: Budget, *, task_index: int | None) -> tuple[Conversation, list[Event]]:
    """``after`` with what it lost of ``before``'s needs put back (at most the policy's survival budget)."""
    p = budget.policy
    if budget.count_text is None or p.survival_max_tokens <= 0 or after is before:
        return after, []
    text = "\n".join(readable_text(item) for item in after.items)
    lost = missing(needs(before, task_index), text, frozenset().union(*map(item_tokens, after.items)))
    if not lost.counts():
        return after, [Event(STAGE, "checked", detail="everything needed survived")]
    saved = budget.count(before) - budget.count(after)
    cap = min(p.survival_max_tokens, max(int(saved * p.survival_max_share), 0))
    put_back = note_text(lost, cap, budget.count_text)
    if put_back is None:
        return after, [Event(STAGE, "lost", detail=f"no room to put back {lost.counts()}", data=lost.counts())]
    note = Item("user", (Text(put_back),), timestamp=budget.now_s, meta={"survival": True})
    items = list(after.items)
    at = _insert_at(before, after)
    items.insert(at, note)
    result = after.with_items(items)
    tokens_before = budget.count(after)
    event = Event(STAGE, "restored", (note.id,), tokens_before, budget.count(result),
                  f"put back what the compaction lost: {', '.join(f'{n} {k}' for k, n in lost.counts().items())}",
                  lost.counts())
    return result, [event]


def _insert_at(before: Conversation, after: Conversation) -> int:
    """After a new summary (and its restored files), else at the start of the first changed unit."""
    for index, item in enumerate(after.items):
        if item.meta.get("summary") and index < len(before) and before[index] is not item:
            while index + 1 < len(after) and after[index + 1].meta.get("restored"):
                index += 1
            return index + 1
    first = next((i for i, (old, new) in enumerate(zip(before.items, after.items)) if old is not new), len(after))
    return max((start for start, _ in after.units() if start <= first), default=0)
