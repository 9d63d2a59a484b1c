"""persist: a tool output too large for the context goes to disk; a preview stays.

Runs on new items only, before they are ever sent, so it never breaks the
cached prefix. The file is named after the item id (never after anything in
the output), created owner-only, and the preview says how to read the rest.
If the disk fails the output is cut to the same preview without a path and
the event says so: the transcript still holds the whole output.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..conversation import Conversation, Item
from .base import Budget, Event
from .edits import MARK, apply, head_tail, is_compacted, result_text, tool_items, with_result

STAGE = "persist"
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/=\r\n]{2000,}")


def _binary_descriptor(text: str) -> str | None:
    """A short description if most of ``text`` is one base64 (or similar binary-as-text) payload."""
    match = max(_BASE64_RUN.finditer(text), key=lambda m: len(m.group(0)), default=None)
    if match is None or len(match.group(0)) < len(text) * 0.6:
        return None
    payload = match.group(0)
    kind = "PNG image" if payload.lstrip().startswith("iVBOR") else "JPEG image" if payload.lstrip().startswith("/9j/") else "binary data"
    return f"{MARK}: base64 payload of about {len(payload) * 3 // 4:,} bytes ({kind}) replaced by this note]"


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by the owner only (the folder too)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as handle:
            fd = -1
            handle.write(text)
    finally:
        if fd >= 0:
            os.close(fd)


def _preview(item: Item, text: str, budget: Budget, where: str) -> str:
    p = budget.policy
    descriptor = _binary_descriptor(text)
    if descriptor is not None:
        return f"{descriptor}\n{where}"
    note = f"; {where}" if where else ""
    return head_tail(text, p.preview_head_chars, p.preview_tail_chars, note)


def persist(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
    p = budget.policy
    changes: dict[int, Item] = {}
    failures: list[str] = []
    for index, item in tool_items(conversation, range(budget.new_from, len(conversation))):
        if is_compacted(item):
            continue
        text = result_text(item)
        if len(text) <= p.persist_max_chars and budget.count_item(item) <= p.persist_max_tokens:
            continue
        where = ""
        if budget.results_dir is not None:
            path = Path(budget.results_dir) / f"{item.id}.txt"
            try:
                write_private(path, text)
                where = f"full output ({len(text):,} characters) saved to {path}; read parts of it with your file tools"
            except OSError as error:
                failures.append(f"{item.id}: {error}")
        changes[index] = with_result(item, _preview(item, text, budget, where), STAGE)
    conversation, events = apply(conversation, budget, changes, STAGE, "persisted", f"{len(changes)} oversized outputs")
    if failures:
        events.append(Event(STAGE, "disk_failed", tuple(f.split(":", 1)[0] for f in failures), detail="; ".join(failures)))
    return conversation, events
