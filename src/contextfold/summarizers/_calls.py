"""What one tool call did, on its own: the tests or builds a command runs (and which earlier run a later one
covers), the scripts it runs, an issue it fetches, the todo list it sets, the text an edit wrote, and the one-line
descriptions a summary names calls by."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any

from ..actions import (_REDIRECTION, _SEGMENTS, EDIT, OTHER, READ, SEARCH, TODO, Action, command_outline, result_action,
                       written_text)
from ..conversation import Item, ToolCall
from ..readings import Key
from ._outputs import TEXT_CHARS, _kept_for, file_content
from ._text import shorten

RE_RUN_SIMILARITY = 0.6
"""Two commands are "the same" run when they start alike and share this fraction of their signature words."""
_ISSUE_FETCH = re.compile(r"\bgh (?:issue|pr) view\b|/(?:issues|pull)/\d+|\bgh api\b.*\b(?:issues|pulls)/\d+")
"""A command or URL that fetches an issue or pull request: its text is the task as it arrived."""
_TEST_RUN = re.compile(r"\b(?:pytest|py\.test|unittest|tox|nox|(?:npm|pnpm|yarn|bun) (?:run )?test|cargo test|go test|jest|"
                       r"vitest|mocha|rspec|phpunit|ctest|make (?:test|check)|runtests\.py|manage\.py test)\b")
"""A command that runs a test suite: once one passes, the failures of earlier test runs are behind the agent."""
_STATUS_QUERY = re.compile(r"--json[\s=]+(?![^\s|;&]*\b(?:body|title)\b)[\w,]+|--jq[\s=]+['\"]?\.(?!body|title)\w+")
"""A fetch of some fields of an issue or pull request that leaves out its text (``gh pr view 2 --json
state,mergedAt``): a status check, not the task."""
_BUILD_RUN = re.compile(r"(?:^|[;&|(]|\n)\s*(?:\w+=\S*\s+)*(?:(?:npx|uv run|poetry run|python3? -m)\s+)?(?:(?:npm|pnpm|yarn|bun) (?:run )?(?:build|lint|typecheck|type-check|check|compile)|tsc|"
                        r"cargo (?:build|check|clippy)|go (?:build|vet)|make|mypy|ruff|eslint|flake8|pylint|"
                        r"gradlew? (?:build|check|assemble)|mvnw? (?:compile|package|verify|install)|dotnet build|"
                        r"cmake --build|ninja|bazel (?:build|test))\b")
"""A command that builds or checks a project (a compiler, a type checker, a linter), where a command starts: how
it ended is where the agent stands, like a test run's."""
_ISSUE_ONLY = re.compile(r"\bgh issue view\b|/issues/\d+")
"""A command or URL that fetches an issue, not a pull request."""
_QUERY_KEYS = ("pattern", "query", "regex", "glob", "search_term", "file_name")
_TODO_LIST_KEYS = ("todos", "plan", "items", "tasks")
_TODO_TEXT_KEYS = ("content", "step", "task", "title", "description", "text")
_URL = re.compile(r"https?://[^\s\"'<>]+")


_RUNNER = re.compile(r"(?:^|[\s(])(?:python[0-9.]*|node|bash|sh|zsh|ruby|perl|php|deno|bun|ts-node|pytest|go\s+run)\s")
"""A word that runs the file named after it on the same command: an interpreter or a test runner."""


def _run_by(command: str, paths: list[str]) -> list[str]:
    """Those of ``paths`` that ``command`` runs, not only names (``sed -i … fix.py`` edits it, ``python fix.py``
    and ``./fix.py`` run it; ``python fix_totals.py`` does not run ``totals.py``). Only where the name stands is
    looked at, since a command that writes a script inline is long."""
    return [path for path in paths if any(_runs_at(command, at, len(_last_component(path)))
                                          for at in _occurrences(command, _last_component(path)))]


_VALUED_OPTIONS = frozenset({"-k", "-m", "-p", "-c", "-n", "-o", "-W", "--deselect", "--ignore", "--rootdir",
                             "--settings", "--parallel", "--testNamePattern", "-t"})
"""Options of test runners whose next word is their value, not a test selection."""
_NARROWING = frozenset({"-k", "-m", "--testNamePattern", "-t"})
"""Options that select tests by name or mark: the run is of those alone (kept with their value)."""
_TEST_WORD = re.compile(r"[\w./:\[\]-]+")


@lru_cache(maxsize=4_096)
def _test_selection(command: str) -> frozenset[str] | None:
    """What a test command runs: the words after its runner that name tests (paths, ids such as
    ``tests/a.py::test_b``, dotted labels), up to the end of its part of the command (empty: the whole suite);
    ``None`` when ``command`` runs no test suite.

    Remembered per command line, as :func:`~contextfold.actions.classify_command` is: each reading asks it again of
    every open error's command and of each later run that worked."""
    found = _TEST_RUN.search(command)
    if found is None:
        return None
    end = min((at for at in (command.find(sep, found.end()) for sep in ("&&", ";", "|", "\n", ">")) if at >= 0),
              default=len(command))
    words = command[found.end():end].split()
    return frozenset(f"{before} {word}" if before in _NARROWING else word for before, word in zip(["", *words], words)
                     if not word.startswith("-") and before not in _VALUED_OPTIONS - _NARROWING
                     and _TEST_WORD.fullmatch(word) and not word.isdigit())


@lru_cache(maxsize=4_096)
def runs_checks(command: str) -> bool:
    """Whether ``command`` runs a test suite or builds or checks the project: how it ended is the line it ended on,
    when it printed no tally. Remembered per command line, as :func:`_test_selection` is: each reading asks it of
    every command's output, and a long command (a script given inline) is searched whole."""
    return bool(_TEST_RUN.search(command) or _BUILD_RUN.search(command))


@lru_cache(maxsize=4_096)
def _check_runs(command: str) -> tuple[str, ...]:
    """The parts of ``command`` that build, check or test the project (``npm run lint``, ``pytest tests``), each
    as its words up to a redirection: what a later run must have run again to speak for a failure of ``command``
    (``npm run lint && npm run format:check && echo ok`` is two checks; the ``echo`` is none).

    Remembered per command line, as :func:`_test_selection` is (a long command, a script given inline, is split
    and searched word by word)."""
    parts = (part.split() for part in _SEGMENTS.split(command))
    runs = (" ".join(words[:next((i for i, w in enumerate(words) if _REDIRECTION.match(w)), len(words))])
            for words in parts)
    return tuple(dict.fromkeys(run for run in runs if _BUILD_RUN.match(run) or _TEST_RUN.search(run)))


def _shows_run(run: str, text: str) -> bool:
    """Whether ``text`` (a command and its output) names ``run`` whole: the command runs it, or a script runner
    echoed it (npm's ``> npm run lint && npm run format:check``, make's echo of each command it runs)."""
    words = r"\s+".join(re.escape(word) for word in run.split())
    return re.search(rf"(?<![\w:.-]){words}(?![\w:.-])", text) is not None


def _covers(later: frozenset[str], earlier: frozenset[str]) -> bool:
    """Whether a test run that selected ``later`` covers one that selected ``earlier`` (see :func:`_test_selection`):
    it runs the whole suite, or each test the earlier run selected, or a file or folder that holds it
    (``tests/a.py`` covers ``tests/a.py::test_b``, ``migrations`` covers ``migrations.test_x``). A pass of
    ``tests/test_a.py`` says nothing of a failure in ``tests/test_b.py``."""
    return not later or bool(earlier) and all(any(_within(test, run) for run in later) for test in earlier)


def _within(test: str, run: str) -> bool:
    """Whether selecting ``run`` runs ``test`` too: the same, or a folder, file or module that holds it."""
    run = run.rstrip("/")
    return test == run or any(test.startswith(run + separator) for separator in ("/", "::", "."))


def _occurrences(text: str, name: str) -> Iterator[int]:
    at = text.find(name)
    while at >= 0:
        yield at
        at = text.find(name, at + 1)


def _whole_name(text: str, at: int, length: int) -> bool:
    """Whether the name at ``at`` is a whole path component (``fix_totals.py`` holds no ``totals.py``)."""
    before = text[at - 1] if at else " "
    after = text[at + length] if at + length < len(text) else " "
    return not (before.isalnum() or before in "_.-" or after.isalnum() or after in "_.")


def _runs_at(command: str, at: int, length: int) -> bool:
    """Whether the name at ``at`` is a whole path component that its command (back to ``;``, ``&``, ``|`` or the
    line's start) runs."""
    if not _whole_name(command, at, length):
        return False
    start = max(command.rfind(separator, 0, at) for separator in ";&|\n") + 1
    words = command[start:at]
    return words.endswith("./") or _RUNNER.search(words) is not None


def _change(call: ToolCall, action: Action) -> str | None:
    """What an edit call changed, as "the last change to a file" shows it: the text written, else the command."""
    new_text = written_text(call)
    change = new_text if new_text is not None else action.command
    return shorten(change, TEXT_CHARS["change"]) if change is not None else None


_RAN: Key[tuple[str, str]] = Key("ran")
_FETCHES_ISSUE: Key[tuple[str, bool]] = Key("fetches_issue")


def _ran(item: Item | None, command: str) -> str:
    """``$ command`` on one line, as a summary names where an output came from (kept on the output's item)."""
    return _kept_for(item, _RAN, command, lambda: f"$ {_headline(command, TEXT_CHARS['command'])}")


def _fetches_issue(item: Item, call: ToolCall, action: Action) -> bool:
    """Whether the call fetches an issue or pull request (its output is then the task as it arrived).

    Kept on the output's item for the text it is read from: a summary asks it with the call its span holds, a
    stage that clears the output with the call the result links (another object, often with the same text)."""
    fetched = action.command[:2_000] if action.command else " ".join(
        str(v)[:500] for v in call.arguments.values() if isinstance(v, str))
    return _kept_for(item, _FETCHES_ISSUE, fetched,
                     lambda: bool(_ISSUE_FETCH.search(fetched)) and not _STATUS_QUERY.search(fetched))


def fetched_issue(item: Item) -> bool:
    """Whether a tool item answers a fetch of an issue or pull request (the task as it arrived), by the call its
    result links: what a stage that replaces the output keeps the head of."""
    result = item.tool_result
    action = result_action(item)  # classified once per item: a stage asks this of every output it clears
    if result is None or action is None or result.is_error:
        return False
    return _fetches_issue(item, ToolCall(result.call_id, result.tool_name or "", result.arguments or {}), action)


def _first_issue(kept: dict[str, str] | None, fetched: dict[str, str] | None) -> dict[str, str] | None:
    """Which fetched text is the task: the first one, unless it is a pull request's and ``fetched`` (later) is an
    issue's. A solver opens its own pull request with a placeholder ("[WIP] … details will be added") and may
    view it before the issue; the issue states the task, the placeholder does not."""
    if kept is None or fetched is None:
        return kept or fetched
    return fetched if _ISSUE_ONLY.search(fetched["source"]) and not _ISSUE_ONLY.search(kept["source"]) else kept


def todo_list(arguments: Mapping[str, Any]) -> list[dict[str, str]] | None:
    """The todo list a todo tool's call sets (:func:`_todo` each), or ``None`` when it sets none."""
    for key in _TODO_LIST_KEYS:
        entries = arguments.get(key)
        if isinstance(entries, list):
            return [_todo(entry) for entry in entries if isinstance(entry, (str, Mapping))]
    return None


def todo_line(todo: Mapping[str, str]) -> str:
    """One todo as a line: ``- [in progress] Run the tests``, with the form the harness shows while it runs when the
    list gives one (``(active form: Running the tests)``)."""
    active = f" (active form: {todo['active']})" if todo.get("active") else ""
    return f"- [{todo['status'].replace('_', ' ')}] {todo['text']}{active}"


def _todo(entry: str | Mapping[str, Any]) -> dict[str, str]:
    """A todo as ``{"text", "status"}``, and ``"active"``: the form Claude Code's ``TodoWrite`` asks beside the text
    (``activeForm``), which each later call writes again for every item of the list (without it, the agent rewriting
    the list after a compaction had to make up the form of every item)."""
    if isinstance(entry, str):
        return {"text": entry, "status": "pending"}
    text = next((str(entry[k]) for k in _TODO_TEXT_KEYS if isinstance(entry.get(k), str)), str(dict(entry)))
    todo = {"text": text, "status": str(entry.get("status") or entry.get("state") or "pending").lower()}
    active = entry.get("activeForm")
    if isinstance(active, str) and active.strip() and active != text:
        todo["active"] = active
    return todo


_SAME_PROGRAM = {"pnpm": "npm", "yarn": "npm", "bun": "npm", "pip3": "pip", "add": "install", "i": "install"}
"""Package managers of one ecosystem, and their verbs for adding a package: ``pnpm add axios`` after a failed
``npm install axios`` is the same step done another way (the person asked for pnpm), and settles it."""


def program_words(signature: Sequence[str]) -> tuple[str, ...]:
    """A command's signature words with each package manager and its verb for adding a package named alike
    (:data:`_SAME_PROGRAM`): what a later run is compared by to tell whether it ran the failed step again."""
    if _SAME_PROGRAM.keys().isdisjoint(signature):
        return tuple(signature)
    return tuple(_SAME_PROGRAM.get(word, word) for word in signature)


def _alike(mine: frozenset[str], theirs: frozenset[str]) -> bool:
    """Whether two commands that start alike are the same run: they share enough of their signature words."""
    return len(mine & theirs) >= RE_RUN_SIMILARITY * len(mine | theirs)


def _last_component(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _same_file(path: str, other: str) -> bool:
    """The same file written two ways (``./a/b.py``, ``/repo/a/b.py``, ``a/b.py``)."""
    a, b = path.removeprefix("./"), other.removeprefix("./")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _headline(command: str, max_chars: int) -> str:
    """A command on one line, here-document bodies left out."""
    return shorten("; ".join(line.strip() for line in command_outline(command).splitlines() if line.strip()), max_chars)


def _what(call: ToolCall, action: Action, max_chars: int) -> str:
    """What a call did, on one line: ``$ command``, ``read path``, ``searched with grep for `x```, ``called f(...)``."""
    if action.command:
        return f"$ {_headline(action.command, max_chars)}"
    if action.kind in (READ, EDIT) and action.paths:
        return f"{'read' if action.kind == READ else 'edited'} {', '.join(action.paths[:3])}"
    if action.kind == SEARCH:
        query = next((str(call.arguments[k]) for k in _QUERY_KEYS if call.arguments.get(k)), "")
        return f"searched with {call.name}" + (f" for `{shorten(query, 100)}`" if query else "")
    if action.kind == TODO:
        return f"called {call.name} (todo list)"
    return f"called {shorten(call_line(call), max_chars)}"


def _describe(call: ToolCall, action: Action, failure: str | None, unanswered: bool, ended: str | None) -> str:
    """One line for "last actions": what the call did, and the line its result ended on (or its failure). A read
    of a file ends on whichever line the range stopped at ("→ 820" after ``nl -ba core.py | sed -n 720,820p``),
    which concludes nothing: the read is named without it."""
    what = _what(call, action, 160)
    if unanswered:
        return f"{what} → no result yet"
    if failure is not None:
        return f"{what} → failed: {shorten(failure, TEXT_CHARS['result_line'])}"
    if action.kind == READ and file_content(action):
        return what
    if (action.command or action.kind in (OTHER, SEARCH)) and ended:
        return f"{what} → {ended}"
    return what


def call_line(call: ToolCall) -> str:
    """A call on one line with its arguments, each value shortened: ``book(user_id='mia_li', flights=[...])``.

    Arguments past ``TEXT_CHARS["call"]`` are left out whole (``, …``), never cut twice.
    """
    shown: list[str] = []
    size = len(call.name) + 2
    for key, value in call.arguments.items():
        argument = f"{key}={_argument(value)}"
        if shown and size + len(argument) > TEXT_CHARS["call"]:
            shown.append("…")
            break
        shown.append(argument)
        size += len(argument) + 2
    return f"{call.name}({', '.join(shown)})"


def gives_input(call: ToolCall) -> bool:
    """Whether the call hands over something of substance (text typed, a query, a record to book, an id to look
    up), rather than only moving around (a click on element 12, a page state, a URL: the pages say that)."""
    return any((isinstance(v, str) and v.strip() and not _URL.fullmatch(v.strip())) or isinstance(v, (list, dict))
               for v in call.arguments.values())


def _argument(value: Any) -> str:
    text = repr(value) if isinstance(value, (str, int, float, bool)) or value is None else json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), default=str)
    return shorten(" ".join(text.split()), TEXT_CHARS["argument"])
