"""The records a summary's state keeps of one file and of one failed call (with what a later action is compared
with to resolve an error, computed once and no part of the state), and the copying a state's round trip needs."""

from __future__ import annotations

from collections.abc import Mapping
from copy import copy
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

from ._calls import _check_runs, _last_component, _test_selection, program_words

@dataclass
class FileFacts:
    """What happened to one file. ``last_change`` is the text the last edit wrote (capped), or its command;
    ``ran``: the agent ran it after writing it (a probe or a reproduction script, not the project's source);
    ``writes``: for a Python script, the files it writes when it runs (a patch script the agent wrote)."""

    reads: int = 0
    edits: int = 0
    failed_edits: int = 0
    created: bool = False
    ran: bool = False
    last_change: str | None = None
    writes: list[str] = field(default_factory=list)  # a Python script's: the files it opens for writing, which a
    # run of it changes

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
    def program(self) -> tuple[str, ...]:
        """The command's signature words, package managers named alike (see :func:`program_words`)."""
        return program_words(self.signature)

    @cached_property
    def words(self) -> frozenset[str]:
        """The command's signature words (package managers named alike)."""
        return frozenset(self.program)

    @cached_property
    def names(self) -> frozenset[str]:
        """The last component of each path, in lower case: a file written two ways (``./a/b.py``, ``a/b.py``) ends
        alike, and a guess in the wrong case (``bgp-red-team.md`` for ``BGP-RED-TEAM.md``) names the same file."""
        return frozenset(_last_component(p).casefold() for p in self.paths)

    @cached_property
    def tests(self) -> frozenset[str] | None:
        """The tests the failed command ran (see :func:`_test_selection`; None: it ran no test suite): a later
        test run that covers them and passes resolves it."""
        return _test_selection(self.source)

    @cached_property
    def checks(self) -> tuple[str, ...]:
        """The builds, checks and tests the failed command ran (see :func:`_check_runs`): a later passing run that
        shows it ran each of them again (``npm run check``, whose npm echo names ``npm run lint && npm run
        format:check``) resolves it."""
        return _check_runs(self.source[2:]) if self.source.startswith("$ ") else ()

    def to_state(self) -> dict[str, Any]:
        """The error as JSON data (fresh lists)."""
        return {f.name: copy(getattr(self, f.name)) for f in fields(self) if f.init}


def _fresh(value: Any) -> Any:
    """``value`` with its containers copied two levels deep: what a state holds (lists of records, records of lists)."""
    if isinstance(value, list):
        return [_shallow(v) for v in value]
    if isinstance(value, dict):
        return {k: _shallow(v) for k, v in value.items()}
    return value


def _shallow(value: Any) -> Any:
    return list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value


def _known(cls: type, values: Mapping[str, Any]) -> dict[str, Any]:
    known = cls.__dataclass_fields__  # type: ignore[attr-defined]
    return {k: v for k, v in values.items() if k in known and known[k].init}
