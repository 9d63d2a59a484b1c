"""The summary lint: what a summary got wrong about the session it summarizes, as counts that should be 0.

Figures like strict recall say how much a request held; these say what a
summary misread, each checked against the recording rather than against the
summarizer's own notes, so a model's summary is checked the same way:

``harness_quoted``
    Lines of the request and user-message sections that are harness text
    (:mod:`contextfold.reading`): a caveat, a command echo, an interrupt or
    rate-limit notice quoted as what the person asked.
``next_step_done``
    Next-step sections that repeat a sentence the assistant wrote in a turn
    that went on to call a tool: what it announced there it already did.
``closed_error_open``
    Errors shown unresolved whose command, run again before the summary, then
    succeeded.
``mid_word_cuts``
    Elisions (``[… N characters omitted …]``, a trailing ``…``) whose cut, found
    in the recording, splits a word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

from ..actions import item_failure_line, result_action
from ..conversation import Conversation
from ..reading import Speaker, agent_words, matching_rule
from ..summarizers._text import mid_word
from .strict import model_text

_HEADING = re.compile(r"^#{1,4} ?\d*\.? ?(.+)$", re.MULTILINE)
_LIST_MARK = re.compile(r"^\s*(?:\d+\.|[-*])\s+")
_UNRESOLVED = re.compile(r"(?:Last error \(unresolved\), from |\[unresolved\] )`\$ ([^`]+)`")
_ELISION = re.compile(r" ?\[… [\d,]+ characters omitted …\] ?|…(?=\n|$)")
_OMITTED = re.compile(r"\[… ([\d,]+) characters omitted …\]")
_SENTENCE = re.compile(r"(?<=[.!?:])\s+")
SNIPPET_CHARS = 16
"""Characters on each side of an elision looked up in the recording to find where it cut."""
MAX_OCCURRENCES = 20
"""Occurrences of a snippet looked at in the recording."""
MIN_SENTENCE_CHARS = 20
"""A shorter sentence ("Let me check.") is too common to say which turn it came from."""


@dataclass(frozen=True)
class SummaryLint:
    """Counts over the summaries a replay's requests carried (each summary linted once)."""

    summaries: int = 0
    harness_quoted: int = 0
    next_step_done: int = 0
    closed_error_open: int = 0
    mid_word_cuts: int = 0

    def __add__(self, other: SummaryLint) -> SummaryLint:
        return SummaryLint(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


class SummaryLinter:
    """A recording prepared for linting its summaries: what the assistant announced and then did, where each
    command ran and how it ended, and the recording's text to find elisions in."""

    def __init__(self, recording: Conversation) -> None:
        self._announced: dict[str, int] = {}  # sentence -> index of the turn that wrote it and called a tool
        self._runs: list[tuple[int, str, bool]] = []  # (index, command, succeeded), in order
        texts = []
        for index, item in enumerate(recording.items):
            texts.append(model_text(item))
            if item.role == "assistant" and item.tool_calls:
                said = agent_words(item)
                for sentence in _SENTENCE.split(said):
                    if len(sentence.strip()) >= MIN_SENTENCE_CHARS:
                        self._announced.setdefault(sentence.strip(), index)
            action = result_action(item)
            if action is not None and action.command:
                self._runs.append((index, _one_line(action.command), item_failure_line(item, action.kind) is None))
        self._text = "\n".join(texts)

    def lint(self, summary: str, before: int) -> SummaryLint:
        """The lint of ``summary``, sent in the request for the reply at item ``before``."""
        sections = _sections(summary)
        asked = "\n".join(body for title, body in sections if "request" in title or "user messages" in title)
        quoted = sum(_is_harness_line(line) for line in asked.splitlines())
        step = "\n".join(body for title, body in sections if "next step" in title)
        done = bool(step) and any(sentence in step for sentence, at in self._announced.items() if at < before)
        closed = sum(self._closed(m.group(1), before) for m in _UNRESOLVED.finditer(summary))
        return SummaryLint(1, quoted, int(done), closed, self._mid_word_cuts(summary))

    def _closed(self, named: str, before: int) -> bool:
        """Whether the command a summary names (on one line, perhaps shortened to its head and tail around an
        elision) failed and then, run again before item ``before``, succeeded."""
        head, cut, tail = (part.strip() for part in _ELISION.sub("\0", named.strip(), count=1).partition("\0"))
        if not head:
            return False
        omitted = _OMITTED.search(named)
        length = len(head) + len(tail) + int(omitted.group(1).replace(",", "")) if omitted else None

        def same(ran: str) -> bool:  # the whole command, or one with the head, tail and length the shortened name kept
            if not cut:
                return ran == head
            return ran.startswith(head) and ran.endswith(tail) and (length is None or abs(len(ran) - length) <= 4)

        runs = [ok for index, ran, ok in self._runs if index < before and same(ran)]
        return len(runs) > 1 and runs[-1] and not all(runs)

    def _mid_word_cuts(self, summary: str) -> int:
        cuts = 0
        for match in _ELISION.finditer(summary):
            left = summary[max(0, match.start() - SNIPPET_CHARS) : match.start()]
            right = summary[match.end() : match.end() + SNIPPET_CHARS]
            cuts += self._splits(left, at_end=True) or self._splits(right, at_end=False)
        return cuts

    def _splits(self, snippet: str, *, at_end: bool) -> bool:
        """Whether the recording, wherever ``snippet`` occurs in it, has a word going on across the snippet's cut end
        (every occurrence, up to :data:`MAX_OCCURRENCES`: a snippet found both ways is not counted)."""
        if len(snippet.strip()) < SNIPPET_CHARS // 2 or "\n" in snippet:
            return False
        found, seen = self._text.find(snippet), 0
        while found >= 0 and seen < MAX_OCCURRENCES:
            if not mid_word(self._text, found + len(snippet) if at_end else found):
                return False
            found, seen = self._text.find(snippet, found + 1), seen + 1
        return seen > 0


def _one_line(command: str) -> str:
    """A command as a summary names it: its lines joined by ``; ``."""
    return "; ".join(line.strip() for line in command.splitlines() if line.strip())


def _sections(summary: str) -> list[tuple[str, str]]:
    """The summary's sections as (lowercase title, body)."""
    headings = list(_HEADING.finditer(summary))
    return [(h.group(1).strip().lower(), summary[h.end() : headings[n + 1].start() if n + 1 < len(headings) else None])
            for n, h in enumerate(headings)]


def _is_harness_line(line: str) -> bool:
    rule = matching_rule(_LIST_MARK.sub("", line))
    return rule is not None and rule.speaker is Speaker.HARNESS
