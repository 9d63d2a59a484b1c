"""What a tool call did, read off its name and arguments: read a file, edit one, search, run a command.

Agents name their tools differently (Claude Code's ``Read``/``Edit``, SWE-agent's
``str_replace_editor``, mini-swe-agent's single ``bash``), so the stages that
reason about files (snip superseded reads, restore recent files) and the
summarizer and probes that report them all go through this one classifier.
For shell commands it recognises the usual idioms (``cat``, ``sed -n``,
``sed -i``, heredocs into a file, ``git commit``, ``pip install``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .conversation import ToolCall

READ, EDIT, SEARCH, COMMAND, TODO, OTHER = "read", "edit", "search", "command", "todo", "other"

_READ_TOOLS = {"read", "read_file", "readfile", "file_read", "view", "open", "open_file", "get_file", "cat", "view_file"}
_EDIT_TOOLS = {
    "edit", "edit_file", "multiedit", "str_replace", "str_replace_based_edit_tool", "apply_patch", "patch", "replace",
    "write", "write_file", "create", "create_file", "notebookedit", "apply_edit", "insert", "file_change",
}
_SEARCH_TOOLS = {
    "grep", "glob", "search", "find", "list_files", "ls", "find_file", "search_dir", "search_file", "codebase_search",
    "list_dir", "file_search", "searchcode", "search_code", "websearch", "web_search",
}
_SHELL_TOOLS = {"bash", "shell", "exec", "run", "execute_bash", "terminal", "exec_command", "command", "run_command"}
_TODO_TOOLS = {"todowrite", "todo_write", "todo", "update_plan", "plan", "todoread"}
_EDITOR_TOOLS = {"str_replace_editor", "text_editor", "str_replace_based_edit_tool", "editor"}
_PATH_KEYS = ("path", "file_path", "filePath", "file", "filename", "target_file", "notebook_path", "file_pattern")

_READ_COMMANDS = {"cat", "head", "tail", "nl", "less", "more", "bat"}
_SEARCH_COMMANDS = {"grep", "rg", "ag", "find", "ls", "tree", "fd", "locate"}
_SYSTEM_PATTERNS = re.compile(
    r"\b(pip3?|uv|poetry|npm|yarn|pnpm|apt(-get)?|brew|cargo|go)\s+(install|add|remove|uninstall|get)\b"
    r"|\bgit\s+(commit|checkout|switch|reset|rebase|merge|push|apply|stash|am|cherry-pick)\b"
    r"|\b(migrate|makemigrations|alembic\s+upgrade)\b"
    r"|\b(rm|mv|cp|mkdir|chmod|chown|ln)\s"
)
_REDIRECT = re.compile(r"(?:^|[^<>&0-9])>>?\s*(?P<path>[^\s;&|<>]+)")
_SED_INPLACE = re.compile(r"\bsed\s+(?:-[a-zA-Z]*i[a-zA-Z]*|--in-place)\b")
_PATHLIKE = re.compile(r"^[\w.~/-]+\.[A-Za-z0-9]{1,8}$|^[\w.~-]*/[\w./~-]+$")


@dataclass(frozen=True)
class Action:
    """What one call did. ``paths`` are the files it read or changed; ``command`` the shell text, if any."""

    kind: str
    paths: tuple[str, ...] = ()
    command: str | None = None
    changes_system: bool = False


def _argument_paths(arguments: Mapping[str, Any]) -> tuple[str, ...]:
    found = []
    for key in _PATH_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value:
            found.append(value)
    for key in ("paths", "files", "changes"):
        value = arguments.get(key)
        if isinstance(value, list):
            found.extend(v if isinstance(v, str) else v.get("path", "") for v in value if isinstance(v, (str, Mapping)))
        elif isinstance(value, Mapping):
            found.extend(str(k) for k in value)
    return tuple(dict.fromkeys(p for p in found if p))


def _command_text(arguments: Mapping[str, Any]) -> str | None:
    for key in ("command", "cmd", "script", "code", "input"):
        value = arguments.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return " ".join(value)
    return None


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment, comments=False, posix=True)
    except ValueError:
        return segment.split()


def _file_operands(words: Iterable[str]) -> list[str]:
    return [w for w in words if not w.startswith("-") and _PATHLIKE.match(w) and not w.isdigit()]


def _sed_files(arguments: list[str]) -> list[str]:
    """The file operands of a sed command: everything but options and the script."""
    operands: list[str] = []
    scripted = False
    skip = False
    for word in arguments:
        if skip:
            skip = False
        elif word in ("-e", "--expression", "-f", "--file"):
            scripted = skip = True
        elif word.startswith("-"):
            scripted = scripted or word.startswith("-e")
        else:
            operands.append(word)
    return _file_operands(operands if scripted else operands[1:])


def classify_command(command: str) -> Action:
    """Classify a shell command line by its first meaningful segment and any writes it makes."""
    edits: list[str] = [m.group("path") for m in _REDIRECT.finditer(command) if m.group("path") not in ("/dev/null",)]
    edits = [p for p in edits if not p.startswith("&")]
    reads: list[str] = []
    searched = False
    for segment in re.split(r"&&|\|\||;|\n|\|", command):
        words = _words(segment.strip())
        while words and (words[0] in ("cd", "sudo", "time", "env") or "=" in words[0]):
            if words[0] == "cd":
                words = []
                break
            words = words[1:]
        if not words:
            continue
        program = words[0].rsplit("/", 1)[-1]
        if program == "sed":
            files = _sed_files(words[1:])
            (edits if _SED_INPLACE.search(segment) else reads).extend(files)
        elif program in _READ_COMMANDS:
            reads.extend(_file_operands(words[1:]))
        elif program in _SEARCH_COMMANDS or (program == "git" and words[1:2] == ["grep"]):
            searched = True
        elif program in ("tee",):
            edits.extend(_file_operands(words[1:]))
        elif program in ("patch",) or (program == "git" and words[1:2] == ["apply"]):
            edits.extend(_file_operands(words[1:]))
    changes_system = bool(_SYSTEM_PATTERNS.search(command))
    if edits:
        return Action(EDIT, tuple(dict.fromkeys(edits)), command, True)
    if reads:
        return Action(READ, tuple(dict.fromkeys(reads)), command, changes_system)
    if searched:
        return Action(SEARCH, (), command, changes_system)
    return Action(COMMAND, (), command, changes_system)


def classify(call: ToolCall) -> Action:
    """What ``call`` did, from its tool name and arguments."""
    name = call.name.lower().replace("-", "_")
    arguments = call.arguments or {}
    paths = _argument_paths(arguments)
    if name in _EDITOR_TOOLS:
        sub = str(arguments.get("command", "")).lower()
        return Action(READ if sub == "view" else EDIT, paths)
    if name in _READ_TOOLS:
        return Action(READ, paths)
    if name in _EDIT_TOOLS:
        return Action(EDIT, paths, changes_system=True)
    if name in _TODO_TOOLS:
        return Action(TODO)
    if name in _SEARCH_TOOLS:
        return Action(SEARCH, paths)
    command = _command_text(arguments)
    if command is not None and (name in _SHELL_TOOLS or not paths):
        return classify_command(command)
    return Action(OTHER, paths)


# --------------------------------------------------------------------------- errors in outputs

_ERROR_LINE = re.compile(
    r"(Traceback \(most recent call last\)|^\s*\w*(Error|Exception|Failure)\b[:(]|^E\s{2,}\S|\bFAILED\b|\berror:|"
    r"\bfatal:|\bpanic:|\b\d+ failed\b|command not found|No such file or directory|Permission denied|^\s*[\w.]*Error$)",
    re.MULTILINE,
)
_RETURN_CODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>|\bexit(?:ed with)? code:?\s*(-?\d+)", re.IGNORECASE)


def error_lines(text: str) -> list[str]:
    """The lines of a tool output that report an error, in order (stripped, non-empty)."""
    lines = []
    for match in _ERROR_LINE.finditer(text):
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        line = text[start : end if end != -1 else len(text)].strip()
        if line and (not lines or lines[-1] != line):
            lines.append(line)
    return lines


def failed(text: str, is_error: bool | None) -> bool:
    """Whether an output reports a failure: the flag, a non-zero return code, or an error line."""
    if is_error:
        return True
    code = _RETURN_CODE.search(text[:200]) or _RETURN_CODE.search(text[-200:])
    if code:
        return int(code.group(1) or code.group(2)) != 0
    return bool(error_lines(text))
