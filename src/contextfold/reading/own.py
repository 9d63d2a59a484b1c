"""contextfold's own words: the lines it writes into a request, known to the reader as its own.

A compaction writes text of its own into what the model reads: every
placeholder and marker a stage leaves starts with :data:`MARK` (a cleared or
previewed output, with the ``read_history`` reference that reads it back;
the headers of the restored files and of the survival note), and a summary
ends on :data:`POINTER`, the line naming the history tools and the refs of the
items it replaced. Those lines describe the request, not the session: the
refs are contextfold's ids, and a pointer is true only of the summary that
wrote it. A later compaction that read them as the session's would count the
ids as names the agent uses and quote the old pointer back as a line "in use"
(the survival note did, after every second summary). So the writers take
these openings from here and every reader that quotes an item contextfold
wrote asks :func:`own_line` first.
"""

from __future__ import annotations

MARK = "[contextfold"
"""Every placeholder and marker written by a stage starts with this."""

POINTER = "Earlier details are still in the history: "
"""A summary's last line starts with this: where what it left out can be searched and read back."""


def own_line(line: str) -> bool:
    """Whether ``line`` is one contextfold wrote about the request (a marker, a placeholder, a summary's pointer)."""
    text = line.lstrip()
    return text.startswith(MARK) or text.startswith(POINTER)


def without_own_lines(text: str) -> str:
    """``text`` without the lines contextfold wrote about the request (:func:`own_line`): what is left is what the
    text quotes or says of the session."""
    if MARK not in text and POINTER not in text:
        return text
    return "\n".join(line for line in text.split("\n") if not own_line(line))
