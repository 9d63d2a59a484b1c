"""What a request says first: its opening lines, the part of a person's message a reader must not lose.

A request states what is wanted in its first lines; the rest is detail,
pasted output, a template's instructions. A summary short of room keeps the
opening whole before any of the rest, and the replay's ``asked`` measure
looks for the same lines: each is a line that says something (long enough,
a space, two words; a bare tag or a number does not).

A later message is often a report: a pasted terminal with the error the
person hit, then their question on the last line. :func:`telling_lines`
says which lines a cut keeps first there, so a shortened message still says
what failed for the person and what they ask.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..actions import error_lines

MIN_LINE_CHARS = 16
"""A line says something from this length (with a space and two words): shorter ones say little."""
OPENING_LINES = 3
"""Lines that say something that make a request's opening."""
_WORDS = re.compile(r"\w{2,}")
_MARKUP = re.compile(r"</?[\w:-]+>|`+|^\s*(?:[-*]|\d+\.)?\s*(?:\[[ xX]?\])?")
"""Tags, backticks and a list item's mark: no words of their own (``</success_criteria>``, a fence, ``- [ ]``)."""
_UNSPACED_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{6,}")
"""Six characters of Chinese or Japanese in a row: a sentence, in scripts written without spaces."""


def says_something(line: str) -> bool:
    """Whether a line (whitespace collapsed) says enough to be looked for verbatim: long enough, a space, two words."""
    return len(line) >= MIN_LINE_CHARS and " " in line and len(_WORDS.findall(line)) >= 2


def message_says_something(message: str) -> bool:
    """Whether a message has a line that says something (see :func:`says_something`): "continue", "ok" and "yes"
    do not, and go on with the request before them."""
    return any(says_something(" ".join(line.split())) for line in message.split("\n"))


def asks_something(message: str) -> bool:
    """Whether a person's message is a request, not an opener the agent must ask about (a bare path, a word, a
    greeting: ``./mcp``, "hi", "load claude.md"): it says something (:func:`message_says_something`), or it holds a
    run of a script written without spaces (``将副标题改成初春``: one "word" to a space-based reading)."""
    return message_says_something(message) or bool(_UNSPACED_RUN.search(message))


def first_request(messages: Sequence[str]) -> int:
    """The index of the first of a person's ``messages`` that asks something (:func:`asks_something`; 0 when none
    does): what they asked first, when they opened with an opener the agent then asked about."""
    return next((n for n, message in enumerate(messages) if asks_something(message)), 0)


def opening(text: str) -> tuple[str, str]:
    """``text`` split after its :data:`OPENING_LINES`-th line that says something: (opening, rest), on a line
    boundary; the rest is empty when the text is no longer."""
    lines = text.split("\n")
    found = 0
    for number, line in enumerate(lines):
        found += says_something(" ".join(line.split()))
        if found == OPENING_LINES:
            return "\n".join(lines[: number + 1]), "\n".join(lines[number + 1 :])
    return text, ""


def telling_lines(text: str) -> list[int]:
    """The lines of a person's message (by index in ``text.split("\n")``) a cut keeps first, most telling first.

    A report (it pastes an error) is told by its last line with words (the
    question, what they add: "on windows", however short), then the lines
    reporting a failure, newest first, then its last and first lines that
    say something. Any other request is told by its opening: its first
    :data:`OPENING_LINES` lines that say something (a slash command's template
    says what it does in its first lines), then its last line with words (a
    closing tag says nothing) and its last line that says something."""
    lines = text.split("\n")
    worded = [n for n, line in enumerate(lines) if _WORDS.search(_MARKUP.sub("", line))]
    saying = [n for n in worded if says_something(" ".join(lines[n].split()))]
    failing = failure_lines(text)
    if failing:
        order = [*worded[-1:], *failing, *saying[-1:], *saying[:1]]
    else:
        order = [*saying[:OPENING_LINES], *worded[-1:], *saying[-1:]]
    return list(dict.fromkeys(order))


def failure_lines(text: str) -> list[int]:
    """The lines of a person's message that report a failure (an error they pasted), newest first, by index."""
    failing = set(error_lines(text))
    lines = text.split("\n")
    return [n for n in range(len(lines) - 1, -1, -1) if lines[n].strip() and lines[n].strip() in failing]
