"""The ``contextfold`` command line: a thin layer over the public API, and the only place click is used.

Each command parses its options, calls the library, and renders the result
with rich (or as JSON with ``--json``). No library module imports this
package; it sits above every other.
"""

from __future__ import annotations

from .main import cli, main

__all__ = ["cli", "main"]
