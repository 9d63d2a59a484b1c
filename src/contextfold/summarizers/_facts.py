"""The facts a structured summary is written from, read off a span of conversation in one pass.

Everything here is extraction, none of it is wording or sizing: who asked
what, which files were read and changed (with the last change), which
commands changed the system, which errors happened (each with its failing
frame, verbatim) and whether a later step resolved them, the last test run and
its result line, the latest todo list, what the assistant said last and the
lines in which it stated a finding or a decision, its last actions with their
result lines, an issue text it fetched with a tool, tool-use counts (messages
the harness wrote in the user's place are counted, never taken for the
user's words); and, for the tools that are
not about files or commands (a browser, a booking or support API), each call
with its arguments, the pages visited and the identifiers the tools returned,
which is what a browsing or support session is made of. :class:`Facts` round-trips
through a JSON-serializable ``state`` so that a later compaction, whose span
starts with this summary, carries every fact forward instead of summarizing a
summary.

Stored texts are capped (``TEXT_CHARS`` below, head and tail kept) so the state
stays bounded however long the session runs; nothing is capped to zero.

Speed: every compaction reads its span again, and the survival check reads the
whole request, so what an item shows on its own (an output's result line, its
error and failing frame, a test tally, the findings in an assistant turn, the
text an edit wrote) is read off it once and kept in ``item.memo`` (items never
change); only the part that depends on what came before (which errors a
later step resolved, which scripts a command ran) is worked out on each read,
against a per-error key computed once.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from copy import copy
from dataclasses import dataclass, field, fields
from functools import cached_property, partial
from typing import Any, TypeVar

from ..actions import (
    EDIT,
    ERROR_FRAME_META,
    EXIT_FAILURE_ENDED,
    OTHER,
    READ,
    READER_GUTTER,
    SEARCH,
    TALLY_META,
    TODO,
    Action,
    call_actions,
    classify,
    command_outline,
    item_failure_line,
    reported_error_lines,
    written_text,
)
from ..conversation import Item, Summary, Thinking, ToolCall
from ..reading import agent_words, is_stand_in_reply, reading_of
from ._text import clip, shorten

STATE_SCHEMA = "contextfold.extractive/1"
"""Written into every state; a state with another schema is treated as plain summary text."""

# A state is carried from one summary into the next, so each of its facts is bounded.
TEXT_CHARS = {"task": 20_000, "user_message": 6_000, "change": 2_000, "assistant": 4_000, "earlier_summary": 8_000,
              "error_line": 1_000, "command": 300, "call": 400, "argument": 160, "finding": 400, "result_line": 200,
              "fetched_task": 6_000}
"""The characters a state keeps of each kind of text (the summary shows less, within its budget)."""
FINDING_SOURCE_CHARS = 80
"""The characters of the call a finding follows (the output it was read from) shown with it."""
KEEP = {"errors": 40, "commands": 40, "recent_actions": 8, "calls": 40, "pages": 30, "records": 40, "findings": 30}
"""How many entries a state keeps of each list: the most recent."""
RESULT_JSON_CHARS = 200_000
"""Results longer than this are not parsed for pages and identifiers (a page dump, not a record)."""
RE_RUN_SIMILARITY = 0.6
"""Two commands are "the same" run when they start alike and share this fraction of their signature words."""

_TRACEBACK_PATH = re.compile(r'File "(?P<a>[^"]+)", line \d+|^(?P<b>[\w./-]+\.\w{1,8}):\d+:', re.MULTILINE)
_EXCEPTION_LINE = re.compile(r"(E\s+)?[\w.]*(Error|Exception)\b")
_NAME = re.compile(r"#\d+|(?<![<\w./~-])[\w.~-]*/[\w./~-]*\w|[A-Za-z_][\w.]*\w")
"""Issue numbers, paths, names. A path starts where a run of its characters does (not after ``<``, a closing
tag): tried again at each character of a run of slashes, dots or digits it would rescan the rest of it,
quadratic (a task of 60,000 such characters took 7.5 s to summarize)."""
_NOT_NAMES = frozenset({"e.g", "i.e", "self", "__init__", "__name__", "__main__", "os.path", "sys.path"})
_TEST_RESULT = re.compile(
    r"\b\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected)\b|^Ran \d+ tests? in\b|^(?:OK|FAILED)(?: \(.*\))?$"
    r"|\btest result: |^Tests?:\s+\d+|\b\d+ (?:tests?|examples?|specs?),? (?:\d+ )?(?:passed|failed)|\bAll \d+ tests? passed",
    re.MULTILINE,
)
"""A line stating how a test run ended: pytest's and unittest's tallies, cargo's, jest's, rspec's."""
QUIET_OUTPUTS = 20
"""Outputs since the last failure searched (newest first) for an error they showed without failing."""
_LOG_SUFFIXES = (".log", ".out", ".err")
"""A file read with one of these names holds a program's output (a CI log saved by the agent), not code."""
TALLY_CHARS = 2_000
"""A test run's tally is among its last lines: only these are searched."""
_TALLY_HINT = re.compile("passed|failed|error|skipped|Ran |OK|FAILED|test result|Tests")
"""Words every tally holds: only lines with one are searched (the full pattern is slow)."""
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
_ISSUE_FETCH = re.compile(r"\bgh (?:issue|pr) view\b|/(?:issues|pull)/\d+|\bgh api\b.*\b(?:issues|pulls)/\d+")
"""A command or URL that fetches an issue or pull request: its text is the task as it arrived."""
_TEST_RUN = re.compile(r"\b(?:pytest|py\.test|unittest|tox|nox|(?:npm|pnpm|yarn|bun) (?:run )?test|cargo test|go test|jest|"
                       r"vitest|mocha|rspec|phpunit|ctest|make (?:test|check)|runtests\.py|manage\.py test)\b")
"""A command that runs a test suite: once one passes, the failures of earlier test runs are behind the agent."""
_STATUS_QUERY = re.compile(r"--json[\s=]+(?![^\s|;&]*\b(?:body|title)\b)[\w,]+|--jq[\s=]+['\"]?\.(?!body|title)\w+")
"""A fetch of some fields of an issue or pull request that leaves out its text (``gh pr view 2 --json
state,mergedAt``): a status check, not the task."""
_BUILD_RUN = re.compile(r"(?:^|[;&|(]|\n)\s*(?:\w+=\S*\s+)*(?:(?:npx|uv run|poetry run|python3? -m)\s+)?(?:(?:npm|pnpm|yarn|bun) (?:run )?(?:build|lint|typecheck|type-check|check|compile)|tsc|"
                        r"cargo (?:build|check|clippy)|go (?:build|vet)|make|mypy|ruff|eslint|flake8|pylint|"
                        r"gradlew? (?:build|check|assemble)|mvnw? (?:compile|package|verify|install)|dotnet build|"
                        r"cmake --build|ninja|bazel (?:build|test))\b")
"""A command that builds or checks a project (a compiler, a type checker, a linter), where a command starts: how
it ended is where the agent stands, like a test run's."""
_ISSUE_ONLY = re.compile(r"\bgh issue view\b|/issues/\d+")
"""A command or URL that fetches an issue, not a pull request."""
_FILE_SUFFIXES = frozenset({
    "py", "pyi", "js", "ts", "tsx", "jsx", "rs", "go", "java", "c", "h", "cpp", "hpp", "md", "txt", "json", "yaml",
    "yml", "toml", "cfg", "ini", "sh", "html", "css", "rst", "lock", "v", "rb", "kt", "swift", "sql", "xml", "csv",
})
_QUERY_KEYS = ("pattern", "query", "regex", "glob", "search_term", "file_name")
_TODO_LIST_KEYS = ("todos", "plan", "items", "tasks")
_TODO_TEXT_KEYS = ("content", "step", "task", "title", "description", "text")
_URL = re.compile(r"https?://[^\s\"'<>]+")
MANIFESTS = frozenset({"package.json", "composer.json", "deno.json", "pyproject.toml", "Cargo.toml"})
"""Files that say what a project is and how to build, test and run it (its scripts): kept as the agent read them."""
MANIFEST_HEAD_LINES = 12
"""Lines of a manifest kept when it defines no scripts (its name, version, entry point)."""
MANIFEST_MAX_LINES = 40
_SCRIPTS_START = re.compile(r'^\s*(?:"scripts"\s*:\s*\{|\[(?:project\.scripts|tool\.poetry\.scripts|tool\.pdm\.scripts)\])')
_RECORD_KEY = re.compile(r"(?:^|_)(?:id|number|code|ref|reference|confirmation)$", re.IGNORECASE)
"""Keys of a returned record whose values identify something (``reservation_id``, ``order_number``)."""


_T = TypeVar("_T")
_Pending = tuple[ToolCall, Action, "Item | None"]
"""A call waiting for its result: the call, what it does, and the item that made it (None: not in the span)."""
_Settled = tuple[ToolCall, Action, "str | None", bool, "str | None"]
"""A settled call: the call, what it did, its failure line (None: it worked), whether it went unanswered,
and the line its output ended on (what a reader of the output would quote)."""


_RUNNER = re.compile(r"(?:^|[\s(])(?:python[0-9.]*|node|bash|sh|zsh|ruby|perl|php|deno|bun|ts-node|pytest|go\s+run)\s")
"""A word that runs the file named after it on the same command: an interpreter or a test runner."""


def _run_by(command: str, paths: list[str]) -> list[str]:
    """Those of ``paths`` that ``command`` runs, not only names (``sed -i … fix.py`` edits it, ``python fix.py``
    and ``./fix.py`` run it; ``python fix_totals.py`` does not run ``totals.py``). Only where the name stands is
    looked at, since a command that writes a script inline is long."""
    return [path for path in paths if any(_runs_at(command, at, len(_last_component(path)))
                                          for at in _occurrences(command, _last_component(path)))]


_VALUED_OPTIONS = frozenset({"-k", "-m", "-p", "-c", "-n", "-o", "-W", "--deselect", "--ignore", "--rootdir",
                             "--settings", "--parallel", "--testNamePattern", "-t"})
"""Options of test runners whose next word is their value, not a test selection."""
_NARROWING = frozenset({"-k", "-m", "--testNamePattern", "-t"})
"""Options that select tests by name or mark: the run is of those alone (kept with their value)."""
_TEST_WORD = re.compile(r"[\w./:\[\]-]+")


def _test_selection(command: str) -> frozenset[str] | None:
    """What a test command runs: the words after its runner that name tests (paths, ids such as
    ``tests/a.py::test_b``, dotted labels), up to the end of its part of the command (empty: the whole suite);
    ``None`` when ``command`` runs no test suite."""
    found = _TEST_RUN.search(command)
    if found is None:
        return None
    end = min((at for at in (command.find(sep, found.end()) for sep in ("&&", ";", "|", "\n", ">")) if at >= 0),
              default=len(command))
    words = command[found.end():end].split()
    return frozenset(f"{before} {word}" if before in _NARROWING else word for before, word in zip(["", *words], words)
                     if not word.startswith("-") and before not in _VALUED_OPTIONS - _NARROWING
                     and _TEST_WORD.fullmatch(word) and not word.isdigit())


def _covers(later: frozenset[str], earlier: frozenset[str]) -> bool:
    """Whether a test run that selected ``later`` covers one that selected ``earlier`` (see :func:`_test_selection`):
    it runs the whole suite, or each test the earlier run selected, or a file or folder that holds it
    (``tests/a.py`` covers ``tests/a.py::test_b``, ``migrations`` covers ``migrations.test_x``). A pass of
    ``tests/test_a.py`` says nothing of a failure in ``tests/test_b.py``."""
    return not later or bool(earlier) and all(any(_within(test, run) for run in later) for test in earlier)


def _within(test: str, run: str) -> bool:
    """Whether selecting ``run`` runs ``test`` too: the same, or a folder, file or module that holds it."""
    run = run.rstrip("/")
    return test == run or any(test.startswith(run + separator) for separator in ("/", "::", "."))


def _occurrences(text: str, name: str) -> Iterator[int]:
    at = text.find(name)
    while at >= 0:
        yield at
        at = text.find(name, at + 1)


def _whole_name(text: str, at: int, length: int) -> bool:
    """Whether the name at ``at`` is a whole path component (``fix_totals.py`` holds no ``totals.py``)."""
    before = text[at - 1] if at else " "
    after = text[at + length] if at + length < len(text) else " "
    return not (before.isalnum() or before in "_.-" or after.isalnum() or after in "_.")


def _runs_at(command: str, at: int, length: int) -> bool:
    """Whether the name at ``at`` is a whole path component that its command (back to ``;``, ``&``, ``|`` or the
    line's start) runs."""
    if not _whole_name(command, at, length):
        return False
    start = max(command.rfind(separator, 0, at) for separator in ";&|\n") + 1
    words = command[start:at]
    return words.endswith("./") or _RUNNER.search(words) is not None


@dataclass
class FileFacts:
    """What happened to one file. ``last_change`` is the text the last edit wrote (capped), or its command;
    ``ran``: the agent ran it after writing it (a probe or a reproduction script, not the project's source)."""

    reads: int = 0
    edits: int = 0
    failed_edits: int = 0
    created: bool = False
    ran: bool = False
    last_change: str | None = None

    @property
    def scratch(self) -> bool:
        """Whether the agent made this file for itself (created it, or ran what it wrote) rather than changed
        one of the project's: a reader wants the project's changes first."""
        return self.created or self.ran


@dataclass
class ErrorFacts:
    """One failed tool call: the line naming the failure, verbatim, and whether a later step resolved it.

    ``signature`` identifies the command (to recognise a later successful
    re-run); ``paths`` are the files the call touched and those its traceback
    names (a later edit of one resolves it); ``detail`` is the most telling
    exception line when the last line is only a tally.
    """

    line: str
    source: str
    tool: str
    kind: str
    signature: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    detail: str | None = None
    frame: list[str] = field(default_factory=list)  # the lines just above ``line`` in the output: the failing frame
    scripts: list[str] = field(default_factory=list)  # scripts the agent wrote that the failing command ran
    retired: bool = False  # its script was abandoned: the agent went on to run another script of its own
    reported: bool = True  # the line is one the output reports as an error, not a stand-in (a bare exit status)
    resolved: str | None = None

    # What a later action is compared with to resolve it (see :meth:`Facts._resolve`), computed once: an error's
    # signature and paths never change once recorded. No part of the state.
    @cached_property
    def words(self) -> frozenset[str]:
        """The command's signature words."""
        return frozenset(self.signature)

    @cached_property
    def names(self) -> frozenset[str]:
        """The last component of each path: a file written two ways (``./a/b.py``, ``a/b.py``) ends alike."""
        return frozenset(_last_component(p) for p in self.paths)

    @cached_property
    def tests(self) -> frozenset[str] | None:
        """The tests the failed command ran (see :func:`_test_selection`; None: it ran no test suite): a later
        test run that covers them and passes resolves it."""
        return _test_selection(self.source)

    def to_state(self) -> dict[str, Any]:
        """The error as JSON data (fresh lists)."""
        return {f.name: copy(getattr(self, f.name)) for f in fields(self) if f.init}


@dataclass
class Facts:
    """Everything a structured summary reports, accumulated item by item (see the module docstring)."""

    user_messages: list[str] = field(default_factory=list)
    files: dict[str, FileFacts] = field(default_factory=dict)
    errors: list[ErrorFacts] = field(default_factory=list)
    errors_total: int = 0
    commands: list[dict[str, Any]] = field(default_factory=list)
    commands_total: int = 0
    todos: list[dict[str, str]] | None = None
    tools: dict[str, list[int]] = field(default_factory=dict)  # tool name -> [calls, failures]
    last_assistant: str | None = None
    findings: list[str] = field(default_factory=list)  # lines the assistant stated a finding or decision in, each with
    # the call whose output it followed, oldest first
    last_test: dict[str, str] | None = None  # {"command", "line"}: the last test run and its result line
    last_run: dict[str, str] | None = None  # {"command", "line"}: a build, check or test command newer than
    # ``last_test`` whose output had no tally, and the line it ended on (its failure, when it failed)
    fetched_task: dict[str, str] | None = None  # {"source", "text"}: an issue or PR the agent fetched with a tool
    harness_messages: int = 0  # user messages the harness wrote (format nags, limits): not the user's words
    shown_error: dict[str, Any] | None = None  # {"source", "frame", "line"}: an error an output showed without its call
    # failing (a CI log read, a test run piped through tail), newer than the last failed call
    user_spoke_last: bool = False  # a user message came after the last assistant text
    acted_since_said: bool = False  # the assistant made a tool call with or after its last text: what that text
    # announced ("Let me check…") is done, not next
    recent_actions: list[str] = field(default_factory=list)
    earlier_summaries: list[str] = field(default_factory=list)  # summaries that carried no state of ours
    items: int = 0
    # the tools that are not about files or commands (browser, booking, support APIs)
    calls: list[dict[str, Any]] = field(default_factory=list)  # {"call", "ok", "times", "inputs"}, oldest first
    calls_total: int = 0
    pages: dict[str, str] = field(default_factory=dict)  # url -> its title ("" when unknown), least recent first
    records: list[str] = field(default_factory=list)  # "key value" identifiers the tools returned, oldest first
    manifest: dict[str, Any] | None = None  # {"path", "lines"}: the head of the last project manifest the agent read
    # (package.json, pyproject.toml...) through the scripts it defines, verbatim
    # the files edited so far, with their last path component (what a command names to run a script); no state
    _edited: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)

    # ------------------------------------------------------------------ state round trip
    def to_state(self) -> dict[str, Any]:
        """The facts as JSON data (fresh containers: the state outlives this object unchanged)."""
        state: dict[str, Any] = {f.name: copy(getattr(self, f.name)) for f in fields(self) if f.init}
        state["files"] = {path: dict(vars(f)) for path, f in self.files.items()}
        state["errors"] = [e.to_state() for e in self.errors]
        state["last_test"] = dict(self.last_test) if self.last_test is not None else None
        state["last_run"] = dict(self.last_run) if self.last_run is not None else None
        state["fetched_task"] = dict(self.fetched_task) if self.fetched_task is not None else None
        state["shown_error"] = {**self.shown_error, "frame": list(self.shown_error["frame"])} if self.shown_error else None
        state["tools"] = {name: list(counts) for name, counts in self.tools.items()}
        state["todos"] = [dict(t) for t in self.todos] if self.todos is not None else None
        state["calls"] = [dict(c) for c in self.calls]
        state["manifest"] = {**self.manifest, "lines": list(self.manifest["lines"])} if self.manifest else None
        state["schema"] = STATE_SCHEMA
        return state

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> Facts:
        """The facts a state holds; keys this version does not know are ignored, missing ones take defaults.

        Its containers are copied: the state lives on in its summary, and reading on appends to lists and
        counts in records (a call seen again, a tool's uses) that must not change it."""
        values = {key: _fresh(value) for key, value in _known(cls, state).items()}
        values["files"] = {path: FileFacts(**_known(FileFacts, f)) for path, f in state.get("files", {}).items()}
        values["errors"] = [ErrorFacts(**_known(ErrorFacts, e)) for e in state.get("errors", [])]
        facts = cls(**values)
        facts._edited = {path: _last_component(path) for path, f in facts.files.items() if f.edits}
        return facts

    def absorb(self, earlier: Facts) -> None:
        """Merge the facts of a summary found in the span: they come after what this holds so far."""
        self.user_messages += earlier.user_messages
        for path, theirs in earlier.files.items():
            mine = self.files.setdefault(path, FileFacts())
            mine.reads += theirs.reads
            mine.edits += theirs.edits
            mine.failed_edits += theirs.failed_edits
            mine.created = mine.created or theirs.created
            mine.ran = mine.ran or theirs.ran
            mine.last_change = theirs.last_change or mine.last_change
            if mine.edits:
                self._edited[path] = _last_component(path)
        self.errors = (self.errors + earlier.errors)[-KEEP["errors"]:]
        self.errors_total += earlier.errors_total
        self.commands = (self.commands + earlier.commands)[-KEEP["commands"]:]
        self.commands_total += earlier.commands_total
        self.todos = earlier.todos if earlier.todos is not None else self.todos
        for name, (calls, failures) in earlier.tools.items():
            counts = self.tools.setdefault(name, [0, 0])
            counts[0] += calls
            counts[1] += failures
        self.findings = (self.findings + earlier.findings)[-KEEP["findings"]:]
        self.last_test = earlier.last_test or self.last_test
        self.last_run = earlier.last_run or self.last_run
        self.fetched_task = _first_issue(earlier.fetched_task, self.fetched_task) if earlier.fetched_task else self.fetched_task
        self.manifest = self.manifest or earlier.manifest
        self.harness_messages += earlier.harness_messages
        self.shown_error = earlier.shown_error or self.shown_error
        if earlier.last_assistant is not None:
            self.last_assistant = earlier.last_assistant
            self.user_spoke_last = earlier.user_spoke_last
            self.acted_since_said = earlier.acted_since_said
        elif earlier.user_messages:
            self.user_spoke_last = True
        self.recent_actions = (self.recent_actions + earlier.recent_actions)[-KEEP["recent_actions"]:]
        self.earlier_summaries += earlier.earlier_summaries
        self.items += earlier.items
        self.calls = (self.calls + earlier.calls)[-KEEP["calls"]:]
        self.calls_total += earlier.calls_total
        for url, title in earlier.pages.items():
            self._visit(url, title)
        for record in earlier.records:
            self._record(record)

    # ------------------------------------------------------------------ reading items
    def read(self, items: Sequence[Item], *, details: bool = True) -> None:
        """Add what ``items`` show, in order; tool calls are settled when their result arrives.

        ``details=False`` leaves out what only a summary shows (findings, test
        tallies, a fetched issue, errors outputs showed without failing), for a
        reader that needs only the errors, edits and plan.
        """
        calls: dict[str, _Pending] = {}
        settled: deque[_Settled] = deque(maxlen=KEEP["recent_actions"])  # described at the end: only these are kept
        # what the assistant wrote, with the call whose output it had just read: searched for findings at the end
        spoken: deque[tuple[Item, str, tuple[ToolCall, Action] | None]] = deque(maxlen=KEEP["findings"])
        after: tuple[ToolCall, Action] | None = None
        quiet: deque[tuple[ToolCall, Action, Item]] = deque(maxlen=QUIET_OUTPUTS)  # outputs since the last failure
        for item in items:
            summaries = [b for b in item.blocks if isinstance(b, Summary)]
            if summaries:
                for block in summaries:
                    self._read_summary(block)
                continue
            self.items += 1
            if item.role == "user":
                self._read_user(item)
            elif item.role == "assistant" and not is_stand_in_reply(item):  # an API error is no word of the agent
                spoken.append((item, self._read_assistant(item, calls), after))
            elif item.tool_result is not None:
                whole = not item.meta.get("compacted")  # a cleared output's placeholder is no output to quote
                settled.append(self._read_result(item, calls, details and whole))
                call, action, failure = settled[-1][:3]
                if action.kind != TODO:  # a todo update informs no finding: the output read before it did
                    after = (call, action)
                if not whole:
                    settled[-1] = (*settled[-1][:4], "(its output was cleared since)")
                    if details:
                        self._read_cleared_fetch(call, action, item)
                        self._read_cleared_tally(call, action, item)
                if failure is not None:
                    quiet.clear()
                elif whole:
                    quiet.append((call, action, item))
        for call, action, origin in calls.values():  # calls whose result is outside the span
            settled.append(self._settle(call, action, None, origin=origin))
        for item, text, source in spoken if details else ():
            lines = _kept(item, "facts:findings", partial(finding_lines, text))
            where = f" (after `{clip(_what(*source, TEXT_CHARS['command']), FINDING_SOURCE_CHARS)}`)" if source and lines else ""
            found = [line + where for line in lines]
            self.findings = (self.findings + [line for line in found if line not in self.findings])[-KEEP["findings"]:]
        for call, action, item in reversed(quiet if details else ()):
            if self._read_shown_error(call, action, item):
                break
        self.recent_actions = [*self.recent_actions, *(_describe(*s) for s in settled)][-KEEP["recent_actions"]:]
        self._trim()

    def _read_summary(self, block: Summary) -> None:
        """Merge a summary's state; a summary without one of ours (or a damaged one) is kept as text."""
        state = block.extra.get("state")
        if isinstance(state, Mapping) and state.get("schema") == STATE_SCHEMA:
            try:
                self.absorb(Facts.from_state(state))
                return
            except (TypeError, ValueError, AttributeError):
                pass
        self.earlier_summaries.append(shorten(block.text, TEXT_CHARS["earlier_summary"]))
        self.items += block.covers

    def _read_user(self, item: Item) -> None:
        """The person's words (never a harness line, an observation or a demonstration: see
        :mod:`contextfold.reading`), the first one being the task."""
        reading = reading_of(item)
        if not reading.person:
            self.harness_messages += 1
            return
        text = reading.words
        self.user_messages.append(shorten(text, TEXT_CHARS["user_message"] if self.user_messages else TEXT_CHARS["task"]))
        self.user_spoke_last = True

    def _read_assistant(self, item: Item, calls: dict[str, _Pending]) -> str:
        """Read an assistant turn; returns what it wrote (reasoning, then text), to be searched for findings."""
        said = agent_words(item).strip()
        if said:
            self.last_assistant = shorten(said, TEXT_CHARS["assistant"])
            self.acted_since_said = False
        self.acted_since_said = self.acted_since_said or bool(item.tool_calls)
        if said or item.tool_calls:  # a call answers the user as much as words do
            self.user_spoke_last = False
        thought = "\n".join(b.thinking for b in item.blocks if isinstance(b, Thinking))
        for call, action in zip(item.tool_calls, call_actions(item)):
            self.tools.setdefault(call.name, [0, 0])[0] += 1
            if action.kind == TODO:
                self._read_todos(call.arguments)
            calls[call.id] = (call, action, item)
        return f"{thought}\n{said}"

    def _read_result(self, item: Item, calls: dict[str, _Pending], details: bool = True) -> _Settled:
        result = item.tool_result
        assert result is not None
        known = calls.pop(result.call_id, None)
        if known is None:  # its call is outside the span (or unknown): the linked name and arguments stand in
            call = ToolCall(result.call_id, result.tool_name or "tool", result.arguments or {})
            known = (call, classify(call), None)
            self.tools.setdefault(call.name, [0, 0])[0] += 1
        call, action, origin = known
        return self._settle(call, action, item, details, origin=origin)

    # ------------------------------------------------------------------ one settled call
    def _settle(self, call: ToolCall, action: Action, item: Item | None, details: bool = True, *,
                origin: Item | None = None) -> _Settled:
        """Settle ``call`` (made in ``origin``) with its result ``item`` (None: no result in the span)."""
        result = item.tool_result if item is not None else None
        text = result.text if result is not None else ""
        line = item_failure_line(item, action.kind) if item is not None else None
        if action.kind == EDIT and (line is None or action.command is not None):  # a failed shell line still wrote
            self._record_edit(call, action, origin)
        elif action.kind == EDIT:
            for path in action.paths:
                self._file(path).failed_edits += 1
        elif action.kind == READ:
            for path in action.paths:
                self._file(path).reads += 1
            if details and line is None and result is not None:
                self._read_manifest(action, result.text)
        scripts = self._scripts_in(action.command) if action.command else []  # after the edit: it may write them
        if line is not None:
            self.tools.setdefault(call.name, [0, 0])[1] += 1
            self._record_error(call, action, item, line, scripts)
            self.shown_error = None
        else:
            self._resolve(action, call.name)
        if scripts:
            self._retire(scripts)
            for path in _run_by(action.command or "", scripts):
                self.files[path].ran = True
        if details and item is not None and (action.command or action.kind == OTHER):
            self._read_output(call, action, item, line)
        if action.kind == OTHER:
            self._record_call(call, text if line is None else "", ok=line is None)
        if action.changes_system and action.kind != EDIT and action.command:
            self.commands.append({"command": _ran(item, action.command)[2:], "ok": line is None})
            self.commands_total += 1
        ended = _kept(item, "facts:result_line", lambda: result_line(text)) if item is not None else None
        return call, action, line, result is None, ended

    def _read_output(self, call: ToolCall, action: Action, item: Item, failure: str | None) -> None:
        """What an output of a command (or of another tool) says beyond success: a test tally (or for a build,
        check or test command that printed none, the line it ended on), an issue's text."""
        text = item.text
        ok = failure is None
        tally = _kept(item, "facts:tally", lambda: tally_line(text))
        source = _ran(item, action.command) if action.command else shorten(call_line(call), 200)
        if tally is not None:
            self.last_test = {"command": source, "line": tally}
            self.last_run = None
        elif action.command and (_TEST_RUN.search(action.command) or _BUILD_RUN.search(action.command)):
            ended = exception_line(text, failure) if failure else _kept(item, "facts:result_line", lambda: result_line(text))
            self.last_run = {"command": source, "line": shorten(ended or "(no output)", TEXT_CHARS["result_line"])}
        if ok and _fetches_issue(item, call, action) and text.strip():
            fetched = {"source": source, "text": shorten(text.strip(), TEXT_CHARS["fetched_task"])}
            self.fetched_task = _first_issue(self.fetched_task, fetched)

    def _read_cleared_fetch(self, call: ToolCall, action: Action, item: Item) -> None:
        """An issue the agent fetched whose output a stage has cleared since: the lines the placeholder still shows
        (below its first line, the note) stand for it, so the task as it arrived is not lost to clearing."""
        if not _fetches_issue(item, call, action):
            return
        kept = item.text.partition("\n")[2].strip()
        if kept:
            source = (_ran(item, action.command) if action.command else shorten(call_line(call), 200)) + \
                " (output cleared since; the lines it kept)"
            self.fetched_task = _first_issue(self.fetched_task, {"source": source,
                                                                 "text": shorten(kept, TEXT_CHARS["fetched_task"])})

    def _read_cleared_tally(self, call: ToolCall, action: Action, item: Item) -> None:
        """A test run whose output a stage has cleared since: the tally its placeholder kept is still its result."""
        tally = item.meta.get(TALLY_META)
        if isinstance(tally, str):
            source = _ran(item, action.command) if action.command else shorten(call_line(call), 200)
            self.last_test = {"command": source, "line": tally}

    def _read_manifest(self, action: Action, text: str) -> None:
        """Keep the head of a project manifest the agent read, through the scripts it defines (how the project is
        built, tested and run: the commands the agent is likely to run next), verbatim with the reader's line
        numbers."""
        path = next((p for p in action.paths if _last_component(p) in MANIFESTS), None)
        if path is None:
            return
        lines = manifest_head(text)
        if lines:
            self.manifest = {"path": path, "lines": lines}

    def _read_shown_error(self, call: ToolCall, action: Action, item: Item) -> bool:
        """Keep the error an output showed without its call failing (a CI log the agent opened, a test run piped
        through ``tail``), if it shows one: its last error line wherever the output reports one (a CI log's failing
        step is often far from its end). What a read or a search returned is file content, not an output."""
        if file_content(action):
            return False
        text = item.text
        shown = _kept(item, "facts:shown_error", lambda: _shown_error(text))
        if shown is None:
            return False
        source = _ran(item, action.command) if action.command else " ".join([call.name, *action.paths])
        self.shown_error = {"source": source, "frame": list(shown[1]), "line": shown[0]}
        return True

    def _scripts_in(self, command: str) -> list[str]:
        """Files the agent wrote in this span (or an earlier one) that ``command`` names: the scripts it runs."""
        named = {path for path, name in self._edited.items() if name in command}
        return [path for path in self.files if path in named] if named else []  # in the files' (recency) order

    def _retire(self, scripts: list[str]) -> None:
        """Errors of scripts the agent wrote and no longer runs (it ran another of its scripts since) are retired."""
        for error in self.errors:
            if error.scripts and error.resolved is None and not set(error.scripts) & set(scripts):
                error.retired = True

    def _file(self, path: str) -> FileFacts:
        facts = self.files.pop(path, None) or FileFacts()  # re-inserted: dict order is recency order
        self.files[path] = facts
        return facts

    def _record_edit(self, call: ToolCall, action: Action, origin: Item | None) -> None:
        change = _kept(origin, f"facts:change:{call.id}", lambda: _change(call, action))
        created = call.name.lower() in ("write", "create", "write_file", "create_file") or (
            str(call.arguments.get("command", "")) == "create"
        )
        for path in action.paths:
            facts = self._file(path)
            # a shell that writes a file whole it never read nor changed before (``cat > probe.py <<EOF``) made it
            new = not (facts.reads or facts.edits) and path in action.written
            facts.edits += 1
            self._edited[path] = _last_component(path)
            facts.created = facts.created or created or new
            facts.last_change = change if change is not None else facts.last_change

    def _record_error(self, call: ToolCall, action: Action, item: Item | None, line: str, scripts: list[str]) -> None:
        text = item.text if item is not None else ""
        read = _kept(item, f"facts:error:{action.kind}", lambda: _error_details(text, line))
        cleared = item.meta.get(ERROR_FRAME_META) if item is not None else None  # its output was replaced since
        frame = [str(line) for line in cleared] if isinstance(cleared, list) else list(read.frame)
        source = _ran(item, action.command) if action.command else " ".join([call.name, *action.paths])
        self.errors.append(ErrorFacts(
            line=read.line,
            source=source,
            tool=call.name,
            kind=action.kind,
            signature=list(action.signature),
            paths=list(dict.fromkeys([*action.paths, *read.named])),
            detail=read.detail,
            frame=frame,
            scripts=scripts,
            reported=read.reported,
        ))
        self.errors_total += 1

    def _resolve(self, action: Action, tool: str) -> None:
        """Mark the open errors this successful action resolves: a re-run of the command, a change to a file
        involved, a read of a file of the name a failed read looked for (the agent found where it is: Claude Code's
        Read of a guessed path, then Glob, then Read of the real one), or a later call of the same tool (one that is
        not about files or commands) that worked."""
        signature = action.signature
        words = frozenset(signature)
        may_touch = bool(action.paths) and action.kind in (EDIT, READ)
        names = frozenset(_last_component(p) for p in action.paths) if may_touch else frozenset()
        # the tests the action runs (None: it runs none), worked out once and only when a failed test run is open
        running = _test_selection(action.command) if action.command and any(
            e.tests is not None and e.resolved is None for e in self.errors) else None
        for error in self.errors:
            if error.resolved is not None:
                continue
            if action.kind == OTHER and error.kind == OTHER and error.tool == tool:
                error.resolved = f"a later call of {tool} succeeded"
                continue
            if signature and error.signature and signature[0] == error.signature[0] and _alike(words, error.words):
                error.resolved = f"a later run of `{_headline(action.command or '', 100)}` succeeded"
                continue
            if action.command and running is not None and error.tests is not None and _covers(running, error.tests):
                error.resolved = f"a later test run passed: `{_headline(action.command, 100)}`"
                continue
            if not may_touch or (action.kind == READ and error.kind != READ) or names.isdisjoint(error.names):
                continue  # only an edit, or a successful re-read of what failed to read, resolves by file
            touched = [p for p in action.paths if any(_same_file(p, q) for q in error.paths)]
            if touched:
                verb = "edited" if action.kind == EDIT else "read successfully"
                error.resolved = f"{touched[0]} was {verb} afterwards"
            elif action.kind == READ and error.kind == READ:  # a read of a path that was not there: found elsewhere
                found = next(p for p in action.paths if _last_component(p) in error.names)
                error.resolved = f"the file was found and read at {found}"

    def _record_call(self, call: ToolCall, result: str, *, ok: bool) -> None:
        """A call of a tool that is not about files or commands: the call itself, the pages, what it returned."""
        line = call_line(call)
        last = self.calls[-1] if self.calls else None
        if last is not None and last["call"] == line:  # the same call again (a page polled): counted, not repeated
            last["times"] += 1
            last["ok"] = ok
        else:
            self.calls.append({"call": line, "ok": ok, "times": 1, "inputs": gives_input(call)})
        self.calls_total += 1
        for value in call.arguments.values():
            if isinstance(value, str) and _URL.fullmatch(value.strip()):
                self._visit(value.strip(), "")
        returned = _json_object(result)
        if returned is None:
            return
        url, title = returned.get("url"), returned.get("title")
        if isinstance(url, str) and _URL.fullmatch(url):
            self._visit(url, title if isinstance(title, str) else "")
        for key, value in returned.items():
            scalar = isinstance(value, (str, int)) and not isinstance(value, bool) and value != ""
            if scalar and _RECORD_KEY.search(key):
                self._record(f"{key} {value}")

    def _visit(self, url: str, title: str) -> None:
        known = self.pages.pop(url, "")  # re-inserted: dict order is recency order
        self.pages[url] = shorten(title, 120) if title else known
        while len(self.pages) > KEEP["pages"]:
            del self.pages[next(iter(self.pages))]

    def _record(self, record: str) -> None:
        if record in self.records:
            self.records.remove(record)
        self.records = [*self.records, shorten(record, 200)][-KEEP["records"]:]

    def _read_todos(self, arguments: Mapping[str, Any]) -> None:
        todos = todo_list(arguments)
        if todos is not None:
            self.todos = todos

    def _trim(self) -> None:
        """Keep the state bounded: the newest errors and commands."""
        self.errors = self.errors[-KEEP["errors"]:]
        self.commands = self.commands[-KEEP["commands"]:]

    # ------------------------------------------------------------------ derived views
    @property
    def last_error(self) -> ErrorFacts | None:
        return self.errors[-1] if self.errors else None

    @property
    def last_reported_error(self) -> ErrorFacts | None:
        """The latest error whose line the output itself reported (the last error may only have an exit status)."""
        return next((e for e in reversed(self.errors) if e.reported), None)

    def edited_files(self) -> list[tuple[str, FileFacts]]:
        """Files changed or meant to be (an edit that failed): the project's first, then those the agent made for
        itself (:attr:`FileFacts.scratch`), each most recently touched first."""
        edited = [(p, f) for p, f in reversed(self.files.items()) if f.edits or f.failed_edits]
        return sorted(edited, key=lambda pair: pair[1].scratch)

    def read_only_files(self) -> list[tuple[str, FileFacts]]:
        """Files read and never changed, most recently touched first."""
        return [(p, f) for p, f in reversed(self.files.items()) if not (f.edits or f.failed_edits)]


def _fresh(value: Any) -> Any:
    """``value`` with its containers copied two levels deep: what a state holds (lists of records, records of lists)."""
    if isinstance(value, list):
        return [_shallow(v) for v in value]
    if isinstance(value, dict):
        return {k: _shallow(v) for k, v in value.items()}
    return value


def _shallow(value: Any) -> Any:
    return list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value


def read_on(state: Mapping[str, Any], items: Sequence[Item]) -> Facts | None:
    """The facts of a span, from its summary's ``state``, with ``items`` (what follows the span) read on; None
    when the state is not ours. What a survival check needs of the whole request (errors, plan, edited files),
    without reading the span a second time: the span's reading ended with nothing pending (a summary's span ends
    on a whole round) and only the newest entries were kept, which is all a longer reading keeps of them too."""
    if state.get("schema") != STATE_SCHEMA:
        return None
    facts = Facts.from_state(state)
    facts.read(items, details=False)
    return facts


def read_ahead(items: Sequence[Item]) -> None:
    """Read what ``items`` show on their own (an output's result line, error, tally; an edit's text; the findings
    in what the assistant wrote) into each item's memo, as they arrive: a later summary or survival check then
    only works out what depends on the items around them."""
    Facts().read(items)


def _known(cls: type, values: Mapping[str, Any]) -> dict[str, Any]:
    known = cls.__dataclass_fields__  # type: ignore[attr-defined]
    return {k: v for k, v in values.items() if k in known and known[k].init}


# ---------------------------------------------------------------------- what one item shows, read once

def _kept(item: Item | None, key: str, compute: Callable[[], _T]) -> _T:
    """``compute()``, kept in ``item.memo`` under ``key``: an item never changes, so what it shows is read once."""
    if item is None:
        return compute()
    memo = item.memo
    if key not in memo:
        memo[key] = compute()
    value: _T = memo[key]
    return value


def _change(call: ToolCall, action: Action) -> str | None:
    """What an edit call changed, as "the last change to a file" shows it: the text written, else the command."""
    new_text = written_text(call)
    change = new_text if new_text is not None else action.command
    return shorten(change, TEXT_CHARS["change"]) if change is not None else None


def tally_line(text: str) -> str | None:
    """The line a test run's output states how it ended on (among its last lines), if it is a test run."""
    tail = text[-TALLY_CHARS:]
    if not _TALLY_HINT.search(tail):
        return None
    tally = next((line.strip() for line in reversed(tail.splitlines())
                  if _TALLY_HINT.search(line) and _TEST_RESULT.search(line.strip())), None)
    return shorten(tally, TEXT_CHARS["result_line"]) if tally is not None else None


def _kept_for(item: Item | None, key: str, basis: object, compute: Callable[[], _T]) -> _T:
    """:func:`_kept` for a value that depends on ``basis`` too (the call an output answers): recomputed if it differs."""
    known = _kept(item, key, lambda: (basis, compute()))
    if known[0] is not basis and known[0] != basis:
        known = (basis, compute())
        if item is not None:
            item.memo[key] = known
    return known[1]


def _ran(item: Item | None, command: str) -> str:
    """``$ command`` on one line, as a summary names where an output came from (kept on the output's item)."""
    return _kept_for(item, "facts:ran", command, lambda: f"$ {_headline(command, TEXT_CHARS['command'])}")


def _fetches_issue(item: Item, call: ToolCall, action: Action) -> bool:
    """Whether the call fetches an issue or pull request (its output is then the task as it arrived)."""

    def fetches() -> bool:
        fetched = action.command[:2_000] if action.command else " ".join(
            str(v)[:500] for v in call.arguments.values() if isinstance(v, str))
        return bool(_ISSUE_FETCH.search(fetched)) and not _STATUS_QUERY.search(fetched)

    return _kept_for(item, "facts:fetches_issue", call, fetches)


def _first_issue(kept: dict[str, str] | None, fetched: dict[str, str] | None) -> dict[str, str] | None:
    """Which fetched text is the task: the first one, unless it is a pull request's and ``fetched`` (later) is an
    issue's. A solver opens its own pull request with a placeholder ("[WIP] … details will be added") and may
    view it before the issue; the issue states the task, the placeholder does not."""
    if kept is None or fetched is None:
        return kept or fetched
    return fetched if _ISSUE_ONLY.search(fetched["source"]) and not _ISSUE_ONLY.search(kept["source"]) else kept


def _shown_error(text: str) -> tuple[str, tuple[str, ...]] | None:
    """The last error line an output shows, wherever it reports one (a traceback's exception line), and its frame."""
    shown = reported_error_lines(text)
    if not shown:
        return None
    line = _traceback_end(text, shown[-1]) if shown[-1].startswith("Traceback (") else shown[-1]
    return shorten(line, TEXT_CHARS["error_line"]), tuple(error_frame(text, line))


def file_content(action: Action | None) -> bool:
    """Whether what ``action`` returned is a file's content (a read or a search, unless the file is a log):
    an error line in it is code, not an error shown."""
    return action is not None and action.kind in (READ, SEARCH) and not any(p.endswith(_LOG_SUFFIXES) for p in action.paths)


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


def todo_list(arguments: Mapping[str, Any]) -> list[dict[str, str]] | None:
    """The todo list a todo tool's call sets (``{"text", "status"}`` each), or ``None`` when it sets none."""
    for key in _TODO_LIST_KEYS:
        entries = arguments.get(key)
        if isinstance(entries, list):
            return [_todo(entry) for entry in entries if isinstance(entry, (str, Mapping))]
    return None


def todo_line(todo: Mapping[str, str]) -> str:
    """One todo as a line: ``- [in progress] Run the tests``."""
    return f"- [{todo['status'].replace('_', ' ')}] {todo['text']}"


def _todo(entry: str | Mapping[str, Any]) -> dict[str, str]:
    if isinstance(entry, str):
        return {"text": entry, "status": "pending"}
    text = next((str(entry[k]) for k in _TODO_TEXT_KEYS if isinstance(entry.get(k), str)), str(dict(entry)))
    return {"text": text, "status": str(entry.get("status") or entry.get("state") or "pending").lower()}


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


def _alike(mine: frozenset[str], theirs: frozenset[str]) -> bool:
    """Whether two commands that start alike are the same run: they share enough of their signature words."""
    return len(mine & theirs) >= RE_RUN_SIMILARITY * len(mine | theirs)


def _last_component(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _same_file(path: str, other: str) -> bool:
    """The same file written two ways (``./a/b.py``, ``/repo/a/b.py``, ``a/b.py``)."""
    a, b = path.removeprefix("./"), other.removeprefix("./")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _headline(command: str, max_chars: int) -> str:
    """A command on one line, here-document bodies left out."""
    return shorten("; ".join(line.strip() for line in command_outline(command).splitlines() if line.strip()), max_chars)


def _what(call: ToolCall, action: Action, max_chars: int) -> str:
    """What a call did, on one line: ``$ command``, ``read path``, ``searched with grep for `x```, ``called f(...)``."""
    if action.command:
        return f"$ {_headline(action.command, max_chars)}"
    if action.kind in (READ, EDIT) and action.paths:
        return f"{'read' if action.kind == READ else 'edited'} {', '.join(action.paths[:3])}"
    if action.kind == SEARCH:
        query = next((str(call.arguments[k]) for k in _QUERY_KEYS if call.arguments.get(k)), "")
        return f"searched with {call.name}" + (f" for `{shorten(query, 100)}`" if query else "")
    if action.kind == TODO:
        return f"called {call.name} (todo list)"
    return f"called {shorten(call_line(call), max_chars)}"


def _describe(call: ToolCall, action: Action, failure: str | None, unanswered: bool, ended: str | None) -> str:
    """One line for "last actions": what the call did, and the line its result ended on (or its failure). A read
    of a file ends on whichever line the range stopped at ("→ 820" after ``nl -ba core.py | sed -n 720,820p``),
    which concludes nothing: the read is named without it."""
    what = _what(call, action, 160)
    if unanswered:
        return f"{what} → no result yet"
    if failure is not None:
        return f"{what} → failed: {shorten(failure, TEXT_CHARS['result_line'])}"
    if action.kind == READ and file_content(action):
        return what
    if (action.command or action.kind in (OTHER, SEARCH)) and ended:
        return f"{what} → {ended}"
    return what


_MARKUP = re.compile(r"^(?:</?output>|<returncode>.*</returncode>|exit(?:ed with)? code:?\s*-?\d+|```\w*"
                     r"|\(Open file: .*\)|\(Current directory: .*\)|bash-\$)$", re.IGNORECASE)
"""A line of an output's framing, not of what the command printed: a harness's wrapper and exit status, and the
state SWE-agent appends to every observation (its open file, its directory, its prompt)."""
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


def shown_error(text: str, action: Action | None) -> list[str] | None:
    """The last error an output shows, wherever it reports one (a CI log's failing step is often far from its
    end), with its failing frame: the two lines above it, then the error line; ``None`` when it shows none.
    What a read or a search returned is file content (an error line in it is code), unless the file is a log."""
    shown = None if file_content(action) else _shown_error(text)
    return None if shown is None else [*shown[1], shown[0]]


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
    (a traceback's ``File …`` line and its code line), verbatim."""
    lines = text[-16_000:].splitlines()
    at = next((i for i in range(len(lines) - 1, -1, -1) if line in lines[i]), None)
    if at is None:
        return []
    above = [ln.rstrip() for ln in lines[max(0, at - 8):at] if ln.strip() and not _MARKUP.match(ln.strip())]
    return [shorten(ln, TEXT_CHARS["error_line"]) for ln in above[-2:]]


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


def call_line(call: ToolCall) -> str:
    """A call on one line with its arguments, each value shortened: ``book(user_id='mia_li', flights=[...])``.

    Arguments past ``TEXT_CHARS["call"]`` are left out whole (``, …``), never cut twice.
    """
    shown: list[str] = []
    size = len(call.name) + 2
    for key, value in call.arguments.items():
        argument = f"{key}={_argument(value)}"
        if shown and size + len(argument) > TEXT_CHARS["call"]:
            shown.append("…")
            break
        shown.append(argument)
        size += len(argument) + 2
    return f"{call.name}({', '.join(shown)})"


def gives_input(call: ToolCall) -> bool:
    """Whether the call hands over something of substance (text typed, a query, a record to book, an id to look
    up), rather than only moving around (a click on element 12, a page state, a URL: the pages say that)."""
    return any((isinstance(v, str) and v.strip() and not _URL.fullmatch(v.strip())) or isinstance(v, (list, dict))
               for v in call.arguments.values())


def _argument(value: Any) -> str:
    text = repr(value) if isinstance(value, (str, int, float, bool)) or value is None else json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), default=str)
    return shorten(" ".join(text.split()), TEXT_CHARS["argument"])


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
