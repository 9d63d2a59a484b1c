"""Shortening text to a size and measuring it cheaply, for the extractive summarizer.

Shortened text keeps its head and its tail (the start says what a message is
about, the end what it concluded or asked) around a marker that says how much
was left out, so nothing is cut silently.
"""

from __future__ import annotations

from bisect import bisect
from collections.abc import Callable, Sequence
from itertools import accumulate

from ..reading.request import telling_lines

_SNAP_CHARS = 40
"""How far a cut may move to land on whitespace instead of inside a word."""
_LONG_WORD_CHARS = 120
"""How far a cut may move, when no space is near, to land between two words (a path, a hash, a CJK run)."""
_CLIPPED_CHARS = 24
"""A line a cut keeps first (an error the person pasted) is shown by its head when at least this much of it fits."""
_SAMPLE_CHARS = 2_000
"""Texts longer than twice this are measured on their two ends and scaled: a summary only needs sizes to a few %."""


def cut(text: str, max_chars: int, head_share: float = 0.65) -> tuple[int, int]:
    """Where :func:`shorten` cuts: it keeps ``text[:head_end]`` and ``text[tail_start:]`` (both ``len(text)`` if it fits)."""
    if len(text) <= max_chars:
        return len(text), len(text)
    room = max_chars - len(_marker(len(text) - max_chars))
    if room < 8:
        return _boundary(text, max(max_chars - 1, 0), -1), len(text)
    head_end = int(room * head_share)
    return head_end_at(text, head_end), tail_start_at(text, len(text) - (room - head_end))


def head_end_at(text: str, at: int) -> int:
    """Where a head cut near ``at`` ends without splitting a word: on the whitespace before ``at`` (within
    :data:`_SNAP_CHARS`), else the nearest word boundary before it."""
    snapped = text.rfind(" ", max(at - _SNAP_CHARS, 0), at)
    return snapped if snapped > 0 else _boundary(text, at, -1)


def tail_start_at(text: str, at: int) -> int:
    """Where a tail cut near ``at`` starts without splitting a word: after the whitespace from ``at`` on (within
    :data:`_SNAP_CHARS`), else the nearest word boundary after it."""
    snapped = text.find(" ", at, at + _SNAP_CHARS)
    return snapped + 1 if snapped != -1 else _boundary(text, at, 1)


def clip(text: str, max_chars: int) -> str:
    """``text``'s head in at most ``max_chars`` characters, ending between two words, "…" where it was cut (a
    line kept for the name it holds, a command known by its start)."""
    if len(text) <= max_chars:
        return text
    return text[:head_end_at(text, max(max_chars - 1, 0))].rstrip() + "…"


def mid_word(text: str, at: int) -> bool:
    """Whether a cut at ``at`` falls inside a word: between two ASCII letters, digits or underscores (a cut between
    two CJK characters, or next to punctuation, splits no word)."""
    return 0 < at < len(text) and _word_char(text[at - 1]) and _word_char(text[at])


def _word_char(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


def _boundary(text: str, at: int, step: int) -> int:
    """The nearest place from ``at`` in direction ``step`` (within :data:`_LONG_WORD_CHARS`) where a cut splits no
    word (text with no spaces: CJK, a path, a long identifier), else the nearest the other way: a tail cut inside
    the text's last word starts at that word rather than inside it; ``at`` itself if none is that near."""
    for direction in (step, -step):
        for moved in range(_LONG_WORD_CHARS):
            here = at + moved * direction
            if not 0 < here < len(text):
                break
            if not mid_word(text, here):
                return here
    return at


def shorten(text: str, max_chars: int, head_share: float = 0.65) -> str:
    """``text`` cut to about ``max_chars`` characters: head and tail around an omission marker."""
    head_end, tail_start = cut(text, max_chars, head_share)
    if tail_start == len(text):
        return text if head_end == len(text) else text[:head_end] + "…"
    return text[:head_end].rstrip() + _marker(tail_start - head_end) + text[tail_start:].lstrip()


def shorten_lines(text: str, max_chars: int, first: Sequence[int] = ()) -> str:
    """``text`` cut to about ``max_chars`` characters on line boundaries: the lines ``first`` names (indexes in
    ``text.split("\n")``, most important first) are kept first, each whole if it fits or else its head (:func:`clip`,
    when at least :data:`_CLIPPED_CHARS` of it fit), then the others from the top, whole. Each run of lines left
    out is one omission marker on a line of its own, or the lines themselves when they are shorter than it. A
    text of one line, or whose first line to keep cannot fit whole, is :func:`shorten`'d (head and tail, on word
    boundaries)."""
    if len(text) <= max_chars:
        return text
    lines = text.split("\n")
    order = list(dict.fromkeys([*first, *range(len(lines))]))
    marker = len(_marker(len(text)))  # a marker line and its newline: at most this long
    if len(lines) < 2 or len(lines[order[0]]) + 1 + marker > max_chars:
        return shorten(text, max_chars)
    sizes = [len(line) + 1 for line in lines]
    upto = [0, *accumulate(sizes)]  # upto[n]: the characters of the lines before line n

    def run(low: int, high: int) -> int:  # what the lines low..high-1, left out, take: a marker or themselves
        return min(upto[high] - upto[low], marker)

    kept: dict[int, str] = {}
    bounds = [-1, len(lines)]  # the kept lines in order, between two sentinels
    telling = set(first)
    room = max_chars - marker  # the one run of lines left out while none is kept
    for number in order:
        at = bisect(bounds, number)  # the run of left-out lines ``number`` is in: keeping it splits that run
        low, high = bounds[at - 1] + 1, bounds[at]
        others = run(low, number) + run(number + 1, high) - run(low, high)
        line = lines[number]
        if len(line) + 1 + others > room and number in telling and room - others - 1 >= _CLIPPED_CHARS:
            line = clip(line, room - others - 1)
        if len(line) + 1 + others <= room:
            kept[number] = line
            bounds.insert(at, number)
            room -= len(line) + 1 + others
    out: list[str] = []
    left: list[int] = []
    for number in [*range(len(lines)), len(lines)]:  # the end closes the last run
        if number in kept or number == len(lines):
            if left and run(left[0], left[-1] + 1) < marker:
                out += [lines[n] for n in left]
            elif left:
                out.append(_marker(upto[left[-1] + 1] - upto[left[0]]).strip())
            left = []
            if number < len(lines):
                out.append(kept[number])
        else:
            left.append(number)
    return "\n".join(out)


def shorten_message(text: str, max_chars: int) -> str:
    """A person's message cut to about ``max_chars`` characters so that it still says what they report and ask: its
    last line, the errors it pastes and its opening kept first, on line boundaries (:func:`shorten_lines`)."""
    return text if len(text) <= max_chars else shorten_lines(text, max_chars, telling_lines(text))


def _marker(omitted_chars: int) -> str:
    return f" [… {omitted_chars:,} characters omitted …] "


class Meter:
    """Token counts through ``count_text``, memoized per text, long texts estimated from their ends."""

    def __init__(self, count_text: Callable[[str], int]) -> None:
        self._count = count_text
        self._memo: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        known = self._memo.get(text)
        if known is None:
            if len(text) > 2 * _SAMPLE_CHARS:
                sample = self._count(text[:_SAMPLE_CHARS]) + self._count(text[-_SAMPLE_CHARS:])
                known = round(sample * len(text) / (2 * _SAMPLE_CHARS))
            else:
                known = self._count(text)
            self._memo[text] = known
        return known

    def exact(self, text: str) -> int:
        """The count of the whole text, never estimated: for the final check of a summary's size."""
        return self._count(text)

    def chars_for(self, text: str, tokens: int) -> int:
        """How many characters of ``text`` make about ``tokens`` tokens."""
        total = self(text)
        return len(text) if tokens >= total else int(len(text) * tokens / max(total, 1))
