"""Walking and searching the working folder, bounded: what ``list_files`` and ``grep`` run.

A regular expression can backtrack for hours on one line, and Python cannot
interrupt it in a thread, so ``grep`` runs :func:`grep` in a child process
(``python -I -S -c <this module's source>``, arguments as JSON on stdin,
result as JSON on stdout) that the tool kills at its time limit. Run that
way, isolated from the working folder, it can import only the standard library. Files are opened
without following links and only if they are regular files with one hard
link, so a FIFO is skipped rather than read forever and a second name of a
file outside (or of the session's transcript) is never read; links whose
target is outside the working folder, and hard-linked files, are left out
and counted. The session's protected folders are never walked into.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import time
from pathlib import Path

SKIPPED_DIRS = frozenset(
    {".git", ".contextfold", "__pycache__", ".pytest_cache", ".mypy_cache", ".venv", "node_modules"}
)
"""Folders the listing and search tools do not walk into (said so in their descriptions)."""
LINE_CAP_CHARS = 400
"""Longest matching line shown (a minified file is one line of megabytes)."""


def walk(root: Path, top: Path, deadline: float | None = None,
         protected: tuple[Path, ...] = ()) -> tuple[list[Path], int]:
    """Regular files under ``top`` (or ``top`` itself), sorted, and how many links leading outside were left out.

    Folders in ``protected`` (resolved paths) are not walked into. Past
    ``deadline`` (a :func:`time.monotonic` value) the walk stops with :class:`TimeoutError`.
    """
    if top.is_file():
        return [top], 0
    if not top.is_dir():
        raise FileNotFoundError(top)
    files, outside = [], 0
    for folder, dirs, names in os.walk(top):  # links to folders are not followed; those leading out are counted
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"the walk of {top} took too long")
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and Path(folder) / d not in protected)
        outside += sum(1 for d in dirs if not (Path(folder) / d).resolve().is_relative_to(root))
        for name in sorted(names):
            path = Path(folder) / name
            if not path.resolve().is_relative_to(root):
                outside += 1
            elif path.is_file():
                files.append(path)
    return files, outside


def grep(root: Path, top: Path, pattern: str, glob: str, limit: int,
         protected: tuple[Path, ...] = ()) -> dict[str, object]:
    """Up to ``limit + 1`` matches as ``(relative path, line number, line)``, the outside-link and hard-link counts."""
    regex = re.compile(pattern)
    files, outside = walk(root, top, protected=protected)
    matches: list[tuple[str, int, str]] = []
    linked = 0
    for file in files:
        if not file.match(glob):
            continue
        text = _text(file)
        if text is None:
            linked += 1
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if regex.search(line):
                matches.append((file.relative_to(root).as_posix(), number, line[:LINE_CAP_CHARS]))
                if len(matches) > limit:
                    return {"matches": matches, "outside": outside, "linked": linked, "more": True}
    return {"matches": matches, "outside": outside, "linked": linked, "more": False}


def _text(path: Path) -> str | None:
    """A regular file's text, opened without following a link or blocking on a FIFO; ``""`` if it is not one,
    ``None`` if it has a second hard link (its contents may be a file outside or the session's transcript)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return ""
        if info.st_nlink > 1:
            return None
        return file.read().decode("utf-8", errors="replace")


def main() -> None:
    arguments = json.load(sys.stdin)
    result = grep(Path(arguments["root"]), Path(arguments["top"]), arguments["pattern"], arguments["glob"],
                  arguments["limit"], tuple(Path(folder) for folder in arguments["protected"]))
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
