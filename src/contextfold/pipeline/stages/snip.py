"""snip: outputs that later steps made stale become a one-line placeholder.

A read of a file is superseded when the file was edited afterwards, or read
again in full (not a range of it: another page of a long file leaves this
one as it was) or with the very same arguments; search results are
superseded beyond the newest few. The call itself stays, so the model sees
what it did and can run it again.
"""

from __future__ import annotations

import json

from ...actions import EDIT, READ, SEARCH, Action, result_action
from ...conversation import Conversation, Item, JSONObject
from ...readings import Key
from ...events import Event
from ..base import Budget
from ..edits import MARK, apply_changes, is_placeholder, latest_result_index, with_result

STAGE = "snip"
_SIGNATURE: Key[tuple[Action, str] | None] = Key("snip_signature")


def _signature(item: Item) -> tuple[Action, str] | None:
    """What the output answered: the call's action and its arguments as JSON (memoized: items never change)."""
    return item.readings.setdefault(_SIGNATURE, lambda: _read_signature(item))


def _read_signature(item: Item) -> tuple[Action, str] | None:
    action = result_action(item)
    if action is None:
        return None
    return action, json.dumps(item.tool_result.arguments or {}, sort_keys=True)  # type: ignore[union-attr]


RANGE_ARGUMENTS = ("offset", "limit", "view_range", "start_line", "end_line")
"""Arguments with which a read tool reads part of a file (Claude Code's and gemini-cli's ``offset``/``limit``, an
editor's ``view_range``): a later read of lines 1000-1200 leaves lines 1-200, read before, as they were."""


def _is_full_read(action: Action, arguments: JSONObject) -> bool:
    command = action.command or ""
    if command:
        return action.kind == READ and command.lstrip().startswith("cat ")
    return action.kind == READ and all(arguments.get(key) is None for key in RANGE_ARGUMENTS)


def superseded(conversation: Conversation, keep_searches: int) -> dict[int, str]:
    """``{index: why}`` of every output a later step made stale (scanning newest first)."""
    stale: dict[int, str] = {}
    edited_later: set[str] = set()
    full_read_later: set[str] = set()
    seen_reads: set[str] = set()
    searches = 0
    for index in range(len(conversation) - 1, -1, -1):
        signature = _signature(conversation[index])
        if signature is None:
            continue
        action, arguments = signature
        if action.kind == EDIT:
            edited_later.update(action.paths)
        elif action.kind == READ and action.paths:
            key = f"{conversation[index].tool_result.tool_name}:{arguments}"  # type: ignore[union-attr]
            path = action.paths[0]
            if path in edited_later:
                stale[index] = f"{path} was edited afterwards"
            elif path in full_read_later or key in seen_reads:
                stale[index] = f"{path} was read again afterwards"
            seen_reads.add(key)
            if _is_full_read(action, conversation[index].tool_result.arguments or {}):  # type: ignore[union-attr]
                full_read_later.add(path)
        elif action.kind == SEARCH:
            searches += 1
            if searches > keep_searches:
                stale[index] = f"an older search; {keep_searches} newer ones are kept"
    return stale


def snip(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
    latest = latest_result_index(conversation.items)
    changes: dict[int, Item] = {}
    for index, why in superseded(conversation, budget.policy.snip_keep_search_results).items():
        item = conversation[index]
        if index == latest or is_placeholder(item):
            continue
        changes[index] = _snipped(item, why)
    return apply_changes(conversation, budget, changes, STAGE, "snipped", f"{len(changes)} superseded outputs")


_SNIPPED: Key[tuple[str, Item]] = Key("snipped")


def _snipped(item: Item, why: str) -> Item:
    """``item`` with its output snipped for ``why``, made once per item and reason (kept on the item): a compaction
    snips the same outputs at each rung it tries (the batch edits priced, then clearing alone before a summary, to
    its target and with every output), and the same placeholder item is then counted once."""
    known = item.readings.get(_SNIPPED)
    if known is None or known[0] != why:
        snipped = with_result(item, f"{MARK}: output snipped, superseded: {why}]", STAGE, keep_media=False)
        known = item.readings.set(_SNIPPED, (why, snipped))
    return known[1]
