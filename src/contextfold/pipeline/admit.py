"""admit: what a new item becomes before the history keeps it.

Two decisions are made once, when an item arrives, because the transcript
records the item as it is kept: its secrets are redacted when the policy says
so (:mod:`contextfold.redaction`; the event names the kinds found, never the
secrets), and an oversized output is saved (the session's blobs, or a
folder) with only its preview kept (:func:`~contextfold.pipeline.stages.persist.offload`).

Once kept, an item is read once for what every compaction will ask of it
(:func:`observe`): items never change, so a compaction then does only the
work that depends on the whole request, and its latency does not carry the
reading of everything that arrived since the last one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from ..conversation import Header, Item
from ..events import Event
from ..reading import reading_of
from ..redaction import describe, redact_item
from ..summarizers._facts import read_ahead
from .base import Policy
from .importance import item_tokens, line_index
from .offload_store import Blobs
from .stages.persist import offload

logger = logging.getLogger(__name__)


def admit(item: Item, policy: Policy, header: Header, results_dir: Path | None,
          count_item: Callable[[Item], int], blobs: Blobs | None = None,
          whole_tokens: int = 0) -> tuple[Item, list[Event]]:
    """``item`` as the transcript and the history keep it, and the events of what was done to it; ``header``
    is the request's (the tools it offers decide whether a preview names the history tools); an oversized
    output of at most ``whole_tokens`` may be sent whole, so it is kept whole (see
    :func:`~contextfold.pipeline.stages.persist.offload`)."""
    events = []
    if policy.redact_secrets:
        item, found = redact_item(item)
        if found:
            logger.info("redacted %s from item %s", describe(found), item.id)
            events.append(Event("redact", "redacted", (item.id,), detail=f"redacted {describe(found)}", data=dict(found)))
    item, offloaded = offload(item, policy, header, results_dir, count_item, blobs, whole_tokens)
    return item, events + offloaded


def observe(items: Sequence[Item]) -> None:
    """Read the kept ``items`` once, into their readings: their references (and where an output's are, whose
    lines clearing keeps), who speaks in a user item (:func:`~contextfold.reading.reading_of`) and the facts a
    summary is written from (:func:`~contextfold.summarizers._facts.read_ahead`).

    Only a cache is filled: a failure is logged and leaves the reading to the compaction that needs it."""
    try:
        for item in items:
            item_tokens(item)
            if item.tool_result is not None:
                line_index(item)
            elif item.role == "user":
                reading_of(item)  # who speaks, and the person's words
        read_ahead(items)
    except Exception as error:  # noqa: BLE001 - a reading bug must not refuse an item: the compaction reads it again
        logger.warning("reading new items ahead failed, a compaction will read them: %s: %s", type(error).__name__, error)
