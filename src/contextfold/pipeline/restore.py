"""restore: after a summary, put back what the agent was just working with.

A summary says which files were read and edited; the agent usually needs
their contents again at once. Claude Code re-reads the most recently used
files after compacting; here the latest content each file had in the
summarized span is restored (capped per file and in all; the newest, the
file in hand, whole when it fits the cap in all), with the plan the agent
last put to the user (Claude Code's ExitPlanMode: once approved, the steps,
files and values it works from) and the latest todo or plan state, unless
the kept tail already shows them. Only files the
agent is still working with come back: those whose path its recent turns
keep naming (:mod:`.importance`, at least ``min_weight``); a file read once
long ago costs more to carry than to read again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from ..actions import EDIT, READ, TODO, call_actions, proposed_plan, result_action
from ..conversation import Item, Provenance, Text
from ..reading import without_wrappers
from ..summarizers._calls import todo_line, todo_list
from .edits import MARK, head_tail, is_placeholder
from .importance import References

CHARS_PER_TOKEN = 4
"""Used only to turn a token cap into a character cut; the result is measured afterwards."""


def _files(span: Sequence[Item]) -> list[tuple[str, str | None, bool]]:
    """``(path, latest read content or None, edited after that read)`` newest first, one entry per path."""
    seen: dict[str, tuple[str | None, bool]] = {}
    order: list[str] = []
    for item in reversed(span):
        result = item.tool_result
        action = result_action(item)
        if result is None or action is None:
            continue
        for path in action.paths:
            if path not in seen:
                seen[path] = (None, False)
                order.append(path)
            content, edited = seen[path]
            if action.kind == EDIT and content is None:
                seen[path] = (None, True)
            elif action.kind == READ and content is None and not is_placeholder(item):
                seen[path] = (without_wrappers(result.text), edited)  # a harness's reminder is no file content
    return [(path, *seen[path]) for path in order]


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


def path_weight(refs: References, path: str) -> float:
    """How much the agent is using ``path``: the heaviest reference naming it (``/repo/a/b.py`` names ``a/b.py``)."""
    name = path.removeprefix("./")
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
    sections: list[str] = []
    spent = 0
    for path, content, edited in _files(span):
        if len(sections) >= max_files or content is None or path in visible:
            continue
        if refs is not None and path_weight(refs, path) < min_weight:
            continue
        in_hand = not sections and len(content) <= total_tokens * CHARS_PER_TOKEN  # the newest: the file in hand
        body = content if in_hand and count_text(content) <= total_tokens else head_tail(
            content, *_whole_lines(content, file_tokens * CHARS_PER_TOKEN * 2 // 3, file_tokens * CHARS_PER_TOKEN // 3))
        cost = count_text(body)
        if spent + cost > total_tokens:
            continue
        spent += cost
        stale = " (edited after this read: check the current version before relying on it)" if edited else ""
        sections.append(f"### {path}{stale}\n{body}")
    plan = _latest_plan(span) if _latest_plan(tail) is None else None  # a plan in the kept tail is shown there
    if plan is not None:
        body = plan if count_text(plan) <= file_tokens else head_tail(
            plan, *_whole_lines(plan, file_tokens * CHARS_PER_TOKEN * 2 // 3, file_tokens * CHARS_PER_TOKEN // 3))
        if spent + count_text(body) <= total_tokens:
            spent += count_text(body)
            sections.append(f"### The plan put to the user\n{body}")
    if not any(action.kind == TODO for action in tail_actions):
        todo = _latest_todo(span)
        if todo is not None and spent + count_text(todo) <= total_tokens:
            sections.append(f"### Current todo list\n{todo}")
    if not sections:
        return None
    text = f"{MARK}: files and state restored after compaction, as last seen]\n\n" + "\n\n".join(sections)
    return Item("user", (Text(text),), provenance=Provenance(restored=True))
