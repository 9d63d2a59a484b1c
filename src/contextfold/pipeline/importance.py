"""importance: how likely an identifier, and the lines and items holding it, is to be needed again.

What an agent goes on to use is mostly what it has used already: the paths,
identifiers, line numbers and values its own calls and words carried, the
ones the user named, and whatever the last error pointed at. A *reference*
is such a specific token (at least four characters, with a digit, ``_``,
``.``, ``/``, ``:`` or an inner capital, so plain words do not count); it
weighs more the more turns used it and the more recently.

The stages ask this module rather than guessing on their own: clear keeps
the referenced lines of what it removes, the summary and the
survival check keep the references, and the economics prices forgetting by
it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..conversation import Item, readable_text
from ..reading import without_own_lines
from ..readings import Key
from ..summarizers._text import clip

TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./:\-]{3,}")
"""A candidate token: a run of identifier, path and value characters."""
_SPECIFIC = re.compile(r"[0-9_./:]|[a-z][A-Z]")
"""What makes a token specific rather than a plain word: a digit, ``_ . / :`` or an inner capital."""
_TRAILING = ".:-/"
"""Stripped from a token's end: sentence punctuation and a path's closing slash name nothing more."""
MIN_CHARS = 4
REFERENCES: Key[frozenset[str]] = Key("references")
"""The specific tokens of an item (:func:`item_tokens`)."""

HALF_LIFE_TURNS = 40
"""A reference last used this many turns ago counts half as much as one used now."""
USER_WEIGHT = 3.0
"""A token the user wrote counts as this many uses by the agent: the user rarely repeats it."""


def specific_tokens(text: str) -> frozenset[str]:
    """The specific tokens of ``text``: identifiers, paths, line numbers and values, not plain words.

    The same rule decides what an item refers to here and what a reply used
    in replay's recall (:mod:`contextfold.replay.recall`).
    """
    found = set()
    for candidate in set(TOKEN.findall(text)):  # an output repeats its names: each is looked at once
        token = candidate.rstrip(_TRAILING)
        if len(token) >= MIN_CHARS and _SPECIFIC.search(token):
            found.add(token)
    return frozenset(found)


def used_text(item: Item) -> str:
    """What ``item`` says, as its author wrote it: text, reasoning, outputs and the decoded values of its tool
    arguments (no tool names, no JSON keys, no ``\\n`` escapes fused onto the next word). Of an item contextfold
    wrote, the lines it wrote about the request are left out (a summary's pointer, a marker: :mod:`..reading.own`):
    their refs are no names anyone used, and no line of them is a line of the session to quote back."""
    text = readable_text(item, decode_arguments=True, tool_names=False)
    return without_own_lines(text) if item.provenance.by_contextfold else text


def item_tokens(item: Item) -> frozenset[str]:
    """The specific tokens of ``item``, read from :func:`used_text` (memoized on the item: items never change)."""
    tokens = item.readings.get(REFERENCES)
    if tokens is None:
        tokens = item.readings.set(REFERENCES, specific_tokens(used_text(item)))
    return tokens


Lines = int | tuple[int, ...]
"""The lines of an output a token is on: one line's number (as most tokens are), else the numbers of each."""


LINE_INDEX: Key[dict[str, Lines]] = Key("line_index")
"""Where each specific token of an output is (:func:`line_index`)."""


def _numbers(lines: Lines) -> tuple[int, ...]:
    return (lines,) if isinstance(lines, int) else lines


def line_index(item: Item) -> Mapping[str, Lines]:
    """Where each specific token of ``item``'s output is: the lines holding it (memoized on the item).

    Every output the history holds keeps this for as long as the session
    runs, so it keeps line numbers, not lines (a copy of each line with a set
    of its tokens took several times the output's own size), and a token on
    one line, as most are, keeps a bare number rather than a tuple of one.
    """
    index = item.readings.get(LINE_INDEX)
    if index is None:
        result = item.tool_result
        lines = enumerate(result.text.splitlines()) if result is not None else iter(())
        index = item.readings.set(LINE_INDEX, _where(lines, {token: token for token in item_tokens(item)}))
    return index


def _where(lines: Iterable[tuple[int, str]], spelling: Mapping[str, str]) -> dict[str, Lines]:
    """The specific tokens of the numbered ``lines``, each with the numbers of the lines holding it.

    A token found in ``spelling`` is keyed by that string object, so an item's
    index shares the strings its :func:`item_tokens` already holds.
    """
    found: dict[str, list[int]] = {}
    for number, line in lines:
        for token in specific_tokens(line):
            found.setdefault(spelling.get(token, token), []).append(number)
    return {token: numbers[0] if len(numbers) == 1 else tuple(numbers) for token, numbers in found.items()}


def source_weight(item: Item) -> float:
    """How much one appearance of a token in ``item`` counts as a *use* of it.

    The agent's own turns count once, the user's :data:`USER_WEIGHT` times;
    summaries and survival notes once (they carry uses from before them);
    tool outputs and restored files not at all: they show tokens, nobody used them yet.
    """
    if item.role == "assistant":
        return 1.0
    if item.role != "user" or item.provenance.restored:
        return 0.0
    return 1.0 if item.provenance.summary or item.provenance.survival else USER_WEIGHT


@dataclass
class References:
    """The specific tokens the agent and the user have used, with how often and how lately.

    ``uses`` counts the turns that used a token (a user turn counts
    :data:`USER_WEIGHT` times); ``last`` is the turn number of the latest
    use, turns being the items scanned, in order.
    """

    uses: dict[str, float] = field(default_factory=dict)
    last: dict[str, int] = field(default_factory=dict)
    turns: int = 0

    @classmethod
    def of(cls, items: Iterable[Item]) -> References:
        """The references of ``items``, to read only (not to :meth:`read` more into).

        A compaction asks this of the same request several times (clearing,
        the summary's restored files, the survival check, the price of what
        each candidate forgets), so the last answer is kept for the same
        item objects in the same order. An item that weighs nothing
        (:func:`source_weight`: a tool output) only counts as a turn, so one may
        stand where another did: each stage that clears or snips outputs asks
        again with its own placeholders in place of the outputs, and finds the same references.
        """
        global _last_refs
        items = list(items)
        last = _last_refs  # read once: another thread may replace it
        if last is not None and len(last[0]) == len(items) and all(
                old is new or not (source_weight(old) or source_weight(new)) for old, new in zip(last[0], items)):
            return last[1]
        refs = cls()
        refs.read(items)
        _last_refs = (items, refs)
        return refs

    def read(self, items: Iterable[Item]) -> None:
        for item in items:
            self.turns += 1
            weight = source_weight(item)
            if not weight:
                continue
            for token in item_tokens(item):
                self.uses[token] = self.uses.get(token, 0.0) + weight
                self.last[token] = self.turns

    def weight(self, token: str) -> float:
        """How likely ``token`` is to be needed again: its uses, decayed by how long ago the last one was."""
        uses = self.uses.get(token)
        if uses is None:
            return 0.0
        age = self.turns - self.last[token]
        return uses * math.pow(0.5, age / HALF_LIFE_TURNS)

    def ranked(self, exclude: Iterable[str] = ()) -> list[str]:
        """The references, most likely needed first, without those in ``exclude``."""
        skip = set(exclude)
        return sorted((t for t in self.uses if t not in skip), key=lambda t: (-self.weight(t), t))


_last_refs: tuple[list[Item], References] | None = None
"""The items :meth:`References.of` was last asked about, and its answer."""


def referenced_lines(
    text: str, refs: References, max_chars: int, tokens: frozenset[str] | None = None,
    index: Mapping[str, Lines] | None = None,
) -> list[str]:
    """The lines of ``text`` that hold references, heaviest first, within ``max_chars`` (in their order).

    ``tokens`` are the specific tokens of ``text`` when known (:func:`item_tokens`
    keeps them): then only the lines holding a referenced one are read; ``index``
    is where each token of ``text`` is when known (:func:`line_index` keeps it).
    """
    hits = refs.uses.keys() & (tokens if tokens is not None else specific_tokens(text))
    if not hits:
        return []
    if index is None:
        candidates = enumerate(text.splitlines())
        index = _where(((number, line) for number, line in candidates if any(token in line for token in hits)), {})
    weights: dict[int, float] = {}
    for token in sorted(index.keys() & refs.uses.keys()):  # a fixed order: a float sum's last bit breaks ties
        weight = refs.weight(token)
        for number in _numbers(index[token]):
            weights[number] = weights.get(number, 0.0) + weight
    if not weights:
        return []
    lines = text.splitlines()  # the lines themselves are not kept (see line_index): read again only when needed
    scored = [(weight, number, clip(lines[number].strip(), 300)) for number, weight in weights.items() if weight > 0]
    kept: list[tuple[int, str]] = []
    spent = 0
    for weight, number, line in sorted(scored, key=lambda s: (-s[0], s[1])):
        if spent + len(line) + 1 > max_chars:
            continue
        kept.append((number, line))
        spent += len(line) + 1
    return [line for _, line in sorted(kept)]
