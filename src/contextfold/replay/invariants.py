"""The rules every request a strategy sends must keep, checked against the recording it replays.

1. The conversation is valid (:meth:`Conversation.validate`: every call
   answered, every result after its call, no duplicate ids).
2. The header is the recording's: the same system items and tool
   definitions, and the recording's pinned items first among the pinned ones
   (a strategy may pin more).
3. The task (the item the pipeline keeps as the task,
   :func:`~contextfold.pipeline.task.task_index`: the person's first message
   that says something, not a harness text before it), once it was said, is still there: the item
   itself (or an equal one), or its text inside a pinned item or a summary.

A broken rule is a bug in the strategy; the replay reports each one, with
what and where, rather than stopping.
"""

from __future__ import annotations

from ..conversation import Conversation, Header, Item
from ..pipeline.task import task_index


class RecordingInvariants:
    """Checks requests made while replaying ``recording``."""

    def __init__(self, recording: Conversation) -> None:
        self.header = recording.header
        self.task_index = task_index(recording)
        self.task: Item | None = None if self.task_index is None else recording.items[self.task_index]

    def check(self, request: Conversation, reply_index: int) -> tuple[str, ...]:
        """Every rule ``request`` (sent before the reply at ``reply_index``) breaks, as one line each."""
        broken = [f"structure: {violation}" for violation in request.validate()]
        broken.extend(self._header(request.header))
        if self.task is not None and self.task_index is not None and self.task_index < reply_index \
                and not self._holds_task(request):
            broken.append(f"task: the person's first message (item {self.task.id!r}) is missing")
        return tuple(broken)

    def _header(self, header: Header) -> list[str]:
        if header is self.header:
            return []
        broken = []
        if header.system != self.header.system:
            broken.append("header: the system items differ from the recording's")
        if header.tools != self.header.tools:
            broken.append("header: the tool definitions differ from the recording's")
        if header.pinned[: len(self.header.pinned)] != self.header.pinned:
            broken.append("header: the recording's pinned items are not first among the pinned")
        return broken

    def _holds_task(self, request: Conversation) -> bool:
        task = self.task
        assert task is not None
        if any(item is task or item == task for item in request.items):
            return True
        text = task.text
        holders = [*request.header.pinned, *(item for item in request.items if item.kind == "summary")]
        return any(text in item.text for item in holders)
