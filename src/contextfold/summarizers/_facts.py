"""The facts a structured summary is written from, read off a span of conversation in one pass.

Everything here is extraction, none of it is wording or sizing: who asked
what, which files were read and changed (with the last change), which
commands changed the system, which errors happened and whether a later step
resolved them, the latest todo list, what the assistant said last, tool-use
counts and the identifiers that keep coming up; and, for the tools that are
not about files or commands (a browser, a booking or support API), each call
with its arguments, the pages visited and the identifiers the tools returned,
which is what a browsing or support session is made of. :class:`Facts` round-trips
through a JSON-serializable ``state`` so that a later compaction, whose span
starts with this summary, carries every fact forward instead of summarizing a
summary.

Stored texts are capped (``TEXT_CHARS`` below, head and tail kept) so the state
stays bounded however long the session runs; nothing is capped to zero.
"""

from __future__ import annotations

import json
import re
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from copy import copy
from dataclasses import dataclass, field
from typing import Any

from ..actions import (
    COMMAND,
    EDIT,
    OTHER,
    READ,
    SEARCH,
    TODO,
    Action,
    call_actions,
    classify,
    command_outline,
    failure_line,
    reported_error_lines,
    written_text,
)
from ..conversation import Document, Image, Item, Summary, Text, Thinking, ToolCall, ToolResult
from ._text import shorten

STATE_SCHEMA = "contextfold.extractive/1"
"""Written into every state; a state with another schema is treated as plain summary text."""

# A state is carried from one summary into the next, so each of its facts is bounded.
TEXT_CHARS = {"task": 20_000, "user_message": 6_000, "change": 2_000, "assistant": 4_000, "earlier_summary": 8_000,
              "error_line": 1_000, "command": 300, "call": 400, "argument": 160}
"""The characters a state keeps of each kind of text (the summary shows less, within its budget)."""
KEEP = {"errors": 40, "commands": 40, "recent_actions": 6, "concepts": 200, "calls": 40, "pages": 30, "records": 40}
"""How many entries a state keeps of each list: the most recent (concepts: the most frequent)."""
RESULT_JSON_CHARS = 200_000
"""Results longer than this are not parsed for pages and identifiers (a page dump, not a record)."""
RE_RUN_SIMILARITY = 0.6
"""Two commands are "the same" run when they start alike and share this fraction of their signature words."""

_TRACEBACK_PATH = re.compile(r'File "(?P<a>[^"]+)", line \d+|^(?P<b>[\w./-]+\.\w{1,8}):\d+:', re.MULTILINE)
_EXCEPTION_LINE = re.compile(r"(E\s+)?[\w.]*(Error|Exception)\b")
_WORD = re.compile(r"[A-Za-z_][\w.]*")
_NAME = re.compile(r"#\d+|(?<!<)[\w.~-]*/[\w./~-]*\w|[A-Za-z_][\w.]*\w")
_NOT_CONCEPTS = frozenset({"e.g", "i.e", "self", "__init__", "__name__", "__main__", "os.path", "sys.path"})
CONCEPT_ARGUMENT_CHARS = 400
"""How much of each tool-call argument is searched for identifiers (the rest is the same code again)."""
_FILE_SUFFIXES = frozenset({
    "py", "pyi", "js", "ts", "tsx", "jsx", "rs", "go", "java", "c", "h", "cpp", "hpp", "md", "txt", "json", "yaml",
    "yml", "toml", "cfg", "ini", "sh", "html", "css", "rst", "lock", "v", "rb", "kt", "swift", "sql", "xml", "csv",
})
_QUERY_KEYS = ("pattern", "query", "regex", "glob", "search_term", "file_name")
_TODO_LIST_KEYS = ("todos", "plan", "items", "tasks")
_TODO_TEXT_KEYS = ("content", "step", "task", "title", "description", "text")
_URL = re.compile(r"https?://[^\s\"'<>]+")
_RECORD_KEY = re.compile(r"(?:^|_)(?:id|number|code|ref|reference|confirmation)$", re.IGNORECASE)
"""Keys of a returned record whose values identify something (``reservation_id``, ``order_number``)."""


_Settled = tuple[ToolCall, Action, "str | None", bool]
"""A settled call: the call, what it did, its failure line (None: it worked), whether it went unanswered."""


@dataclass
class FileFacts:
    """What happened to one file. ``last_change`` is the text the last edit wrote (capped), or its command."""

    reads: int = 0
    edits: int = 0
    failed_edits: int = 0
    created: bool = False
    last_change: str | None = None


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
    reported: bool = True  # the line is one the output reports as an error, not a stand-in (a bare exit status)
    resolved: str | None = None


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
    concepts: dict[str, int] = field(default_factory=dict)
    last_assistant: str | None = None
    user_spoke_last: bool = False  # a user message came after the last assistant text
    recent_actions: list[str] = field(default_factory=list)
    earlier_summaries: list[str] = field(default_factory=list)  # summaries that carried no state of ours
    items: int = 0
    # the tools that are not about files or commands (browser, booking, support APIs)
    calls: list[dict[str, Any]] = field(default_factory=list)  # {"call", "ok", "times", "inputs"}, oldest first
    calls_total: int = 0
    pages: dict[str, str] = field(default_factory=dict)  # url -> its title ("" when unknown), least recent first
    records: list[str] = field(default_factory=list)  # "key value" identifiers the tools returned, oldest first

    # ------------------------------------------------------------------ state round trip
    def to_state(self) -> dict[str, Any]:
        """The facts as JSON data (fresh containers: the state outlives this object unchanged)."""
        state: dict[str, Any] = {name: copy(value) for name, value in vars(self).items()}
        state["files"] = {path: dict(vars(f)) for path, f in self.files.items()}
        state["errors"] = [{**vars(e), "signature": list(e.signature), "paths": list(e.paths)} for e in self.errors]
        state["tools"] = {name: list(counts) for name, counts in self.tools.items()}
        state["todos"] = [dict(t) for t in self.todos] if self.todos is not None else None
        state["calls"] = [dict(c) for c in self.calls]
        state["schema"] = STATE_SCHEMA
        return state

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> Facts:
        """The facts a state holds; keys this version does not know are ignored, missing ones take defaults."""
        values = _known(cls, state)
        values["files"] = {path: FileFacts(**_known(FileFacts, f)) for path, f in state.get("files", {}).items()}
        values["errors"] = [ErrorFacts(**_known(ErrorFacts, e)) for e in state.get("errors", [])]
        return cls(**values)

    def absorb(self, earlier: Facts) -> None:
        """Merge the facts of a summary found in the span: they come after what this holds so far."""
        self.user_messages += earlier.user_messages
        for path, theirs in earlier.files.items():
            mine = self.files.setdefault(path, FileFacts())
            mine.reads += theirs.reads
            mine.edits += theirs.edits
            mine.failed_edits += theirs.failed_edits
            mine.created = mine.created or theirs.created
            mine.last_change = theirs.last_change or mine.last_change
        self.errors = (self.errors + earlier.errors)[-KEEP["errors"]:]
        self.errors_total += earlier.errors_total
        self.commands = (self.commands + earlier.commands)[-KEEP["commands"]:]
        self.commands_total += earlier.commands_total
        self.todos = earlier.todos if earlier.todos is not None else self.todos
        for name, (calls, failures) in earlier.tools.items():
            counts = self.tools.setdefault(name, [0, 0])
            counts[0] += calls
            counts[1] += failures
        for name, count in earlier.concepts.items():
            self.concepts[name] = self.concepts.get(name, 0) + count
        if earlier.last_assistant is not None:
            self.last_assistant = earlier.last_assistant
            self.user_spoke_last = earlier.user_spoke_last
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
    def read(self, items: Sequence[Item], *, concepts: bool = True) -> None:
        """Add what ``items`` show, in order; tool calls are settled when their result arrives.

        ``concepts=False`` skips counting the identifiers used (the costliest
        part), for a reader that needs only the errors, edits and plan.
        """
        calls: dict[str, tuple[ToolCall, Action]] = {}
        prose: list[str] = []  # what user and assistant wrote, searched for concepts at the end
        settled: deque[_Settled] = deque(maxlen=KEEP["recent_actions"])  # described at the end: only these are kept
        for item in items:
            summaries = [b for b in item.blocks if isinstance(b, Summary)]
            if summaries:
                for block in summaries:
                    self._read_summary(block)
                continue
            self.items += 1
            if item.role == "user":
                self._read_user(item, prose)
            elif item.role == "assistant":
                self._read_assistant(item, calls, prose)
            elif item.tool_result is not None:
                settled.append(self._read_result(item.tool_result, calls))
        for call, action in calls.values():  # calls whose result is outside the span
            settled.append(self._settle(call, action, None))
        self.recent_actions = [*self.recent_actions, *(_describe(*s) for s in settled)][-KEEP["recent_actions"]:]
        if concepts:
            self._count_concepts(prose)
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

    def _read_user(self, item: Item, prose: list[str]) -> None:
        text = item.text.replace("\r\n", "\n").strip()
        media = sum(isinstance(b, (Image, Document)) for b in item.blocks)
        if media:
            text = f"{text}\n[{media} attachment{'s' if media > 1 else ''}: images or documents]".strip()
        if not text:
            return
        self.user_messages.append(shorten(text, TEXT_CHARS["user_message"] if self.user_messages else TEXT_CHARS["task"]))
        self.user_spoke_last = True
        prose.append(text)

    def _read_assistant(self, item: Item, calls: dict[str, tuple[ToolCall, Action]], prose: list[str]) -> None:
        said = "\n".join(b.text for b in item.blocks if isinstance(b, Text)).strip()
        if said:
            self.last_assistant = shorten(said, TEXT_CHARS["assistant"])
            self.user_spoke_last = False
        prose.append(said)
        prose.extend(b.thinking for b in item.blocks if isinstance(b, Thinking))
        prose.extend(v[:CONCEPT_ARGUMENT_CHARS] for c in item.tool_calls for v in c.arguments.values() if isinstance(v, str))
        for call, action in zip(item.tool_calls, call_actions(item)):
            self.tools.setdefault(call.name, [0, 0])[0] += 1
            if action.kind == TODO:
                self._read_todos(call.arguments)
            calls[call.id] = (call, action)

    def _read_result(self, result: ToolResult, calls: dict[str, tuple[ToolCall, Action]]) -> _Settled:
        known = calls.pop(result.call_id, None)
        if known is None:  # its call is outside the span (or unknown): the linked name and arguments stand in
            call = ToolCall(result.call_id, result.tool_name or "tool", result.arguments or {})
            known = (call, classify(call))
            self.tools.setdefault(call.name, [0, 0])[0] += 1
        return self._settle(*known, result)

    # ------------------------------------------------------------------ one settled call
    def _settle(self, call: ToolCall, action: Action, result: ToolResult | None) -> _Settled:
        text = result.text if result is not None else ""
        line = failure_line(text, result.is_error, action.kind) if result is not None else None
        if line is not None:
            self.tools.setdefault(call.name, [0, 0])[1] += 1
            self._record_error(call, action, text, line)
        else:
            self._resolve(action, call.name)
        if action.kind == OTHER:
            self._record_call(call, text if line is None else "", ok=line is None)
        if action.kind == EDIT and (line is None or action.command is not None):  # a failed shell line still wrote
            self._record_edit(call, action)
        elif action.kind == EDIT:
            for path in action.paths:
                self._file(path).failed_edits += 1
        elif action.kind == READ:
            for path in action.paths:
                self._file(path).reads += 1
        if action.changes_system and action.kind != EDIT and action.command:
            self.commands.append({"command": _headline(action.command, TEXT_CHARS["command"]), "ok": line is None})
            self.commands_total += 1
        return call, action, line, result is None

    def _file(self, path: str) -> FileFacts:
        facts = self.files.pop(path, None) or FileFacts()  # re-inserted: dict order is recency order
        self.files[path] = facts
        return facts

    def _record_edit(self, call: ToolCall, action: Action) -> None:
        new_text = written_text(call)
        change = new_text if new_text is not None else action.command
        created = call.name.lower() in ("write", "create", "write_file", "create_file") or (
            str(call.arguments.get("command", "")) == "create"
        )
        for path in action.paths:
            facts = self._file(path)
            facts.edits += 1
            facts.created = facts.created or created
            facts.last_change = shorten(change, TEXT_CHARS["change"]) if change is not None else facts.last_change

    def _record_error(self, call: ToolCall, action: Action, text: str, line: str) -> None:
        source = _headline(action.command, TEXT_CHARS["command"]) if action.command else " ".join([call.name, *action.paths])
        named = [m.group("a") or m.group("b") for m in _TRACEBACK_PATH.finditer(text[-8_000:])]
        reported = reported_error_lines(text)
        exceptions = [e for e in reported if _EXCEPTION_LINE.match(e)]
        detail = exceptions[-1] if exceptions and exceptions[-1] != line else None
        self.errors.append(ErrorFacts(
            line=shorten(line, TEXT_CHARS["error_line"]),
            source=source,
            tool=call.name,
            kind=action.kind,
            signature=list(action.signature),
            paths=list(dict.fromkeys([*action.paths, *named[-5:]])),
            detail=shorten(detail, TEXT_CHARS["error_line"]) if detail else None,
            reported=line in reported,
        ))
        self.errors_total += 1

    def _resolve(self, action: Action, tool: str) -> None:
        """Mark the open errors this successful action resolves: a re-run of the command, a change to a file
        involved, or a later call of the same tool (one that is not about files or commands) that worked."""
        signature = action.signature
        may_touch = bool(action.paths) and action.kind in (EDIT, READ)
        for error in self.errors:
            if error.resolved is not None:
                continue
            if action.kind == OTHER and error.kind == OTHER and error.tool == tool:
                error.resolved = f"a later call of {tool} succeeded"
                continue
            if signature and _same_run(signature, error.signature):
                error.resolved = f"a later run of `{_headline(action.command or '', 100)}` succeeded"
                continue
            if not may_touch or (action.kind == READ and error.kind != READ):
                continue  # only an edit, or a successful re-read of what failed to read, resolves by file
            touched = [p for p in action.paths if any(_same_file(p, q) for q in error.paths)]
            if touched:
                verb = "edited" if action.kind == EDIT else "read successfully"
                error.resolved = f"{touched[0]} was {verb} afterwards"

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
        for key in _TODO_LIST_KEYS:
            entries = arguments.get(key)
            if isinstance(entries, list):
                self.todos = [_todo(entry) for entry in entries if isinstance(entry, (str, Mapping))]
                return

    def _count_concepts(self, texts: list[str]) -> None:
        """Count identifiers in all of ``texts`` at once: one scan, then a check per distinct word."""
        for word, count in Counter(_WORD.findall("\n".join(texts))).items():
            word = word.rstrip(".")
            if _is_identifier(word):
                self.concepts[word] = self.concepts.get(word, 0) + count

    def _trim(self) -> None:
        """Keep the state bounded: the newest errors and commands, the most frequent concepts."""
        self.errors = self.errors[-KEEP["errors"]:]
        self.commands = self.commands[-KEEP["commands"]:]
        if len(self.concepts) > KEEP["concepts"]:
            ranked = sorted(self.concepts.items(), key=lambda kv: -kv[1])[:KEEP["concepts"]]
            self.concepts = dict(ranked)

    # ------------------------------------------------------------------ derived views
    @property
    def last_error(self) -> ErrorFacts | None:
        return self.errors[-1] if self.errors else None

    @property
    def last_reported_error(self) -> ErrorFacts | None:
        """The latest error whose line the output itself reported (the last error may only have an exit status)."""
        return next((e for e in reversed(self.errors) if e.reported), None)

    def edited_files(self) -> list[tuple[str, FileFacts]]:
        """Files changed or meant to be (an edit that failed), most recently touched first."""
        return [(p, f) for p, f in reversed(self.files.items()) if f.edits or f.failed_edits]

    def read_only_files(self) -> list[tuple[str, FileFacts]]:
        """Files read and never changed, most recently touched first."""
        return [(p, f) for p, f in reversed(self.files.items()) if not (f.edits or f.failed_edits)]

    def top_concepts(self) -> list[tuple[str, int]]:
        """Identifiers mentioned at least twice, most frequent first (first mention breaks ties)."""
        return sorted(((n, c) for n, c in self.concepts.items() if c >= 2), key=lambda kv: -kv[1])


def _known(cls: type, values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k in cls.__dataclass_fields__}  # type: ignore[attr-defined]


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
    """A name worth listing as a concept: snake_case, CONSTANT_CASE, CamelCase or a dotted module path."""
    if len(word) < 4 or word in _NOT_CONCEPTS:
        return False
    if "." in word:
        parts = word.split(".")
        return all(parts) and len(parts[0]) > 1 and parts[-1] not in _FILE_SUFFIXES and not parts[-1].isdigit()
    if "_" in word.strip("_"):
        return True
    return word[0].isupper() and not word.isupper() and any(c.isupper() for c in word[1:])


def _same_run(signature: Sequence[str], other: Sequence[str]) -> bool:
    if not other or signature[0] != other[0]:
        return False
    mine, theirs = set(signature), set(other)
    return len(mine & theirs) >= RE_RUN_SIMILARITY * len(mine | theirs)


def _same_file(path: str, other: str) -> bool:
    """The same file written two ways (``./a/b.py``, ``/repo/a/b.py``, ``a/b.py``)."""
    a, b = path.removeprefix("./"), other.removeprefix("./")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _headline(command: str, max_chars: int) -> str:
    """A command on one line, here-document bodies left out."""
    return shorten("; ".join(line.strip() for line in command_outline(command).splitlines() if line.strip()), max_chars)


def _describe(call: ToolCall, action: Action, failure: str | None, unanswered: bool) -> str:
    """One line for "recent actions": what the call did and how it ended."""
    if action.command:
        what = f"ran `{_headline(action.command, 120)}`"
    elif action.kind in (READ, EDIT) and action.paths:
        what = f"{'read' if action.kind == READ else 'edited'} {', '.join(action.paths[:3])}"
    elif action.kind == SEARCH:
        query = next((str(call.arguments[k]) for k in _QUERY_KEYS if call.arguments.get(k)), "")
        what = f"searched with {call.name}" + (f" for `{shorten(query, 100)}`" if query else "")
    elif action.kind == TODO:
        what = f"called {call.name} (todo list)"
    else:
        what = f"called {shorten(call_line(call), 160)}"
    if unanswered:
        return f"{what}: no result yet"
    if failure is not None:
        return f"{what}: failed ({shorten(failure, 160)})"
    return what if action.kind != COMMAND else f"{what}: ok"


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
