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
from pathlib import Path
from urllib.parse import urlparse

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

KEYS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY", "gemini": "GOOGLE_API_KEY"}
BASE_URLS = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL", "gemini": "GOOGLE_GEMINI_BASE_URL"}
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def model_access(provider: str) -> None:
    """Go on with the provider's key; or, when its base URL is a local server (``contextfold serve-fake``), with a
    dummy key and no trace upload; otherwise exit with one line saying how to run offline, not an SDK traceback."""
    key, base_url = KEYS[provider], BASE_URLS[provider]
    if os.environ.get(key) or (provider == "gemini" and os.environ.get("GEMINI_API_KEY")):
        return
    if urlparse(os.environ.get(base_url, "")).hostname in LOCAL_HOSTS:
        os.environ[key] = "offline"  # the scripted model takes any key; the SDKs refuse to start without one
        os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")  # traces would go to api.openai.com
        return
    sys.exit(f"{Path(sys.argv[0]).name} needs {key}; or run it offline: start `contextfold serve-fake --provider "
             f"{provider}` and set {base_url} to the URL it prints (`export {base_url}=...`)")
