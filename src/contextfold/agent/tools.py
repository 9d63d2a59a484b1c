"""The agent's tools, confined to one working folder.

Files, search, a shell, a todo list and subagents. Every refusal and every
failure comes back to the model as an error result that says why (a
:class:`ToolError`), so it can change course; nothing is skipped silently.
File tools resolve symlinks before checking that a path is inside the
working folder, so neither ``../``, nor an absolute path, nor a link leads
out of it, and then open the file walking from the folder without following
any link (:mod:`.confined`), so a swap after the check leads nowhere either;
a file with a second hard link is never read, searched or written, and the
session's own folder (its transcript) is out of their reach. Every tool is bounded in
time and output: ``grep`` runs in a child process killed at its limit (a
catastrophic regular expression, a FIFO). The shell runs in the working
folder, with a timeout, an output cap and an environment of named variables
only (:data:`TOOL_ENVIRONMENT`: no credential reaches it), and only after
:attr:`Workspace.approve` says yes. No code in the working folder ever runs
but what the user approved: the search helper is this package's own file,
run isolated from the folder (see :meth:`Workspace.grep`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from contextfold import ToolSpec

from ..conversation import JSONObject
from . import search
from .confined import Refused, open_inside
from .search import SKIPPED_DIRS, walk

log = logging.getLogger(__name__)
OUTPUT_CAP_CHARS = 20_000
"""Longest tool output returned to the model; longer ones keep their head and tail."""
BASH_TIMEOUT_S = 120.0
"""Default and largest time a shell command may run, in seconds."""
GREP_TIMEOUT_S = 20.0
"""Longest a search or a listing may run, in seconds (a catastrophic regular expression is killed at it)."""
READ_CAP_BYTES = 32 * 1024 * 1024
"""Most of a file ``read_file`` and ``edit_file`` load; a larger file is refused for edits and read in part."""
PROTECTED_DIRS = (".contextfold",)
"""Folders of the working folder the file tools never touch: the session's transcript lives there."""
TOOL_ENVIRONMENT = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "COLORTERM", "TMPDIR", "TZ",
})
"""The variables a command the model writes gets from this process's environment, and only those (with every
``LC_*`` locale variable, and ``PWD`` set to the working folder): an allow-list, so a credential under any name
(``CONTEXTFOLD_STORE``, ``DATABASE_URL``, ``REDIS_URL``, a provider key, a token) never reaches a tool. They say
where programs are and how to print text, nothing more; a variable that changes what a program runs at start
(``BASH_ENV``, ``LD_PRELOAD``, ``PYTHONPATH``) is left out too."""
READ_LIMIT_LINES = 2_000
"""Lines ``read_file`` returns when no limit is given."""
LIST_LIMIT_ENTRIES = 500
"""Paths ``list_files`` and matches ``grep`` return at most."""
TODO_STATES = ("pending", "in_progress", "completed")
TODO_SCHEMA: JSONObject = {"type": "array", "items": {"type": "object", "required": ["content", "status"],
                                                      "properties": {"content": {"type": "string"},
                                                                     "status": {"type": "string", "enum": list(TODO_STATES)}}}}


class ToolError(Exception):
    """A tool refused or failed; its message is what the model reads in the error result."""


Approve = Callable[[str], bool]
"""Asked before each shell command (the command is the argument): True runs it."""


@dataclass(frozen=True)
class Tool:
    """A tool: its definition for the model, and the function that runs it with the call's arguments."""

    spec: ToolSpec
    function: Callable[..., str]

    def __call__(self, arguments: JSONObject) -> str:
        """Run with ``arguments`` once they match the schema (names, required ones, JSON types)."""
        properties = self.spec.parameters["properties"]
        problems = [f"unknown argument {name!r}" for name in arguments if name not in properties]
        problems += [f"missing argument {name!r}" for name in self.spec.parameters["required"] if name not in arguments]
        problems += [
            f"argument {name!r} must be of type {properties[name]['type']}"
            for name, value in arguments.items()
            if name in properties and not _is_json_type(value, properties[name]["type"])
        ]
        if problems:
            raise ToolError(f"{self.spec.name}: {'; '.join(problems)}")
        return self.function(**arguments)


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def _is_json_type(value: object, json_type: str) -> bool:
    if isinstance(value, bool) and json_type != "boolean":
        return False
    return isinstance(value, _JSON_TYPES[json_type])


def _tool(function: Callable[..., str], description: str, required: JSONObject,
          optional: JSONObject | None = None) -> Tool:
    """A tool named after ``function``; each argument is given as its JSON schema."""
    properties = {**required, **(optional or {})}
    parameters = {"type": "object", "properties": properties, "required": list(required)}
    return Tool(ToolSpec(function.__name__, description, parameters), function)


def _string(description: str) -> dict[str, str]:
    return {"type": "string", "description": description}


def _integer(description: str) -> dict[str, str]:
    return {"type": "integer", "description": description}


def cap(text: str, limit: int = OUTPUT_CAP_CHARS) -> str:
    """``text`` whole if it is at most ``limit`` characters, else its head and tail with what was cut in between."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return _joined(text[:half], text[-half:], f"{len(text) - 2 * half:,} characters", limit)


def _joined(head: str, tail: str, cut: str, limit: int) -> str:
    return f"{head}\n[... {cut} cut: output capped at {limit:,} ...]\n{tail}"


@dataclass
class Workspace:
    """The working folder and the session state the tools share (the todo list).

    ``approve`` is asked before each shell command; ``subagent`` runs the
    ``task`` tool (a prompt in, the subagent's final answer out), and without
    it there is no ``task`` tool.
    """

    root: Path
    approve: Approve
    bash_timeout_s: float = BASH_TIMEOUT_S
    output_cap_chars: int = OUTPUT_CAP_CHARS
    grep_timeout_s: float = GREP_TIMEOUT_S
    protected: tuple[str, ...] = PROTECTED_DIRS
    """Folders (relative to ``root``) the file tools refuse: the session's own files."""
    todos: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()
        self._protected = tuple((self.root / name).resolve() for name in self.protected)

    def tools(self, subagent: Callable[[str], str] | None = None) -> dict[str, Tool]:
        """The tools by name; ``task`` only when a ``subagent`` runner is given."""
        path = _string("path relative to the working folder")
        tools = [
            _tool(self.read_file, "Read a text file; lines come numbered.", {"path": path},
                  {"offset": _integer("first line to read, 1-based"), "limit": _integer("how many lines")}),
            _tool(self.write_file, "Create or overwrite a file with the given content.",
                  {"path": path, "content": _string("the whole new content")}),
            _tool(self.edit_file, "Replace an exact string in a file (it must occur once unless replace_all).",
                  {"path": path, "old_string": _string("text to find, exactly"), "new_string": _string("replacement")},
                  {"replace_all": {"type": "boolean", "description": "replace every occurrence"}}),
            _tool(self.list_files, f"List files under a folder, recursively (skips {', '.join(sorted(SKIPPED_DIRS))}).",
                  {}, {"path": _string("folder, default the working folder")}),
            _tool(self.grep, "Search files for a regular expression; prints path:line: text.",
                  {"pattern": _string("Python regular expression")},
                  {"path": _string("file or folder, default the working folder"),
                   "glob": _string("only files whose name matches, e.g. *.py")}),
            _tool(self.bash, f"Run a shell command in the working folder (timeout {self.bash_timeout_s:g} s, "
                             f"output capped at {self.output_cap_chars:,} characters).",
                  {"command": _string("the command line")},
                  {"timeout_s": {"type": "number", "description": "seconds before it is killed"}}),
            _tool(self.todo, "Replace the session's todo list; returns it.", {"todos": TODO_SCHEMA}),
        ]
        if subagent is not None:

            def task(prompt: str, description: str = "") -> str:
                return subagent(prompt)

            tools.append(_tool(task, "Hand a self-contained piece of work to a subagent with its own context; "
                                     "returns only its final answer.",
                               {"prompt": _string("everything the subagent needs to know and what to report")},
                               {"description": _string("a few words naming the work")}))
        return {tool.spec.name: tool for tool in tools}

    # ------------------------------------------------------------------ paths
    def resolve(self, path: str) -> Path:
        """``path`` as an absolute path inside the working folder (symlinks followed), or a ToolError naming it."""
        try:
            target = (self.root / path).resolve()
        except (OSError, ValueError) as error:  # a NUL in the path, a link loop
            raise ToolError(f"{path!r} cannot be used as a path: {error}") from None
        if not target.is_relative_to(self.root):
            raise ToolError(
                f"{path!r} is outside the working folder {self.root} (it resolves to {target}); "
                "file tools only reach files inside it"
            )
        if any(target.is_relative_to(folder) for folder in self._protected):
            raise ToolError(f"{path!r} is in the session's own folder, which the file tools do not touch")
        return target

    def _open(self, path: str, flags: int, *, writing: bool = False) -> int:
        """``path`` resolved, checked and opened without following links (see :mod:`.confined`)."""
        target = self.resolve(path)
        try:
            return open_inside(self.root, target, flags, writing=writing, make_parents=writing)
        except Refused as error:
            log.warning("file tool refused %r: %s", path, error)
            raise ToolError(f"{path!r}: {error}") from None
        except FileNotFoundError:
            raise ToolError(f"{path!r} does not exist") from None
        except IsADirectoryError:
            raise ToolError(f"{path!r} is not a file") from None
        except OSError as error:
            raise ToolError(f"{path!r}: {error.strerror or error}") from None

    def _relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() or "."

    def _files(self, top: Path) -> tuple[list[Path], int]:
        """Files under ``top`` (or ``top`` itself), sorted, and how many links leading outside were left out."""
        try:
            return walk(self.root, top, time.monotonic() + self.grep_timeout_s, self._protected)
        except FileNotFoundError:
            raise ToolError(f"{self._relative(top)!r} does not exist") from None
        except TimeoutError:
            raise ToolError(f"listing {self._relative(top)!r} took over {self.grep_timeout_s:g} s: "
                            "list a smaller folder") from None

    def _outside_note(self, outside: int) -> str:
        return f"\n[{outside} link(s) leading outside the working folder left out]" if outside else ""

    # ------------------------------------------------------------------ file tools
    def read_file(self, path: str, offset: int = 1, limit: int = READ_LIMIT_LINES) -> str:
        with os.fdopen(self._open(path, os.O_RDONLY), "rb") as file:
            data = file.read(READ_CAP_BYTES + 1)
        cut = f"\n[only the first {READ_CAP_BYTES:,} bytes were read]" if len(data) > READ_CAP_BYTES else ""
        lines = data[:READ_CAP_BYTES].decode("utf-8", errors="replace").splitlines()
        start = max(offset, 1)
        shown = lines[start - 1 : start - 1 + limit]
        body = "\n".join(f"{number:>6}\t{line}" for number, line in enumerate(shown, start))
        rest = len(lines) - (start - 1 + len(shown))
        more = f"\n[{rest} more line(s): read on with offset={start + len(shown)}]" if rest > 0 else ""
        return cap(body, self.output_cap_chars) + more + cut if lines else f"{path} is empty"

    def write_file(self, path: str, content: str) -> str:
        with os.fdopen(self._open(path, os.O_WRONLY | os.O_CREAT, writing=True), "wb") as file:
            file.truncate(0)  # only now: the checks of the open file came first
            file.write(content.encode("utf-8"))
        return f"wrote {len(content):,} characters to {self._relative(self.resolve(path))}"

    def edit_file(self, path: str, old_string: str, new_string: str, replace_all: bool = False) -> str:
        with os.fdopen(self._open(path, os.O_RDWR, writing=True), "r+b") as file:
            data = file.read(READ_CAP_BYTES + 1)
            if len(data) > READ_CAP_BYTES:
                raise ToolError(f"{path!r} is over {READ_CAP_BYTES:,} bytes; edit it with the shell")
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ToolError(f"{path!r} is not UTF-8 text: {error}") from None
            found = text.count(old_string) if old_string else 0
            if found == 0:
                raise ToolError(f"old_string was not found in {path}" if old_string else "old_string is empty")
            if found > 1 and not replace_all:
                raise ToolError(f"old_string occurs {found} times in {path}: give more context, or set replace_all")
            file.seek(0)
            file.truncate(0)
            file.write(text.replace(old_string, new_string).encode("utf-8"))
        return f"edited {self._relative(self.resolve(path))}: {found} replacement(s)"

    def list_files(self, path: str = ".") -> str:
        files, outside = self._files(self.resolve(path))
        listed = [self._relative(file) for file in files[:LIST_LIMIT_ENTRIES]]
        more = f"\n[{len(files) - LIST_LIMIT_ENTRIES} more not listed]" if len(files) > LIST_LIMIT_ENTRIES else ""
        return ("\n".join(listed) or "no files") + more + self._outside_note(outside)

    def grep(self, pattern: str, path: str = ".", glob: str = "*") -> str:
        """Search in a child process killed after :attr:`grep_timeout_s` (see :mod:`.search`).

        The child runs :data:`SEARCH_PROGRAM`, the helper's source as this process read it, with
        ``python -I -S -c``: isolated, so the working folder (its cwd) is not on its import path and
        ``PYTHON*`` variables and the user's site folder are ignored, and without ``site``, so no ``.pth`` or
        ``sitecustomize`` runs. The helper imports only the standard library: a ``contextfold/agent/search.py``,
        ``os.py`` or ``sitecustomize.py`` the model wrote in the working folder is never imported, and neither
        is the helper's file read again (the working folder may be contextfold's own checkout, installed
        editable, whose ``search.py`` the model can change).
        """
        try:
            re.compile(pattern)
        except re.error as error:
            raise ToolError(f"bad regular expression {pattern!r}: {error}") from None
        top = self.resolve(path)
        arguments = {"root": str(self.root), "top": str(top), "pattern": pattern, "glob": glob,
                     "limit": LIST_LIMIT_ENTRIES, "protected": [str(folder) for folder in self._protected]}
        try:
            child = subprocess.run([sys.executable, "-I", "-S", "-c", SEARCH_PROGRAM], input=json.dumps(arguments),
                                   check=False, capture_output=True, text=True, timeout=self.grep_timeout_s, cwd=self.root,
                                   env=tool_environment(self.root))
        except subprocess.TimeoutExpired:
            log.warning("grep %r stopped at its time limit of %g s", pattern, self.grep_timeout_s)
            raise ToolError(f"grep stopped after {self.grep_timeout_s:g} s (a pattern that backtracks badly, or too "
                            "much to search): narrow the path or simplify the pattern") from None
        if child.returncode != 0:
            reason = "does not exist" if "FileNotFoundError" in child.stderr else child.stderr.strip()[-500:]
            raise ToolError(f"searching {self._relative(top)!r}: {reason}")
        result = json.loads(child.stdout)
        matches = [f"{file}:{number}: {line}" for file, number, line in result["matches"][:LIST_LIMIT_ENTRIES]]
        more = f"\n[more than {LIST_LIMIT_ENTRIES} matches: only the first shown]" if result["more"] else ""
        body = "\n".join(matches) or f"no match for {pattern!r}"
        linked = f"\n[{result['linked']} file(s) with more than one hard link left out: their contents may be a file " \
                 "outside the working folder]" if result["linked"] else ""
        return cap(body, self.output_cap_chars) + more + self._outside_note(result["outside"]) + linked

    # ------------------------------------------------------------------ shell
    def bash(self, command: str, timeout_s: float | None = None) -> str:
        """Run ``command`` in the working folder once approved; output (stdout and stderr) capped, exit status last."""
        if not self.approve(command):
            raise ToolError(f"the user declined to run this command: {command}")
        timeout = min(timeout_s or self.bash_timeout_s, self.bash_timeout_s)
        shell = shutil.which("bash") or "/bin/sh"
        with tempfile.TemporaryFile() as output:
            process = subprocess.Popen(
                [shell, "-c", command],
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=tool_environment(self.root),
            )
            try:
                status: int | None = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                status = None
            text = _head_and_tail(output, self.output_cap_chars)
        if status is None:
            raise ToolError(f"timed out after {timeout:g} s and was killed; output so far:\n{text}")
        return f"{text}\n[exit status {status}]"

    # ------------------------------------------------------------------ todo
    def todo(self, todos: list[dict[str, str]]) -> str:
        for index, entry in enumerate(todos):
            if not isinstance(entry, Mapping) or entry.get("status") not in TODO_STATES or not entry.get("content"):
                raise ToolError(f"todo {index}: each entry needs content and a status among {', '.join(TODO_STATES)}")
        self.todos = [{"content": str(t["content"]), "status": str(t["status"])} for t in todos]
        return self.render_todos()

    def render_todos(self) -> str:
        marks = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}
        return "\n".join(f"{marks[t['status']]} {t['content']}" for t in self.todos) or "the todo list is empty"


def tool_environment(root: Path) -> dict[str, str]:
    """The environment of a command run in the working folder ``root``: the variables of
    :data:`TOOL_ENVIRONMENT` and ``LC_*`` this process has, ``PWD`` the folder; nothing else."""
    kept = {name: value for name, value in os.environ.items() if name in TOOL_ENVIRONMENT or name.startswith("LC_")}
    return {**kept, "PWD": str(root)}


SEARCH_PROGRAM = Path(search.__file__).read_text(encoding="utf-8")
"""The search helper's source, read once when the agent starts, before any tool runs: what ``grep``'s child runs
(see :meth:`Workspace.grep`)."""


def _head_and_tail(file: IO[bytes], limit: int) -> str:
    """What a command wrote to ``file``, its head and tail only when over ``limit`` (read without loading it all)."""
    size = file.seek(0, os.SEEK_END)
    file.seek(0)
    if size <= limit:
        return file.read().decode(errors="replace")
    half = limit // 2
    head = file.read(half).decode(errors="replace")
    file.seek(size - half)
    return _joined(head, file.read().decode(errors="replace"), f"{size - 2 * half:,} bytes", limit)
