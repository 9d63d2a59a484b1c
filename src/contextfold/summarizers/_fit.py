"""Fitting a summary into a token budget: parts that can shrink, and how the budget is shared among them.

A summary is a sequence of parts. Each part has a ``floor`` (tokens it keeps
whatever happens: a heading, the last error line, the head of a user
message), a ``full`` size, and a ``weight``. The budget is shared by "water
filling": every part gets ``weight x level`` tokens, clamped between its floor
and its full size, at the highest level the budget allows. A part that cannot
use all it was given (a list keeps whole lines only) hands the rest back and
the others share it. Sizes are estimated from memoized counts of the pieces;
the caller checks the assembled text once and fits again with a smaller
budget if the estimate was short.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Protocol

from ._text import Meter, cut, shorten

_LEVEL_STEPS = 24
"""Bisection steps for the water level: finer than one token for any budget under a million tokens."""
_NAMES_SHARE = 0.3
"""At most this share of a shortened text's tokens goes to the note naming what its omitted middle held."""
_NAMES_NOTE = "\n[Names in the omitted part: {names}]"
_MIN_USEFUL_TOKENS = 12
"""By default, an optional text given less than this is left out instead of shown as a stub."""


class Part(Protocol):
    weight: float
    floor: int
    full: int

    def used(self, tokens: int) -> int:
        """Tokens the part takes when given ``tokens`` (at most that, at least its floor)."""

    def render(self, tokens: int) -> str: ...


class Fixed:
    """Text that is always kept whole."""

    weight = 0.0

    def __init__(self, meter: Meter, text: str) -> None:
        self.text = text
        self.floor = self.full = meter(text) + 1  # + the newline joining it to the next part

    def used(self, tokens: int) -> int:
        return self.full

    def render(self, tokens: int) -> str:
        return self.text


class Elastic:
    """Text that shrinks to its head and tail.

    ``floor_tokens`` of it are always kept; with 0 it may vanish, which it
    does when offered less than ``useful_tokens`` (and less than its whole).
    With ``names`` (a function finding identifiers in a text), a shortened
    text spends up to :data:`_NAMES_SHARE` of its tokens on a note naming the
    identifiers only its omitted middle held: the paths and names of a long
    task outlive its wording. ``shortener`` cuts it (by default :func:`shorten`:
    head and tail; a person's message keeps what it reports instead).
    """

    def __init__(
        self,
        meter: Meter,
        text: str,
        *,
        weight: float,
        floor_tokens: int = 0,
        useful_tokens: int = _MIN_USEFUL_TOKENS,
        prefix: str = "",
        suffix: str = "",
        names: Callable[[str], list[str]] | None = None,
        shortener: Callable[[str, int], str] = shorten,
    ) -> None:
        self.meter, self.text, self.prefix, self.suffix, self.weight = meter, text, prefix, suffix, weight
        self.shortener = shortener
        self.useful, self.names = useful_tokens, names
        self.frame = meter(prefix) + meter(suffix) + 1
        self.body = meter(text)
        self.full = self.frame + self.body
        self.floor = min(self.full, self.frame + floor_tokens) if floor_tokens else 0

    def used(self, tokens: int) -> int:
        body = min(tokens, self.full) - self.frame
        if self.floor == 0 and body < min(self.useful, self.body):
            return 0
        return max(self.floor, min(tokens, self.full))

    def render(self, tokens: int) -> str:
        used = self.used(tokens)
        if used == 0:
            return ""
        body = max(used - self.frame, 0)
        note, note_tokens = self._omitted_names(body) if self.names is not None and used < self.full else ("", 0)
        shortened = self.shortener(self.text, self.meter.chars_for(self.text, body - note_tokens))
        return f"{self.prefix}{shortened}{note}{self.suffix}"

    def _omitted_names(self, body_tokens: int) -> tuple[str, int]:
        """The note naming what only the omitted middle holds, and its tokens, within its share of ``body_tokens``."""
        assert self.names is not None
        head_end, tail_start = cut(self.text, self.meter.chars_for(self.text, int(body_tokens * (1 - _NAMES_SHARE))))
        kept = self.text[:head_end] + self.text[tail_start:]
        names = [n for n in dict.fromkeys(self.names(self.text[head_end:tail_start])) if n not in kept]
        spent, listed = self.meter(_NAMES_NOTE.format(names="")), []
        for name in names:
            cost = self.meter(name) + 1
            if spent + cost > body_tokens * _NAMES_SHARE:
                break
            listed.append(name)
            spent += cost
        if not listed:
            return "", 0
        more = "" if len(listed) == len(names) else ", …"
        return _NAMES_NOTE.format(names=", ".join(listed) + more), spent


class Listing:
    """Lines in priority order: as many as fit are kept, the rest left out.

    ``keep`` lines are always kept. ``more``, when given, is a format string
    for a last line naming what was left out: ``{names}`` their ``short``
    forms joined by commas, for lists where nothing may vanish (changed
    paths); a count alone says nothing the reader can use, so there is none.
    A listing with no line kept renders nothing, not even its header.
    ``newest_last`` shows the kept lines in reverse of their priority order
    (priority newest first, display in time order).
    """

    def __init__(
        self,
        meter: Meter,
        lines: Sequence[str],
        *,
        weight: float,
        more: str = "",
        keep: int = 0,
        short: Sequence[str] = (),
        header: str = "",
        empty: str = "",
        newest_last: bool = False,
    ) -> None:
        self.lines, self.more, self.header, self.newest_last, self.weight = list(lines), more, header, newest_last, weight
        self.empty = empty
        self.keep = min(keep, len(self.lines))
        self.short = list(short)
        self.running = list(accumulate((meter(line) + 1 for line in self.lines), initial=0))  # cost of the first k
        self.more_cost = meter(more.format(names="")) + 1 if self.lines and more else 0
        # the cost of the short forms of lines k.. (each with its ", "): what naming the left-out lines adds
        self.names_after = list(accumulate((meter(name) + 1 for name in reversed(self.short)), initial=0))[::-1]
        self.header_cost = meter(header) + 1 if header else 0
        self.empty_cost = meter(empty) + 1 if empty and not self.lines else 0
        self.full = self.header_cost + self.empty_cost + self.running[-1]
        self.costs = [self._cost(kept) for kept in range(len(self.lines) + 1)]  # the fitting asks for them often
        self.floor = self.costs[self.keep]

    def _cost(self, kept: int) -> int:
        left_out = self.more_cost + (self.names_after[kept] if self.short and self.more else 0) if kept < len(self.lines) else 0
        if not kept and not left_out:
            return self.empty_cost + (self.header_cost if self.empty_cost else 0)
        return self.header_cost + self.empty_cost + self.running[kept] + left_out

    def _kept(self, tokens: int) -> int:
        """How many lines fit in ``tokens`` (at least ``keep``); costs grow with each line kept but the last."""
        costs = self.costs
        if costs[-1] <= tokens:
            return len(self.lines)
        low, high = self.keep, len(self.lines) - 1  # the answer is in [low, high]: the largest k with cost(k) <= tokens
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if costs[middle] <= tokens else (low, middle - 1)
        return low

    def used(self, tokens: int) -> int:
        return self.costs[self._kept(tokens)]

    def render(self, tokens: int) -> str:
        if not self.lines:
            return "\n".join(t for t in (self.header, self.empty) if t)
        kept = self._kept(tokens)
        shown = self.lines[:kept]
        if self.newest_last:
            shown.reverse()
        if kept < len(self.lines) and self.more:
            shown.append(self.more.format(names=", ".join(self.short[kept:])))
        if not shown:
            return ""
        return "\n".join([self.header, *shown] if self.header else shown)


def allocate(parts: Sequence[Part], budget: int) -> list[int]:
    """Tokens for each part: floors first, then the rest of ``budget`` by weight (see the module docstring).

    The level is the highest at which what the parts would actually use (a
    list keeps whole lines, a text too small to be useful is left out) still
    fits, so what one part cannot use goes to the others.
    """
    low, high = 0.0, max((p.full / p.weight for p in parts if p.weight > 0), default=0.0)
    if _used_at(parts, high) > budget:
        for _ in range(_LEVEL_STEPS):
            middle = (low + high) / 2
            low, high = (middle, high) if _used_at(parts, middle) <= budget else (low, middle)
        high = low
    return [p.used(_share(p, high)) for p in parts]


def _share(part: Part, level: float) -> int:
    return int(min(part.full, max(part.floor, part.weight * level)))


def _used_at(parts: Sequence[Part], level: float) -> int:
    return sum(p.used(_share(p, level)) for p in parts)
