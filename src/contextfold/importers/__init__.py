"""Reading real recorded agent sessions into :class:`~contextfold.conversation.Conversation` s.

>>> from contextfold.importers import load
>>> conversations = load("run.traj.json")          # format sniffed from the content

One module per format family; each exposes ``FORMAT`` (its name),
``matches(source)`` (a cheap look at the content) and ``load(source)``. What
every importer guarantees:

- every conversation of the file, in file order (one per trajectory, session,
  thread or subagent, as the module docstring says);
- system prompts in ``Header.system``, tool definitions in ``Header.tools``
  where the file has them, format facts in ``Header.meta`` (``format`` always);
- every tool call a ``ToolCall`` in an assistant item, every output its own
  tool item; a call the recording never answered stays unanswered (use
  :meth:`Conversation.repair` to close it); a result without a call, or a
  malformed record, raises :class:`SessionFormatError` naming the line, the
  record index or the JSON path;
- ``Item.timestamp`` (unix seconds) where the file has times, the provider's
  reported usage as ``meta["usage"]`` (a :class:`~contextfold.usage.Usage`
  dict) on the assistant item of each response, ``meta["model"]`` where known;
- records skipped on purpose (screen redraws, bookkeeping) counted in
  ``Header.meta["skipped"]``, never dropped silently; records of a type the
  importer does not know yet (a newer version of the tool) skipped and counted
  in ``Header.meta["unknown_records"]``, never a refusal of the whole file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ..conversation import Conversation, Item
from ..errors import UnknownSessionFormat
from ..usage import Usage
from . import (
    aider,
    chat_messages,
    claude_code,
    claude_stream,
    codex_exec,
    codex_rollout,
    codex_tui,
    contextfold_session,
    gemini_cli,
    goose,
    mini_swe_agent,
    moatless,
    openhands,
    openhands_legacy,
    specstory,
    swe_agent,
    tau_bench,
)
from ._common import Source


class Importer(Protocol):
    """What each importer module provides (a module is checked against this as a protocol)."""

    @property
    def FORMAT(self) -> str: ...

    def matches(self, source: Source) -> bool: ...

    def load(self, source: Source) -> list[Conversation]: ...


_IMPORTERS: tuple[Importer, ...] = (
    contextfold_session,
    mini_swe_agent,
    swe_agent,
    moatless,
    openhands,
    openhands_legacy,
    tau_bench,
    gemini_cli,
    goose,
    chat_messages,
    claude_code,
    claude_stream,
    codex_rollout,
    codex_exec,
    codex_tui,
    specstory,
    aider,
)
"""In detection order: JSON documents (plain chat messages last: every format with keys of its own first), then
JSON Lines, then the text formats (logs last, they parse most; SpecStory's marker line before aider's session
header, which a SpecStory chat about aider may quote)."""

FORMATS: tuple[str, ...] = tuple(module.FORMAT for module in _IMPORTERS)
"""The format names ``load(format=...)`` accepts."""

_BY_NAME = {module.FORMAT: module for module in _IMPORTERS}

__all__ = ["FORMATS", "detect", "load", "recorded_usage"]


def detect(path: str | Path) -> str:
    """The name of the format of the session file at ``path``; UnknownSessionFormat if none fits."""
    return _detect(Source(path)).FORMAT


def load(path: str | Path, format: str | None = None) -> list[Conversation]:
    """Every conversation recorded in the file at ``path``, in file order.

    ``format`` (one of :data:`FORMATS`) skips detection; without it the
    content is sniffed.
    """
    source = Source(path)
    if format is None:
        return _detect(source).load(source)
    importer = _BY_NAME.get(format)
    if importer is None:
        raise ValueError(f"unknown session format {format!r}; expected one of {', '.join(FORMATS)}")
    return importer.load(source)


def _detect(source: Source) -> Importer:
    for importer in _IMPORTERS:
        if importer.matches(source):
            return importer
    raise UnknownSessionFormat(source.path, *_what_it_is(source))


def _what_it_is(source: Source) -> tuple[str, str]:
    """Where and why nothing matched, described from what the file turned out to be."""
    error = source.json_error
    if error is not None and source.first_record is None:
        return error.where, f"starts like JSON but cannot be read: {error.reason}"
    return "file", _shape(source)


def _shape(source: Source) -> str:
    doc = source.document
    if isinstance(doc, dict):
        return f"a JSON object with keys {sorted(doc)[:8]} matches no known session format"
    if isinstance(doc, list):
        first = type(doc[0]).__name__ if doc else "nothing"
        return f"a JSON array of {len(doc)} elements (first: {first}) matches no known session format"
    if source.first_record is not None:
        return f"JSON Lines whose first record has keys {sorted(source.first_record)[:8]} match no known format"
    if not source.text.strip():
        return "the file is empty"
    return f"text that matches no known session format (formats: {', '.join(FORMATS)})"


def recorded_usage(item: Item) -> Usage | None:
    """The usage the provider reported for the response an imported assistant ``item`` is (``None``: not recorded).

    Every importer keeps it in the item's wire data (``meta["usage"]``); this is how anything else reads it."""
    usage = item.meta.get("usage") if item.role == "assistant" else None
    return Usage.from_dict(usage) if usage else None
