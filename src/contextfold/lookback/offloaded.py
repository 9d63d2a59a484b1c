"""Where the whole text of an offloaded output is read back from: the one place that knows.

An output too large for the context is kept outside the history, which holds
only its preview (:func:`~contextfold.pipeline.stages.persist.offload`). The
history tools read it back through :func:`offloaded_output` alone, so when
offloaded outputs move into the session's store this is the function that
changes.
"""

from __future__ import annotations

import logging

from ..conversation import Item
from ..errors import StoreError, UnsafePath
from ..pipeline.offload_store import Blobs, saved_output

log = logging.getLogger(__name__)


def is_offloaded(item: Item) -> bool:
    """Whether the history holds only a preview of ``item``'s output (kept as a blob of the session's store,
    or as a file)."""
    return item.provenance.offloaded is not None


def offloaded_output(item: Item, blobs: Blobs | None = None) -> str | None:
    """The whole output of an offloaded item, read from the session's ``blobs`` (the stored session the
    history belongs to) or its file; ``None`` when it was not offloaded or can no longer be read (its session
    pruned, the store out of reach)."""
    if not is_offloaded(item):
        return None
    try:
        return saved_output(item, blobs)
    except (OSError, UnsafePath, StoreError) as error:
        log.warning("the offloaded output of item %.80r cannot be read back: %s", item.id, error)
        return None
