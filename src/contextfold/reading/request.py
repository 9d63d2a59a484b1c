"""What a request says first: its opening lines, the part of a person's message a reader must not lose.

A request states what is wanted in its first lines; the rest is detail,
pasted output, a template's instructions. A summary short of room keeps the
opening whole before any of the rest, and the replay's ``asked`` measure
looks for the same lines: each is a line that says something (long enough,
a space, two words; a bare tag or a number does not).
"""

from __future__ import annotations

import re

MIN_LINE_CHARS = 16
"""A line says something from this length (with a space and two words): shorter ones say little."""
OPENING_LINES = 3
"""Lines that say something that make a request's opening."""
_WORDS = re.compile(r"\w{2,}")


def says_something(line: str) -> bool:
    """Whether a line (whitespace collapsed) says enough to be looked for verbatim: long enough, a space, two words."""
    return len(line) >= MIN_LINE_CHARS and " " in line and len(_WORDS.findall(line)) >= 2


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
