"""A recorded session's file, read once: its text, parsed lazily as one JSON document or as JSON Lines.

Every importer reads its file through a :class:`Source`, and every JSON text
through :func:`parse_json`, which refuses what the neutral model cannot hold
(lone surrogates, nesting past the adapters' limit, numbers JSON cannot
write) as a :class:`JsonFault` naming where; :meth:`Source.error` turns a
fault into the :class:`~contextfold.errors.SessionFormatError` the caller sees.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

from ..adapters import MAX_NESTING, check_json
from ..conversation import JSONObject, JSONValue
from ..errors import InvalidMessage, SessionFormatError

log = logging.getLogger("contextfold.importers")


class JsonFault(ValueError):
    """JSON text contextfold cannot take: ``where`` in it (``line L column C`` for a syntax error, else a
    JSON path from ``$``), ``reason``, and whether it is a ``syntax`` error (not JSON at all)."""

    def __init__(self, where: str, reason: str, syntax: bool = False) -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason
        self.syntax = syntax


def parse_json(text: str, check: bool = True) -> Any:
    """``json.loads`` that raises only :class:`JsonFault`, and (``check``) refuses values the model cannot
    hold: lone surrogates, nesting past the adapters' limit, numbers JSON cannot write (see
    :func:`~contextfold.adapters.check_json`). The parser itself recurses, so a deep document is caught here.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonFault(f"line {exc.lineno} column {exc.colno}", f"not valid JSON: {exc.msg}", syntax=True) from None
    except RecursionError:
        raise JsonFault("$", f"nested deeper than {MAX_NESTING} levels") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise JsonFault("$", f"not readable as JSON: {exc}") from None
    if check:
        fitting(value, "$")
    return value


def fitting(value: object, path: str) -> None:
    """Raise :class:`JsonFault` at the JSON path of anything in ``value`` the model cannot hold."""
    try:
        check_json(value, None, path)
    except InvalidMessage as error:
        raise JsonFault(error.field, error.reason) from None


class Source:
    """One session file: its path and text, parsed lazily in the shapes importers ask for."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.memo: dict[str, Any] = {}
        """Derived parses an importer wants to reuse between detection and loading."""
        try:
            raw = Path(path).read_bytes()
        except (OSError, ValueError) as exc:  # ValueError: a path holding a NUL byte
            raise SessionFormatError(self.path, "file", f"cannot be read: {exc}") from exc
        try:
            self.text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            if b"\n" not in raw[exc.start:]:  # cut inside a character of the last line: records() reports the cut
                self.text = raw[:exc.start].decode("utf-8-sig")
            else:
                raise SessionFormatError(self.path, f"byte {exc.start}", "not valid UTF-8") from exc

    @property
    def name(self) -> str:
        return Path(self.path).name

    def error(self, location: str, reason: str) -> SessionFormatError:
        return SessionFormatError(self.path, location, reason)

    @cached_property
    def _parsed(self) -> tuple[Any, JsonFault | None]:
        """The document and why it cannot be taken: a document the model cannot hold is still returned,
        so that detection names its format and loading names the fault."""
        if self.text.lstrip()[:1] not in ("{", "["):
            return None, None
        try:
            document = parse_json(self.text, check=False)
        except JsonFault as fault:
            return None, fault
        try:
            fitting(document, "$")
        except JsonFault as fault:
            return document, fault
        return document, None

    @property
    def document(self) -> Any:
        """The file as one JSON document, or ``None`` when it is not one (JSON Lines, text)."""
        return self._parsed[0]

    @property
    def json_error(self) -> JsonFault | None:
        """Why the file, which starts like JSON, is not a JSON document contextfold can take (``None`` if it is,
        or is not JSON)."""
        return self._parsed[1]

    def require_document(self, expected: type) -> Any:
        """The JSON document, which must be of ``expected`` type (``dict`` or ``list``)."""
        doc, fault = self._parsed
        if fault is not None and (doc is not None or self.first_record is None):
            raise self.error(fault.where, fault.reason)
        if not isinstance(doc, expected):
            raise self.error("$", f"expected a JSON {'object' if expected is dict else 'array'}")
        return doc

    @cached_property
    def lines(self) -> list[str]:
        """The text split at ``\\n`` only (JSON strings may hold U+2028 and other breaks ``splitlines`` splits at)."""
        return self.text.split("\n")

    @cached_property
    def first_record(self) -> dict[str, JSONValue] | None:
        """The first non-blank line parsed as a JSON object (``None`` when it is not one)."""
        for line in self.lines:
            if line.strip():
                try:
                    value = parse_json(line, check=False)  # enough to tell the format; records() checks
                except JsonFault:
                    return None
                return value if isinstance(value, dict) else None
        return None

    def leading_records(self, limit: int) -> list[JSONObject | None]:
        """The first ``limit`` non-blank lines parsed (``None`` for a line that is not a JSON object): enough
        for detection to look past the bookkeeping records some formats open with. Parsed once per file."""
        key = f"leading_records/{limit}"
        if key not in self.memo:
            leading: list[JSONObject | None] = []
            for line in self.lines:
                if len(leading) == limit:
                    break
                if line.strip():
                    try:
                        value = parse_json(line, check=False)
                    except JsonFault:
                        value = None
                    leading.append(value if isinstance(value, dict) else None)
            self.memo[key] = leading
        cached: list[JSONObject | None] = self.memo[key]
        return cached

    def records(self) -> Iterator[tuple[int, dict[str, JSONValue]]]:
        """Every non-blank line as ``(line number, JSON object)``; a bad line raises with its number.

        A last line with no newline that is not JSON is a recording cut short
        (an agent killed mid-write, a copy of a live file): the records before
        it are read, and a warning names the line.
        """
        unterminated = len(self.lines)  # text.split("\n") ends with "" when the text ends with a newline
        for number, line in enumerate(self.lines, 1):
            if not line.strip():
                continue
            try:
                value = parse_json(line)
            except JsonFault as fault:
                if fault.syntax and number == unterminated:
                    log.warning("%s: line %d is cut short (%s): read the %d line(s) before it", self.name, number,
                                fault.reason, number - 1)
                    return
                where = f"column {fault.where.rpartition(' ')[2]}" if fault.syntax else fault.where
                raise self.error(f"line {number}", f"{fault.reason} ({where})") from None
            if not isinstance(value, dict):
                raise self.error(f"line {number}", "expected a JSON object")
            yield number, value
