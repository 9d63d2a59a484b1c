"""The facts a structured summary is written from, read off a span of conversation in one pass.

Everything here is extraction, none of it is wording or sizing: who asked
what, which files were read and changed (with the last change), which
commands changed the system, which errors happened (each with its failing
frame, verbatim) and whether a later step resolved them, the last test run
and its result line, the latest todo list, what the assistant said last and
the lines in which it stated a finding or a decision, its last actions with
their result lines, an issue text it fetched with a tool, the reports of the agents it delegated to (their
substance: headings, points, paths), a harness's own continuation summary (as an earlier summary), tool-use counts;
and, for the tools that are not about files or commands (a browser, a booking
or support API), each call with its arguments, the pages visited and the
identifiers the tools returned. :class:`Facts` round-trips through a
JSON-serializable ``state`` so that a later compaction, whose span starts with
this summary, carries every fact forward instead of summarizing a summary;
stored texts are capped (``TEXT_CHARS``) so the state stays bounded.

What one item shows on its own is read once and kept on the item
(:mod:`._outputs`, :mod:`._calls`, :mod:`._said`); only what depends on what
came before (which errors a later step resolved, which scripts a command ran)
is worked out here on each read.
"""

from __future__ import annotations

import operator
import re
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from ..actions import (
    EDIT,
    OTHER,
    READ,
    TODO,
    Action,
    applied_paths,
    call_actions,
    classify,
    echoed,
    item_failure_line,
    python_writes,
    written_text,
)
from ..conversation import Item, Summary, Thinking, ToolCall, ToolResult
from ..reading import (agent_words, asks_something, declined, is_stand_in_reply, message_says_something, reading_of, reasoning_in_calls,
                       without_own_lines,
                       text_call, text_result)
from ..readings import Key
from ._calls import (
    _URL,
    _change,
    _describe,
    _fetches_issue,
    _first_issue,
    _last_component,
    _ran,
    _run_by,
    _what,
    call_line,
    gives_input,
    runs_checks,
    todo_list,
)
from ._closing import close_errors, retire_errors
from ._outputs import (
    MANIFESTS,
    TEXT_CHARS,
    _error_details,
    _json_object,
    _ErrorRead,
    _kept,
    _kept_by,
    _shown_error,
    exception_line,
    file_content,
    issue_text,
    manifest_head,
    printed_error,
    prints_error,
    quoted_printed_error,
    result_line,
    tally_line,
)
from ._records import ErrorFacts, FileFacts
from ._state import KEEP, STATE_SCHEMA, FactsState
from ._reports import continuation_substance, delegates, is_continuation, report_substance
from ._said import finding_lines
from ._text import clip, shorten, shorten_lines, shorten_message

FINDING_SOURCE_CHARS = 80
"""The characters of the call a finding follows (the output it was read from) shown with it."""
QUIET_OUTPUTS = 20
"""Outputs since the last failure searched (newest first) for an error they showed without failing."""
_RECORD_KEY = re.compile(r"(?:^|_)(?:id|number|code|ref|reference|confirmation)$", re.IGNORECASE)
"""Keys of a returned record whose values identify something (``reservation_id``, ``order_number``)."""
TALLY: Key[str | None] = Key("tally")
"""The tally a test run's output ends on, read once per output item."""
_RESULT_LINE: Key[str | None] = Key("result_line")
_FINDINGS: Key[list[str]] = Key("findings")
_SHOWN_ERROR: Key[tuple[str, tuple[str, ...]] | None] = Key("shown_error")
_PRINTED_ERROR: Key[tuple[str, tuple[str, ...]] | None] = Key("printed_error")
_REPORT: Key[str] = Key("report")
"""The substance of a delegated agent's report, read once per output item."""
_APPLIED: Key[tuple[str, ...]] = Key("applied")
"""The files the diff an edit's output shows names, read once per output item (an edit call that names none)."""
_CHANGES: Key[dict[str, str | None]] = Key("changes")
"""What each edit call of an assistant item changed, by call id."""
_ERRORS: Key[dict[str, _ErrorRead]] = Key("errors")
"""What an output's error reads as, by the kind of action that failed."""
_Pending = tuple[ToolCall, Action, "Item | None"]
"""A call waiting for its result: the call, what it does, and the item that made it (None: not in the span)."""
_Settled = tuple[ToolCall, Action, "str | None", bool, "str | None"]
"""A settled call: the call, what it did, its failure line (None: it worked), whether it went unanswered,
and the line its output ended on (what a reader of the output would quote)."""


_FAILED_TALLY = re.compile(r"\b[1-9]\d* (?:failed|errors?)\b|^FAILED\b")
"""A test tally that reports failures ("1 failed, 42 warnings", "FAILED (errors=2)")."""


def _settled_by(errors: list[ErrorFacts], item: Item | None) -> list[ErrorFacts]:
    """The ``errors`` a call that worked, answered by ``item``, may settle: not the failed test runs when its output
    ends on a tally that reports failures, whatever its exit status (a script that runs the tests in-process and
    exits 0 passed nothing); an error of another kind (a script's SyntaxError) it may still settle."""
    tally = _kept(item, TALLY, lambda: tally_line(item.text)) if item is not None else None
    if tally is None or not _FAILED_TALLY.search(tally):
        return errors
    return [e for e in errors if e.tests is None and not _FAILED_TALLY.search(e.line)]


def linked_call(result: ToolResult) -> ToolCall:
    """The call a result answers, as the result's own link names it (its call is not among the items read)."""
    return ToolCall(result.call_id, result.tool_name or "tool", result.arguments or {})


@dataclass
class Facts(FactsState):
    """Everything a structured summary reports, accumulated item by item (see the module docstring); what is kept
    of it, and how it round-trips through a state and joins an earlier summary's, is :class:`FactsState`."""

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
        ran: ToolCall | None = None  # the command a text-mode reply ran, until the output answering it
        for item in items:
            summaries = [b for b in item.blocks if isinstance(b, Summary)]
            if summaries:
                for block in summaries:
                    self._read_summary(block)
                continue
            self.items += 1
            answered = text_result(item, ran) if ran is not None and item.role == "user" else None
            if ran is not None and answered is None:  # a format error, a limit: the command never ran
                calls.pop(ran.id, None)
            ran = None
            if answered is not None:  # a text-mode agent's output, sent as a user message: read as its call's result
                item = answered
            elif item.role == "user":
                self._read_user(item)
            elif item.role == "assistant" and not is_stand_in_reply(item):  # an API error is no word of the agent
                spoken.append((item, self._read_assistant(item, calls), after))
                ran = self._read_text_call(item, calls)
            if item.tool_result is not None:
                whole = item.provenance.compacted is None  # a cleared output's placeholder is no output to quote
                settled.append(self._read_result(item, calls, details and whole))
                call, action, failure = settled[-1][:3]
                if details:
                    self._read_printed_error(call, action, item, whole)
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
        if details:
            self._read_findings(spoken)
        for call, action, item in reversed(quiet if details else ()):
            if self._read_shown_error(call, action, item):
                break
        self.recent_actions = [*self.recent_actions, *(_describe(*s) for s in settled)][-KEEP["recent_actions"]:]
        self._trim()

    def _read_findings(self, spoken: Iterable[tuple[Item, str, tuple[ToolCall, Action] | None]]) -> None:
        """The sentences of the agent's that state a finding, each with the call whose output it had just read."""
        for item, text, source in spoken:
            lines = _kept(item, _FINDINGS, partial(finding_lines, text))
            where = f" (after `{clip(_what(*source, TEXT_CHARS['command']), FINDING_SOURCE_CHARS)}`)" if source and lines else ""
            found = [line + where for line in lines]
            self.findings = (self.findings + [line for line in found if line not in self.findings])[-KEEP["findings"]:]

    def _read_summary(self, block: Summary) -> None:
        """Merge a summary's state; a summary without one of ours (or a damaged one) is kept as text."""
        state = block.extra.get("state")
        if isinstance(state, Mapping) and state.get("schema") == STATE_SCHEMA:
            try:
                self.absorb(Facts.from_state(state))
                return
            except (TypeError, ValueError, AttributeError):
                pass
        # what its summarizer wrote: not the preamble nor the pointer to the history (ours, about that request)
        self.earlier_summaries.append(shorten(without_own_lines(block.body).strip(), TEXT_CHARS["earlier_summary"]))
        self.items += block.covers

    def _read_user(self, item: Item) -> None:
        """The person's words (never a harness line, an observation or a demonstration: see
        :mod:`contextfold.reading`), the first one being the task."""
        if is_continuation(item):  # the harness's own summary of what came before: the only record of it
            self.earlier_summaries.append(shorten(continuation_substance(item.text), TEXT_CHARS["earlier_summary"]))
            return
        reading = reading_of(item)
        if not reading.person:
            self.harness_messages += 1
            return
        self._read_words(reading.words)

    def _read_words(self, text: str) -> None:
        """A message of the person's, the first one that says something being the task (those before it say nothing
        yet: ``./mcp``, "hi")."""
        asked = any(map(asks_something, self.user_messages))  # stops at the first that does: at most a few
        self.user_messages.append(shorten_message(text, TEXT_CHARS["user_message" if asked else "task"]))
        self.user_spoke_last = True
        self.asked_since_error = True
        self.request_open = self.request_open or message_says_something(text)
        if self.reports and message_says_something(text):
            self.reports = [{**report, "asked_since": True} for report in self.reports]

    def _read_assistant(self, item: Item, calls: dict[str, _Pending]) -> str:
        """Read an assistant turn; returns what it wrote (reasoning, then text), to be searched for findings."""
        said = (agent_words(item).strip() or reasoning_in_calls(item)).strip()  # a turn without text reasons in its calls
        if said:
            self.last_assistant = shorten(said, TEXT_CHARS["assistant"])
            self.acted_since_said = False
            self.said_since_error = True
            self.request_open = False
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

    def _read_text_call(self, item: Item, calls: dict[str, _Pending]) -> ToolCall | None:
        """The command a text-mode reply runs (see :mod:`contextfold.reading.text_mode`), pending like a call."""
        call = text_call(item)
        if call is not None:  # the command its words announced runs with them: what they said is done, not ahead
            self.acted_since_said = True
            self.tools.setdefault(call.name, [0, 0])[0] += 1
            calls[call.id] = (call, classify(call), item)
        return call

    def close_after(self, items: Sequence[Item]) -> None:
        """Settle what ``items``, sent verbatim after the summary, show done: an error the kept tail shows fixed (the
        same ``git checkout`` run again and working) is no open error above that tail; a todo list the tail writes
        again is the latest state of the plan (an item it marks completed is no task still to start); and once the
        agent acts or speaks in the tail (:attr:`went_on`), what it said last in the span was followed by more work
        and the user's message before it is answered (neither is a step still ahead). Only settles: what the tail
        shows is the agent's to read there, not the summary's to repeat."""
        if items and items[0].role == "user":
            reading = reading_of(items[0])
            self.answered_alone = reading.person and not message_says_something(reading.words)
        for item in items:
            if item.role == "assistant" and not is_stand_in_reply(item):
                for call, action in zip(item.tool_calls, call_actions(item)):
                    if action.kind == TODO and (todos := todo_list(call.arguments)) is not None:
                        self.todos = todos
                self.went_on = self.went_on or bool(item.tool_calls or agent_words(item).strip()
                                                    or reasoning_in_calls(item))
            result = item.tool_result
            if result is None or all(error.resolved is not None for error in self.errors):
                continue
            call = linked_call(result)
            action = classify(call)
            if item_failure_line(item, action.kind) is None:
                close_errors(_settled_by(self.errors, item), action, call.name, result.text)

    def _read_result(self, item: Item, calls: dict[str, _Pending], details: bool = True) -> _Settled:
        result = item.tool_result
        assert result is not None
        known = calls.pop(result.call_id, None)
        if known is None:  # its call is outside the span (or unknown): the linked name and arguments stand in
            call = linked_call(result)
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
        refused = declined(text) if result is not None and result.is_error else None
        if refused is not None:  # the person said no: the call did nothing, and the reason they gave is a request
            if refused:
                self._read_words(refused)
            return call, action, "declined by the user" + (f": {refused}" if refused else ""), False, None
        line = item_failure_line(item, action.kind) if item is not None else None
        if action.kind == EDIT and not action.paths and result is not None:  # the file is named by the diff it shows
            action = replace(action, paths=_kept(item, _APPLIED, lambda: applied_paths(text)))
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
        # the agent's scripts the command runs (``git add fix.py`` names one and runs none); after the edit: it may
        # write them
        scripts = _run_by(action.command, self._scripts_in(action.command)) if action.command else []
        if line is not None:
            self.tools.setdefault(call.name, [0, 0])[1] += 1
            self._record_error(call, action, item, line, scripts)
            self.shown_error = None
        else:
            close_errors(_settled_by(self.errors, item), action, call.name, text)
        if scripts:
            retire_errors(self.errors, scripts)
            for path in scripts:
                self.files[path].ran = True
            if line is None and action.command:  # the files a patch script it wrote changes, changed by this run
                self._record_written_by(scripts, _ran(item, action.command), action.paths)
        if details and item is not None and (action.command or action.kind == OTHER):
            self._read_output(call, action, item, line)
        if action.kind == OTHER:
            self._record_call(call, text if line is None else "", ok=line is None)
        if action.changes_system and action.kind != EDIT and action.command:
            self.commands.append({"command": _ran(item, action.command)[2:], "ok": line is None})
            self.commands_total += 1
        ended = _kept(item, _RESULT_LINE, lambda: result_line(text)) if item is not None else None
        return call, action, line, result is None, ended

    def _read_output(self, call: ToolCall, action: Action, item: Item, failure: str | None) -> None:
        """What an output of a command (or of another tool) says beyond success: a test tally (or for a build,
        check or test command that printed none, the line it ended on), a delegated agent's report, an issue's text."""
        text = item.text
        ok = failure is None
        tally = _kept(item, TALLY, lambda: tally_line(text))
        tally = None if tally is not None and echoed(tally, call.arguments) else tally  # the input given back
        source = _ran(item, action.command) if action.command else shorten(call_line(call), 200)
        if tally is not None:
            self.last_test = {"command": source, "line": tally}
            self.last_run = None
        elif action.command and runs_checks(action.command):
            ended = exception_line(text, failure) if failure else _kept(item, _RESULT_LINE, lambda: result_line(text))
            self.last_run = {"command": source, "line": shorten(ended or "(no output)", TEXT_CHARS["result_line"])}
        if ok and action.kind == OTHER and delegates(call) and text.strip():
            report = _kept(item, _REPORT, lambda: report_substance(text, TEXT_CHARS["report"]))
            fresh = {"source": shorten(call_line(call), 200), "text": report, "asked_since": False}
            self.reports = [*self.reports, fresh][-KEEP["reports"]:]
        if ok and _fetches_issue(item, call, action) and text.strip():
            fetched = {"source": source, "text": shorten_lines(issue_text(text.strip()), TEXT_CHARS["fetched_task"])}
            self.fetched_task = _first_issue(self.fetched_task, fetched)

    def _read_cleared_fetch(self, call: ToolCall, action: Action, item: Item) -> None:
        """An issue the agent fetched whose output a stage has cleared since: the lines the placeholder still shows
        (below its first line, the note) stand for it, so the task as it arrived is not lost to clearing."""
        if not _fetches_issue(item, call, action):
            return
        kept = item.text.partition("\n")[2].strip().removesuffix("]").rstrip()  # the placeholder's closing bracket
        if kept:
            source = (_ran(item, action.command) if action.command else shorten(call_line(call), 200)) + \
                " (output cleared since; the lines it kept)"
            self.fetched_task = _first_issue(self.fetched_task, {"source": source,
                                                                 "text": shorten_lines(kept, TEXT_CHARS["fetched_task"])})

    def _read_cleared_tally(self, call: ToolCall, action: Action, item: Item) -> None:
        """A test run whose output a stage has cleared since: the tally its placeholder kept is still its result."""
        tally = item.provenance.tally
        if tally is not None:
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
        shown = _kept(item, _SHOWN_ERROR, lambda: _shown_error(text))
        if shown is None or echoed(shown[0], call.arguments):  # the call's input given back (an approved plan)
            return False
        source = _ran(item, action.command) if action.command else " ".join([call.name, *action.paths])
        self.shown_error = {"source": source, "frame": list(shown[1]), "line": shown[0]}
        return True

    def _read_printed_error(self, call: ToolCall, action: Action, item: Item, whole: bool) -> None:
        """Keep the last error message an output printed, with its frame (:func:`printed_error`), whatever the call
        ended with: a later call failing by its exit status alone says nothing of what went wrong. What a read or a
        search returned is file content, and a line of the call's own input given back is no error it printed. An
        output a stage cleared since is read by the failure its placeholder recorded, with that failure's frame, or
        when its call did not fail by the error its placeholder quotes."""
        if file_content(action):
            return
        text = item.text
        if whole:
            printed = _kept(item, _PRINTED_ERROR, lambda: printed_error(text))
        else:
            recorded = item.provenance.failure_line
            printed = ((recorded, item.provenance.error_frame or ()) if recorded and prints_error(recorded)
                       else quoted_printed_error(text) if not recorded else None)
        if printed is None or echoed(printed[0], call.arguments):
            return
        source = _ran(item, action.command) if action.command else " ".join([call.name, *action.paths])
        self.printed_error = {"source": source, "frame": list(printed[1]), "line": printed[0]}

    def _scripts_in(self, command: str) -> list[str]:
        """Files the agent wrote in this span (or an earlier one) that ``command`` names: the scripts it runs."""
        named = {path for path, name in self._edited.items() if name in command}
        return [path for path in self.files if path in named] if named else []  # in the files' (recency) order

    def _file(self, path: str) -> FileFacts:
        facts = self.files.pop(path, None) or FileFacts()  # re-inserted: dict order is recency order
        self.files[path] = facts
        return facts

    def _record_edit(self, call: ToolCall, action: Action, origin: Item | None) -> None:
        change = _kept_by(origin, _CHANGES, call.id, lambda: _change(call, action))
        created = call.name.lower() in ("write", "create", "write_file", "create_file") or (
            str(call.arguments.get("command", "")) == "create"
        )
        written = written_text(call) if any(path.endswith(".py") for path in action.paths) else None
        for path in action.paths:
            facts = self._file(path)
            if written is not None and path.endswith(".py") and (path in action.written or len(action.paths) == 1):
                facts.writes = python_writes(written)  # the text written is this script's
            # a shell that writes a file whole it never read nor changed before (``cat > probe.py <<EOF``) made it
            new = not (facts.reads or facts.edits) and path in action.written
            facts.edits += 1
            self._edited[path] = _last_component(path)
            facts.created = facts.created or created or new
            if action.command is not None and action.written and path not in action.written:
                # the here-document is the script the command wrote (``cat > fix.py <<EOF``), which then changed
                # this file: the change to it is the command, and the script's text is the last change to the script
                facts.last_change = _ran(origin, action.command)
            else:
                facts.last_change = change if change is not None else facts.last_change

    def _record_written_by(self, scripts: list[str], run: str, edited: Sequence[str]) -> None:
        """The files the agent's ``scripts`` write, changed by ``run`` (those the command edits itself, ``edited``,
        are recorded as its edits already: a here-document script run in the same command)."""
        for target in dict.fromkeys(t for path in scripts for t in self.files[path].writes if t not in edited):
            facts = self._file(target)
            facts.edits += 1
            facts.last_change = f"(written by running its script: `{run[2:]}`)"
            self._edited[target] = _last_component(target)

    def _record_error(self, call: ToolCall, action: Action, item: Item | None, line: str, scripts: list[str]) -> None:
        text = item.text if item is not None else ""
        read = _kept_by(item, _ERRORS, action.kind, lambda: _error_details(text, line))
        cleared = item.provenance.error_frame if item is not None else None  # its output was replaced since
        frame = list(cleared) if cleared is not None else list(read.frame)
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
        self.said_since_error = False
        self.asked_since_error = False

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

    def _read_todos(self, arguments: Mapping[str, Any]) -> None:
        todos = todo_list(arguments)
        if todos is not None:
            self.todos = todos
            self.request_open = False

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


def read_on(state: Mapping[str, Any], items: Sequence[Item]) -> Facts | None:
    """The facts of a span, from its summary's ``state``, with ``items`` (what follows the span) read on; None
    when the state is not ours. What a survival check needs of the whole request (errors, plan, edited files),
    without reading the span a second time: the span's reading ended with nothing pending (a summary's span ends
    on a whole round) and only the newest entries were kept, which is all a longer reading keeps of them too.

    The facts are to read only: a summary asks them twice of the same state and the same kept items (its
    survival check, then its receipt), so the last answer is kept for an equal state and the same item objects
    in the same order (as :meth:`~contextfold.pipeline.importance.References.of` keeps its own)."""
    global _last_read_on
    items = list(items)
    last = _last_read_on  # read once: another thread may replace it
    if (last is not None and (last[0] is state or last[0] == state) and len(last[1]) == len(items)
            and all(map(operator.is_, last[1], items))):
        return last[2]
    if state.get("schema") != STATE_SCHEMA:
        return None
    facts = Facts.from_state(state)
    facts.read(items, details=False)
    _last_read_on = (state, items, facts)
    return facts


_last_read_on: tuple[Mapping[str, Any], list[Item], Facts] | None = None
"""The state and items :func:`read_on` was last asked about, and its answer."""


def read_ahead(items: Sequence[Item]) -> None:
    """Read what ``items`` show on their own (an output's result line, error, tally; an edit's text; the findings
    in what the assistant wrote) into each item's readings, as they arrive: a later summary or survival check then
    only works out what depends on the items around them."""
    Facts().read(items)
