"""What one tool output shows, read off its text: the line it ended on, a test tally, the error it reports
with its failing frame, the head of a project manifest, a returned record; and the per-item readings that read each
of these once (an item never changes)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..actions import EDIT, EXIT_FAILURE_ENDED, READ, READER_GUTTER, SEARCH, Action, echoed, reported_error_lines
from ..conversation import Item
from ..readings import Key
from ._text import shorten

# A state is carried from one summary into the next, so each of its facts is bounded.
TEXT_CHARS = {"task": 20_000, "user_message": 6_000, "change": 2_000, "assistant": 4_000, "earlier_summary": 8_000,
              "error_line": 1_000, "command": 300, "call": 400, "argument": 160, "finding": 400, "result_line": 200,
              "fetched_task": 6_000, "report": 6_000}
"""The characters a state keeps of each kind of text (the summary shows less, within its budget)."""
RESULT_JSON_CHARS = 200_000
"""Results longer than this are not parsed for pages and identifiers (a page dump, not a record)."""

_TRACEBACK_PATH = re.compile(r'File "(?P<a>[^"]+)", line \d+|^(?P<b>[\w./-]+\.\w{1,8}):(?: line)? ?\d+:', re.MULTILINE)
"""Where an error names its file: Python's ``File "x.py", line 3``, a compiler's ``x.c:3:``, a shell's
``deploy.sh: line 18:``."""
_EXCEPTION_LINE = re.compile(r"(E\s+)?[\w.]*(Error|Exception)\b")
_TEST_RESULT = re.compile(
    r"\b\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected)\b|^Ran \d+ tests? in\b|^(?:OK|FAILED)(?: \(.*\))?$"
    r"|\btest result: |^Tests?:\s+\d+|\b\d+ (?:tests?|examples?|specs?),? (?:\d+ )?(?:passed|failed)|\bAll \d+ tests? passed",
    re.MULTILINE,
)
"""A line stating how a test run ended: pytest's and unittest's tallies, cargo's, jest's, rspec's."""
_SUMMARY_ENTRY = re.compile(r"^(?:FAILED|ERROR) \S+::")
"""An entry of pytest's short test summary (``FAILED tests/a.py::test_x - AssertionError``): which test failed."""
_LOG_SUFFIXES = (".log", ".out", ".err", ".output")
"""A file read with one of these names holds a program's output, not code: a CI log saved by the agent, a command's
redirected output, and the file a harness captures a background command's output in (Claude Code's
``tasks/<id>.output``, which the agent reads with ``tail`` or ``Read`` to see how a server it started is doing)."""
_VERDICT = re.compile(r"\[warn\] Code style issues")
"""prettier's verdict on ``--check``, below the files it lists."""
_LISTED_FILE = re.compile(r"\[warn\] \S+\s*$")
"""A file prettier lists as unformatted (``[warn] src/app.ts``)."""
LISTED_FILES = 20
"""The files of a verdict's list kept with it (the last ones)."""
TALLY_CHARS = 2_000
"""A test run's tally is among its last lines: only these are searched."""
_TALLY_HINT = re.compile("passed|failed|error|skipped|Ran |OK|FAILED|test result|Tests")
"""Words every tally holds: only lines with one are searched (the full pattern is slow)."""
MANIFESTS = frozenset({"package.json", "composer.json", "deno.json", "pyproject.toml", "Cargo.toml"})
"""Files that say what a project is and how to build, test and run it (its scripts): kept as the agent read them."""
MANIFEST_HEAD_LINES = 12
"""Lines of a manifest kept when it defines no scripts (its name, version, entry point)."""
MANIFEST_MAX_LINES = 40
_SCRIPTS_START = re.compile(r'^\s*(?:"scripts"\s*:\s*\{|\[(?:project\.scripts|tool\.poetry\.scripts|tool\.pdm\.scripts)\])')


_T = TypeVar("_T")
_B = TypeVar("_B")


# ---------------------------------------------------------------------- what one item shows, read once

def _kept(item: Item | None, key: Key[_T], compute: Callable[[], _T]) -> _T:
    """``compute()``, kept in ``item.readings`` under ``key``: an item never changes, so what it shows is read once."""
    return compute() if item is None else item.readings.setdefault(key, compute)


def _kept_by(item: Item | None, key: Key[dict[str, _T]], name: str, compute: Callable[[], _T]) -> _T:
    """:func:`_kept` for a reading of which an item has one per ``name`` (the change of each call it makes)."""
    known = _kept(item, key, dict)
    if name not in known:
        known[name] = compute()
    return known[name]


def tally_line(text: str) -> str | None:
    """The line a test run's output states how it ended on (among its last lines), if it is a test run."""
    tail = text[-TALLY_CHARS:]
    if not _TALLY_HINT.search(tail):
        return None
    tally = next((line.strip() for line in reversed(tail.splitlines())
                  if _TALLY_HINT.search(line) and _TEST_RESULT.search(line.strip())), None)
    return shorten(tally, TEXT_CHARS["result_line"]) if tally is not None else None


def _kept_for(item: Item | None, key: Key[tuple[_B, _T]], basis: _B, compute: Callable[[], _T]) -> _T:
    """:func:`_kept` for a value that depends on ``basis`` too (the call an output answers): recomputed if it differs."""
    known = _kept(item, key, lambda: (basis, compute()))
    if known[0] is not basis and known[0] != basis:
        known = (basis, compute())
        if item is not None:
            item.readings.set(key, known)
    return known[1]


def _shown_error(text: str) -> tuple[str, tuple[str, ...]] | None:
    """The last error line an output shows, wherever it reports one (a traceback's exception line), and its frame."""
    shown = reported_error_lines(text)
    if not shown:
        return None
    line = _traceback_end(text, shown[-1]) if shown[-1].startswith("Traceback (") else shown[-1]
    return shorten(line, TEXT_CHARS["error_line"]), tuple(error_frame(text, line))


_ERROR_MESSAGE = re.compile(r"^[^\"'=(\n]*?(?:^|(?<=[\s:\]]))[\w.]*(?:Error|Exception|error):(?:[ \t]|$)", re.MULTILINE)
"""A line printing an error's message: an exception named with its message wherever the line names it (``KeyError:
'id'`` ending a traceback, ``page.evaluate: TypeError: …``, ``npm error Error: EACCES: …``, ``API Error: 429 …``) or a
tool's ``error:``. A quote, ``=`` or ``(`` before it makes it code or data that mentions an error."""
_CODE_MENTION = re.compile(r"^\s*(?:except|catch|raise|throw|if|elif|case|def|class)\b")
"""Code that names an exception (``except ValueError:``, a traceback's source line): no message printed."""
_PRINTED_TAIL_CHARS = 16_000
"""Where an output prints its last error message: among its last lines (a traceback, a command's last complaint)."""


PRINTED_ERROR_INTRO = ". It printed this error:"
"""Introduces, in a cleared output's placeholder, the error message it printed without its call failing, under its
frame (:func:`printed_error`): what a summary reads of that output once it is cleared."""


def quoted_printed_error(placeholder: str) -> tuple[str, tuple[str, ...]] | None:
    """The error a placeholder quotes under :data:`PRINTED_ERROR_INTRO` (its last line) and its frame, if any."""
    _, intro, rest = placeholder.partition(PRINTED_ERROR_INTRO + "\n")
    block = rest.split("\n.", 1)[0].removesuffix("]").rstrip("\n").splitlines() if intro else []
    return (block[-1], tuple(block[:-1])) if block else None


def prints_error(line: str) -> bool:
    """Whether ``line`` is an error message as :func:`printed_error` finds them (not code naming an exception)."""
    return _ERROR_MESSAGE.match(line) is not None and not _CODE_MENTION.match(line)


def printed_error(text: str) -> tuple[str, tuple[str, ...]] | None:
    """The last error message an output printed (:data:`_ERROR_MESSAGE`), whether its call failed or not, and the two
    lines above it (the failing frame): what failed last, as the tool said it, even when later calls failed with a
    bare exit status. ``None`` when the output printed none."""
    tail = text[-_PRINTED_TAIL_CHARS:]
    ended = _traceback_end(tail, "") if "Traceback (" in tail else ""  # ``shop.errors.RoundingProblem: …`` too
    if not ended and "rror:" not in tail and "xception:" not in tail:
        return None
    found, at = (ended, tail.rfind(ended)) if ended else (None, -1)
    for match in _ERROR_MESSAGE.finditer(tail):
        end = tail.find("\n", match.end())
        line = tail[match.start(): end if end != -1 else len(tail)].strip()
        if match.start() > at and prints_error(line):
            found = line
    if found is None:
        return None
    return shorten(found, TEXT_CHARS["error_line"]), tuple(error_frame(tail, found))


def file_content(action: Action | None) -> bool:
    """Whether what ``action`` returned is a file's content (a read or a search, unless the file is a log; what an
    edit tool shows back of the file it changed, ``186→ } catch (error: any) {``): an error line in it is code,
    not an error shown. A shell command that edits prints its own output."""
    if action is None or any(p.endswith(_LOG_SUFFIXES) for p in action.paths):
        return False
    return action.kind in (READ, SEARCH) or (action.kind == EDIT and action.command is None)


@dataclass(frozen=True)
class _ErrorRead:
    """What a failed call's output says about its failure (see :meth:`Facts._record_error`)."""

    line: str  # the line naming the failure (a traceback's exception line rather than its header)
    named: tuple[str, ...]  # the files its traceback names, the last five
    detail: str | None  # the most telling exception line, when the line is only a tally
    frame: tuple[str, ...]  # the lines above the failure: the frame that failed
    reported: bool  # the line is one the output reports as an error, not a stand-in (a bare exit status)


def _error_details(text: str, line: str) -> _ErrorRead:
    """What ``text``, an output whose failure line is ``line``, says about the failure."""
    header, line = line, _traceback_end(text, line) if line.startswith("Traceback (") else line
    named = [m.group("a") or m.group("b") for m in _TRACEBACK_PATH.finditer(text[-8_000:])]
    reported = reported_error_lines(text)
    ended = _traceback_end(text, "")  # the exception a traceback ended on: the frame above it is what failed
    exceptions = [ended] if ended else [e for e in reported if _EXCEPTION_LINE.match(e)]
    detail = exceptions[-1] if exceptions and exceptions[-1] != line else None
    return _ErrorRead(
        line=shorten(line, TEXT_CHARS["error_line"]),
        named=tuple(named[-5:]),
        detail=shorten(detail, TEXT_CHARS["error_line"]) if detail else None,
        frame=tuple(error_frame(text, detail or line.partition(EXIT_FAILURE_ENDED)[2] or line)),  # the lines above its end
        reported=header in reported,
    )


def manifest_head(text: str) -> list[str]:
    """The head of a manifest as read: through the end of its scripts block, else its first
    :data:`MANIFEST_HEAD_LINES` lines (at most :data:`MANIFEST_MAX_LINES`, each capped), verbatim.

    A read numbered in a gutter ends at its last numbered line: what follows was appended by the reader (Claude
    Code's ``<system-reminder>`` about malware), not the file."""
    lines = [line.rstrip() for line in text.splitlines()[:200]]
    if lines and READER_GUTTER.match(lines[0]):
        lines = lines[:next((i for i, line in enumerate(lines) if not READER_GUTTER.match(line)), len(lines))]
    bodies = [READER_GUTTER.sub("", line, count=1) for line in lines]
    start = next((i for i, body in enumerate(bodies) if _SCRIPTS_START.match(body)), None)
    end = MANIFEST_HEAD_LINES
    if start is not None:  # a TOML table ends where the next begins; a JSON object on its closing brace
        opened = bodies[start].strip()
        closing = "[" if opened.startswith("[") else "}" if opened.endswith("{") else None
        end = start + 1 if closing is None else next(
            (i for i in range(start + 1, len(bodies)) if bodies[i].strip().startswith(closing)), len(bodies))
        end += closing == "}"
    head = [shorten(line, TEXT_CHARS["result_line"]) for line in lines[:min(end, MANIFEST_MAX_LINES)]]
    while head and not head[-1].strip():
        head.pop()
    return head


_MARKUP = re.compile(r"^(?:</?output>|<returncode>.*</returncode>|exit(?:ed with)? code:?\s*-?\d+|```\w*"
                     r"|\(Open file: .*\)|\(Current directory: .*\)|bash-\$)$", re.IGNORECASE)
"""A line of an output's framing, not of what the command printed: a harness's wrapper and exit status, and the
state SWE-agent appends to every observation (its open file, its directory, its prompt)."""
_EXIT_STATUS = re.compile(r"^exit(?:ed with)? code:?\s*-?\d+$", re.IGNORECASE)
"""A harness's line saying how a command ended (Claude Code opens a failed call's output with ``Exit code 2``): framing
for the line an output ended on, but in an error's frame the line above an error printed first, which says that the
command failed and how."""
_DONE_MARK = re.compile(r"///PROCESS-DONE:-?\d+:PROCESS-DONE///$")
"""SWE-agent's end-of-command mark, glued to the command's last line."""


def result_line(text: str) -> str | None:
    """The line an output ended on, verbatim (framing such as ``<returncode>`` left out): what it concluded."""
    end = len(text)
    while end > 0:
        start = text.rfind("\n", 0, end) + 1
        stripped = _DONE_MARK.sub("", text[start:end].strip()).strip()
        if stripped and not _MARKUP.match(stripped):
            return shorten(stripped, TEXT_CHARS["result_line"])
        end = start - 1
    return None


def _traceback_end(text: str, default: str) -> str:
    """The exception line that ends the output's last traceback (``package.module.SomeProblem: …``, which is
    not an error line of its own), or ``default`` when there is none."""
    lines = text[-16_000:].splitlines()
    start = max((i for i, ln in enumerate(lines) if ln.strip().startswith("Traceback (")), default=None)
    if start is None:
        return default
    return next((ln.strip() for ln in lines[start + 1:] if ln.strip() and not ln[0].isspace()), default)


def shown_error(text: str, action: Action | None, arguments: Mapping[str, Any] | None = None) -> list[str] | None:
    """The last error an output shows, wherever it reports one (a CI log's failing step is often far from its
    end), with its failing frame: the two lines above it, then the error line; ``None`` when it shows none.
    What a read or a search returned is file content (an error line in it is code), unless the file is a log;
    a line of the call's own ``arguments`` given back (:func:`echoed`) is its input, not an error it showed."""
    shown = None if file_content(action) else _shown_error(text)
    return None if shown is None or echoed(shown[0], arguments) else [*shown[1], shown[0]]


def failing_error(text: str, line: str) -> list[str]:
    """The failure line :func:`~contextfold.actions.failure_line` named, under its failing frame, as the agent
    needs it: a traceback's header stands for the exception the traceback ended on (which is no error line of
    its own, ``django.core.exceptions.AppRegistryNotReady: …``), the frame being the lines above that; for a
    failure by exit status alone, the lines above the last line its output printed."""
    line = exception_line(text, line)
    return [*error_frame(text, line.partition(EXIT_FAILURE_ENDED)[2] or line), line]


def exception_line(text: str, line: str) -> str:
    """``line``, or for a traceback's header the exception line the output's last traceback ended on."""
    return _traceback_end(text, line) if line.startswith("Traceback (") else line


def error_frame(text: str, line: str) -> list[str]:
    """The two non-empty lines above the last occurrence of ``line`` in an output: the frame that failed
    (a traceback's ``File …`` line and its code line, or the harness's exit status above an error printed first),
    verbatim; for a verdict that lists its files above it
    (prettier's ``[warn] Code style issues found…``), those files in order (see :func:`listed_files`); for a test
    run's tally, the failure the run reported last above them (see :func:`_failure_above`)."""
    lines = text[-16_000:].splitlines()
    at = next((i for i in range(len(lines) - 1, -1, -1) if line in lines[i]), None)
    if at is None:
        return []
    listed = _listed_above(lines, at)
    if listed:
        return listed
    above = [ln.rstrip() for ln in lines[max(0, at - 8):at]
             if ln.strip() and (not _MARKUP.match(ln.strip()) or _EXIT_STATUS.match(ln.strip()))][-2:]
    failure = _failure_above(lines, at, above) if _TEST_RESULT.search(lines[at]) else []
    return [shorten(ln, TEXT_CHARS["error_line"]) for ln in [*failure, *above]]


def _failure_above(lines: Sequence[str], at: int, frame: Sequence[str]) -> list[str]:
    """The last error line above a test run's tally (``lines[at]``) that says how a test failed, when the two lines
    of ``frame`` do not: pytest's ``E   Failed: DID NOT RAISE …`` above its ``=== short test summary info ===`` and
    ``FAILED tests/a.py::test_x`` lines. The tally says how many failed and the summary which; the assertion is what
    the agent fixes. Neither another tally nor a summary's ``FAILED``/``ERROR`` entry is that line."""
    for ln in reversed(lines[:at]):
        if ln.rstrip() in frame or not ln.strip() or _TEST_RESULT.search(ln) or _SUMMARY_ENTRY.match(ln):
            continue
        if reported_error_lines(ln):
            return [ln.rstrip()]
    return []


def listed_files(text: str, line: str) -> list[str]:
    """The files an output's failure ``line`` lists above it, in order, when it is a verdict that does (prettier's
    ``[warn] Code style issues found in 2 files…`` under its ``[warn] path`` lines); [] for any other line."""
    if not _VERDICT.match(line):
        return []
    lines = text[-16_000:].splitlines()
    at = next((i for i in range(len(lines) - 1, -1, -1) if line in lines[i]), None)
    return [] if at is None else _listed_above(lines, at)


def _listed_above(lines: Sequence[str], at: int) -> list[str]:
    """The ``[warn] path`` lines just above ``lines[at]`` when that line is prettier's verdict, in order, at most
    :data:`LISTED_FILES` (the last ones): which files failed the check is what the agent fixes next, and two lines
    of frame would keep only the last of them."""
    if not _VERDICT.match(lines[at]):
        return []
    start = at
    while start > 0 and _LISTED_FILE.match(lines[start - 1]) and not _VERDICT.match(lines[start - 1]):
        start -= 1
    return [shorten(ln.rstrip(), TEXT_CHARS["error_line"]) for ln in lines[max(start, at - LISTED_FILES):at]]


def _json_object(text: str) -> Mapping[str, Any] | None:
    """The JSON object a tool returned (a record, a page's state), or None for anything else."""
    stripped = text.strip()
    if not stripped.startswith("{") or len(stripped) > RESULT_JSON_CHARS:
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def issue_text(text: str) -> str:
    """An issue or pull request as ``gh … --json title,body,comments`` prints it (one line of JSON, its text escaped)
    read as text: its title, then its body, then each comment under its author, on lines of their own (what a cut on
    line boundaries can keep point by point); any other output as it is."""
    fetched = _json_object(text)
    if fetched is None or not isinstance(fetched.get("body"), str):
        return text
    title = fetched.get("title")
    parts = [f"# {title}"] if isinstance(title, str) and title else []
    parts.append(fetched["body"].strip())
    comments = fetched.get("comments")  # gh's list of comments; the REST API's is their count
    for comment in comments if isinstance(comments, list) else ():
        if isinstance(comment, Mapping) and isinstance(comment.get("body"), str):
            author = comment.get("author")
            author = author.get("login") if isinstance(author, Mapping) else author
            parts.append(f"Comment by {author}:\n{comment['body'].strip()}" if isinstance(author, str) else
                         f"Comment:\n{comment['body'].strip()}")
    return "\n\n".join(parts)
