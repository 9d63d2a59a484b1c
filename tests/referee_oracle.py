"""The shared referee (``../shared/referee``) as an independent oracle: which sessions it reads, and ours of each.

Used by the agreement tests (recall, strict recall) and ``benchmarks/strict_agreement.py``; the referee
itself is never part of the project.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from contextfold.conversation import Conversation
from contextfold.replay.render import render_item

STRATEGY_CYCLE = (("default", 16_000), ("claude-code", 16_000), ("window", 8_000), ("mask", 32_000),
                  ("openhands", 16_000), ("default", 32_000))
"""Strategy and window per referee session, in turn: every one loses something, and the suite stays quick."""


def referee_importable(shared: Path) -> bool:
    """Whether ``shared`` holds the referee; if so it is made importable as ``referee`` (with a tokenizer cache
    for it to seed, unless one is set), for the benchmarks that score by it."""
    if not (shared / "referee" / "strict.py").exists():
        print(f"the referee is not at {shared / 'referee'} (set CONTEXTFOLD_SHARED)", file=sys.stderr)
        return False
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", tempfile.mkdtemp())  # where the referee seeds its tokenizer
    sys.path.insert(0, str(shared))
    return True


def referee_sessions(shared: Path, per_file: int = 2) -> list[tuple[str, int]]:
    """Every session file of ``shared``'s corpus the referee reads, at each of its first ``per_file`` conversations."""
    corpus = shared / "corpus"
    if not corpus.exists():
        return []
    sys.path.insert(0, str(shared))
    try:
        from referee import loaders
    finally:
        sys.path.remove(str(shared))
    found = []
    for path in sorted(p for p in corpus.rglob("*") if p.is_file() and p.name != "SOURCES.md"):
        try:
            count = len(loaders.load_all(path))
        except loaders.UnsupportedFormat:
            continue
        found += [(str(path.relative_to(corpus)), index) for index in range(min(count, per_file))]
    return found


def matching(conversations: list[Conversation], trajectory: Any) -> Conversation:
    """Our conversation of the referee's trajectory: the one whose replies make the same tool calls.

    (Importers may differ elsewhere: the referee drops a hive-mind log's
    sub-agent sessions, which ours keeps as conversations of their own, after
    the sessions, so that both number the sessions alike.)
    """

    def calls(messages: list[dict[str, Any]]) -> list[list[str]]:
        return [[c["function"]["arguments"] for c in m.get("tool_calls") or []] for m in messages
                if m["role"] == "assistant"]

    theirs = calls(trajectory.messages)
    for conversation in conversations:
        if calls([m.data for m in map(render_item, conversation.items) if m is not None]) == theirs:
            return conversation
    raise AssertionError("no conversation of ours makes the referee's tool calls")


def repeats_calls(trajectory: Any) -> bool:
    """Whether a response of the referee's reading calls the same id twice.

    The referee joins Claude Code records by message id across the whole file, so the chat a reopened session
    wrote into the file again (which ours reads once, counted in ``skipped["resumed copy"]``) is appended to the
    responses it copies: its calls twice, its results again. That reading is another session than the one ours
    replays, and their figures are not comparable.
    """
    for message in trajectory.messages:
        ids = [call["id"] for call in message.get("tool_calls") or []]
        if len(ids) != len(set(ids)):
            return True
    return False
