"""What a tool call did, read off its name and arguments: read a file, edit one, search, run a command.

Agents name their tools differently (Claude Code's ``Read``/``Edit``, SWE-agent's
``str_replace_editor``, mini-swe-agent's single ``bash``), so the stages that
reason about files (snip superseded reads, restore recent files) and the
summarizer and probes that report them all go through this one classifier.
For shell commands it recognises the usual idioms (``cat``, ``sed -n``,
``sed -i``, heredocs into a file, ``git commit``, ``pip install``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from .conversation import Item, JSONObject, ToolCall
from .readings import Key

READ, EDIT, SEARCH, COMMAND, TODO, OTHER = "read", "edit", "search", "command", "todo", "other"

_READ_TOOLS = {"read", "read_file", "readfile", "file_read", "view", "open", "open_file", "get_file", "cat", "view_file"}
_EDIT_TOOLS = {
    "edit", "edit_file", "multiedit", "str_replace", "str_replace_based_edit_tool", "apply_patch", "patch", "replace",
    "write", "write_file", "create", "create_file", "notebookedit", "apply_edit", "insert", "file_change", "editcode",
}
_SEARCH_TOOLS = {
    "grep", "glob", "search", "find", "list_files", "ls", "find_file", "search_dir", "search_file", "codebase_search",
    "list_dir", "file_search", "searchcode", "search_code", "websearch", "web_search",
}
_SHELL_TOOLS = {"bash", "shell", "exec", "run", "execute_bash", "terminal", "exec_command", "command", "run_command"}
_TODO_TOOLS = {"todowrite", "todo_write", "todo", "update_plan", "plan", "todoread"}
_PLAN_PROPOSAL_TOOLS = {"exitplanmode", "exit_plan_mode"}
"""Tools an agent puts a plan to the user with (Claude Code's ExitPlanMode), in their ``plan`` argument."""
_EDITOR_TOOLS = {"str_replace_editor", "text_editor", "str_replace_based_edit_tool", "editor"}
_VERSION_SUFFIX = re.compile(r"_v\d+$")
"""A tool's version in its name (Cursor's ``edit_file_v2``): the same tool as the unversioned name."""
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
_QUOTED = re.compile(r"'[^']*'|\"(?:\\.|[^\"\\])*\"")
_PYTHON_WRITE = re.compile(
    r"""\bopen\(\s*(?P<q>['"])(?P<path>[^'"\n]+)(?P=q)\s*,\s*(?:mode\s*=\s*)?['"][wax]"""
    r"""|\bPath\(\s*(?P<q2>['"])(?P<path2>[^'"\n]+)(?P=q2)\s*\)\.write_(?:text|bytes)\("""
)
_RUNS_PYTHON = re.compile(r"\bpython[\d.]*\b")
_SED_INPLACE = re.compile(r"\bsed\s+(?:-[a-zA-Z]*i[a-zA-Z]*|--in-place)\b")
_PATHLIKE = re.compile(r"^[\w.~/-]+\.[A-Za-z0-9]{1,8}$|^[\w.~-]*/[\w./~-]+$")
_HEREDOC = re.compile(
    r"<<-?[ \t]*(?P<quote>['\"]?)(?P<tag>[A-Za-z_]\w*)(?P=quote)(?P<rest>[^\n]*)\n"
    r"(?P<body>.*?)(?:^\t*(?P=tag)[ \t]*$|\Z)",
    re.DOTALL | re.MULTILINE,
)
_SEGMENTS = re.compile(r"&&|\|\||;|\n|\|")
_REDIRECTION = re.compile(r"^\d*[<>]")
_SHELL_WORD = re.compile(r"""(?:'[^']*'|"(?:\\.|[^"\\])*"|\\.|[^\s'"\\])+""")
_QUOTING = re.compile(r"""'([^']*)'|"((?:\\.|[^"\\])*)"|\\(.)""")


@dataclass(frozen=True)
class Action:
    """What one call did. ``paths`` are the files it read or changed; ``command`` the shell text, if any.

    ``signature`` tells re-runs of the same command apart from other commands:
    program names and operands of its segments, without ``cd`` segments,
    options, redirections or here-document bodies (``cd /repo && python -m
    pytest tests/a.py -x -q`` gives ``("python", "pytest", "tests/a.py")``).
    ``written`` are the paths a ``>`` redirection writes whole (``>>`` appends); ``removed`` the files it deletes
    (``rm``, ``git rm``): after it they are gone, whatever an earlier read showed of them.
    """

    kind: str
    paths: tuple[str, ...] = ()
    command: str | None = None
    changes_system: bool = False
    signature: tuple[str, ...] = ()
    written: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


def _argument_paths(arguments: JSONObject) -> tuple[str, ...]:
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
    return tuple(dict.fromkeys(p for p in found if p and isinstance(p, str)))  # a change's "path" may be anything


def _command_text(arguments: JSONObject) -> str | None:
    for key in ("command", "cmd", "script", "code", "input"):
        value = arguments.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return " ".join(value)
    return None


def _unquote(match: re.Match[str]) -> str:
    return next(group for group in match.groups() if group is not None)


def _words(segment: str) -> list[str]:
    """Shell words with their quotes removed (``shlex.split`` is ten times slower and fails on unbalanced quotes)."""
    return [_QUOTING.sub(_unquote, w) if "'" in w or '"' in w or "\\" in w else w for w in _SHELL_WORD.findall(segment)]


def command_outline(command: str) -> str:
    """The command with each here-document body left out (its lines are data, not commands): what was run, briefly."""
    if "<<" not in command:
        return command
    return _HEREDOC.sub(lambda m: f"<<{m.group('tag')}{m.group('rest')}", command)


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


@lru_cache(maxsize=4_096)
def python_writes(source: str) -> list[str]:
    """The files Python ``source`` opens for writing (``open('a.py', 'w')``, ``Path('a.py').write_text(…)``), in
    order: what running it changes."""
    return [m.group("path") or m.group("path2") for m in _PYTHON_WRITE.finditer(source)]


@lru_cache(maxsize=4_096)
def classify_command(command: str) -> Action:
    """Classify a shell command line by its first meaningful segment and any writes it makes.

    Remembered per command line: the same command is classified from its call,
    from its result, and again by each stage and summary that reads the history.
    """
    script = command_outline(command)
    unquoted = _QUOTED.sub("''", script)  # a ">" inside quotes ("pkg>=1.2", "a > b") is not a redirection
    redirected = [m for m in _REDIRECT.finditer(unquoted) if m.group("path") != "/dev/null" and not m.group("path").startswith("&")]
    edits: list[str] = [m.group("path") for m in redirected]
    written = tuple(m.group("path") for m in redirected if ">>" not in m.group(0))
    if _RUNS_PYTHON.search(script):  # a Python script given inline or in a here-document, run by this command
        edits += python_writes(command)
    reads: list[str] = []
    removed: list[str] = []
    signature: list[str] = []
    searched = False
    for segment in _SEGMENTS.split(script):
        words = _words(segment.strip())
        while words and (words[0] in ("cd", "sudo", "time", "env") or "=" in words[0]):
            if words[0] == "cd":
                words = []
                break
            words = words[1:]
        if not words:
            continue
        signature.extend(w for w in words if not w.startswith("-") and not _REDIRECTION.match(w))
        program = words[0].rsplit("/", 1)[-1]
        if program == "sed":
            files = _sed_files(words[1:])
            (edits if _SED_INPLACE.search(segment) else reads).extend(files)
        elif program in _READ_COMMANDS:
            reads.extend(_file_operands(words[1:]))
        elif program in _SEARCH_COMMANDS or (program == "git" and words[1:2] == ["grep"]):
            searched = True
        elif program in ("tee", "patch") or (program == "git" and words[1:2] == ["apply"]):
            edits.extend(_file_operands(words[1:]))
        elif program == "git" and (words[1:2] == ["restore"] or (words[1:2] == ["checkout"] and "--" in words)):
            # a file put back as the last commit has it (``git checkout -- a.py``): a change to it, not a branch switch
            edits.extend(_file_operands(words[words.index("--") + 1:] if "--" in words else words[2:]))
        elif program == "rm" or (program == "git" and words[1:2] == ["rm"]):
            removed.extend(_file_operands(words[1 if program == "rm" else 2:]))
    changes_system = bool(_SYSTEM_PATTERNS.search(script))
    if edits:
        kind, paths, changes_system = EDIT, edits, True
    elif reads:
        kind, paths = READ, reads
    else:
        kind, paths = (SEARCH if searched else COMMAND), []
    return Action(kind, tuple(dict.fromkeys(paths)), command, changes_system, tuple(signature), written,
                  tuple(dict.fromkeys(removed)))


_CALL_ACTIONS: Key[tuple[Action, ...]] = Key("call_actions")
_RESULT_ACTION: Key[Action] = Key("result_action")


def call_actions(item: Item) -> tuple[Action, ...]:
    """The actions of an item's tool calls, classified once per item object (kept in ``item.readings``)."""
    actions = item.readings.get(_CALL_ACTIONS)
    if actions is None:
        actions = item.readings.set(_CALL_ACTIONS, tuple(classify(call) for call in item.tool_calls))
    return actions


def result_action(item: Item) -> Action | None:
    """What the call a tool item answers did (from the linked name and arguments), once per item object."""
    result = item.tool_result
    if result is None:
        return None
    action = item.readings.get(_RESULT_ACTION)
    if action is None:
        action = item.readings.set(_RESULT_ACTION, classify(ToolCall(result.call_id, result.tool_name or "", result.arguments or {})))
    return action


def proposed_plan(call: ToolCall) -> str | None:
    """The plan ``call`` puts to the user for approval, or ``None`` when it puts none.

    Once approved it is the agent's own list of steps, files and values, which it then works from turn after turn
    without repeating it."""
    plan = (call.arguments or {}).get("plan") if call.name.lower() in _PLAN_PROPOSAL_TOOLS else None
    return plan.strip() if isinstance(plan, str) and plan.strip() else None


def classify(call: ToolCall) -> Action:
    """What ``call`` did, from its tool name and arguments."""
    name = _VERSION_SUFFIX.sub("", call.name.lower().replace("-", "_"))
    arguments = call.arguments or {}
    paths = _argument_paths(arguments)
    if name in _EDITOR_TOOLS:
        sub = str(arguments.get("command", "")).lower()
        return Action(READ if sub == "view" else EDIT, paths)
    if name in _READ_TOOLS:
        return Action(READ, paths)
    if name in _EDIT_TOOLS:
        return Action(EDIT, paths or _patched_paths(arguments), changes_system=True)
    if name in _TODO_TOOLS:
        return Action(TODO)
    if name in _SEARCH_TOOLS:
        return Action(SEARCH, paths)
    command = _command_text(arguments)
    if command is not None and (name in _SHELL_TOOLS or not paths):
        return classify_command(command)
    return Action(OTHER, paths)


# --------------------------------------------------------------------------- what an edit wrote

_NEW_TEXT_KEYS = (
    "new_string", "new_str", "new", "new_text", "content", "file_text", "text", "replace", "insert_text", "code_edit",
)
_PATCH_KEYS = ("unified_diff", "patch", "diff", "input")
_PATCH_FILE = re.compile(r"^(?:\*\*\* (?:Add|Update|Delete) File: |\+\+\+ (?:b/)?)(?P<path>\S[^\n]*?)[ \t]*$", re.MULTILINE)


def _patched_paths(arguments: JSONObject) -> tuple[str, ...]:
    """The files a patch text (apply_patch's ``input``, a unified diff) names."""
    for key in _PATCH_KEYS:
        value = arguments.get(key)
        if isinstance(value, str):
            found = [m.group("path") for m in _PATCH_FILE.finditer(value) if m.group("path") != "/dev/null"]
            if found:
                return tuple(dict.fromkeys(found))
    return ()


def applied_paths(output: str) -> tuple[str, ...]:
    """The files named by the unified diff an edit's output shows (``+++ path``), its own text or a JSON object's
    ``diff``: what an edit tool whose arguments name no file changed (moatless-tools' ``EditCode`` edits the file
    of its state and answers ``{"message": "Applied the change to requests/sessions.py.", "diff": "--- …"}``)."""
    if output.lstrip().startswith("{"):
        try:
            value = json.loads(output)
        except ValueError:
            value = None
        if isinstance(value, Mapping):
            return _patched_paths(value)
    return _patched_paths({"diff": output})


def _added_lines(patch: str) -> str:
    return "\n".join(line[1:] for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++"))


def _written(arguments: JSONObject) -> str | None:
    for key in _NEW_TEXT_KEYS:
        value = arguments.get(key)
        if isinstance(value, str):
            return value
    for key in _PATCH_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and ("\n+" in value or value.startswith("+")):
            return _added_lines(value)
    for key in ("edits", "changes"):
        value = arguments.get(key)
        last = list(value.values())[-1] if isinstance(value, Mapping) and value else None
        last = value[-1] if isinstance(value, list) and value else last
        if isinstance(last, Mapping):
            nested = [v for v in last.values() if isinstance(v, Mapping)]
            for candidate in (last, *nested):
                text = _written(candidate)
                if text is not None:
                    return text
    return None


def written_text(call: ToolCall) -> str | None:
    """The text an edit call writes, for reports of "the last change to a file".

    The new string of a replacement (the last one of a multi-edit), the
    content of a written file, the added lines of a patch, or the body of a
    here-document a shell command writes; ``None`` when the call does not
    carry it (``sed -i``, an editor that only names the file). Only meaningful
    for calls :func:`classify` calls edits: other tools use the same keys
    (``text``, ``content``) for other things.
    """
    arguments = call.arguments or {}
    text = _written(arguments)
    if text is not None:
        return text
    command = _command_text(arguments)
    bodies = [m.group("body") for m in _HEREDOC.finditer(command)] if command and "<<" in command else []
    return bodies[-1] if bodies else None


# --------------------------------------------------------------------------- errors in outputs

_ERROR_LINE = re.compile(
    r"(Traceback \(most recent call last\)|^\s*\w*(Error|Exception|Failure)\b[:(]|^E\s{2,}\S|^[^\"'=(\n]*\bFAILED\b(?![\"'])|"
    r"(?<!as )\berror(\[\w+\])?:(?!:)|::error::|##\[error\]|\bfatal:|\bpanic:|\b[1-9]\d* failed\b|command not found|No such file or directory|"
    r"Permission denied|^\s*[\w.]*Error$|^\s*(?:Command|Process|Execution|Operation) timed out\b|"
    r"^\s*(?:--- )?FAIL\b|\tfail\t|^\[warn\] Code style issues)",
    re.MULTILINE,
)
"""A line that reports an error; among them prettier's verdict, ``[warn] Code style issues found in 2 files. Run
Prettier with --write to fix.``, the failure of ``prettier --check`` (the ``[warn] path`` lines above it are its
files, not failures of their own)."""
_ERROR_HINT = re.compile(
    r"rror|xception|ailure|Traceback|FAIL|fatal:|panic:|failed|not found|No such file|Permission denied|^E\s\s|"
    r"timed out|\tfail\t|Code style issues",
    re.MULTILINE,
)
"""Words every line :data:`_ERROR_LINE` matches contains: a cheap first pass, so the full pattern runs on few lines."""
WARNING_LINE = re.compile(
    r"^\s*(?:\S+:\d+(?::\d+)?:\s*)?(?:[Ww]arning(?:\[[\w-]+\])?:|WARNING\b|npm WARN\b|WARN\b|\w*Warning:)")
"""A line a tool prints as a warning, not a failure: git's ``warning: … LF will be replaced by CRLF``, a compiler's
``file.c:3:5: warning:``, ``npm WARN deprecated``, Python's ``x.py:12: DeprecationWarning: …``. A warning may
name an error it warns about (``warning: ignoring error: …``); it is still no failure of the command."""
READER_GUTTER = re.compile(r"^\s*\d+(?:→|\t)")
"""The line-number gutter a file reader prints (Claude Code's ``  5→``, ``cat -n``'s ``5<TAB>``)."""
_ECHOED_LINES = re.compile(r"^[ \t]*\d+(?:→|\t).*$", re.MULTILINE)
"""Lines an edit tool echoes back from the file it changed, under a reader's gutter."""
_RETURN_CODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>|\bexit(?:ed with)? code:?\s*(-?\d+)", re.IGNORECASE)
_MARKUP_LINE = re.compile(r"^(</?output>|<returncode>.*</returncode>|exit(?:ed with)? code:?\s*-?\d+)$", re.IGNORECASE)
_SCAN_HEAD_CHARS = 4_000
_SCAN_TAIL_CHARS = 16_000
"""Where a long output reports its failure: a command's first complaint, and the traceback or tally at the end."""


def error_lines(text: str) -> list[str]:
    """The lines of a tool output that report an error, in order (stripped, non-empty)."""
    lines: list[str] = []
    scanned_to = -1
    for hint in _ERROR_HINT.finditer(text):
        if hint.start() < scanned_to:
            continue
        start = text.rfind("\n", 0, hint.start()) + 1
        end = text.find("\n", hint.end())
        end = end if end != -1 else len(text)
        scanned_to = end
        line = text[start:end]
        if _ERROR_LINE.search(line) and not WARNING_LINE.match(line):
            line = line.strip()
            if line and (not lines or lines[-1] != line):
                lines.append(line)
    return lines


def reported_error_lines(text: str) -> list[str]:
    """:func:`error_lines` of the head and tail of a long output (whole lines), of all of a short one.

    Where a failure is reported (a command's first complaint, the traceback or
    tally at the end), at a bounded cost however long the output.
    """
    if len(text) <= _SCAN_HEAD_CHARS + _SCAN_TAIL_CHARS:
        return error_lines(text)
    head_end = text.rfind("\n", 0, _SCAN_HEAD_CHARS)
    tail_start = text.find("\n", len(text) - _SCAN_TAIL_CHARS) + 1
    return error_lines(text[: max(head_end, 0)]) + error_lines(text[tail_start:])


def return_code(text: str) -> int | None:
    """The exit status an output states (mini-swe-agent's ``<returncode>``, ``exit code N``) near either end, if any."""
    match = _RETURN_CODE.search(text[:200]) or _RETURN_CODE.search(text[-200:])
    return int(match.group(1) or match.group(2)) if match else None


def failed(text: str, is_error: bool | None, kind: str | None = None) -> bool:
    """Whether an output reports a failure.

    The source's own flag decides when it gave one; then a stated return code
    (a search's exit status 1 with no error line is "no match", not a failure);
    then a tool's refusal (:func:`refused_by_tool`); then error lines, except in what a read or search returned
    (``kind``), which
    is file content that merely mentions errors, and in the file an edit tool
    shows back under a reader's gutter (Claude Code's ``183→    } catch (error: any) {``).
    """
    if is_error is not None:
        return is_error
    if refused_by_tool(text):  # the harness's own report that it refused the call, kept by an export without the flag
        return True
    code = return_code(text)
    if code is not None:
        return code != 0 and not (kind == SEARCH and code == 1 and not reported_error_lines(text))
    if kind == EDIT:  # an edit tool shows the changed file back: a line of it naming an error is code
        text = _ECHOED_LINES.sub("", text) if "→" in text or "\t" in text else text
    return kind not in (READ, SEARCH) and bool(reported_error_lines(text))


def failure_line(text: str, is_error: bool | None, kind: str | None = None) -> str | None:
    """The line naming the failure an output reports, verbatim (stripped); ``None`` when it reports none.

    Remembered per output up to :data:`_REMEMBERED_CHARS` (the string is held
    by the history anyway, and keeps its hash): each stage and summary that
    reads an output asks again. A larger output is not held: it goes to disk.
    """
    if len(text) > _REMEMBERED_CHARS:
        return _failure_line(text, is_error, kind)
    return _remembered_failure_line(text, is_error, kind)


def echoed(line: str, arguments: Mapping[str, object] | None) -> bool:
    """Whether ``line`` of an output is the call's own input given back (a plan the person approved, quoted whole
    with the example run it shows: ``SUMMARY: 14 passed, 1 failed``), not something the call produced."""
    return bool(arguments) and any(isinstance(value, str) and line in value for value in (arguments or {}).values())


def item_failure_line(item: Item, kind: str | None = None) -> str | None:
    """:func:`failure_line` of a tool item's output; for an output a stage replaced, the line it reported before
    (:attr:`~contextfold.conversation.Provenance.failure_line`: the placeholder quotes that line inside its own
    note, and the note read as an output is no error line)."""
    recorded = item.provenance.failure_line
    if recorded is not None:
        return recorded or None  # "": the output did not fail
    result = item.tool_result
    if result is None:
        return None
    line = failure_line(result.text, result.is_error, kind)
    if line is not None and result.arguments and no_match(str(result.arguments.get("command") or ""), result.text):
        return None
    if line is not None and result.is_error is None and result.arguments and return_code(result.text) is None and \
            not refused_by_tool(result.text) and all(echoed(reported, result.arguments)
                                                     for reported in reported_error_lines(result.text)):
        return None  # failed by error lines alone, each the call's own input given back: an approved plan's text
    return line


_MATCHERS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack"})
"""Programs whose exit status 1 means "no line matched", by their documented convention (POSIX grep, ripgrep)."""
_NO_MATCH_CODES = {1: "", 123: "xargs"}
"""Exit statuses of a search that found nothing: the matcher's own 1, or 123 from ``xargs`` running it (xargs exits
123 when any run of the command exited 1 to 125)."""


def no_match(command: str, text: str) -> bool:
    """Whether ``text``, the output of ``command``, is a search that matched nothing (``grep`` exit 1, ``… | xargs grep``
    exit 123) rather than a failure: the last stage of the command is the matcher and no error line is reported."""
    code = return_code(text)
    if code not in _NO_MATCH_CODES or not command or reported_error_lines(text):
        return False
    last = re.split(r"\|\|?|&&|;", command.strip().splitlines()[-1] if command.strip() else "")[-1].split()
    if _NO_MATCH_CODES[code]:  # run through xargs: its command follows its options
        if not last or last[0] != _NO_MATCH_CODES[code]:
            return False
        last = [word for word in last[1:] if not word.startswith("-")]
    words = [word for word in last if "=" not in word or word.startswith("-")]  # past VAR=value prefixes
    return bool(words) and (words[0].rsplit("/", 1)[-1] in _MATCHERS or words[:2] == ["git", "grep"])


_INTERRUPTED = re.compile(r"\s*\[Request interrupted by user[^\]\n]*\]")
"""Claude Code's notice opening the output of a call the person interrupted."""
_TOOL_USE_ERROR = re.compile(r"\s*(?P<line><tool_use_error>[^\n]*)")
"""Claude Code's report of a call its tool refused (an Edit whose old text is not in the file): the message is the
block's first line (kept verbatim, its tag with it); the lines after it quote the call's own arguments
(``String: …``), file text, not the failure."""
_LOGGED_ERROR = re.compile(r"^.{0,40}?\[(?:ERROR|FATAL|CRITICAL)\](?:\x1b\[[0-9;]*m)?(?P<message>.*)$")
"""A line a program logged at error level under a bracketed tag (maven's ``[ERROR] Failed to execute goal …``, a
script's coloured ``\x1b[0;31m[ERROR]\x1b[0m Insufficient space …``), after at most a timestamp or a colour code."""
_NPM_CODE = re.compile(r"^npm (?:error|ERR!) code \S+[ \t]*$", re.MULTILINE)
_NPM_PREFIX = re.compile(r"^npm (?:error|ERR!)")
_REMEMBERED_CHARS = 32_768
EXIT_FAILURE_ENDED = "; its output ended: "
"""Joins a failure by exit status alone to the last line its output printed (see :func:`failure_line`)."""


def _failure_line(text: str, is_error: bool | None, kind: str | None = None) -> str | None:
    """:func:`failure_line`, computed.

    That is its last error line. An output that failed by its exit status
    alone says so, with the last line it printed (which is no error of its
    own: a script's heading, a progress line): ``exit code 1; its output
    ended: === Step 2 ===``. A message its source flagged as an error is
    named by its last line that is not framing (``<output>``) nor a warning
    (:data:`WARNING_LINE`: git's notes on line endings printed after Claude
    Code's "[Request interrupted by user for tool use]"). A tool's refusal
    (Claude Code's ``<tool_use_error>``) is named by its message, its first line:
    the rest quotes the call's arguments (:data:`_TOOL_USE_ERROR`); npm's failure
    by its message, not the note of where its log is (:func:`_npm_message`).
    """
    if not failed(text, is_error, kind):
        return None
    refused = refused_by_tool(text)
    if refused is not None:
        return refused
    reported = reported_error_lines(text)
    if reported:
        return reported[-1]
    npm = _npm_message(text) if "npm " in text else None
    if npm is not None:
        return npm
    interrupted = _INTERRUPTED.match(text)
    if interrupted:  # the person stopped it: that, not the progress it printed before it stopped, is its failure
        return interrupted.group(0).strip()
    logged = _logged_cause(text)
    if logged is not None:
        return logged
    tail = text[text.find("\n", len(text) - _SCAN_TAIL_CHARS) + 1 :] if len(text) > _SCAN_TAIL_CHARS else text
    lines = [line.strip() for line in tail.splitlines() if line.strip()]  # whole lines
    meaningful = [line for line in lines if not _MARKUP_LINE.match(line)]
    if meaningful and WARNING_LINE.match(meaningful[-1]):  # a warning is no failure: the last line that is not one,
        # at the tail or else at the head (an interrupt notice before a long run of warnings)
        head = [line.strip() for line in text[: max(text.rfind("\n", 0, _SCAN_HEAD_CHARS), 0)].splitlines() if line.strip()]
        quiet = [line for line in (*head, *meaningful) if not (_MARKUP_LINE.match(line) or WARNING_LINE.match(line))]
        meaningful = quiet or meaningful
    code = return_code(text)
    if code:
        return f"exit code {code}{EXIT_FAILURE_ENDED}{meaningful[-1]}" if meaningful else f"exit code {code}, no output"
    return (meaningful or lines or ["(no output)"])[-1]


def refused_by_tool(text: str) -> str | None:
    """The message of a tool's refusal of its call, when ``text`` is one (Claude Code's ``<tool_use_error>…``, see
    :data:`_TOOL_USE_ERROR`), else ``None``. The harness writes it only for a call that failed, so it is a failure
    even where the source kept no error flag (a chat export of a Claude Code session)."""
    refused = _TOOL_USE_ERROR.match(text) if "<tool_use_error>" in text[:40] else None
    return refused.group("line").strip() if refused is not None else None


def _logged_cause(text: str) -> str | None:
    """The cause a program that logs under level tags gave for its failure: the first line of its last run of
    ``[ERROR]`` lines that says something. Such a run opens with the cause and goes on with its consequences and
    advice (``Insufficient space in buildpool`` / ``Pre-flight checks failed`` / ``Fix the issues above and try
    again``; maven's ``Failed to execute goal …: Compilation failure`` / the file and line / ``-> [Help 1]`` /
    where to read more): its last line, or the last line printed, names no cause."""
    tail = text[text.find("\n", len(text) - _SCAN_TAIL_CHARS) + 1 :] if len(text) > _SCAN_TAIL_CHARS else text
    cause: str | None = None
    in_run = False
    for line in tail.splitlines():
        logged = _LOGGED_ERROR.match(line) if "[" in line else None
        if logged is None:
            in_run = False
        elif not in_run or cause is None:
            in_run = True
            cause = line.strip() if logged.group("message").strip() else None
    return cause


def _npm_message(text: str) -> str | None:
    """npm's own message of its failure: the line after its last ``npm error code ERESOLVE`` (``npm error ERESOLVE
    unable to resolve dependency tree``). npm ends every failure with where its log is ("A complete log of this run
    can be found in: …"), which says nothing of what failed."""
    codes = list(_NPM_CODE.finditer(text))
    if not codes:
        return None
    after = text[codes[-1].end():].lstrip("\n").split("\n", 1)[0].strip()
    return after if _NPM_PREFIX.sub("", after).strip() else codes[-1].group(0).strip()


_remembered_failure_line = lru_cache(maxsize=4_096)(_failure_line)
