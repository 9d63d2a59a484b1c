"""put_back: a file the latest turn names as what it works on, whose read was cleared, comes back whole.

Clearing decides by age. A file the agent read before a side discussion with the person is old when the person
says "back to the earlier task: translate that SKILL.md", or when the agent's plan names it again; its read is a
placeholder by then, and the agent's next reply quotes the file. The latest turn's naming words are the session
reader's (:func:`~contextfold.reading.in_hand`): the person's latest request, the agent's newest words, the files
its newest call acts on. When a new item of the request names a file whose newest read the request holds only as a
placeholder, the file's latest content (that read, from the history, with the agent's later edits applied:
:func:`~contextfold.pipeline.restore.latest_files`) goes back in, in a restored-files item placed just before the
item that names it.

Cache-aware: the item goes in among the request's new items (``budget.new_from`` on), after the cached prefix, and
the placeholder stays where it is. Putting the output back in place would write the whole prefix after it again
(at 1.25 times the input price, against 0.1 to read it from the cache); here the file's tokens are written once,
what the agent's read of it again would cost, without that call's round trip. It is bounded: at most what the
policy lets the outputs a request works from take whole (:attr:`~contextfold.pipeline.base.Budget.whole_output_tokens`:
14.6k tokens at 32k, 6.3k at 16k), and never past the level a due compaction clears down to
(``Policy.clear_first_max_fraction`` of the trigger): up to the trigger itself, a put-back brought summaries sooner,
which lost more far context than the file brought (strict 0.973 to 0.731 on one session of the pool).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...actions import READ, result_action
from ...conversation import Conversation, Item, Provenance, Text
from ...folds import Fold
from ...events import Event
from ...reading import in_hand, latest_naming
from ..base import Budget
from ..edits import is_placeholder
from ..restore import RESTORED_HEADING, answered, latest_files

STAGE = "put_back"


def put_back(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
    if budget.original is None or budget.whole_output_tokens <= 0:
        return conversation, []
    items = conversation.items
    cleared = _CLEARED_READS.of(conversation)  # first: most requests hold none, and reading the turn is not free
    if not cleared:
        return conversation, []
    naming = [n for n in latest_naming(items) if n.index >= budget.new_from]  # an older one was read when it came
    if not naming:
        return conversation, []
    wanted = {path: at for path, at in in_hand(items, naming).items() if path in cleared and _cleared_read(items, path)}
    if not wanted:
        return conversation, []
    span = [_whole(item, budget) for item in items[: max(wanted.values())]]
    level = int(budget.policy.clear_first_max_fraction * budget.trigger_tokens)  # where a due clearing stops
    room = min(budget.whole_output_tokens, level - budget.count(conversation))
    sections: list[str] = []
    paths: list[str] = []
    for path, content, note in latest_files(answered(span)):
        if path not in wanted or content is None:
            continue
        section = f"### {path}{note}\n{content}"
        cost = budget.count_text(section) if budget.count_text is not None else len(section) // 4
        if cost > room:
            continue
        room -= cost
        sections.append(section)
        paths.append(path)
    if not sections:
        return conversation, []
    at = max((start for start, _ in conversation.units() if start <= min(wanted[p] for p in paths)), default=0)
    if at < budget.new_from:  # the unit naming it began in the cached prefix: an insertion there would break it
        return conversation, []
    item = Item("user", (Text(f"{RESTORED_HEADING}\n\n" + "\n\n".join(sections)),), timestamp=budget.now_s,
                provenance=Provenance(restored=True))
    result = conversation.with_items([*items[:at], item, *items[at:]])
    return result, [Event(STAGE, "restored", (item.id,), budget.count(conversation), budget.count(result),
                          f"put back what the latest turn names and clearing took: {', '.join(paths)}")]


def _read_on(cleared: set[str], index: int, item: Item) -> None:
    """:data:`_CLEARED_READS` read on over one more item: a read of a file decides whether its newest read is cleared."""
    action = result_action(item) if item.role == "tool" else None
    if action is None or action.kind != READ:
        return
    placeholder = is_placeholder(item)
    for path in action.paths:
        if placeholder:
            cleared.add(path)
        else:
            cleared.discard(path)


_CLEARED_READS: Fold[set[str]] = Fold("cleared_reads", set, _read_on)
"""The files whose newest read in the request is a placeholder: the only ones a put-back could bring back. Read on
as the request grows (:class:`~contextfold.folds.Fold`): every request asks, most hold none."""


def _cleared_read(items: Sequence[Item], path: str) -> bool:
    """Whether the request's newest read of ``path`` is a placeholder and no restored item after it holds the file (a
    put-back of an earlier request); a read the agent made since the naming words (reading it again) is whole."""
    for item in reversed(items):
        if item.provenance.restored and f"\n### {path}" in item.text:
            return False
        action = result_action(item)
        if action is not None and action.kind == READ and path in action.paths:
            return is_placeholder(item)
    return False


def _whole(item: Item, budget: Budget) -> Item:
    """``item`` as the history holds it when a stage replaced it by a placeholder (its output whole), else itself."""
    if not is_placeholder(item) or budget.original is None:
        return item
    original = budget.original(item.id)
    return original if original is not None else item
