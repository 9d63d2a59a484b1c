"""What-survived probes: does a request still hold the facts the agent needs to carry on?

For each request, the *original* session up to that point says what should
be there (:class:`Targets`); the request's text is searched for it. "The
request's text" is everything a reader could find a fact in: message content,
tool results, summaries, tool call names and arguments
(:func:`~contextfold.conversation.readable_text`). Search is verbatim and
case-sensitive. Four probes, each a figure in 0..1, ``None`` at a request
where there is nothing to look for yet (no edit so far, say):

``task``
    Identifiers of the first user message (the task): file paths, dotted
    module names, CamelCase and snake_case identifiers, issue numbers
    (``#123``). 1 when at least :data:`TASK_SHARE` (80 %) of the distinct
    ones appear, else 0: requiring all of them would fail a faithful summary
    over one stray name, while a request that lost the task misses far more.
``edited``
    The share of the distinct paths the agent edited so far (every path of
    every EDIT call, :func:`contextfold.actions.classify`) that appear.
``last_error``
    1 when the last error line seen so far appears verbatim, until a later
    step resolves it: the last line :func:`last_error_line` finds in the
    latest tool output that has one, whatever the tool (a test run, a build,
    a file read that shows a failing check), as the reference scorer reads
    it. A later output of the same call (the same tool and arguments: the
    test run again) without an error line resolves it, and the probe then
    has nothing to look for until the next error.
``latest_output``
    1 when the distinctive tail of the latest tool output appears: the
    shortest run of its last whole lines holding at least
    :data:`TAIL_MIN_CHARS` non-blank characters that occurs in no earlier
    item of the session (the whole output when no tail is unique). A request
    holding the output in full holds its tail, and so does a preview keeping
    the head and the end of a long output; a placeholder does not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ..actions import EDIT, call_actions
from ..conversation import Conversation, Item, ToolResult

TASK_SHARE = 0.8
"""Share of the task's identifiers a request must hold for the task to count as present."""

TAIL_MIN_CHARS = 16
"""Non-blank characters the distinctive tail of an output holds at least (a lone ``}`` proves nothing)."""

PROBES = ("task", "edited", "last_error", "latest_output")

_IDENTIFIERS = re.compile(
    # paths and the path part of URLs, not closing tags; a path starts where a run of its characters does (the
    # lookbehind): tried again inside the run it would rescan the rest of it, quadratic in a line of dashes
    r"(?P<path>(?:(?<![\w.~-])[\w.~-]+|(?<!<))(?:/[\w.~-]+)+)"
    r"|(?P<dotted>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)"  # modules, attributes, file names
    r"|(?P<issue>#\d+)"
    r"|(?P<word>\w+)"  # kept when CamelCase or snake_case
)
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
_ERROR_MARK = re.compile(r"Error:|error:|FAILED")
_CODE_WORDS = re.compile(r"\b(?:except|raise|class|def|import|catch|throw)\b")  # a line of code that names errors
_TRACEBACK_START = "Traceback (most recent call last)"
ERROR_LINE_MAX_CHARS = 200
"""An error line is compared by its first 200 characters (stripped)."""
_MIN_CHARS = 4  # "e.g", "a/b" and "x_y" name nothing in particular


def task_identifiers(text: str) -> tuple[str, ...]:
    """The distinct identifiers and paths a task names, in order of first mention."""
    found: dict[str, None] = {}
    for match in _IDENTIFIERS.finditer(text):
        token = match.group().rstrip(".")
        kind = match.lastgroup
        if kind == "word":
            snake = "_" in token.strip("_") and not token.replace("_", "").isdigit()
            keep = len(token) >= _MIN_CHARS and (snake or bool(_CAMEL.search(token)))
        else:
            keep = kind == "issue" or len(token) >= _MIN_CHARS
        if keep:
            found.setdefault(token)
    return tuple(found)


def last_error_line(text: str) -> str | None:
    """The last line of ``text`` reporting an error, stripped and cut to :data:`ERROR_LINE_MAX_CHARS`.

    A line reports an error when it ends a Python traceback (the first
    unindented line after ``Traceback (most recent call last)``) or holds
    ``Error:``, ``error:`` or ``FAILED``, has at least 4 characters, and is
    not a line of code (``except``, ``raise``, ``class``, ``def``,
    ``import``, ``catch``, ``throw``). ``None`` when no line does.
    """
    last = None
    in_traceback = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(_TRACEBACK_START):
            in_traceback = True
            continue
        ends_traceback = in_traceback and bool(stripped) and not line[0].isspace()
        in_traceback = in_traceback and not ends_traceback
        reports = ends_traceback or _ERROR_MARK.search(stripped) is not None
        if reports and len(stripped) >= 4 and not _CODE_WORDS.search(stripped):
            last = stripped[:ERROR_LINE_MAX_CHARS]
    return last


def _call_key(result: ToolResult) -> tuple[str, str]:
    """The call a result answers, as the tool's name and its arguments: a re-run has the same key."""
    return result.tool_name or "", json.dumps(result.arguments, sort_keys=True, default=str)


def distinctive_tail(output: str, earlier: Sequence[str]) -> str | None:
    """The shortest tail of whole lines of ``output`` that is long enough and in none of ``earlier``.

    ``None`` for an output with no visible text.
    """
    body = output.rstrip()
    if not body.strip():
        return None
    start = len(body)
    while start > 0:
        start = body.rfind("\n", 0, start - 1) + 1
        tail = body[start:]
        if len(tail.strip()) >= TAIL_MIN_CHARS and not any(tail in text for text in earlier):
            return tail
    return body


@dataclass(frozen=True)
class Targets:
    """What a request at some point of the session should hold (see the module docstring)."""

    task: tuple[str, ...] = ()
    edited: tuple[str, ...] = ()
    last_error: str | None = None
    latest_output: str | None = None


@dataclass(frozen=True)
class Survival:
    """Each probe's figure for one request, in 0..1; ``None``: nothing to look for at that request."""

    task: float | None = None
    edited: float | None = None
    last_error: float | None = None
    latest_output: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        return {name: getattr(self, name) for name in PROBES}


def evaluate(targets: Targets, contains: Callable[[str], bool]) -> Survival:
    """The probes' figures for a request whose text ``contains`` answers for."""

    def share(needles: Sequence[str]) -> float | None:
        return sum(map(contains, needles)) / len(needles) if needles else None

    def present(needle: str | None) -> float | None:
        return None if needle is None else float(contains(needle))

    task = share(targets.task)
    return Survival(
        task=None if task is None else float(task >= TASK_SHARE),
        edited=share(targets.edited),
        last_error=present(targets.last_error),
        latest_output=present(targets.latest_output),
    )


class SessionProbes:
    """The targets of each request point of a recorded session, computed in one pass.

    :meth:`at` is meant to be asked with growing indexes (each call takes in
    only the items added since); asking for an earlier point starts over.
    """

    def __init__(self, conversation: Conversation) -> None:
        self._items = conversation.items
        self.task_index = next((i for i, item in enumerate(self._items) if item.role == "user"), None)
        self._task = () if self.task_index is None else task_identifiers(self._items[self.task_index].text)
        self._start()

    def _start(self) -> None:
        self._seen = 0
        self._texts: list[str] = []
        self._edited: dict[str, None] = {}
        self._last_error: tuple[str, tuple[str, str]] | None = None  # the line, and the call whose output had it
        self._output: tuple[str, int] | None = None  # latest output text, and how many items came before it
        self._tail: str | None = None

    def at(self, index: int) -> Targets:
        """What a request sent before the item at ``index`` (the reply) should hold."""
        if index < self._seen:
            self._start()
        for item in self._items[self._seen : index]:
            self._take(item)
        self._seen = max(self._seen, index)
        if self._output is not None:
            text, before = self._output
            self._tail = distinctive_tail(text, self._texts[:before])
            self._output = None
        task = self._task if self.task_index is not None and self.task_index < index else ()
        error = None if self._last_error is None else self._last_error[0]
        return Targets(task, tuple(self._edited), error, self._tail)

    def _take(self, item: Item) -> None:
        for action in call_actions(item):
            if action.kind == EDIT:
                self._edited.update(dict.fromkeys(action.paths))
        result = item.tool_result
        if result is not None:
            text = result.text
            line, call = last_error_line(text), _call_key(result)
            if line is not None:
                self._last_error = (line, call)
            elif self._last_error is not None and call[0] and self._last_error[1] == call and text.strip():
                self._last_error = None  # the same call ran again without an error: resolved
            self._output = (text, len(self._texts))
        self._texts.append(item.text)


K = TypeVar("K", bound=Hashable)
"""What names one text of a :class:`Haystack` search (a message's key)."""


class Haystack:
    """Substring search over the texts of requests, remembering what each text held.

    Consecutive requests share most of their messages; keyed by a message
    (``key``: any hashable naming one text), each text is searched for each
    needle once per replay, not once per request.
    """

    def __init__(self) -> None:
        self._found: dict[tuple[Hashable, str], bool] = {}

    def searcher(self, texts: Mapping[K, str]) -> Callable[[str], bool]:
        """Whether any of ``texts`` holds a needle, searching the newest (last) first."""
        keys = list(texts)[::-1]

        def contains(needle: str) -> bool:
            for key in keys:
                hit = self._found.get((key, needle))
                if hit is None:
                    hit = self._found[(key, needle)] = needle in texts[key]
                if hit:
                    return True
            return False

        return contains
