"""The default summarizer: a structured summary read off the conversation itself, no model involved.

It writes the nine sections Claude Code's compaction prompt asks a model for
(:data:`SECTION_TITLES`, with "Findings and Decisions" where Claude Code has
"Key Technical Concepts"), filled with lines taken verbatim from the
conversation rather than prose or counts: the task as it arrived (and an
issue text the agent fetched), the lines in which the agent stated a finding
or a decision (newest first), the last change to each file, the head of a project manifest the agent read (``package.json``
through its scripts: how the project is built and tested), the last error
with its failing frame, the last test command with its result line, the
commands that changed the system, every user message, the open todo items,
the assistant's last words and its last actions each with the line its result
ended on; for the tools that are not about files or commands (a browser, a
booking or support API), each call with its arguments, the pages visited and
the identifiers returned. Deterministic, offline, and a few milliseconds for
a span of hundreds of messages.

A section shows its content or is left out: no heading stands over a count
("… 30 more identifiers") the agent could do nothing with. Messages a harness
wrote in the user's place (format nags, step limits) are not the user's.

Size: the text fits ``request.target_tokens`` as ``request.count_text``
measures it; when it cannot all fit, lower-priority parts shrink first (see
``_fit``). What always stays: the head of every user message (of the newest, when
their heads alone would take most of the target), every changed path, the last error line, and the newest findings (each with the call whose
output it followed), ahead of per-file counts and command lists. Only when those alone exceed the target is
the target exceeded.

Repeated compactions: :attr:`SummaryResult.state` holds the facts as JSON
data; a later span that starts with this summary (its ``Summary.extra["state"]``)
merges them with what the new items add, so every user message, changed file
and the last error survive any number of compactions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..actions import EXIT_FAILURE_ENDED
from ..conversation import Item
from ..reading import first_request, opening
from ..reading.request import failure_lines
from ._calls import todo_line
from ._facts import Facts
from ._fit import Elastic, Fixed, Listing, Part, allocate
from ._next_step import asking, error_source, next_step, without_plan
from ._records import ErrorFacts
from ._reports import by_headings, by_sections
from ._said import names_in
from ._text import Meter, shorten, shorten_lines, shorten_message
from .base import SummaryRequest, SummaryResult

SECTION_TITLES = (
    "Primary Request and Intent",
    "Findings and Decisions",
    "Files and Code Sections",
    "Errors and fixes",
    "Problem Solving",
    "All user messages",
    "Pending Tasks",
    "Current Work",
    "Optional Next Step",
)
"""The sections, in order; each is written as ``## <n>. <title>`` (a section with nothing to show is left out)."""

# Weights: how fast a part grows as the budget allows (see _fit). The first
# request, the last error and the agent's own findings matter most.
_W_FOCUS = 5.0
_W_TASK = 4.0
_W_FETCHED_TASK = 3.0
_W_LATEST_USER = 2.5
_W_USER = 1.5
_W_FINDINGS = 2.0
_W_NEW_SNIPPET = 2.0
_W_OLD_SNIPPET = 1.0
_W_CURRENT = 2.0
_W_ERRORS = 2.0
_W_TODOS = 1.2
_W_NEXT = 1.0
_W_EARLIER_SUMMARY = 1.5
_W_REPORT = 2.5  # a delegated agent's report: the work product the agent asked for, which it acts on next
_W_OLDER_REPORT = 0.8
_W_COMMANDS = 1.0
_W_ACTIONS = 1.5
_W_FILES = 0.8
_W_READS = 0.6
_W_MANIFEST = 2.0  # how the project is built, tested and run: the commands the agent is likely to run next
_W_DONE = 0.4
_W_INPUT_CALLS = 1.5  # what a browsing or support session typed, asked, booked or changed
_W_RECORDS = 1.0
_W_PAGES = 1.0
_W_MOVE_CALLS = 0.3
_FOCUS_BOOST = 2.0
"""Parts mentioning a word of the user's compaction instructions grow this much faster."""

# Floors, in tokens: what a part keeps however small the budget. Kept small on
# purpose: the weights give the important parts room whenever there is any.
_TASK_FLOOR = 40
_OPENING_FLOOR = 150  # the first request's opening lines (what it asks) are kept whole up to this
_FIRST_OPENING_WHOLE = 800
"""The first request's opening lines are kept whole up to this many tokens, line by line from the top, each no longer
than the latest message keeps whole (:data:`_LATEST_USER_WHOLE`; a longer line, a pasted log, keeps its head): a
request of a few long paragraphs (a specification typed after "./mcp") says what it asks in them, and a summary is
then the only place it lives."""
_MARKERS_TOKENS = 32  # the omission markers around a request's opening kept alone: a floor of its tokens only cut it
_FETCHED_TASK_FLOOR = 300  # the issue an agent fetched is its task: kept nearly whole
_USER_FLOOR = 24
_OPENER_CHARS = 60
"""A message before the first request that said nothing (``./mcp``, "hi") is named in section 1 up to this long."""
_REPORT_FLOOR = 48
"""A person's message that pastes an error keeps this much: its last line and the error line it reports, each with
the marker for what was left out around it (at the plain floor it kept a prompt's first words and its last line)."""
_USER_FLOORS_SHARE = 0.6
_LATEST_USER_WHOLE = 300
"""The person's latest message is kept whole up to this many tokens: it is what the agent is answering (and so is
the latest that says something, when the latest is a bare "continue")."""
"""The user messages' heads together keep at most this share of the target (the newest first): on a session of
hundreds of user turns every head kept whatever the target made the summary several times its target."""
_FOCUS_FLOOR = 24
_CURRENT_FLOOR = 40  # the last message cut to less keeps a few words each side of the omission marker: nothing
_NEXT_FLOOR = 32  # a stated plan is one sentence: cut to half it names neither what nor where
_CARRIED_FLOOR = 150
"""What the newest delegated report, and the newest earlier summary (a harness's continuation summary: the only
record of what came before), each keep however small the budget: their headings first (see ``by_headings``,
``by_sections``)."""

_OPEN_FRAME_LINES = 2
"""Lines of its frame an earlier error still open shows under its line (the last error shows its whole frame)."""
_RESERVED_FINDINGS = 3
"""The newest findings that keep a place however small the budget (within :data:`_RESERVED_FINDINGS_TOKENS`)."""
_RESERVED_FINDING_CHARS = 200
_RESERVED_FINDINGS_TOKENS = 100
"""At most this much goes to the reserved findings (the newest one always has its place)."""

_NEW_SNIPPETS = 2
"""The most recently changed files whose last change grows at the higher weight."""
_SNIPPET_FILES = 6
"""Files whose last change is shown (the most recent ones); older changed files are named only."""
_SNIPPET_USEFUL = 48
_MANIFEST_TOKENS = 1_000
"""A manifest's head is shown whole (up to this size) or not at all."""
_MANIFEST_KEPT_TOKENS = 250
"""A manifest's head this short is kept in every summary, however small its budget: the commands the project
defines are what the agent runs to build and test, and it cannot tell them from the files it changed."""
"""A last change given fewer tokens than this is not shown: a shorter stub of code says nothing."""
_FIT_ATTEMPTS = 4
_STOPWORDS = frozenset({
    "the", "and", "for", "with", "that", "this", "from", "into", "about", "keep", "focus", "summary", "summarize",
    "please", "what", "when", "where", "which", "should", "would", "could", "also", "only", "more", "most", "them",
    "they", "their", "there", "then", "than", "have", "has", "had", "been", "being", "are", "was", "were", "will",
    "shall", "your", "you", "our", "its", "it's", "all", "any", "each", "work", "code", "changes", "session",
    "conversation", "especially", "details", "important",
})
"""Words of compaction instructions that say nothing about what to keep."""


def kept_after(request: SummaryRequest) -> Sequence[Item]:
    """The items the request the summary goes into keeps verbatim after the summarized span (none when the
    caller did not say what it will send)."""
    if request.next_request is None or not request.items:
        return ()
    items = request.next_request.items
    last = request.items[-1]
    end = next((index for index in range(len(items) - 1, -1, -1) if items[index] is last), None)
    return items[end + 1:] if end is not None else ()


class _Heading(Fixed):
    """A section heading: rendered only when some part of its section shows something."""


@dataclass(frozen=True)
class ExtractiveSummarizer:
    """The structured extractive summarizer (see the module docstring); stateless and safe to share."""

    name: str = "extractive"
    offline: ClassVar[bool] = True  # costs no model call: free to run whenever it pays

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        facts = Facts()
        facts.read(request.items)
        facts.close_after(kept_after(request))
        meter = Meter(request.count_text)
        parts = _Layout(facts, meter, request.instructions, request.target_tokens).parts()
        return SummaryResult(_fit(parts, meter, request.target_tokens), state=facts.to_state())


def _fit(parts: list[Part], meter: Meter, target_tokens: int) -> str:
    """The parts rendered within ``target_tokens``, re-fitted with a smaller budget while the measure says over."""
    budget = target_tokens
    for _ in range(_FIT_ATTEMPTS):
        grants = allocate(parts, budget)
        text = _render(parts, grants)
        size = meter.exact(text)
        if size <= target_tokens or all(tokens <= part.floor for part, tokens in zip(parts, grants)):
            return text
        budget -= size - target_tokens + max(8, target_tokens // 50)
    return _render(parts, [part.floor for part in parts])  # the estimates kept missing: the smallest form


def _render(parts: list[Part], grants: list[int]) -> str:
    """The parts' texts; a heading whose section renders nothing is left out with it."""
    out: list[str] = []
    heading: str | None = None
    for part, tokens in zip(parts, grants):
        text = part.render(tokens)
        if isinstance(part, _Heading):
            heading = text
        elif text:
            if heading is not None:
                out.append(f"\n{heading}" if out else heading)
                heading = None
            out.append(text)
    return "\n".join(out)


class _Layout:
    """The nine sections as parts, in display order, weighted by priority and by the user's focus."""

    def __init__(self, facts: Facts, meter: Meter, instructions: str | None, target_tokens: int) -> None:
        self.facts, self.meter, self.instructions = facts, meter, (instructions or "").strip()
        self.target_tokens = target_tokens
        words = re.findall(r"[A-Za-z_][\w./-]{2,}", self.instructions.lower())
        self.focus = [w for w in dict.fromkeys(words) if w not in _STOPWORDS]

    def parts(self) -> list[Part]:
        parts: list[Part] = []
        if self.instructions:
            parts.append(self._elastic(self.instructions, _W_FOCUS, _FOCUS_FLOOR, "Focus requested by the user: "))
        sections: tuple[Callable[[], list[Part]], ...] = (
            self._request, self._findings, self._files, self._errors, self._problem_solving,
            self._user_messages, self._pending, self._current, self._next_step,
        )
        for number, (title, section) in enumerate(zip(SECTION_TITLES, sections), 1):
            content = section()
            if content:
                parts.append(_Heading(self.meter, f"## {number}. {title}"))
                parts.extend(content)
        return parts

    # ------------------------------------------------------------------ helpers
    def _mentions_focus(self, text: str) -> bool:
        lowered = text.lower()
        return any(word in lowered for word in self.focus)

    def _elastic(self, text: str, weight: float, floor: int = 0, prefix: str = "", suffix: str = "", **kw: Any) -> Elastic:
        boost = _FOCUS_BOOST if self.focus and self._mentions_focus(prefix + text) else 1.0
        return Elastic(self.meter, text, weight=weight * boost, floor_tokens=floor, prefix=prefix, suffix=suffix, **kw)

    def _listing(self, lines: list[str], weight: float, more: str = "", short: Sequence[str] = (), **kw: Any) -> Listing:
        """A listing whose lines that mention the user's focus come first (their ``short`` forms with them)."""
        if self.focus:
            order = sorted(range(len(lines)), key=lambda i: not self._mentions_focus(lines[i]))
            lines = [lines[i] for i in order]
            short = [short[i] for i in order] if short else short
        return Listing(self.meter, lines, weight=weight, more=more, short=short, **kw)

    # ------------------------------------------------------------------ the sections
    def _request(self) -> list[Part]:
        """The first request as it arrived (when this span holds it) and an issue the agent fetched, verbatim."""
        facts = self.facts
        parts: list[Part] = []
        if facts.user_messages:
            first = first_request(facts.user_messages)  # after a bare "./mcp" or "hi", the request that followed
            head, rest = opening(facts.user_messages[first])  # its opening says what is asked: whole before the rest
            whole = self._whole_lines(head, _FIRST_OPENING_WHOLE, line_limit=_LATEST_USER_WHOLE)
            floor = max(_TASK_FLOOR, min(self.meter(head), _OPENING_FLOOR), whole)
            before = "; ".join(f'"{shorten(m, _OPENER_CHARS)}"' for m in facts.user_messages[:first])
            lead = f" (after {before}, which said nothing yet)" if before else ""
            parts.append(self._elastic(head, _W_TASK, floor, f"The user's first request in this part{lead}, verbatim:\n",
                                       names=names_in, shortener=shorten_lines))
            if rest:
                rest_floor = self._whole_lines(rest, _LATEST_USER_WHOLE - whole) if whole >= self.meter(head) else 0
                parts.append(self._elastic(rest, _W_TASK, rest_floor, names=names_in))
        if facts.fetched_task:
            source = shorten(facts.fetched_task["source"], 200)
            parts.append(self._elastic(facts.fetched_task["text"], _W_FETCHED_TASK, _FETCHED_TASK_FLOOR,
                                       f"The issue as the agent fetched it (`{source}`), verbatim:\n", names=names_in,
                                       shortener=shorten_lines))  # its lines from the top, whole: the title, then point by point
        return parts

    def _whole_lines(self, text: str, limit: int, line_limit: int | None = None) -> int:
        """The tokens of ``text``'s lines from the top that fit whole in ``limit`` (each in ``line_limit``, if given):
        a first request of a few numbered points (272 tokens in five lines) keeps every point whole, as the latest
        message would, where one long line (a pasted log) keeps only :data:`_OPENING_FLOOR` (its first words say what
        it asks)."""
        kept = 0
        for line in text.split("\n"):
            tokens = self.meter(line) + 1
            if kept + tokens > limit or (line_limit is not None and tokens > line_limit):
                break
            kept += tokens
        return kept

    def _findings(self) -> list[Part]:
        """The newest findings, shortened, in a place reserved before anything else shares the budget (what the
        agent learned is what a reader cannot work out again from the files); older ones as the budget allows."""
        # a finding the agent wrote as a bullet keeps its own marker, not a second one ("- - The flake references…")
        lines = [line if line.startswith("- ") else f"- {line}" for line in reversed(self.facts.findings)]
        if not lines:
            return self._reports()
        reserved: list[str] = []
        for line in lines[:_RESERVED_FINDINGS]:
            said, after, source = line.rpartition(" (after `") if line.endswith("`)") else (line, "", "")
            short = shorten(said, _RESERVED_FINDING_CHARS) + after + source  # the call it followed stays whole
            if reserved and sum(self.meter(r) + 1 for r in [*reserved, short]) > _RESERVED_FINDINGS_TOKENS:
                break
            reserved.append(short)
        header = "What the assistant found and decided, in its words, newest first:"
        parts: list[Part] = [Listing(self.meter, reserved, weight=_W_FINDINGS, keep=len(reserved), header=header)]
        if len(lines) > len(reserved):
            parts.append(self._listing(lines[len(reserved):], _W_FINDINGS))
        return parts + self._reports()

    def _reports(self) -> list[Part]:
        """The reports delegated agents returned, newest first: the newest, while no request of the person's has
        come since, keeps a place however small the budget; the others are shown as the budget allows."""
        parts: list[Part] = []
        for rank, report in enumerate(reversed(self.facts.reports)):
            in_use = rank == 0 and not report.get("asked_since")  # the person has not moved the work on since
            lead = f"The report a delegated agent returned (`{shorten(report['source'], 200)}`), its substance:\n"
            parts.append(self._elastic(report["text"], _W_REPORT if in_use else _W_OLDER_REPORT,
                                       self._carried_floor(report["text"]) if in_use else 0, lead,
                                       names=names_in, shortener=by_headings))
        return parts

    def _carried_floor(self, text: str) -> int:
        return min(self.meter(text), _CARRIED_FLOOR)

    def _files(self) -> list[Part]:
        """Changed files (all named, newest with details), their last changes, then files only read."""
        edited = self.facts.edited_files()
        lines, names, snippets = [], [], []
        for rank, (path, file) in enumerate(edited):
            done = ["created" if file.created else "", f"changed {file.edits}×" if file.edits else ""]
            done += [f"{file.failed_edits} edit{'s' if file.failed_edits > 1 else ''} failed" if file.failed_edits else ""]
            done += [f"read {file.reads}×" if file.reads else "", "ran as a script" if file.ran else ""]
            lines.append(f"- `{path}`: {', '.join(filter(None, done))}")
            names.append(path)
            if file.last_change and rank < _SNIPPET_FILES:
                fence = "~~~~" if "```" in file.last_change else "```"
                weight = _W_NEW_SNIPPET if rank < _NEW_SNIPPETS else _W_OLD_SNIPPET
                frame = (f"Last change to `{path}`:\n{fence}\n", f"\n{fence}")
                snippets.append(self._elastic(file.last_change, weight, 0, *frame, useful_tokens=_SNIPPET_USEFUL))
        reads = [f"- `{path}`: read {file.reads}×" for path, file in self.facts.read_only_files()]
        parts: list[Part] = []
        if edited:
            parts.append(self._listing(lines, _W_FILES, "- Changed (or tried to): {names}", short=names))
        parts += snippets
        if reads:
            parts.append(self._listing(reads, _W_READS, header="Files only read, newest first:"))
        if self.facts.manifest:  # whole or not at all (half a scripts block misleads); kept whenever it is short
            manifest = self.facts.manifest
            text = "\n".join(f"    {line}" for line in manifest["lines"])
            floor = self.meter(text) if self.meter(text) <= _MANIFEST_KEPT_TOKENS else 0
            parts.append(self._elastic(text, _W_MANIFEST, floor, f"`{shorten(manifest['path'], 200)}` as the agent read it "
                                       "(its head, through the scripts it defines):\n", useful_tokens=_MANIFEST_TOKENS))
        return parts + self._pages_and_records()

    def _pages_and_records(self) -> list[Part]:
        """What a session that is not about files worked on: the pages it visited, the identifiers returned."""
        facts = self.facts
        parts: list[Part] = []
        if facts.pages:
            pages = [f"- {url}" + (f" ({title})" if title else "") for url, title in reversed(facts.pages.items())]
            parts.append(self._listing(pages, _W_PAGES, header="Pages visited, newest first:"))
        if facts.records:
            records = [f"- {record}" for record in reversed(facts.records)]
            parts.append(self._listing(records, _W_RECORDS, header="Identifiers the tools returned, newest first:"))
        return parts

    def _errors(self) -> list[Part]:
        """The last error with its failing frame, verbatim; then the earlier ones still open (each with the last lines
        of its frame), then those resolved (each by its line). Errors of scratch scripts the agent has since
        abandoned are left out.

        Only the newest error that has a message of its own keeps its frame (the lines above it): an error the
        agent has moved past is named by its line, and the room goes to what it found."""
        facts = self.facts
        last = facts.last_error
        reported = facts.last_reported_error
        reported = reported if reported is not last else None  # the last failure had no error line of its own
        framed: object = facts.shown_error or (reported if last is not None and reported is not None
                                               and EXIT_FAILURE_ENDED in last.line else last)
        parts: list[Part] = []
        if facts.shown_error:  # newer than the last failed call
            error = facts.shown_error
            parts.append(Fixed(self.meter, f"- The last error an output showed (its call did not fail), "
                                           f"from `{shorten(error['source'], 200)}`:"))
            parts += [Fixed(self.meter, f"    {line}") for line in dict.fromkeys([*error["frame"], error["line"]])]
        if last is None:
            return parts + self._printed(parts)
        parts += [Fixed(self.meter, f"- Last error ({_status(last)}), from `{error_source(last)}`:"), *self._frame(last, last is framed)]
        if reported is not None:  # framed too when it is the last error message printed (not said twice)
            printed = facts.printed_error
            closed = f" ({_status(reported)})" if reported.resolved else ""
            parts.append(Fixed(self.meter, f"- Last error message an output reported{closed}, from `{error_source(reported)}`:"))
            parts += self._frame(reported, reported is framed or (printed is not None and printed["line"] == reported.line))
        parts += self._printed(parts)
        above = (last, reported)
        listed = {(e.source, e.line) for e in above if e is not None}  # the same call failing the same way again
        earlier: list[ErrorFacts] = []
        for older in reversed(facts.errors):
            if not any(older is s for s in above) and not older.retired and (older.source, older.line) not in listed:
                earlier.append(older)
                listed.add((older.source, older.line))
        earlier.sort(key=lambda e: e.resolved is not None)  # unresolved first, then newest first
        lines = [_earlier_error(e) for e in earlier]
        if lines:
            parts.append(self._listing(lines, _W_ERRORS, header="Earlier errors, open ones first:"))
        return parts

    def _printed(self, shown: list[Part]) -> list[Part]:
        """The last error message an output printed, under its frame, unless the lines above already show it whole:
        the last failure may be a bare exit status, or a tally, and what a tool last said went wrong is what the
        agent looks up (it may have been fixed since: the lines above say how)."""
        printed = self.facts.printed_error
        if printed is None or any(e.retired and e.line == printed["line"] for e in self.facts.errors):
            return []  # an abandoned scratch script's error (see :func:`retire_errors`)
        lines = list(dict.fromkeys([*printed["frame"], printed["line"]]))
        above = {part.text.strip() for part in shown if isinstance(part, Fixed)}
        if all(line.strip() in above for line in lines):
            return []
        failed = next((e for e in reversed(self.facts.errors) if e.line == printed["line"]), None)  # its call failed
        closed = f" ({_status(failed)})" if failed is not None and failed.resolved else ""
        return [Fixed(self.meter, f"- The last error message an output printed{closed}, "
                                  f"from `{shorten(printed['source'], 200)}`:"),
                *(Fixed(self.meter, f"    {line}") for line in lines)]

    def _frame(self, error: ErrorFacts, framed: bool = True) -> list[Part]:
        """An error as its output showed it: the failing frame (when ``framed``), the exception, the line naming
        the failure."""
        lines = [*(error.frame if framed else ()), *([error.detail] if error.detail else []), error.line]
        return [Fixed(self.meter, f"    {line}") for line in dict.fromkeys(lines)]

    def _problem_solving(self) -> list[Part]:
        facts = self.facts
        parts: list[Part] = []
        if facts.last_test:
            parts.append(Fixed(self.meter, f"- Last test run: `{shorten(facts.last_test['command'], 200)}` → "
                                           f"{facts.last_test['line']}"))
        if facts.last_run:  # newer than the last test run: a build or a check, or tests that printed no tally
            parts.append(Fixed(self.meter, f"- Last build or check command since: `{shorten(facts.last_run['command'], 200)}`"
                                           f" → {facts.last_run['line']}"))
        if facts.earlier_summaries:  # the newest holds what the others did: quoted too, they were cut to headings
            text = facts.earlier_summaries[-1]
            parts.append(self._elastic(text, _W_EARLIER_SUMMARY, self._carried_floor(text), "- An earlier summary said:\n", shortener=by_sections))
        if facts.commands:
            lines = [f"- `$ {shorten(c['command'], 160)}`" + ("" if c["ok"] else " (failed)") for c in reversed(facts.commands)]
            parts.append(self._listing(lines, _W_COMMANDS, header="- Commands that changed the system, newest first:"))
        for inputs, weight, header in ((True, _W_INPUT_CALLS, "- Calls that gave something (typed, asked, booked, sent), newest first:"),
                                       (False, _W_MOVE_CALLS, "- Calls that only moved around or looked, newest first:")):
            lines = [_call_entry(c) for c in reversed(facts.calls) if bool(c.get("inputs")) is inputs]
            if lines:
                parts.append(self._listing(lines, weight, header=header))
        return parts

    def _user_messages(self) -> list[Part]:
        messages = self.facts.user_messages
        quoted = first_request(messages) + 1  # the number of the first request, quoted in section 1
        if len(messages) <= quoted:
            return []
        floors = int(self.target_tokens * _USER_FLOORS_SHARE)  # newest first: the latest requests keep their heads
        asked = asking(messages)
        later: list[Part] = []
        for number in range(len(messages), 0, -1):
            if number == quoted:
                later.append(Fixed(self.meter, f"{number}. (the first request, quoted in section 1) "
                                               f"{shorten(messages[number - 1], 100)}"))
                continue
            if number < quoted:  # said nothing yet (section 1 names it): as the budget allows
                later.append(self._elastic(messages[number - 1], _W_USER, 0, f"{number}. ", shortener=shorten_message))
                continue
            latest = number in (len(messages), asked)
            weight = _W_LATEST_USER if latest else _W_USER
            floor = min(self.meter(messages[number - 1]), _LATEST_USER_WHOLE) if latest else (
                _REPORT_FLOOR if failure_lines(messages[number - 1]) else _USER_FLOOR)
            part = self._elastic(messages[number - 1], weight, floor, f"{number}. ", shortener=shorten_message)
            floors -= part.floor
            if floors < 0:  # no room for every head: an older request shows as the budget allows, or not at all; the
                # latest keeps its opening (what it asks: a slash command's template says it in its first lines)
                head = opening(messages[number - 1])[0]
                floor = min(self.meter(head) + _MARKERS_TOKENS, _OPENING_FLOOR) if latest else 0
                part = self._elastic(messages[number - 1], weight, floor, f"{number}. ", shortener=shorten_message)
            later.append(part)
        return later[::-1]

    def _pending(self) -> list[Part]:
        facts = self.facts
        if facts.todos is None:
            return []
        open_todos = sorted((t for t in facts.todos if t["status"] != "completed"), key=lambda t: t["status"] != "in_progress")
        lines = [todo_line(t) for t in open_todos]
        in_progress = sum(t["status"] == "in_progress" for t in open_todos)
        parts: list[Part] = []
        if lines:
            parts.append(self._listing(lines, _W_TODOS, keep=in_progress))
        done = [t["text"] for t in facts.todos if t["status"] == "completed"]
        if done:
            parts.append(self._elastic("; ".join(done), _W_DONE, 0, f"- Completed ({len(done)}): "))
        return parts

    def _current(self) -> list[Part]:
        facts = self.facts
        parts: list[Part] = []
        said = without_plan(facts)
        if said:  # its findings have a reserved place above: then it need not keep a place here
            floor = 0 if any(line.split(" (after `")[0] in said for line in facts.findings[-1:]) else _CURRENT_FLOOR
            if facts.answered_alone:  # the person's "yes" after the summary takes it up: kept whole like a request
                floor = min(self.meter(said), _LATEST_USER_WHOLE)
            parts.append(self._elastic(said, _W_CURRENT, floor, "The assistant's last message:\n",
                                       useful_tokens=_CURRENT_FLOOR))
        if facts.recent_actions:
            lines = [f"- {action}" for action in reversed(facts.recent_actions)]
            parts.append(Listing(self.meter, lines, weight=_W_ACTIONS, header="Its last actions and how they ended, oldest first:",
                                 newest_last=True))
        if facts.user_spoke_last and facts.user_messages and not facts.went_on:
            parts.append(Fixed(self.meter, f"User message {len(facts.user_messages)} came after that and is not answered yet."))
        return parts

    def _next_step(self) -> list[Part]:
        step = next_step(self.facts)
        if step is None:
            return []
        lead, text = step
        return [self._elastic(text, _W_NEXT, _NEXT_FLOOR, lead, shortener=shorten_message)]  # a request, cut as one


def _call_entry(call: dict[str, Any]) -> str:
    times = f" ×{call['times']}" if call["times"] > 1 else ""
    return f"  - `{call['call']}`{times}" + ("" if call["ok"] else " (failed)")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _earlier_error(error: ErrorFacts) -> str:
    """An error before the last one: one line when it was resolved; when it is still open, as its output showed it,
    the last lines of its frame above its line (git's ``! [remote rejected] … (push declined …)`` above ``error:
    failed to push some refs``: what went wrong, where the last line only says that something did)."""
    line = shorten(error.line.strip("=-_ "), 200)
    if error.resolved is not None or not error.frame:
        return f"- [{_status(error)}] `{shorten(error.source, 120)}`: {line}"
    frame = [shorten(text.strip(), 200) for text in error.frame[-_OPEN_FRAME_LINES:]]
    return "\n    ".join([f"- [{_status(error)}] `{shorten(error.source, 120)}`:", *frame, line])


def _status(error: ErrorFacts) -> str:
    if error.resolved:
        return f"resolved: {error.resolved}"
    return "left behind: the agent has run another script of its own since" if error.retired else "unresolved"
