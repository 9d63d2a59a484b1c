"""The history and the view of one session, kept in step: everything added, and what is sent.

The history is never changed. The view starts as the history and is appended
to as items arrive; a stage that fires replaces it, and the replacement is
checkpointed by reference: history items by id, what a stage made (a
summary, restored files, a shortened output) in full, so that
:meth:`Timeline.restore` rebuilds exactly the view that was being sent.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..codec import item_from_dict, item_to_dict
from ..conversation import Conversation, Header, Item, JSONObject, JSONValue
from ..errors import ContextfoldError
from ..events import Event
from ..stores.base import VIEW_EVENT
from ..stores.transcript import Restored

logger = logging.getLogger("contextfold.context")


class Timeline:
    """The history, the view, and how many view items the cheap stages have seen (``processed``)."""

    def __init__(self) -> None:
        self.history = Conversation()
        self.view = Conversation()
        self.processed = 0
        self._by_id: dict[str, Item] = {}  # history items by id, to record views by reference

    def take(self, item: Item) -> Item:
        """Put a recorded item into the history and the view; the item as the history stored it."""
        stored = self.history.append(item)
        self._by_id[item.id] = stored
        self.view.append(stored)
        return stored

    def original(self, item_id: str) -> Item | None:
        """The item the history holds under ``item_id`` (an output whole, where the view has its placeholder)."""
        return self._by_id.get(item_id)

    def set_header(self, header: Header) -> None:
        self.history.header = self.view.header = header

    def commit(self, view: Conversation) -> None:
        """``view`` is what is sent from now on; the stages have seen all of it."""
        self.view = view
        self.processed = len(view)

    def entries(self, view: Conversation) -> list[dict[str, JSONValue]]:
        """``view`` as a checkpoint records it: history items by id, anything else in full."""
        return [
            {"ref": item.id} if self._by_id.get(item.id) is item else {"item": item_to_dict(item)} for item in view.items
        ]

    def adopt(self, data: JSONObject, item_count: int) -> None:
        """Take the view a checkpoint recorded when the history held ``item_count`` items (another writer's)."""
        self.view = self._checkpointed(data, item_count)
        self.processed = len(self.view) - (len(self.history) - item_count)

    def restore(self, restored: Restored, session_id: str) -> list[Event]:
        """Take a resumed session's history and its last usable view checkpoint; events for what was skipped."""
        self.history = restored.conversation.with_items(restored.conversation.items)
        self._by_id = {item.id: item for item in self.history}
        events = []
        report = restored.report
        for skipped in report.skipped:
            aside = f"; set aside in {report.damaged_saved_to}" if skipped is report.damaged and report.damaged_saved_to else ""
            logger.warning("resuming session %s: skipped %s%s", session_id, skipped, aside)
            events.append(Event("transcript", "skipped", detail=f"skipped {skipped}{aside}"))
        self.view, after = Conversation(self.history.items, self.history.header), 0
        for checkpoint in reversed([e for e in restored.events if e.kind == VIEW_EVENT]):
            try:
                self.view, after = self._checkpointed(checkpoint.data, checkpoint.item_count), checkpoint.item_count
                break
            except (KeyError, TypeError, ValueError, AttributeError, ContextfoldError) as error:
                logger.warning("resuming session %s: view checkpoint %d unusable (%s); trying an older one",
                               session_id, checkpoint.seq, error)
                events.append(Event("transcript", "checkpoint_skipped",
                                    detail=f"view checkpoint {checkpoint.seq}: {type(error).__name__}: {error}"))
        self.processed = len(self.view) - (len(self.history) - after)
        return events

    def _checkpointed(self, data: Mapping[str, Any], item_count: int) -> Conversation:
        """The view a checkpoint recorded, followed by the items added after it."""
        view = [self._by_id[e["ref"]] if "ref" in e else item_from_dict(e["item"]) for e in data["items"]]
        view.extend(self.history.items[item_count:])
        return Conversation(view, self.history.header)
