"""What the latest turn has in hand: the files the person's latest request and the agent's latest words and calls name.

After a side discussion the person says "back to the earlier task, translate that SKILL.md", or the agent's plan
names the file it is about to rewrite; the agent's next reply quotes that file. Clearing decides by age, and a file
read before the detour is old by then: what the latest turn names as the thing to work on is read here, once, so the
clearing stage keeps its output and the put-back stage puts a cleared one back (:mod:`contextfold.pipeline.stages.
put_back`).

The latest turn's naming words are three: the person's latest request (their own words, :func:`~.speaker.reading_of`),
the agent's newest words (its latest reply with text: a plan, "now I rewrite X"), and the files the agent's newest
calls act on (an edit of ``page.tsx`` names the file whose read it edits from). A file is named by its path, by a
path's tail (``src/a.py`` for ``/repo/src/a.py``) or by its file name when that has an extension (``SKILL.md``),
standing as a word of its own; words that name more than :data:`MAX_NAMED` files are a report of work done, and
name none (an agent's wrap-up listing every file it touched put back a file nobody went on to use).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..actions import EDIT, READ, call_actions, result_action
from ..conversation import Item
from .speaker import agent_words, reading_of

_FILE_NAME = re.compile(r"^[^/]*\.[A-Za-z0-9]{1,8}$")
"""A file name that says which file it is (``SKILL.md``, ``page.tsx``); ``Makefile`` or ``src`` alone say too little."""
_WORD_EDGE = r"[A-Za-z0-9_.\-/\\]"
"""Characters that continue a name (ASCII: a name stands right after Chinese words, "翻译SKILL.md"): a path inside a
longer one (``a.py`` in ``data.pyc``) is not named."""
MAX_NAMED = 3
"""Words naming more files than this report work done (an agent's wrap-up lists every file it touched, a person's
message pastes a listing): they name no one file as the one to work on next."""


@dataclass(frozen=True)
class Naming:
    """One of the latest turn's naming items: its index, and the words or paths it names files with."""

    index: int
    words: str
    paths: tuple[str, ...] = ()


def latest_naming(items: Sequence[Item]) -> list[Naming]:
    """The latest turn's naming items, oldest first: the person's latest request, the agent's newest reply with
    words, and its newest call's files. Outputs, harness notes and contextfold's own items name nothing here."""
    found: dict[int, Naming] = {}
    person = words = calls = False
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if item.role == "user" and not person and reading_of(item).person:
            found[index] = Naming(index, reading_of(item).words)
            person = True
        elif item.role == "assistant":
            said = agent_words(item).strip()
            paths = tuple(path for action in call_actions(item) if action.kind in (READ, EDIT) for path in action.paths)
            if said and not words or paths and not calls:
                found[index] = Naming(index, said if not words else "", paths if not calls else ())
            words = words or bool(said)
            calls = calls or bool(item.tool_calls)
        if person and words and calls:
            break
    return [found[index] for index in sorted(found)]


def slashed(path: str) -> str:
    """``path`` with Windows separators as ``/``: ``src\\a.py`` and ``src/a.py`` name one file."""
    return path.replace("\\", "/")


def names(words: str, path: str) -> bool:
    """Whether ``words`` name the file at ``path``: its path, a tail of it from a directory on, or its file name when
    that has an extension, each standing as a name of its own (not inside a longer one)."""
    path = slashed(path).removeprefix("./")
    words = slashed(words)
    parts = path.split("/")
    # every tail ends with the file name: words without it name none of them, and no pattern is built (the turn's
    # words against every path the history read, one pattern per tail, three times a compaction, was a fifth of it)
    if parts[-1] not in words:
        return False
    tails = ["/".join(parts[k:]) for k in range(len(parts) - 1)]
    if _FILE_NAME.match(parts[-1]):
        tails.append(parts[-1])
    return any(re.search(rf"(?<!{_WORD_EDGE}){re.escape(tail)}(?![A-Za-z0-9_\-/\\]|\.[A-Za-z0-9_])", words)
               for tail in dict.fromkeys(t for t in tails if t.strip("/") and t in words))


def in_hand(items: Sequence[Item], naming: Sequence[Naming] | None = None) -> dict[str, int]:
    """The files the latest turn names as what it works on, each with the index of the first naming item that names
    it (``naming``, else :func:`latest_naming`); only files a call of ``items`` read or wrote are candidates, by the
    path that call gave."""
    naming = latest_naming(items) if naming is None else naming
    if not naming:
        return {}
    known = {path for item in items if item.role == "tool" and (action := result_action(item)) is not None
             and action.kind in (READ, EDIT) for path in action.paths}
    found: dict[str, int] = {}
    for n in reversed(naming):  # the oldest naming item that names a file is where it was named first
        said = {path for path in known if n.words and names(n.words, path)}
        for path in {*(said if len(said) <= MAX_NAMED else ()), *(p for p in n.paths if p in known)}:
            found[path] = n.index
    return found
