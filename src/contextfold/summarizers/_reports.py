"""Texts another writer made of the work, which a summary carries rather than replaces.

Two kinds: a delegated agent's report (the output of Claude Code's ``Task`` or
``Agent`` tool, an OpenHands delegate, contextfold's own ``task``: the work
product the agent asked for, which it goes on to act on, like a fetched issue),
and a harness's own continuation summary (Claude Code's "This session is being
continued from a previous conversation…": the only record of everything
before it). Both are read here into their substance, their headings first: a
report's headings, points, findings and paths; a continuation summary's
sections that stay true after it (not what was being done when it was written,
nor what was to come next: the messages after it say what became of those).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ..conversation import Item, ToolCall
from ._text import shorten_lines

DELEGATE_TOOLS = frozenset({"task", "agent", "delegate", "delegate_task", "dispatch_agent", "spawn_agent", "subagent",
                            "run_subagent", "agentdelegateaction", "call_agent"})
"""Tools whose output is another agent's report (lower-cased names); a call naming a ``subagent_type`` is one too."""
_TOOL_BLOCK = re.compile(r"^\s*<([\w:]+)>\s*$")
"""A line opening a tool call a sub-agent wrote out in its text (``<bash>``, ``<Task>``, ``<claude:function_calls>``):
its input, not its report."""
_SUBSTANCE = re.compile(r"^\s*(?:#{1,6}\s|[-*•]\s|\d+[.)]\s|\*\*|\|)|[\w.-]*/[\w.-]+\.\w{1,8}\b")
"""A line of a report's substance inside a fenced block (where the rest is code): a heading, a list item, a numbered
point, a bold lead, a table row, or a line naming a path."""
HEADING = re.compile(r"^\s*(?:#{1,6}\s|\d+\.\s+\*\*|\*\*[^*]+\*\*:?\s*$|\d+\.\s+[A-Z][\w &/,()-]{2,60}:\s*$)")
"""A line heading a section: Markdown's ``## …``, a numbered bold title (``2. **Key Technical Concepts:**``), a bold
line of its own, a numbered title ending in a colon (``1. Primary Request and Intent:``)."""
_SECTION_LINES = 3
"""Lines of each section kept, in turns (every section's first line, then every section's second…), before the rest."""
REPORT_CHARS = 2_000
"""The characters of a delegated agent's report a cleared placeholder keeps (its conclusions: the newest lines);
a report no longer than this loses nothing to clearing."""
_CONTINUATION = re.compile(r"^\s*This session is being continued from a previous conversation")
_CONTINUATION_SUMMARY = re.compile(r"^Summary:\s*$", re.MULTILINE)
"""Where a Claude Code continuation summary's sections begin (its analysis, the model's notes, comes before)."""
_CONTINUE_NOTE = re.compile(r"\n\s*Please continue the conversation from where we left it off.*\Z", re.DOTALL)
_SUPERSEDED = re.compile(r"\b(?:current|ongoing|recent|latest)\s+(?:work|state|status|task|focus|progress|activity)|"
                         r"next\s+steps?|left\s+off|work\s+in\s+progress", re.IGNORECASE)
"""A heading of a section the work after the summary supersedes: what was being done when it was written (Claude
Code's "8. Current Work"), what was to come next ("9. Optional Next Step"). Quoted after the messages that came
next, they tell the model a state that is no longer so (and the summary's budget goes to them rather than to the
requests, files, errors and pending tasks that stay true)."""
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_SECTION_HEADINGS = (re.compile(r"^(#{1,6})\s"),
                     re.compile(r"^()\d+\.\s+(?:\*\*[^*\n]{2,80}\*\*:?|[A-Z][^:\n]{2,80}:)\s*$"),
                     re.compile(r"^()\*\*[^*\n]{2,80}\*\*:?\s*$"))
"""The kinds of heading a harness's summary is cut into sections at, outermost first (the first the text has is
used, at its outermost level): Markdown's ``## …``, a numbered title on a line of its own
(``1. Primary Request and Intent:``, ``2. **Key Technical Concepts:**``), a bold line of its own."""


def delegates(call: ToolCall) -> bool:
    """Whether ``call`` hands work to another agent, whose final report its output is."""
    return call.name.lower() in DELEGATE_TOOLS or "subagent_type" in call.arguments


def is_report(item: Item) -> bool:
    """Whether ``item`` is a delegated agent's report: the output of a call that :func:`delegates`."""
    result = item.tool_result
    return result is not None and delegates(ToolCall(result.call_id, result.tool_name or "", result.arguments or {}))


def reports_kept_whole(items: Sequence[Item], count_item: Callable[[Item], int], room_tokens: int) -> frozenset[int]:
    """The indices of the newest delegated agents' reports that fit ``room_tokens`` together, newest first: the
    work products the agent is acting on, which no read fetches again (many turns of another agent made them).
    Cut to a budget or cleared to their lines in use, an agent that goes on to copy a report's list or table into
    a file has lost it; an older report that does not fit, and every one past it, is left to the other stages."""
    kept: set[int] = set()
    if room_tokens <= 0:  # off (Policy.report_whole_fraction 0): no scan of the history at every stage
        return frozenset()
    for index in range(len(items) - 1, -1, -1):
        if not is_report(items[index]) or len(items[index].text) <= REPORT_CHARS:
            continue  # a short report (an agent started in the background, its id) loses nothing when cleared
        room_tokens -= count_item(items[index])
        if room_tokens < 0:
            break
        kept.add(index)
    return frozenset(kept)


def is_continuation(item: Item) -> bool:
    """Whether ``item`` is a harness's summary of the conversation before it, in Claude Code's words. (The importers'
    ``meta["compact_summary"]`` mark is wire data no module past the adapters reads: see ``Provenance``.)"""
    return item.role == "user" and bool(_CONTINUATION.match(item.text))


def report_substance(text: str, max_chars: int) -> str:
    """A delegated agent's report without the tool calls it wrote out (``<bash>…</bash>``) and, inside fenced blocks,
    without the code (its headings, points and paths kept); at most ``max_chars``, the newest lines first (a
    report concludes at its end)."""
    kept: list[str] = []
    block: str | None = None
    fenced = False
    for line in text.splitlines():
        stripped = line.strip()
        if block is not None:
            block = None if stripped == f"</{block}>" else block
            continue
        opened = _TOOL_BLOCK.match(line)
        if opened is not None:
            block = opened.group(1)
            continue
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if stripped and (not fenced or _SUBSTANCE.search(line)):
            kept.append(line.rstrip())
    size, start = 0, len(kept)
    while start > 0 and size + len(kept[start - 1]) + 1 <= max_chars:
        start -= 1
        size += len(kept[start]) + 1
    return "\n".join(kept[start:])


def continuation_substance(text: str) -> str:
    """A continuation summary's sections that stay true (from Claude Code's ``Summary:`` on, when it has one),
    without the harness's closing note to go on: see :func:`lasting_sections`."""
    found = _CONTINUATION_SUMMARY.search(text)
    body = text[found.end():] if found is not None else text
    return lasting_sections(_CONTINUE_NOTE.sub("", body).strip())


def _sections(lines: Sequence[str]) -> list[tuple[int, int]]:
    """The (heading, end) line ranges of ``lines``' sections, in order, cut at the outermost kind of heading the text
    has (:data:`_SECTION_HEADINGS`): under ``## 3. Files`` a ``1. **Initial Request:**`` or ``**Files Read:**`` is a
    point of that section, not a section of its own."""
    prose = [n for n, fenced in enumerate(_fenced(lines)) if not fenced]  # a ``# comment`` in quoted code heads nothing
    for shape in _SECTION_HEADINGS:
        found = [(n, match.group(1)) for n in prose if (match := shape.match(lines[n]))]
        if found:
            outer = min(level for _, level in found)
            headings = [n for n, level in found if level == outer]
            return list(zip(headings, [*headings[1:], len(lines)]))
    return []


def lasting_sections(text: str) -> str:
    """``text`` without its sections whose heading says they hold the work of the moment it was written or the
    step to come (:data:`_SUPERSEDED`); a text with no such heading is returned as it is."""
    lines = text.split("\n")
    dropped = {n for start, end in _sections(lines) if _SUPERSEDED.search(lines[start]) for n in range(start, end)}
    return "\n".join(line for n, line in enumerate(lines) if n not in dropped).strip() if dropped else text


def by_headings(text: str, max_chars: int) -> str:
    """``text`` cut on line boundaries, its section headings kept first, then the first lines of every section in
    turns: each section still says what it held, rather than the first section taking the whole budget."""
    lines = text.split("\n")
    headings = [n for n, line in enumerate(lines) if HEADING.match(line)]
    bodies = [[n for n in range(start + 1, end) if lines[n].strip()][:_SECTION_LINES]
              for start, end in zip(headings, [*headings[1:], len(lines)])]
    rounds = [body[depth] for depth in range(_SECTION_LINES) for body in bodies if depth < len(body)]
    return shorten_lines(text, max_chars, [*headings, *rounds])


def by_sections(text: str, max_chars: int) -> str:
    """``text`` cut on line boundaries, without the code it quotes in fenced blocks (the files hold it), every
    section in turns: its heading with its first point, then every section's second point…, in each section its
    outer lines before the ones under them (see :func:`_rank`). Cut small, it still says something of each section
    rather than heading after heading over an omission marker."""
    if len(text) <= max_chars:
        return text
    every = text.split("\n")
    lines = [line for line, fenced in zip(every, _fenced(every)) if not fenced]
    points = [[start, *sorted((n for n in range(start + 1, end) if lines[n].strip()), key=lambda n: _rank(lines[n]))]
              for start, end in _sections(lines)]
    paired = [n for section in points for n in section[:2]]  # each heading with its first point
    rest = [section[level] for level in range(2, max(map(len, points), default=0)) for section in points
            if level < len(section)]
    return shorten_lines("\n".join(lines), max_chars, [*paired, *rest])


def _fenced(lines: Sequence[str]) -> list[bool]:
    """For each line, whether it is code quoted in a fenced block (its fences included)."""
    marks, inside = [], False
    for line in lines:
        fence = bool(_FENCE.match(line))
        marks.append(inside or fence)
        inside = inside != fence
    return marks


def _rank(line: str) -> tuple[int, bool]:
    """Which of a section's lines a cut keeps first: the outer ones, and of those a point before a line that only
    leads into the points under it ("**Files Read:**", "The user's requests were:", "### Files")."""
    stripped = line.strip()
    return len(line) - len(line.lstrip()), stripped.startswith("#") or stripped.rstrip("*").endswith(":")
