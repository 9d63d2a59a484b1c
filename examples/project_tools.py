"""What the examples share: the task and two read-only tools (list and read a folder's files), and the model check.

The examples run from the repository root (``python3 examples/anthropic_loop.py [FOLDER]``);
FOLDER defaults to the current directory. Nothing outside it is read.

Each needs its provider's key, or runs offline against contextfold's scripted
model: ``contextfold serve-fake`` prints the base-URL variable to export, and
:func:`model_access` then sets a dummy key (the scripted model takes any).
"""

from __future__ import annotations

import os
import sys
from fnmatch import fnmatch
from pathlib import Path

from contextfold.sdk import is_loopback

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
TASK = f"Read the source files under {ROOT} and explain what the project does, file by file, then overall."
SYSTEM = "You are a careful code reader. Look at files with the tools and answer only from what you read."
MAX_CHARS = 60_000
SKIPPED_FOLDERS = ("__pycache__", "node_modules", "venv")
OUTPUTS = Path(".contextfold")
"""Where the examples keep what they write (transcripts, framework sessions): a folder git ignores."""


def _inside(relative: str) -> Path:
    path = (ROOT / relative).resolve()
    if not path.is_relative_to(ROOT):
        raise ValueError(f"{relative} is outside {ROOT}")
    return path


def project_files(folder: Path = ROOT, pattern: str = "*") -> list[Path]:
    """The project's files under ``folder`` matching ``pattern``, sorted; hidden folders (``.git``, ``.venv``,
    ``.contextfold``) and virtual environments, caches and ``node_modules`` are not walked: they are not the
    project, and a virtual environment alone holds thousands of files."""
    found = []
    for directory, folders, files in os.walk(folder):
        folders[:] = [name for name in folders if not _skipped(Path(directory) / name)]
        found += [Path(directory) / name for name in files if fnmatch(name, pattern)]
    return sorted(found)


def _skipped(folder: Path) -> bool:
    return folder.name.startswith(".") or folder.name in SKIPPED_FOLDERS or (folder / "pyvenv.cfg").is_file()


def list_files(folder: str = ".") -> str:
    """List the files under a folder of the project (paths relative to the project root)."""
    return "\n".join(str(p.relative_to(ROOT)) for p in project_files(_inside(folder))[:1000])


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

KEYS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY", "gemini": "GOOGLE_API_KEY"}
BASE_URLS = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL", "gemini": "GOOGLE_GEMINI_BASE_URL"}


def model_access(provider: str) -> None:
    """Go on with the provider's key; or, when its base URL is a local server (``contextfold serve-fake``), with a
    dummy key and no trace upload; otherwise exit with one line saying how to run offline, not an SDK traceback."""
    key, base_url = KEYS[provider], BASE_URLS[provider]
    if os.environ.get(key) or (provider == "gemini" and os.environ.get("GEMINI_API_KEY")):
        return
    if is_loopback(os.environ.get(base_url)):
        os.environ[key] = "offline"  # the scripted model takes any key; the SDKs refuse to start without one
        os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")  # traces would go to api.openai.com
        return
    sys.exit(f"{Path(sys.argv[0]).name} needs {key}; or run it offline: start `contextfold serve-fake --provider "
             f"{provider}` and set {base_url} to the URL it prints (`export {base_url}=...`)")
