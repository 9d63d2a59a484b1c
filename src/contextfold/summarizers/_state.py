"""The facts a structured summary reports, as a state: what is kept of each list, the JSON round trip that lets a
later compaction read on from a summary instead of summarizing it, and how an earlier summary's facts join those
read so far. The reading that fills it is :mod:`._facts`."""

from __future__ import annotations

from collections.abc import Mapping
from copy import copy
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from ..reading import message_says_something
from ._calls import _first_issue, _last_component
from ._records import ErrorFacts, FileFacts, _fresh, _known
from ._text import shorten

STATE_SCHEMA = "contextfold.extractive/1"
"""Written into every state; a state with another schema is treated as plain summary text."""
KEEP = {"errors": 40, "commands": 40, "recent_actions": 8, "calls": 40, "pages": 30, "records": 40, "findings": 30,
        "reports": 3}
"""How many entries a state keeps of each list: the most recent."""


_State = TypeVar("_State", bound="FactsState")


@dataclass
class FactsState:
    """What a structured summary reports, as kept between readings: each list capped to its newest entries
    (:data:`KEEP`), round-tripping through a JSON state, and joined with an earlier summary's facts."""

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
    reports: list[dict[str, Any]] = field(default_factory=list)  # {"source", "text", "asked_since"}: the reports
    # delegated agents returned (a ``Task`` tool's output), their substance, oldest first: the work product the agent
    # asked for; ``asked_since``: a message of the person's that says something came after it (the work moved on)
    harness_messages: int = 0  # user messages the harness wrote (format nags, limits): not the user's words
    shown_error: dict[str, Any] | None = None  # {"source", "frame", "line"}: an error an output showed without its call
    # failing (a CI log read, a test run piped through tail), newer than the last failed call
    printed_error: dict[str, Any] | None = None  # {"source", "frame", "line"}: the last error message any output
    # printed (failed or not, newer or older than the last failure): the line and frame a tool said last went wrong
    user_spoke_last: bool = False  # a user message came after the last assistant text
    acted_since_said: bool = False  # the assistant made a tool call with or after its last text: what that text
    # announced ("Let me check…") is done, not next
    said_since_error: bool = False  # the assistant wrote to the user after the last failed call: it has read that
    # failure, and when those were its last words (no call since) they, not the failure, say where the work stands
    asked_since_error: bool = False  # a message of the person's came after the last failed call: their request,
    # not that failure, is what the work turned to
    request_open: bool = False  # a message of the person's that says something came after the todo list was last
    # written and after the assistant last wrote to them: that request, not the list, is what the agent is working on
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
    # the items kept verbatim after the summary show the agent acting or speaking again: what it said last here and
    # the user's message before that are behind it (no state: a later reading reads those items itself)
    went_on: bool = field(default=False, init=False, repr=False, compare=False)
    # the items kept verbatim open with the person's reply that says nothing alone ("yes", "C"): what it agrees to
    # or chooses is what the agent said last here (no state, as above)
    answered_alone: bool = field(default=False, init=False, repr=False, compare=False)

    # ------------------------------------------------------------------ state round trip
    def to_state(self) -> dict[str, Any]:
        """The facts as JSON data (fresh containers: the state outlives this object unchanged)."""
        state: dict[str, Any] = {f.name: copy(getattr(self, f.name)) for f in fields(self) if f.init}
        state["files"] = {path: dict(vars(f)) for path, f in self.files.items()}
        state["errors"] = [e.to_state() for e in self.errors]
        state["last_test"] = dict(self.last_test) if self.last_test is not None else None
        state["last_run"] = dict(self.last_run) if self.last_run is not None else None
        state["fetched_task"] = dict(self.fetched_task) if self.fetched_task is not None else None
        state["reports"] = [dict(r) for r in self.reports]
        state["shown_error"] = {**self.shown_error, "frame": list(self.shown_error["frame"])} if self.shown_error else None
        state["printed_error"] = {**self.printed_error, "frame": list(self.printed_error["frame"])} if self.printed_error else None
        state["tools"] = {name: list(counts) for name, counts in self.tools.items()}
        state["todos"] = [dict(t) for t in self.todos] if self.todos is not None else None
        state["calls"] = [dict(c) for c in self.calls]
        state["manifest"] = {**self.manifest, "lines": list(self.manifest["lines"])} if self.manifest else None
        state["schema"] = STATE_SCHEMA
        return state

    @classmethod
    def from_state(cls: type[_State], state: Mapping[str, Any]) -> _State:
        """The facts a state holds; keys this version does not know are ignored, missing ones take defaults.

        Its containers are copied: the state lives on in its summary, and reading on appends to lists and
        counts in records (a call seen again, a tool's uses) that must not change it."""
        values = {key: _fresh(value) for key, value in _known(cls, state).items()}
        values["files"] = {path: FileFacts(**_known(FileFacts, f)) for path, f in state.get("files", {}).items()}
        values["errors"] = [ErrorFacts(**_known(ErrorFacts, e)) for e in state.get("errors", [])]
        facts = cls(**values)
        facts._edited = {path: _last_component(path) for path, f in facts.files.items() if f.edits}
        return facts

    def absorb(self, earlier: FactsState) -> None:
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
            mine.writes = theirs.writes or mine.writes
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
        asked = any(map(message_says_something, earlier.user_messages))
        ours = [{**report, "asked_since": True} for report in self.reports] if asked else self.reports
        self.reports = (ours + earlier.reports)[-KEEP["reports"]:]
        self.manifest = self.manifest or earlier.manifest
        self.harness_messages += earlier.harness_messages
        self.shown_error = earlier.shown_error or self.shown_error
        self.printed_error = earlier.printed_error or self.printed_error
        if earlier.last_assistant is not None:
            self.last_assistant = earlier.last_assistant
            self.user_spoke_last = earlier.user_spoke_last
            self.acted_since_said = earlier.acted_since_said
            self.said_since_error = earlier.said_since_error
        elif earlier.user_messages:
            self.user_spoke_last = True
        if earlier.errors:
            self.asked_since_error = earlier.asked_since_error
        elif earlier.user_messages:
            self.asked_since_error = True
        if earlier.todos is not None or earlier.last_assistant is not None:
            self.request_open = earlier.request_open
        else:
            self.request_open = self.request_open or any(map(message_says_something, earlier.user_messages))
        self.recent_actions = (self.recent_actions + earlier.recent_actions)[-KEEP["recent_actions"]:]
        self.earlier_summaries += earlier.earlier_summaries
        self.items += earlier.items
        self.calls = (self.calls + earlier.calls)[-KEEP["calls"]:]
        self.calls_total += earlier.calls_total
        for url, title in earlier.pages.items():
            self._visit(url, title)
        for record in earlier.records:
            self._record(record)

    def _visit(self, url: str, title: str) -> None:
        known = self.pages.pop(url, "")  # re-inserted: dict order is recency order
        self.pages[url] = shorten(title, 120) if title else known
        while len(self.pages) > KEEP["pages"]:
            del self.pages[next(iter(self.pages))]

    def _record(self, record: str) -> None:
        if record in self.records:
            self.records.remove(record)
        self.records = [*self.records, shorten(record, 200)][-KEEP["records"]:]
