"""restore: after a summary, put back what the agent was just working with.

A summary says which files were read and edited; the agent usually needs
their contents again at once. Claude Code re-reads the most recently used
files after compacting; here the latest content each file had in the
summarized span is restored (capped per file and in all; the newest, the
file in hand, whole when it fits the cap in all; what an applied edit wrote,
for a harness whose edit call names the path only, cut to the room left
rather than dropped: no output holds it to fetch again), with the plan the agent
last put to the user (Claude Code's ExitPlanMode: once approved, the steps,
files and values it works from) and the latest todo or plan state, unless
the kept tail already shows them. Only files the
agent is still working with come back: those whose path its recent turns
keep naming (:mod:`.importance`, at least ``min_weight``), and those it read or
wrote in the last rounds before the cut, since the person last spoke (its later
turns have not had the time to name them: it read a README and a package.json
to write a document from them, and the summary took both); a file read once
long ago costs more to carry than to read again. A file's latest content is
its latest read with the agent's later replacements applied to it, or what
the agent last wrote whole (a ``Write`` call's content, a here-document
``cat`` wrote): the agent's next edit quotes its last one's new text. A
text-mode agent's commands (mini-swe-agent) are read as calls for this.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence

from ..actions import EDIT, READ, TODO, call_actions, classify, proposed_plan, result_action, written_text
from ..conversation import Item, JSONObject, Provenance, Text, ToolCall
from ..reading import slashed, text_call, text_result, without_wrappers
from ..summarizers._calls import todo_line, todo_list
from .edits import MARK, current_turn_start, head_tail, is_compacted, is_placeholder
from .importance import References

CHARS_PER_TOKEN = 4
"""Used only to turn a token cap into a character cut; the result is measured afterwards."""
RESTORED_HEADING = f"{MARK}: files and state restored after compaction, as last seen]"
"""The first line of the restored-files item: how it is known again in a history a framework stored as text."""


def written_in_reply(reply: Item, path: str) -> str | None:
    """The text a reply wrote for ``path`` when the harness applied the edit from the reply itself (aider: a
    line naming the file, then a fenced whole file or SEARCH/REPLACE block), its fenced blocks joined; ``None``
    when the reply writes none.

    Such a harness's edit call holds the path only, so the file's latest text is in the reply, and nowhere else in
    the conversation: the person's ``/add`` sends the file without recording it. Left out of the restore, the
    next edit of the same file has nothing to quote."""
    name = slashed(path)
    lines = reply.text.splitlines()
    blocks: list[str] = []
    index = 0
    while index < len(lines):
        fence = _fence_of(lines, index, name)
        if fence is None:
            index += 1
            continue
        end = next((i for i in range(fence + 1, len(lines)) if lines[i].startswith("```")), len(lines))
        blocks.append("\n".join(lines[fence + 1 : end]))
        index = end + 1
    return "\n".join(blocks) if blocks else None


def _fence_of(lines: Sequence[str], index: int, name: str) -> int | None:
    """The line opening the fenced block that ``lines[index]`` starts for the file ``name``: a line naming the file
    with the fence next (``path`` then ```` ```lang ````), or a fence whose first line names it (the path inside)."""
    named = slashed(lines[index].strip().strip("`*")) == name
    if named and index + 1 < len(lines) and lines[index + 1].startswith("```"):
        return index + 1
    inside = index + 1 < len(lines) and slashed(lines[index + 1].strip()) == name
    return index if lines[index].startswith("```") and inside else None


def _replies(span: Sequence[Item]) -> dict[str, Item]:
    """The reply holding each call whose arguments are its paths alone (the edit was written in the reply)."""
    return {call.id: item for item in span for call in item.tool_calls
            if set(call.arguments) <= {"path", "paths", "file", "file_path"}}


JUST_USED_ROUNDS = 2
"""Files read or written in this many of the span's last rounds, in the current turn, are the agent's material at
hand."""
STALE = " (edited after this read: check the current version before relying on it)"
WRITTEN = " (as the agent's last applied edit wrote it: the edited parts only, unless it wrote the whole file)"
WROTE = " (as the agent last wrote it, whole)"
EDITED = " (as last read or written, with the agent's later edits applied)"
_GUTTER = re.compile(r"^(\s*)(\d+)(→|\t)")
"""A reader's line-number gutter (:data:`~contextfold.actions.READER_GUTTER`), its parts captured."""
_WHOLE_FILE_KEYS = ("content", "file_text")
"""The argument holding the whole text of a file a write call creates or overwrites (Claude Code's ``Write``, an
editor's ``create``); a replacement names the old text beside it (``old_string``, ``old_str``)."""
_CAT_HEREDOC = re.compile(r"(?:^|&&|;|\n)\s*cat\s+(?:<<-?\s*(['\"]?)(\w+)\1\s*>\s*\S+|>\s*\S+\s*<<-?\s*(['\"]?)(\w+)\3)")
"""A shell command writing one here-document whole to a file: ``cat <<'EOF' > path`` or ``cat > path <<EOF``."""


def _whole_file(arguments: JSONObject) -> str | None:
    """The whole text an edit call wrote to its file, when it wrote the whole file: a write call's content, or the
    here-document a shell command wrote with ``cat`` (a text-mode agent's reproduction script, which its next
    script copies)."""
    if any(key.startswith("old") for key in arguments):
        return None
    command = arguments.get("command")
    if isinstance(command, str) and ">>" not in command and command.count("<<") == 1 and _CAT_HEREDOC.search(command):
        return written_text(ToolCall("", "", arguments))
    return next((value for key in _WHOLE_FILE_KEYS if isinstance(value := arguments.get(key), str)), None)


def answered(items: Sequence[Item]) -> list[Item]:
    """``items`` with the outputs a text-mode harness sent back as user messages read as the tool items answering
    the commands before them (:func:`~contextfold.reading.text_result`): what the agent read and wrote by its
    commands is then found as a tool-calling agent's is."""
    out: list[Item] = []
    call: ToolCall | None = None
    for item in items:
        answer = text_result(item, call) if call is not None and item.role == "user" else None
        out.append(answer if answer is not None else item)
        call = text_call(item)
    return out


def _replacements(arguments: JSONObject) -> list[tuple[str, str, bool]] | None:
    """The ``(old, new, every occurrence)`` replacements an edit call makes, in order (Claude Code's ``Edit`` and
    ``MultiEdit``, an editor's ``str_replace``); ``None`` when it makes none this can apply (an insert at a line, a
    patch, ``sed -i``)."""
    edits = arguments.get("edits")
    entries = edits if isinstance(edits, list) else [arguments]
    found: list[tuple[str, str, bool]] = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            return None
        old, new = entry.get("old_string", entry.get("old_str")), entry.get("new_string", entry.get("new_str"))
        if not isinstance(old, str) or not isinstance(new, str) or not old:
            return None
        found.append((old, new, entry.get("replace_all") is True))
    return found or None


def _numbered(text: str) -> tuple[list[str], int, int, str] | None:
    """A reader's numbered lines as ``(lines, first number, gutter width, separator)``; ``None`` when ``text`` is not
    under a reader's gutter (:data:`~contextfold.actions.READER_GUTTER`) throughout."""
    rows = text.split("\n")
    first = _GUTTER.match(rows[0]) if rows else None
    if first is None or not all(_GUTTER.match(row) for row in rows if row.strip()):
        return None
    lines = [row[match.end():] if (match := _GUTTER.match(row)) else row for row in rows]
    return lines, int(first.group(2)), len(first.group(1)) + len(first.group(2)), first.group(3)


def _with_edits(content: str, replacements: Sequence[tuple[str, str, bool]]) -> str | None:
    """``content`` with ``replacements`` applied, in its reader's gutter renumbered from the same first line (lines
    before the first change keep their numbers); ``None`` when one of them does not apply (the read was of other
    lines, or the file changed in between)."""
    numbered = _numbered(content)
    text = "\n".join(numbered[0]) if numbered is not None else content
    for old, new, every in replacements:
        if old not in text:
            return None
        text = text.replace(old, new) if every else text.replace(old, new, 1)
    if numbered is None:
        return text
    _, number, width, separator = numbered
    return "\n".join(f"{str(number + k).rjust(width)}{separator}{line}" for k, line in enumerate(text.split("\n")))


def latest_files(span: Sequence[Item]) -> list[tuple[str, str | None, str]]:
    """``(path, latest content or None, what that content is)`` newest first, one entry per path, read in order: the
    latest read, with the replacements the agent's later edits made applied to it (:data:`EDITED`: the agent's next
    edit quotes its last one's new text), or :data:`STALE` when an edit came after it that cannot be applied;
    what the latest edit wrote when the reply itself held the edit (:data:`WRITTEN`, :func:`written_in_reply`); or
    the whole file the latest write call wrote (:data:`WROTE`: an agent writing its third hook copies the second's
    lines). A failed edit changed nothing."""
    known: dict[str, tuple[str | None, str]] = {}
    touched: dict[str, int] = {}
    replies = _replies(span)
    for index, item in enumerate(span):
        result = item.tool_result
        action = result_action(item)
        if result is None or action is None:
            continue
        for path in action.paths:
            touched[path] = index
            content, note = known.get(path, (None, ""))
            if action.kind == READ and not is_placeholder(item):
                known[path] = (without_wrappers(result.text), "")  # a harness's reminder is no file content
            elif action.kind != EDIT or result.is_error:
                known.setdefault(path, (None, ""))
            elif (reply := replies.get(result.call_id)) is not None and (written := written_in_reply(reply, path)):
                known[path] = (written, WRITTEN)
            elif (whole := _whole_file(result.arguments or {})) is not None:
                known[path] = (whole, WROTE)
            else:
                replacements = _replacements(result.arguments or {})
                edited = None if content is None or note in (STALE, WRITTEN) or replacements is None else (
                    _with_edits(content, replacements))
                known[path] = (edited, EDITED) if edited is not None else (content, STALE)
    return [(path, *known[path]) for path in sorted(touched, key=touched.__getitem__, reverse=True)]


def _whole_lines(text: str, head_chars: int, tail_chars: int) -> tuple[int, int]:
    """``head_chars`` and ``tail_chars`` moved back to the nearest line ends, so a restored file is cut between its
    lines, never inside one (a half line of code reads as a different line); unchanged when a line is longer than
    half of either."""
    if len(text) <= head_chars + tail_chars:
        return head_chars, tail_chars
    head_end = text.rfind("\n", 0, head_chars) + 1
    tail_start = text.find("\n", len(text) - tail_chars) + 1 if tail_chars else len(text)
    head = head_end if head_end > head_chars // 2 else head_chars
    tail = len(text) - tail_start if 0 < tail_start and len(text) - tail_start > tail_chars // 2 else tail_chars
    return head, tail


def _cut(content: str, tokens: int) -> str:
    """``content``'s head and tail in about ``tokens``, cut between lines."""
    return head_tail(content, *_whole_lines(content, tokens * CHARS_PER_TOKEN * 2 // 3, tokens * CHARS_PER_TOKEN // 3))


def just_used(span: Sequence[Item], tail: Sequence[Item]) -> set[str]:
    """Paths the agent read whole or wrote in the span's last :data:`JUST_USED_ROUNDS` rounds, when those are of the
    current turn (:func:`~.edits.current_turn_start`): what it fetched or made to work from now, before any later
    call could name it. A read cut to a preview on arrival is left to its weight: its preview is no file in hand."""
    items = [*span, *tail]
    turn = current_turn_start(items)
    calls = [index for index, item in enumerate(span) if item.role == "assistant" and item.tool_calls]
    first = max(turn, calls[-JUST_USED_ROUNDS:][0] if calls else len(span))
    return {path for item in span[first:] if (action := result_action(item)) is not None and action.kind in (READ, EDIT)
            and not is_compacted(item) for path in action.paths}


def path_weight(refs: References, path: str) -> float:
    """How much the agent is using ``path``: the heaviest reference naming it (``/repo/a/b.py`` names ``a/b.py``)."""
    name = slashed(path).removeprefix("./")
    return max((refs.weight(t) for t in refs.uses if t.endswith(name) or name.endswith(t) and "/" in t), default=0.0)


def _latest_todo(span: Sequence[Item]) -> str | None:
    """The latest todo list, one line per item (``- [in progress] Run the tests``), as the agent last set it; none
    when every item of it is completed: such a list is of work done for an earlier request (the summary names it),
    and restored as "current" it reads as the plan of the request in hand."""
    for item in reversed(span):
        for call, action in zip(item.tool_calls, call_actions(item)):
            if action.kind == TODO:
                todos = todo_list(call.arguments)
                if todos is None:
                    return json.dumps(dict(call.arguments), ensure_ascii=False)
                if all(t["status"] == "completed" for t in todos):
                    return None
                return "\n".join(todo_line(t) for t in todos)
    return None


def _removed(items: Sequence[Item]) -> set[str]:
    """The files a command of ``items`` deleted (``rm test_gfk.py`` as a run ends) that no later call touched again:
    restored "as last seen", a file that is gone reads as one still there to run or edit."""
    gone: set[str] = set()
    for item in items:
        call = text_call(item)  # a text-mode agent's command
        for action in (*call_actions(item), *((classify(call),) if call is not None else ())):
            gone = {named for named in gone if not any(_same_file(path, named) for path in action.paths)}
            gone.update(action.removed)
    return gone


def _same_file(path: str, named: str) -> bool:
    """Whether ``named`` (as a command named it, perhaps relative) is ``path``."""
    return path == named or path.endswith("/" + named.removeprefix("./")) or named.endswith("/" + path)


def _latest_plan(items: Sequence[Item]) -> str | None:
    """The plan the agent last put to the user for approval (:func:`~contextfold.actions.proposed_plan`)."""
    for item in reversed(items):
        for call in reversed(item.tool_calls):
            plan = proposed_plan(call)
            if plan is not None:
                return plan
    return None


def restored_item(
    span: Sequence[Item],
    tail: Sequence[Item],
    *,
    max_files: int,
    file_tokens: int,
    total_tokens: int,
    count_text: Callable[[str], int],
    refs: References | None = None,
    min_weight: float = 0.0,
) -> Item | None:
    """One user item with the recent files and the todo state, or ``None`` when nothing needs restoring."""
    tail_actions = [action for item in tail for action in call_actions(item)]
    visible = {path for action in tail_actions if action.kind == READ for path in action.paths}
    visible |= {path for item in answered(tail) if (action := result_action(item)) is not None and action.kind == READ
                for path in action.paths}  # a text-mode agent's reads, by their outputs
    sections: list[str] = []
    spent = 0
    fetched = just_used(span, tail)
    gone = _removed([*span, *tail])
    for path, content, note in latest_files(answered(span)):
        if len(sections) >= max_files or content is None or path in visible or any(_same_file(path, g) for g in gone):
            continue
        if refs is not None and path not in fetched and path_weight(refs, path) < min_weight:
            continue
        in_hand = not sections and len(content) <= total_tokens * CHARS_PER_TOKEN  # the newest: the file in hand
        # what an applied edit wrote is in no output the agent can fetch again: cut to the room left, not dropped
        cap = min(file_tokens, total_tokens - spent) if note == WRITTEN else file_tokens
        if cap < file_tokens // 4:
            continue
        body = content if in_hand and count_text(content) <= total_tokens else _cut(content, cap)
        cost = count_text(body)
        for _ in range(3 if note == WRITTEN else 0):  # more tokens a character than CHARS_PER_TOKEN says
            if spent + cost <= total_tokens:
                break
            cap = cap * (total_tokens - spent) * 9 // (cost * 10)
            body = _cut(content, cap)
            cost = count_text(body)
        if spent + cost > total_tokens:
            continue
        spent += cost
        sections.append(f"### {path}{note}\n{body}")
    plan = _latest_plan(span) if _latest_plan(tail) is None else None  # a plan in the kept tail is shown there
    if plan is not None:
        body = plan if count_text(plan) <= file_tokens else _cut(plan, file_tokens)
        if spent + count_text(body) <= total_tokens:
            spent += count_text(body)
            sections.append(f"### The plan put to the user\n{body}")
    if not any(action.kind == TODO for action in tail_actions):
        todo = _latest_todo(span)
        if todo is not None and spent + count_text(todo) <= total_tokens:
            sections.append(f"### Current todo list\n{todo}")
    if not sections:
        return None
    text = f"{RESTORED_HEADING}\n\n" + "\n\n".join(sections)
    return Item("user", (Text(text),), provenance=Provenance(restored=True))
