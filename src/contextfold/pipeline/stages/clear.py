"""clear / mask: outputs older than the most recent rounds are replaced by a placeholder.

Never an output of the current turn while the request is under the trigger
(:func:`~contextfold.pipeline.edits.spared_from`): the agent is working from
what it fetched since the person last spoke, and its next reply quotes it.

Clearing edits the middle of the history, which breaks the provider's prompt
cache from the first cleared item on. So it clears only when that is cheap
(the cache has gone cold anyway) or worth it (at least ``min_savings_tokens``
saved), and then everything eligible at once, so the cached prefix breaks
once per batch rather than once per turn. Observation masking (a placeholder
for every output older than M rounds, every turn) is the same stage with
``mask_window_rounds`` set; it is there to compare with, not the default.

A placeholder keeps the last error line an output reported: what failed is
the fact an agent most needs later, and it costs one line. The newest output
that shows an error (a failed call, or a CI log the agent read whose call did
not fail) keeps that error with its failing frame, the lines above it: what
failed last, where, is what the agent continues from. A test or lint run keeps
the tally it ended on ("3 failed, 12 passed in 2.1s"), on a line of its own:
how the last run went is read from it again (the summary's last test run). An issue or pull request the agent
fetched keeps its head, its title and body on lines of their own: it is the task as it arrived.
The newest reports of delegated agents are not cleared while they fit ``Policy.report_whole_fraction`` of the
window (:func:`~contextfold.summarizers._reports.reports_kept_whole`): no read fetches them again. Nor is the newest
read of a file the latest turn names as what it works on (:func:`~contextfold.reading.in_hand`: the person's latest
request, the agent's newest words and calls), while such reads fit what the outputs a request works from may take
whole (:attr:`~contextfold.pipeline.base.Budget.whole_output_tokens`): after a side discussion the person says "back
to translating that SKILL.md", and the agent's next reply quotes the file it read before the detour. When a due
compaction clears down to its target, those reads go last, only if the others are not enough: kept whole, they
made a summary due on a 16k window that clearing alone had avoided, and the summary lost them anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ...actions import READ, echoed, item_failure_line, result_action
from ...conversation import Conversation, Item
from ...events import Event
from ...reading import in_hand
from ...summarizers._calls import fetched_issue
from ...summarizers._outputs import (PRINTED_ERROR_INTRO, error_frame, exception_line, failing_error, file_content,
                                     issue_text, listed_files, printed_error, shown_error, tally_line)
from ...summarizers._reports import REPORT_CHARS, is_report, report_substance, reports_kept_whole
from ...summarizers._text import shorten_lines
from ..base import Budget
from ..edits import (MARK, apply_changes, is_placeholder, latest_result_index, recent_round_start, result_text, spared_from,
                     with_result)
from ..importance import References, item_tokens, line_index, referenced_lines

STAGE = "clear"
RESULT_LINE_INTRO = ". The run ended on:"
"""Introduces, on a line of its own, the tally a cleared test or lint run ended on ("3 failed, 12 passed in 2.1s"):
how the last run went is what the agent continues from, and it costs one line."""
FETCHED_ISSUE_INTRO = ". The issue it fetched (the task as it arrived), its head:"
"""Introduces the head of an issue or pull request a cleared output fetched: the task as it arrived, which every
later summary quotes from this placeholder (its lines in use were one 600-character cut of a one-line JSON body:
the issue's second point was gone)."""
FETCHED_ISSUE_CHARS = 2_000
"""The characters of a fetched issue a placeholder keeps: a bug report's text, before the logs and markup it
attaches."""
REPORT_INTRO = ". The report a delegated agent returned, its substance:"
"""Introduces what a cleared report of a delegated agent keeps (a ``Task`` output): the work product the agent asked
for and acts on, which no read fetches again; cleared to its lines in use, four design reports had left the next
summary 600 characters of each."""
KEPT_LINES_INTRO = ". Lines of it still in use:"
"""Introduces, on a line of its own after an error block, the output's lines a placeholder keeps."""


def placeholder(item: Item, tokens: int, stage: str, refs: References | None = None, keep_chars: int = 0,
                error: Sequence[str] = ()) -> Item:
    """``item`` with its output replaced by a note of what was there.

    With ``refs``, the lines of the output that hold references the agent
    has been using stay (at most ``keep_chars``): what it took from this
    output is what it is most likely to need from it again. An issue or pull
    request the agent fetched keeps its head instead: it is the task. ``error`` is the
    error the output showed with its frame (see :func:`last_error`), kept verbatim.

    The placeholders made with the last ``refs`` given are kept (one set, by item): a compaction clears the
    same outputs with the same references up to three times (the batch edits priced, then clearing alone
    before a summary, to its target, then every output), and each placeholder and its token count are then
    made once.
    """
    global _made
    if refs is None:
        return _placeholder(item, tokens, stage, refs, keep_chars, error)
    made = _made  # read once: another thread may replace it
    if made is None or made[0] is not refs:
        made = _made = (refs, {})
    arguments = (tokens, stage, keep_chars, tuple(error))
    known = made[1].get(item.id)
    if known is not None and known[0] is item and known[1] == arguments:
        return known[2]
    cleared = _placeholder(item, tokens, stage, refs, keep_chars, error)
    made[1][item.id] = (item, arguments, cleared)
    return cleared


_made: tuple[References, dict[str, tuple[Item, tuple[object, ...], Item]]] | None = None
"""The references :func:`placeholder` was last given, and what it made with them: by item id, the item, the other
arguments and the placeholder."""


def _placeholder(item: Item, tokens: int, stage: str, refs: References | None, keep_chars: int,
                 error: Sequence[str]) -> Item:
    """:func:`placeholder`, made."""
    result = item.tool_result
    assert result is not None
    action = result_action(item)
    text = result_text(item)
    note = f"{MARK}: output cleared to save context ({tokens:,} tokens); the call is kept, run it again if needed"
    line = item_failure_line(item, action.kind if action else None)
    line = None if line is None else exception_line(text, line)
    printed = None if error or line is not None or file_content(action) else printed_error(text)
    printed = None if printed is None or echoed(printed[0], result.arguments) else printed  # the input given back
    if error:
        note += ". It showed this error:\n" + "\n".join(error) + "\n"
    elif line is not None:  # a verdict that lists its files (prettier's) is quoted with them, in order
        listed = listed_files(text, line)
        block = "\n".join([*listed, line])
        note += f". It reported:\n{block}\n" if listed else f". It reported: {line}"
    elif printed is not None:  # its call did not fail: what it printed went wrong is what a later summary reads here
        error = [*printed[1], printed[0]]
        note += f"{PRINTED_ERROR_INTRO}\n" + "\n".join(error) + "\n"
    tally = None if file_content(action) else tally_line(text)
    tally = None if tally is not None and echoed(tally, result.arguments) else tally  # the call's input given back
    if tally is not None and tally != line and tally not in error:
        note += f"{RESULT_LINE_INTRO}\n{tally}\n"
    if fetched_issue(item):  # the task as it arrived: its head, not the lines of it in use
        note += FETCHED_ISSUE_INTRO + "\n" + shorten_lines(issue_text(text.strip()), FETCHED_ISSUE_CHARS) + "\n"
    elif is_report(item) and (substance := report_substance(text, REPORT_CHARS)):
        note += REPORT_INTRO + "\n" + substance + "\n"
    elif refs is not None and keep_chars > 0:
        kept = referenced_lines(text, refs, keep_chars, item_tokens(item), line_index(item))
        note += KEPT_LINES_INTRO + "\n" + "\n".join(kept) + "\n" if kept else ""
    cleared = with_result(item, note + "]", stage, keep_media=False)
    # the line recorded as none (""): the note, read as an output, quotes an error it did not fail with
    provenance = replace(cleared.provenance, tally=cleared.provenance.tally if tally is None else tally,
                         failure_line=line or "", error_frame=None if line is None else tuple(error_frame(text, line)))
    return replace(cleared, provenance=provenance)


def output_lines(text: str) -> list[str]:
    """The lines of an output's text that are the output's own: a placeholder's note, the line introducing the
    lines it kept and its closing bracket are contextfold's (quoted as what a command printed, they are noise)."""
    return [line for line in text.splitlines()
            if not (line.startswith(MARK) or line in (KEPT_LINES_INTRO, RESULT_LINE_INTRO, FETCHED_ISSUE_INTRO, REPORT_INTRO,
                                                       "]"))]


def clear(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
    p = budget.policy
    if p.native_clearing:  # one clearing authority at a time: the provider's
        return conversation, []
    masking = p.mask_window_rounds is not None
    keep = p.mask_window_rounds if masking else budget.clear_keep_rounds
    latest = latest_result_index(conversation.items)
    changes: dict[int, Item] = {}
    savings = 0
    refs = References.of(conversation.items)
    end = recent_round_start(conversation, keep or 0)
    if not masking:  # masking is the literature's rule, kept as it is to compare with
        end = min(end, spared_from(conversation, budget))
    enough = _enough(conversation, budget) if not masking else None
    whole = frozenset() if masking else reports_kept_whole(conversation.items, budget.count_item,
                                                            budget.report_whole_tokens)
    hand = frozenset() if masking else in_hand_reads(conversation, budget)
    # the reads in hand go last, and only when a due compaction's target needs them (else a summary would be due);
    # never one of the recent rounds or the current turn, which no clearing touches
    last = sorted(index for index in hand if index < end) if enough is not None else []
    for index in [*(i for i in range(end) if i not in hand), *last]:
        if enough is not None and savings >= enough:
            break
        item = conversation[index]
        result = item.tool_result
        if (result is None or index == latest or index in whole or is_placeholder(item)
                or result.tool_name in p.exclude_tools):
            continue
        tokens = budget.count_item(item)
        changed = placeholder(item, tokens, "mask" if masking else STAGE, refs, p.clear_keep_referenced_chars)
        saved = tokens - budget.count_item(changed)
        if saved > 0:
            changes[index] = changed
            savings += saved
    if not masking and not (budget.prefix_rewritten or savings >= p.clear_min_savings_tokens):
        return conversation, []
    newest = last_error(conversation.items)
    if newest is not None and newest[0] in changes:
        index, error = newest
        item = conversation[index]
        changes[index] = placeholder(item, budget.count_item(item), "mask" if masking else STAGE, refs,
                                     p.clear_keep_referenced_chars, error)
    action = "masked" if masking else "cleared"
    why = "cache cold" if budget.cache_cold else "compaction due" if budget.compaction_due else f"saves {savings:,} tokens"
    return apply_changes(conversation, budget, changes, STAGE, action, f"{len(changes)} old outputs ({why})")


def in_hand_reads(conversation: Conversation, budget: Budget) -> frozenset[int]:
    """The newest whole read of each file the latest turn names as what it works on (:func:`~contextfold.reading.
    in_hand`), by index, those of the files named last first, while together they fit
    :attr:`~contextfold.pipeline.base.Budget.whole_output_tokens`."""
    hand = in_hand(conversation.items)
    newest: dict[str, int] = {}
    for index in range(len(conversation) - 1, -1, -1):
        item = conversation[index]
        action = result_action(item) if item.role == "tool" else None
        if action is None or action.kind != READ:
            continue
        for path in action.paths:
            if path in hand and path not in newest:
                newest[path] = index
    kept: set[int] = set()
    room = budget.whole_output_tokens
    for path in sorted(newest, key=lambda p: -hand[p]):
        index = newest[path]
        if is_placeholder(conversation[index]) or index in kept:
            continue
        tokens = budget.count_item(conversation[index])
        if tokens <= room:
            kept.add(index)
            room -= tokens
    return frozenset(kept)


def _enough(conversation: Conversation, budget: Budget) -> int | None:
    """The savings that bring a due compaction's request down to ``budget.target_tokens``, when the escalation gave
    one (:func:`~contextfold.pipeline.escalate.clear_first`); ``None``: clear everything eligible.

    Outputs are cleared oldest first until then: the newer ones, which the agent is more likely working from (a
    file it read a few rounds ago and is now rewriting), stay whole while there is room for them.
    """
    if not budget.compaction_due or budget.target_tokens is None:
        return None
    return max(0, budget.count(conversation) - budget.target_tokens)


def last_error(items: Sequence[Item]) -> tuple[int, list[str]] | None:
    """The newest output that shows an error, by index, with that error: its failing frame and its line
    (a failed call's failure, or an error an output showed without its call failing); ``None`` when none does."""
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        result = item.tool_result
        if result is None or is_placeholder(item):
            continue
        action = result_action(item)
        text = result_text(item)
        line = item_failure_line(item, action.kind if action else None)
        if line is not None:
            return index, failing_error(text, line)
        shown = shown_error(text, action, result.arguments)
        if shown is not None:
            return index, shown
    return None
