"""Retention: the only code that removes anything from a store, and it runs only when called.

Two rules, either or both: delete the sessions not updated for ``older_than_days``;
in every other session keep the last ``keep_checkpoints`` view checkpoints
whole and empty the older ones. An emptied checkpoint stays in place as a
``view_pruned`` event (its sequence number, time and item count kept, its
item list dropped), so sequence numbers stay gap-free and the session still
resumes from its last checkpoint exactly.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..conversation import JSONValue
from ..errors import StoreError
from .base import VIEW_EVENT, Store

PRUNED_VIEW_EVENT = "view_pruned"
DAY_S = 86_400.0


@dataclass
class PruneReport:
    """What a prune removed: whole sessions, and checkpoints emptied per session."""

    deleted_sessions: list[str] = field(default_factory=list)
    pruned_checkpoints: dict[str, int] = field(default_factory=dict)


def prune(
    store: Store,
    *,
    older_than_days: float | None = None,
    keep_checkpoints: int | None = None,
    now: float | None = None,
    dry_run: bool = False,
) -> PruneReport:
    """Apply the retention rules to every session of ``store``; see the module docstring. ``dry_run``
    reports what they would remove and removes nothing (given the same ``now``, a later run removes no more)."""
    if older_than_days is not None and older_than_days < 0:
        raise StoreError(f"older_than_days must be positive, not {older_than_days}")
    if keep_checkpoints is not None and keep_checkpoints < 1:
        raise StoreError(f"keep_checkpoints must be at least 1 (the last one is the view), not {keep_checkpoints}")
    report = PruneReport()
    cutoff = (time.time() if now is None else now) - (older_than_days or 0) * DAY_S
    for info in store.sessions():
        if older_than_days is not None and info.updated < cutoff:
            if not dry_run:
                store.delete(info.session_id)
            report.deleted_sessions.append(info.session_id)
        elif keep_checkpoints is not None:
            checkpoints = [r for r in store.read(info.session_id)
                           if r.get("type") == "event" and r.get("kind") == VIEW_EVENT]
            old = checkpoints[:-keep_checkpoints]
            if old:
                if not dry_run:
                    store.rewrite(info.session_id, {r["seq"]: _emptied(r) for r in old})
                report.pruned_checkpoints[info.session_id] = len(old)
    return report


def _emptied(checkpoint: dict[str, Any]) -> dict[str, JSONValue]:
    data = {"items": len(checkpoint["data"].get("items", ())), **{k: v for k, v in checkpoint["data"].items() if k != "items"}}
    return {**checkpoint, "kind": PRUNED_VIEW_EVENT, "data": data}
