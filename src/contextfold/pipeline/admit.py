"""admit: what a new item becomes before the history keeps it.

Two decisions are made once, when an item arrives, because the transcript
records the item as it is kept: its secrets are redacted when the policy says
so (:mod:`contextfold.redaction`; the event names the kinds found, never the
secrets), and an oversized output is saved to disk with only its preview
kept (:func:`~contextfold.pipeline.stages.persist.offload`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from ..conversation import Item
from ..events import Event
from ..redaction import describe, redact_item
from .base import Policy
from .stages.persist import offload

logger = logging.getLogger(__name__)


def admit(item: Item, policy: Policy, results_dir: Path | None,
          count_item: Callable[[Item], int]) -> tuple[Item, list[Event]]:
    """``item`` as the transcript and the history keep it, and the events of what was done to it."""
    events = []
    if policy.redact_secrets:
        item, found = redact_item(item)
        if found:
            logger.info("redacted %s from item %s", describe(found), item.id)
            events.append(Event("redact", "redacted", (item.id,), detail=f"redacted {describe(found)}", data=dict(found)))
    item, offloaded = offload(item, policy, results_dir, count_item)
    return item, events + offloaded
