"""The task and the two read-only tools every example gives its agent: list and read the files of a folder.

The examples run from the repository root (``python examples/anthropic_loop.py [FOLDER]``);
FOLDER defaults to the current directory. Nothing outside it is read.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
TASK = f"Read the source files under {ROOT} and explain what the project does, file by file, then overall."
SYSTEM = "You are a careful code reader. Look at files with the tools and answer only from what you read."
MAX_CHARS = 60_000


def _inside(relative: str) -> Path:
    path = (ROOT / relative).resolve()
    if not path.is_relative_to(ROOT):
        raise ValueError(f"{relative} is outside {ROOT}")
    return path


def list_files(folder: str = ".") -> str:
    """List the files under a folder of the project (paths relative to the project root)."""
    files = sorted(p for p in _inside(folder).rglob("*") if p.is_file() and ".git" not in p.parts)
    return "\n".join(str(p.relative_to(ROOT)) for p in files[:1000])


def read_file(path: str) -> str:
    """Read a text file of the project (path relative to the project root)."""
    return _inside(path).read_text(errors="replace")[:MAX_CHARS]


def call_tool(name: str, arguments: dict) -> str:
    """Run one tool call of a raw loop; a failure is returned to the model as text."""
    try:
        return {"list_files": list_files, "read_file": read_file}[name](**arguments)
    except Exception as error:  # noqa: BLE001 - the model reads the error and tries something else
        return f"error: {type(error).__name__}: {error}"


SCHEMAS = {
    "list_files": {"type": "object", "properties": {"folder": {"type": "string"}}},
    "read_file": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}
DESCRIPTIONS = {name: function.__doc__ for name, function in (("list_files", list_files), ("read_file", read_file))}
