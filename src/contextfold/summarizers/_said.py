"""What the assistant's words and any text name: the lines that state a finding or a decision, and the
identifiers (paths, dotted and snake_case names, issue numbers) worth keeping when a text is shortened."""

from __future__ import annotations

import re

from ._outputs import TEXT_CHARS
from ._text import shorten

_NAME = re.compile(r"#\d+|(?<![<\w./~-])[\w.~-]*/[\w./~-]*\w|[A-Za-z_][\w.]*\w")
"""Issue numbers, paths, names. A path starts where a run of its characters does (not after ``<``, a closing
tag): tried again at each character of a run of slashes, dots or digits it would rescan the rest of it,
quadratic (a task of 60,000 such characters took 7.5 s to summarize)."""
_NOT_NAMES = frozenset({"e.g", "i.e", "self", "__init__", "__name__", "__main__", "os.path", "sys.path"})
_FENCE = re.compile(r"^\s*(```|~~~)")
_FINDING_WORDS = frozenset({
    "found", "finds", "shows", "means", "because", "cause", "caused", "causes", "issue", "problem", "bug", "fix",
    "fixed", "fixes", "works", "worked", "fails", "failed", "passes", "passed", "confirms", "confirmed", "decided",
    "instead", "i'll", "should", "must", "need", "needs", "wrong", "correct", "correctly", "missing", "returns",
})
"""Words of a line that states what was found or decided (rather than "Let me look at it")."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`])")
_PLAN_OPENINGS = ("let me ", "now let me ", "let's ", "now let's ", "first, let me ", "but first, let me ")
_LOWER_WORD = re.compile(r"[a-z']+")
_SPECIFIC = re.compile(r"`[^`\n]+`|[0-9_./:]\w|[a-z][A-Z]")
"""Something code-like in a line: a backticked span, a path, a dotted or snake_case name, a number, camelCase."""
_FILE_SUFFIXES = frozenset({
    "py", "pyi", "js", "ts", "tsx", "jsx", "rs", "go", "java", "c", "h", "cpp", "hpp", "md", "txt", "json", "yaml",
    "yml", "toml", "cfg", "ini", "sh", "html", "css", "rst", "lock", "v", "rb", "kt", "swift", "sql", "xml", "csv",
})


def names_in(text: str) -> list[str]:
    """Identifiers worth keeping when a text is shortened: paths, dotted and file names, issue numbers, CamelCase
    and snake_case names, in order of appearance (repeats included)."""
    return [word for word in _NAME.findall(text) if _is_name(word)]


def _is_name(word: str) -> bool:
    if word.startswith("#") or ("/" in word and len(word) >= 4):
        return True
    return _is_identifier(word) or ("." in word and len(word) >= 4 and not word.replace(".", "").isdigit())


def _is_identifier(word: str) -> bool:
    """A name worth keeping: snake_case, CONSTANT_CASE, CamelCase or a dotted module path."""
    if len(word) < 4 or word in _NOT_NAMES:
        return False
    if "." in word:
        parts = word.split(".")
        return all(parts) and len(parts[0]) > 1 and parts[-1] not in _FILE_SUFFIXES and not parts[-1].isdigit()
    if "_" in word.strip("_"):
        return True
    return word[0].isupper() and not word.isupper() and any(c.isupper() for c in word[1:])


def finding_lines(text: str) -> list[str]:
    """The lines of what the assistant wrote that state a finding or a decision, verbatim, in order.

    A line outside code fences that names something specific (a path, a
    name, a value) and says what it is, does or why (see ``_FINDING_WORDS``);
    a plan to look somewhere ("Let me look at X") is not a finding: such a
    sentence is left out of its line.
    """
    found: list[str] = []
    fenced = False
    for raw in text.splitlines():
        if _FENCE.match(raw):
            fenced = not fenced
            continue
        sentences = _SENTENCE.split(raw.strip())
        line = " ".join(s for s in sentences if not s.lower().startswith(_PLAN_OPENINGS))  # "Let me look at X" finds nothing
        if fenced or len(line) < 24 or len(line.split()) < 5:
            continue
        if _SPECIFIC.search(line) and not _FINDING_WORDS.isdisjoint(_LOWER_WORD.findall(line.lower())):
            found.append(shorten(line, TEXT_CHARS["finding"]))
    return found
