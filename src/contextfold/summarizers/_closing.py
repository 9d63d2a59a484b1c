"""When an error the summary would show as open has closed: the rules a later, successful action is read by.

An error stays "Last error (unresolved)" in every summary until something the
agent did afterwards settles it; an error shown open after it closed sends the
agent back to work it already finished. The rules are kept apart from the
reading of the calls (:mod:`._facts`) because they are what changes most as
new harnesses show new ways of fixing things.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..actions import EDIT, OTHER, READ, SEARCH, TODO, Action
from ._calls import (
    _alike,
    _check_runs,
    _covers,
    _headline,
    _last_component,
    _same_file,
    _shows_run,
    _test_selection,
    program_words,
)
from ._records import ErrorFacts

_LOCATING = (READ, SEARCH)
"""What a call that looks for a path does: its failure may be that the path is not there, and a later success at a
path of the same name is where it is."""

_HELP = re.compile(r"(?<!\S)--(?:help|version)(?!\S)")
"""An option asking a program for its usage or version: a run with it re-runs nothing of a failed run of the same
program (``bun pai-test.ts --help`` after ``bun pai-test.ts`` failed). The short forms mean other things to many
programs (``df -h``, ``grep -h``)."""
_READ_FIRST = re.compile(r"has not been read yet|Read it first before writing", re.IGNORECASE)
"""Claude Code refusing an edit of a file the agent has not read in this session ("File has not been read yet. Read
it first before writing to it."): a precondition, which a later read of that file meets (the edit itself may never
be wanted again: the person may have said not to make it)."""
_SAME_TOOL_CLOSES = (OTHER, TODO)
"""What a call does whose failure a later call of the same tool that worked settles: a tool that is not about files
or commands, and a todo list's update (each writes the whole list again)."""


def close_errors(errors: Sequence[ErrorFacts], action: Action, tool: str, output: str = "") -> None:
    """Mark the open ``errors`` this successful action resolves (``output``: what it printed): a re-run of the
    command, a build or check that shows it ran each check of a failed one again, a change to a file involved,
    a read or search of a path of the name a failed read or search looked for, in any letter case (the agent
    found where it is: Claude Code's Read of a guessed path, then Glob, then Read of the real one; a Glob in a
    folder that is not there, then ``find``, then a Glob in the real one), a read or search of a path inside the
    folder a read failed on (``EISDIR``, then a Read of a file in it), or a later call of the same tool (one
    that is not about files or commands, or a todo list's update) that worked."""
    if all(error.resolved is not None for error in errors):  # nothing open: the common case, at no cost
        return
    signature = program_words(action.signature)
    words = frozenset(signature)
    asks_help = bool(action.command and _HELP.search(action.command))  # prints its usage, runs nothing again
    locates = action.kind in _LOCATING
    may_touch = bool(action.paths) and (locates or action.kind == EDIT)
    names = frozenset(_last_component(p).casefold() for p in action.paths) if may_touch else frozenset()
    # the tests the action runs (None: it runs none), worked out once and only when a failed test run is open
    running = _test_selection(action.command) if action.command and any(
        e.tests is not None and e.resolved is None for e in errors) else None
    # what a passing build, check or test run ran, worked out once and only when a failed one is open
    checked = f"{action.command}\n{output}" if action.command and any(
        e.checks and e.resolved is None for e in errors) and _check_runs(action.command) else None
    for error in errors:
        if error.resolved is not None:
            continue
        if action.kind in _SAME_TOOL_CLOSES and error.kind == action.kind and error.tool == tool:
            error.resolved = f"a later call of {tool} succeeded"
            continue
        # a test run that ran fewer tests than a failed one (one test of its suite) is no re-run of it
        narrower = running is not None and error.tests is not None and not _covers(running, error.tests)
        if not narrower and not asks_help and signature and error.program and signature[0] == error.program[0] and _alike(
                words, error.words):
            error.resolved = f"a later run of `{_headline(action.command or '', 100)}` succeeded"
            continue
        if action.command and running is not None and error.tests is not None and _covers(running, error.tests):
            error.resolved = f"a later test run passed: `{_headline(action.command, 100)}`"
            continue
        if checked is not None and error.checks and all(_shows_run(run, checked) for run in error.checks):
            error.resolved = f"a later check that ran it again passed: `{_headline(action.command or '', 100)}`"
            continue
        inside = [p for p in action.paths if any(_within_folder(p, q) for q in error.paths)] \
            if locates and error.kind == READ else []
        if inside:  # a read of a folder (EISDIR), then of a file in it: what it was after
            error.resolved = f"a path inside it was {'read' if action.kind == READ else 'searched'} afterwards: {inside[0]}"
            continue
        if action.kind == READ and error.kind == EDIT and _READ_FIRST.search(error.line) and (
                read := next((p for p in action.paths if any(_same_file(p, q) for q in error.paths)), None)):
            error.resolved = f"{read} was read afterwards, as the harness asked"
            continue
        if not may_touch or (locates and error.kind not in _LOCATING) or names.isdisjoint(error.names):
            continue  # only an edit, or a successful re-read or search of what failed to, resolves by file
        touched = [p for p in action.paths if any(_same_file(p, q) for q in error.paths)]
        if touched:
            verb = {EDIT: "edited", READ: "read successfully"}.get(action.kind, "searched successfully")
            error.resolved = f"{touched[0]} was {verb} afterwards"
        elif locates:  # a read or search of a path that was not there: found elsewhere
            found = next(p for p in action.paths if _last_component(p).casefold() in error.names)
            error.resolved = f"the file was found and read at {found}" if action.kind == READ == error.kind \
                else f"it was found at {found}"


def retire_errors(errors: Sequence[ErrorFacts], scripts: Sequence[str]) -> None:
    """Errors of scripts the agent wrote and no longer runs (it ran another of its scripts since) are retired."""
    for error in errors:
        if error.scripts and error.resolved is None and not set(error.scripts) & set(scripts):
            error.retired = True


def _within_folder(path: str, folder: str) -> bool:
    """Whether ``path`` lies inside ``folder`` (``/a/b/c.md`` inside ``/a/b``)."""
    return path.startswith(folder.rstrip("/") + "/")
