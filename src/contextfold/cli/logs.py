"""Python ``logging`` for the command line: contextfold's records to stderr, one line each.

The library logs what a user should know but need not stop for (a counter
falling back to the estimate, a summarizer falling back, a store retrying);
the command line shows warnings and above by default, ``-v`` adds info,
``-vv`` (or ``--log-level debug``) everything.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import click

from ..redaction import redact_credentials

LEVELS = ("debug", "info", "warning", "error")


class _EchoHandler(logging.Handler):
    """Writes through click to whatever stderr is now (a test runner swaps it), as ``contextfold: level: text``,
    with any credential a record holds masked (the last guard: the library masks them before it logs)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = redact_credentials(record.getMessage()).removeprefix("contextfold: ")  # some name us already
            click.echo(f"contextfold: {record.levelname.lower()}: {message}", err=True)
        except Exception:  # noqa: BLE001 - logging must never take the command down
            self.handleError(record)


_handler = _EchoHandler()


def configure(level: str | None, verbose: int) -> Callable[[], None]:
    """Send the ``contextfold`` loggers' records at ``level`` (else warning, info with -v, debug with -vv) to
    stderr; the function returned puts logging back as it was (a command run in-process leaves no trace)."""
    name = level or LEVELS[max(0, 2 - verbose)]
    logger = logging.getLogger("contextfold")
    before = logger.level
    logger.setLevel(name.upper())
    logger.addHandler(_handler)

    def restore() -> None:
        logger.removeHandler(_handler)
        logger.setLevel(before)

    return restore
