"""The default summarizer: a structured summary read off the conversation itself, no model involved.

It writes the nine sections Claude Code's compaction prompt asks a model for
(:data:`SECTION_TITLES`), filled with facts rather than prose: every user
message (shortened to head and tail when room is short, never dropped), the
files read and changed with the last change to each, the commands that
changed the system, each error with whether a later step resolved it (the
last error line verbatim), the latest todo list, the assistant's last words,
tool-use counts and the identifiers that keep coming up; for the tools that
are not about files or commands (a browser, a booking or support API), each
call with its arguments, the pages visited and the identifiers returned. Deterministic,
offline, and a few milliseconds for a span of hundreds of messages.

Size: the text fits ``request.target_tokens`` as ``request.count_text``
measures it; when it cannot all fit, lower-priority parts shrink first (see
``_fit``). What always stays: the nine headings, the head of every user
message, every changed path, and the last error line. Only when those alone
exceed the target is the target exceeded.

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

from ._facts import ErrorFacts, Facts, names_in
from ._fit import Elastic, Fixed, Listing, Part, allocate
from ._text import Meter, shorten
from .base import SummaryRequest, SummaryResult

SECTION_TITLES = (
    "Primary Request and Intent",
    "Key Technical Concepts",
    "Files and Code Sections",
    "Errors and fixes",
    "Problem Solving",
    "All user messages",
    "Pending Tasks",
    "Current Work",
    "Optional Next Step",
)
"""The sections, in order; each is written as ``## <n>. <title>``."""

# Weights: how fast a part grows as the budget allows (see _fit). The first
# request and the assistant's last words matter most, lists of details least.
_W_FOCUS = 5.0
_W_TASK = 4.0
_W_LATEST_USER = 2.5
_W_USER = 1.5
_W_NEW_SNIPPET = 2.0
_W_OLD_SNIPPET = 1.0
_W_CURRENT = 2.0
_W_ERRORS = 2.0
_W_TODOS = 1.2
_W_NEXT = 1.0
_W_EARLIER_SUMMARY = 1.0
_W_COMMANDS = 1.0
_W_ACTIONS = 1.2
_W_FILES = 0.8
_W_READS = 0.6
_W_CONCEPTS = 0.5
_W_DONE = 0.4
_W_TOOLS = 0.3
_W_INPUT_CALLS = 1.5  # what a browsing or support session typed, asked, booked or changed
_W_RECORDS = 1.0
_W_PAGES = 1.0
_W_MOVE_CALLS = 0.3
_FOCUS_BOOST = 2.0
"""Parts mentioning a word of the user's compaction instructions grow this much faster."""

# Floors, in tokens: what a part keeps however small the budget. Kept small on
# purpose: the weights give the important parts room whenever there is any.
_TASK_FLOOR = 40
_USER_FLOOR = 24
_FOCUS_FLOOR = 24
_CURRENT_FLOOR = 24
_NEXT_FLOOR = 16
_EARLIER_SUMMARY_FLOOR = 24
_ERROR_DETAIL_FLOOR = 24  # the exception behind the last error is what the next step works from

_NEW_SNIPPETS = 2
"""The most recently changed files whose last change grows at the higher weight."""
_SNIPPET_FILES = 6
"""Files whose last change is shown (the most recent ones); older changed files are named only."""
_SNIPPET_USEFUL = 48
"""A last change given fewer tokens than this is not shown: a shorter stub of code says nothing."""
_MAX_CONCEPTS = 30
_FIT_ATTEMPTS = 4
_FORWARD = re.compile(r"\b(next|now|then|let me|let's|I'll|I will|I need to|going to|should|remaining)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?:])\s+|\n+")
_STOPWORDS = frozenset({
    "the", "and", "for", "with", "that", "this", "from", "into", "about", "keep", "focus", "summary", "summarize",
    "please", "what", "when", "where", "which", "should", "would", "could", "also", "only", "more", "most", "them",
    "they", "their", "there", "then", "than", "have", "has", "had", "been", "being", "are", "was", "were", "will",
    "shall", "your", "you", "our", "its", "it's", "all", "any", "each", "work", "code", "changes", "session",
    "conversation", "especially", "details", "important",
})
"""Words of compaction instructions that say nothing about what to keep."""


@dataclass(frozen=True)
class ExtractiveSummarizer:
    """The structured extractive summarizer (see the module docstring); stateless and safe to share."""

    name: str = "extractive"
    offline: ClassVar[bool] = True  # costs no model call: free to run whenever it pays

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        facts = Facts()
        facts.read(request.items)
        meter = Meter(request.count_text)
        parts = _Layout(facts, meter, request.instructions).parts()
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
    return "\n".join(filter(None, (part.render(tokens) for part, tokens in zip(parts, grants))))


class _Layout:
    """The nine sections as parts, in display order, weighted by priority and by the user's focus."""

    def __init__(self, facts: Facts, meter: Meter, instructions: str | None) -> None:
        self.facts, self.meter, self.instructions = facts, meter, (instructions or "").strip()
        words = re.findall(r"[A-Za-z_][\w./-]{2,}", self.instructions.lower())
        self.focus = [w for w in dict.fromkeys(words) if w not in _STOPWORDS]

    def parts(self) -> list[Part]:
        parts: list[Part] = []
        if self.instructions:
            parts.append(self._elastic(self.instructions, _W_FOCUS, _FOCUS_FLOOR, "Focus requested by the user: "))
        sections: tuple[Callable[[], list[Part]], ...] = (
            self._request, self._concepts, self._files, self._errors, self._problem_solving,
            self._user_messages, self._pending, self._current, self._next_step,
        )
        for number, (title, section) in enumerate(zip(SECTION_TITLES, sections), 1):
            parts.append(Fixed(self.meter, f"{chr(10) if parts else ''}## {number}. {title}"))
            parts.extend(section())
        return parts

    # ------------------------------------------------------------------ helpers
    def _mentions_focus(self, text: str) -> bool:
        lowered = text.lower()
        return any(word in lowered for word in self.focus)

    def _elastic(self, text: str, weight: float, floor: int = 0, prefix: str = "", suffix: str = "", **kw: Any) -> Elastic:
        boost = _FOCUS_BOOST if self.focus and self._mentions_focus(prefix + text) else 1.0
        return Elastic(self.meter, text, weight=weight * boost, floor_tokens=floor, prefix=prefix, suffix=suffix, **kw)

    def _listing(self, lines: list[str], weight: float, more: str, short: Sequence[str] = (), **kw: Any) -> Listing:
        """A listing whose lines that mention the user's focus come first (their ``short`` forms with them)."""
        if self.focus:
            order = sorted(range(len(lines)), key=lambda i: not self._mentions_focus(lines[i]))
            lines = [lines[i] for i in order]
            short = [short[i] for i in order] if short else short
        return Listing(self.meter, lines, weight=weight, more=more, short=short, **kw)

    # ------------------------------------------------------------------ the sections
    def _request(self) -> list[Part]:
        messages = self.facts.user_messages
        if not messages:
            return [Fixed(self.meter, "No user message was recorded in this part of the conversation.")]
        return [self._elastic(messages[0], _W_TASK, _TASK_FLOOR, "The user's first request, verbatim:\n", names=names_in)]

    def _concepts(self) -> list[Part]:
        lines = [f"- `{name}` ({count}×)" for name, count in self.facts.top_concepts()[:_MAX_CONCEPTS]]
        return [self._listing(lines, _W_CONCEPTS, "- … {n} more identifiers", empty="- None stood out.")]

    def _files(self) -> list[Part]:
        """Changed files (all named, newest with details), their last changes, then files only read."""
        edited = self.facts.edited_files()
        lines, names, snippets = [], [], []
        for rank, (path, file) in enumerate(edited):
            done = ["created" if file.created else "", f"changed {file.edits}×" if file.edits else ""]
            done += [f"{file.failed_edits} edit{'s' if file.failed_edits > 1 else ''} failed" if file.failed_edits else ""]
            done += [f"read {file.reads}×" if file.reads else ""]
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
            parts.append(self._listing(lines, _W_FILES, "- Also changed (or tried to): {names}", keep=1, short=names))
        parts += snippets
        elsewhere = self._pages_and_records()
        if reads or not (edited or elsewhere):
            parts.append(self._listing(reads, _W_READS, "- … {n} more files were read", empty="- No file was read or changed."))
        return parts + elsewhere

    def _pages_and_records(self) -> list[Part]:
        """What a session that is not about files worked on: the pages it visited, the identifiers returned."""
        facts = self.facts
        parts: list[Part] = []
        if facts.pages:
            pages = [f"- {url}" + (f" ({title})" if title else "") for url, title in reversed(facts.pages.items())]
            parts.append(self._listing(pages, _W_PAGES, "- … {n} earlier pages",
                                       header="Pages visited, newest first:"))
        if facts.records:
            records = [f"- {record}" for record in reversed(facts.records)]
            parts.append(self._listing(records, _W_RECORDS, "- … {n} earlier identifiers",
                                       header="Identifiers the tools returned, newest first:"))
        return parts

    def _errors(self) -> list[Part]:
        facts = self.facts
        last = facts.last_error
        if last is None:
            return [Fixed(self.meter, "- No tool call failed.")]
        listed = facts.errors
        resolved = sum(e.resolved is not None for e in listed)
        scope = "" if len(listed) == facts.errors_total else f" (the last {len(listed)} kept)"
        parts: list[Part] = [
            Fixed(self.meter, f"- {_count(facts.errors_total, 'tool call')} failed; {resolved} of {len(listed)}{scope} resolved later."),
            Fixed(self.meter, f"- Last error ({_status(last)}), from `{shorten(last.source, 200)}`:"),
            Fixed(self.meter, f"    {last.line}"),
        ]
        if last.detail:
            parts.append(self._elastic(last.detail, _W_ERRORS, _ERROR_DETAIL_FLOOR, "  The exception: "))
        reported = facts.last_reported_error
        if reported is not None and reported is not last:  # the last failure had no error line of its own
            parts.append(Fixed(self.meter, f"- Last error message an output reported, from `{shorten(reported.source, 200)}`:"))
            parts.append(Fixed(self.meter, f"    {reported.line}"))
        shown = (last, reported)
        earlier = [e for e in reversed(listed) if not any(e is s for s in shown)]
        earlier.sort(key=lambda e: e.resolved is not None)  # unresolved first, then newest first
        lines = [f"- [{_status(e)}] `{shorten(e.source, 120)}`: {shorten(e.line.strip('=-_ '), 200)}" for e in earlier]
        parts.append(self._listing(lines, _W_ERRORS, "- … {n} earlier errors not shown"))
        return parts

    def _problem_solving(self) -> list[Part]:
        facts = self.facts
        calls = sum(c for c, _ in facts.tools.values())
        failures = sum(f for _, f in facts.tools.values())
        stats = (
            f"- This summary covers {facts.items} items: {_count(len(facts.user_messages), 'user message')}, "
            f"{_count(calls, 'tool call')} ({failures} failed)."
        )
        by_tool = sorted(facts.tools.items(), key=lambda kv: -kv[1][0])
        tools = [f"- {name}: {c} calls" + (f", {f} failed" if f else "") for name, (c, f) in by_tool]
        parts: list[Part] = [Fixed(self.meter, stats), self._listing(tools, _W_TOOLS, "- … {n} more tools")]
        for text in facts.earlier_summaries:
            parts.append(self._elastic(text, _W_EARLIER_SUMMARY, _EARLIER_SUMMARY_FLOOR, "- An earlier summary said:\n"))
        if facts.commands:
            lines = [f"- `{shorten(c['command'], 160)}`" + ("" if c["ok"] else " (failed)") for c in reversed(facts.commands)]
            header = f"- Commands that changed the system ({facts.commands_total}), newest first:"
            parts.append(self._listing(lines, _W_COMMANDS, "- … {n} earlier such commands", header=header))
        if facts.calls:
            parts.append(Fixed(self.meter, f"- Calls of other tools ({facts.calls_total}), newest first:"))
        for inputs, weight, header in ((True, _W_INPUT_CALLS, "  that gave something (typed, asked, booked, sent):"),
                                       (False, _W_MOVE_CALLS, "  that only moved around or looked:")):
            lines = [_call_entry(c) for c in reversed(facts.calls) if bool(c.get("inputs")) is inputs]
            if lines:
                parts.append(self._listing(lines, weight, "  - … {n} earlier calls", header=header))
        return parts

    def _user_messages(self) -> list[Part]:
        messages = self.facts.user_messages
        if not messages:
            return [Fixed(self.meter, "- None in this part of the conversation.")]
        parts: list[Part] = [Fixed(self.meter, f"1. (the first request, quoted in section 1) {shorten(messages[0], 100)}")]
        for number, text in enumerate(messages[1:], 2):
            weight = _W_LATEST_USER if number == len(messages) else _W_USER
            parts.append(self._elastic(text, weight, _USER_FLOOR, f"{number}. "))
        return parts

    def _pending(self) -> list[Part]:
        facts = self.facts
        unresolved = sum(e.resolved is None for e in facts.errors)
        note = [Fixed(self.meter, f"- {unresolved} of the errors above remain unresolved.")] if unresolved else []
        if facts.todos is None:
            return [Fixed(self.meter, "- No todo list was kept."), *note]
        open_todos = sorted((t for t in facts.todos if t["status"] != "completed"), key=lambda t: t["status"] != "in_progress")
        lines = [f"- [{t['status'].replace('_', ' ')}] {t['text']}" for t in open_todos]
        in_progress = sum(t["status"] == "in_progress" for t in open_todos)
        parts: list[Part] = [
            self._listing(lines, _W_TODOS, "- … {n} more open tasks", keep=in_progress, empty="- None: every todo is completed.")
        ]
        done = [t["text"] for t in facts.todos if t["status"] == "completed"]
        if done:
            parts.append(self._elastic("; ".join(done), _W_DONE, 0, f"- Completed ({len(done)}): "))
        return parts + note

    def _current(self) -> list[Part]:
        facts = self.facts
        parts: list[Part] = []
        if facts.last_assistant:
            parts.append(self._elastic(facts.last_assistant, _W_CURRENT, _CURRENT_FLOOR, "The assistant's last message:\n"))
        if facts.recent_actions:
            lines = [f"- {action}" for action in reversed(facts.recent_actions)]
            parts.append(Listing(self.meter, lines, weight=_W_ACTIONS, more="- … {n} earlier actions",
                                 header="Its last actions, oldest first:", newest_last=True))
        if facts.user_spoke_last and facts.user_messages:
            parts.append(Fixed(self.meter, f"User message {len(facts.user_messages)} came after that and is not answered yet."))
        return parts or [Fixed(self.meter, "Nothing was recorded yet.")]

    def _next_step(self) -> list[Part]:
        return [self._elastic(_next_step(self.facts), _W_NEXT, _NEXT_FLOOR)]


def _call_entry(call: dict[str, Any]) -> str:
    times = f" ×{call['times']}" if call["times"] > 1 else ""
    return f"  - `{call['call']}`{times}" + ("" if call["ok"] else " (failed)")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _status(error: ErrorFacts) -> str:
    return f"resolved: {error.resolved}" if error.resolved else "unresolved"


def _next_step(facts: Facts) -> str:
    """The step the conversation was heading to: an unanswered user, an open todo, a plan stated, an open error."""
    if facts.user_spoke_last and facts.user_messages:
        return f"Answer the user's latest message: {facts.user_messages[-1]}"
    for status, lead in (("in_progress", "Continue the task in progress"), ("pending", "Start the next pending task")):
        todo = next((t for t in facts.todos or () if t["status"] == status), None)
        if todo is not None:
            return f"{lead}: {todo['text']}"
    sentences = _SENTENCE_END.split(facts.last_assistant or "")
    stated = [s.strip() for s in sentences if _FORWARD.search(s)]
    if stated:
        return f"As the assistant said last: {stated[-1]}"
    last = facts.last_error
    if last is not None and last.resolved is None:
        return f"Resolve the last error, from `{shorten(last.source, 200)}`: {last.line}"
    return "No next step was stated; the work recorded above appears complete."

