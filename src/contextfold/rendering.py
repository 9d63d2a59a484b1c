"""Turning the view into a provider request, re-rendering only what is new, with the cache breakpoints.

An agent calls ``prepare()`` on every step with a history that mostly did not
change. Rendering a thousand messages each time costs milliseconds; this
keeps the wire messages of everything before the last assistant turn and
renders only that turn and what follows. It starts over when the view was
replaced (a stage fired) or the header changed. The wire format itself is the
adapter's: this module never looks inside the messages it gets back.

Splitting before an assistant item is safe for all three formats: no adapter
merges an assistant message with what precedes it, and every tool result
after it answers a call in it. Nor does any adapter merge a summary item
with its neighbours, so a chunk is also rendered in pieces around its latest
summary, to know which message that is.

Where the prompt-cache breakpoints go (formats whose cache needs marks, that
is Anthropic's), ordered by how long what they close stays the same: the
header (the static part of a split system prompt, else the system prompt,
which caches the tools before it; the adapter places it), the end of what
no compaction rewrites (the pinned items and the task: a second compaction
still reads them), the latest summary (changed by each compaction) and the
last message, which moves forward each turn so the whole history up to it is
cached for the next request. The renderer asks for the message marks most
wanted first (the last message, the stable end, the summary); the adapter
keeps as many as the provider's limit of four allows. Marks are not part of
what the cache keys on, so moving the last one does not break the prefix.
When the caller placed marks of its own (read from the items, not from the
rendered JSON) none are added.

Reminders (:mod:`contextfold.adapters.reminders`) are attached last, after
every breakpoint, and are never part of what is kept for the next request.
"""

from __future__ import annotations

from collections.abc import Sequence

from .adapters import Adapter, WireHeader
from .conversation import Conversation, Header, Item, JSONValue
from .pipeline.task import task_index


class Renderer:
    """Renders views of one session for one provider, incrementally."""

    def __init__(self, adapter: Adapter) -> None:
        self.adapter = adapter
        self._view: Conversation | None = None
        self._header: Header | None = None
        self._head = WireHeader({}, ())
        self._frozen: list[dict[str, JSONValue]] = []  # wire messages of items[:_upto]
        self._upto = 0
        self._frozen_marked = False  # whether the caller placed cache marks in items[:_upto]
        self._summary_at: int | None = None  # index in _frozen of the latest summary message
        self._stable: tuple[int, int] | None = None  # the task's index and its message's (see _stable_end)

    def render(self, view: Conversation, reminders: Sequence[str] = ()) -> dict[str, JSONValue]:
        """The request for ``view``, with ``reminders`` (checked strings) attached after its cache breakpoints."""
        request = self._request(view)
        return self.adapter.with_reminders(request, reminders) if reminders else request

    def _request(self, view: Conversation) -> dict[str, JSONValue]:
        if view is not self._view or view.header is not self._header or len(view) < self._upto:
            self._reset(view)
        items = view.items
        split = len(items)
        while split > self._upto and items[split - 1].role != "assistant":
            split -= 1
        split = split - 1 if split > self._upto else self._upto  # the last assistant turn is re-rendered
        if split > self._upto:
            self._freeze(items[self._upto : split])
            self._upto = split
        tail_items = items[self._upto :]
        tail, tail_summary = self._render(tail_items)
        messages = [*self._frozen, *tail]
        marked = self._head.marked or self._frozen_marked or any(map(self.adapter.cache_marked, tail_items))
        if marked or not (messages or self._head.lead):
            return self.adapter.request(self._head, messages)
        lead = len(self._head.lead)
        summary = len(self._frozen) + tail_summary if tail_summary is not None else self._summary_at
        stable = self._stable_end(view)
        wanted = [lead + len(messages) - 1, stable, lead + summary if summary is not None else None]
        return self.adapter.request(self._head, messages, [at for at in wanted if at is not None])

    def _stable_end(self, view: Conversation) -> int | None:
        """The last message of what no compaction rewrites (the pinned items and the task), when more follows.

        Its index among the request's messages; ``None`` when the task is the
        last thing, or when the item after it is neither an assistant turn nor
        a summary (the split points known not to change how the messages are
        written). The task's index is kept while the view is.
        """
        items = view.items
        task = task_index(view)
        if task is None:
            lead = len(self._head.lead)
            return lead - 1 if lead and items else None
        after = items[task + 1] if task + 1 < len(items) else None
        if after is None or not (after.role == "assistant" or after.kind == "summary"):
            return None
        if self._stable is None or self._stable[0] != task:
            self._stable = (task, len(self._head.lead) + len(self.adapter.write_items(items[: task + 1])) - 1)
        return self._stable[1]

    def _reset(self, view: Conversation) -> None:
        self._view, self._header = view, view.header
        self._head = self.adapter.write_header(view.header)
        self._frozen, self._upto, self._frozen_marked, self._summary_at = [], 0, False, None
        self._stable = None

    def _freeze(self, items: Sequence[Item]) -> None:
        messages, summary = self._render(items)
        if summary is not None:
            self._summary_at = len(self._frozen) + summary
        self._frozen.extend(messages)
        self._frozen_marked = self._frozen_marked or any(map(self.adapter.cache_marked, items))

    def _render(self, items: Sequence[Item]) -> tuple[list[dict[str, JSONValue]], int | None]:
        """The wire messages of ``items``, and the index among them of the latest summary's message."""
        at = next((k for k in range(len(items) - 1, -1, -1) if items[k].kind == "summary"), None)
        if at is None:
            return (self.adapter.write_items(items) if items else []), None
        before = self.adapter.write_items(items[:at]) if at else []
        summary = self.adapter.write_items(items[at : at + 1])
        after = self.adapter.write_items(items[at + 1 :]) if at + 1 < len(items) else []
        return [*before, *summary, *after], (len(before) + len(summary) - 1 if summary else None)
