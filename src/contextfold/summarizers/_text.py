"""Shortening text to a size and measuring it cheaply, for the extractive summarizer.

Shortened text keeps its head and its tail (the start says what a message is
about, the end what it concluded or asked) around a marker that says how much
was left out, so nothing is cut silently.
"""

from __future__ import annotations

from collections.abc import Callable

_SNAP_CHARS = 40
"""How far a cut may move to land on whitespace instead of inside a word."""
_LONG_WORD_CHARS = 120
"""How far a cut may move, when no space is near, to land between two words (a path, a hash, a CJK run)."""
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
    word (text with no spaces: CJK, a path, a long identifier); ``at`` itself if none is that near."""
    for moved in range(_LONG_WORD_CHARS):
        here = at + moved * step
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
