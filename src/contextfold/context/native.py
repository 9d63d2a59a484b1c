"""A provider's own compaction taken into the view: exactly what it summarized goes, its block takes the place.

Anthropic (an on-demand ``compaction`` request, or the ``compact_20260112``
edit) and OpenAI Responses (a ``compaction_trigger`` item, or
``responses.compact``) summarize every message of the request they were
sent. Their answer is a ``compaction`` block or item that a later request of
the same provider sends in place of those messages; the adapters read it as
a :class:`~contextfold.conversation.Summary` holding it (:attr:`Summary.native`).
This module decides what the view becomes: the sent items, which must still
lead the view as they were sent, are replaced by what the provider returned,
and the items added since follow. A view that changed under a compaction
(another stage, another writer) is left alone: the compaction is discarded,
never misapplied.

OpenAI's summary is encrypted; so that every other reader (another provider,
a person, contextfold's own later summary) still reads what happened, its
text is contextfold's extractive summary of the same items. Anthropic's is
the summary Claude wrote, readable as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..adapters import adapter_for
from ..adapters.base import CompactionCall
from ..conversation import Conversation, Item, Summary
from ..errors import SummaryInProgress, ViewConflict
from ..events import Event
from ..summarizers.base import SUMMARY_PREAMBLE, SummaryRequest
from ..summarizers.extractive import ExtractiveSummarizer
from ..usage import Usage
from ..pipeline.consent import announced
from .background import splice
from .parts import Parts

logger = logging.getLogger("contextfold.context")

STAGE = "native"
"""The stage name of the events a provider's compaction makes."""


@dataclass(frozen=True)
class PendingCompaction:
    """A provider compaction asked for on a snapshot of the view: its request and the items it summarizes.

    The conversation goes on while it runs (its request is sent in a thread or
    a task, or later); :meth:`Context.apply_compaction
    <contextfold.context.Context.apply_compaction>` swaps the answer in.
    """

    provider: str
    request: dict[str, Any]
    """The request the agent would send now (what ``Context.prepare`` renders), before the compaction is asked."""
    snapshot: Conversation
    """The view the request holds (its items, in order, are what the compaction replaces), and the header."""
    instructions: str | None = None
    shape: str | None = None
    """How to ask (the provider client's :attr:`~contextfold.adapters.base.ProviderClient.compaction_shapes`);
    ``None``: its default."""

    def call(self, client: object, *, model: str, max_tokens: int, timeout_s: float | None = None) -> CompactionCall:
        """The SDK call that asks for it, written by the provider's SDK half (``client`` sync or async);
        :class:`~contextfold.errors.WireOnlyProvider` for a provider with none."""
        return adapter_for(self.provider).require_client("provider compaction").compaction_call(
            client, self.request, model=model, max_tokens=max_tokens, instructions=self.instructions,
            shape=self.shape, timeout_s=timeout_s)


def native_summary(item: Item) -> Summary | None:
    """The provider compaction ``item`` holds, if it holds one."""
    return next((b for b in item.blocks if isinstance(b, Summary) and b.native is not None), None)


def readable(items: Sequence[Item], replaced: Conversation, target_tokens: int,
             count_text: Callable[[str], int]) -> list[Item]:
    """``items`` (what the provider returned) with each unreadable compaction given a readable text.

    A compaction with no readable content (OpenAI's, encrypted) gets
    contextfold's extractive summary of ``replaced``, the items it stands for.
    """
    out = []
    for item in items:
        summary = native_summary(item)
        if summary is None or _is_readable(summary):
            out.append(item)
            continue
        request = SummaryRequest(list(replaced.items), replaced.header, target_tokens, count_text)
        intro = f"{SUMMARY_PREAMBLE}\n\n"
        text = intro + ExtractiveSummarizer().summarize(request).text
        blocks = [replace(b, text=text, preamble=len(intro), covers=len(replaced)) if b is summary else b
                  for b in item.blocks]
        out.append(item.with_blocks(blocks))
    return out


def _is_readable(summary: Summary) -> bool:
    content = (summary.native or {}).get("content")
    return isinstance(content, str) and bool(content)


def folded(view: Conversation, replaced: Sequence[Item], replacement: Sequence[Item]) -> Conversation | str:
    """``view`` with the items ``replaced`` (in order) replaced by ``replacement``, or why it cannot be.

    The replaced items must still lead the view, unchanged (a provider's
    compaction stands for the start of the conversation, and Anthropic takes
    its block only first); otherwise applying it would drop or duplicate
    items, and it is refused (see :func:`.background.splice`).
    """
    placement = splice(replaced, replacement, view.items)
    if isinstance(placement, str):
        return placement
    if placement.start != 0:
        return "the items it summarized no longer lead the view"
    return placement.apply(view)


class NativeCompaction:
    """A provider's compaction, asked for or arrived in a reply, put into one Context's view (or discarded).

    ``commit`` is the step's (:meth:`.step.Step.commit`): a compaction is a view
    change like any other, checkpointed against the view it replaces.
    """

    def __init__(self, parts: Parts, commit: Callable[[Conversation], None]) -> None:
        self._parts = parts
        self._commit = commit

    def in_reply(self, items: Sequence[Item], sent: Conversation | None) -> None:
        """A reply holding the provider's compaction summarized everything its request sent (``sent``)."""
        if sent is not None and any(native_summary(item) is not None for item in items):
            replacement = readable(items, sent, self._parts.policy.summary_target_tokens, self._parts.estimator.text)
            self._fold([*sent.items, *items], replacement, sent,
                       "the provider compacted the conversation in this reply")

    def apply(self, pending: PendingCompaction, response: object) -> list[Event]:
        """See :meth:`Context.apply_compaction <contextfold.context.Context.apply_compaction>`."""
        reply = adapter_for(pending.provider).read_response(response)
        returned = list(reply.conversation.items)
        if not any(native_summary(item) is not None for item in returned):
            event = Event(STAGE, "discarded", detail=f"the provider returned no compaction (stop reason "
                                                     f"{reply.stop!r}); the view is unchanged")
            self._parts.record([event])
            return [event]
        replacement = readable(returned, pending.snapshot, self._parts.policy.summary_target_tokens,
                               self._parts.estimator.text)
        return self._fold(pending.snapshot.items, replacement, pending.snapshot,
                          "the provider compacted the conversation on request", reply.usage)

    def _fold(self, replaced: Sequence[Item], replacement: Sequence[Item], covered: Conversation, detail: str,
              usage: Usage | None = None) -> list[Event]:
        """Commit the view with ``replaced`` swapped for ``replacement`` (see :func:`folded`), or discard."""
        parts = self._parts
        try:
            parts.journal.follow(parts.timeline)
            view = parts.timeline.view
            new = folded(view, replaced, replacement)
            if isinstance(new, str):
                event = self._not_applied(new)
            else:
                try:
                    parts.flight.take()
                    self._commit(new)
                except (ViewConflict, SummaryInProgress) as refused:
                    event = self._not_applied(str(refused))
                else:
                    summaries = [s for s in map(native_summary, replacement) if s is not None]
                    data = {"provider": summaries[0].native_provider if summaries else None,
                            "replaced_items": len(covered), "summary_chars": sum(len(s.text) for s in summaries)}
                    event = Event(STAGE, "compacted", tuple(item.id for item in covered.items),
                                  parts.counter.count(view), parts.counter.count(new), detail, data,
                                  ((covered, usage),) if usage else ())
            told = [] if isinstance(new, str) else announced(view, new, [event], parts.counter.count,
                                                             parts.estimator.item, "provider", parts.consent)
            parts.record([event, *told])
            return [event]
        finally:
            parts.flight.end_step()

    def _not_applied(self, why: str) -> Event:
        """The event (and log line) of a provider compaction that could not be put in the view."""
        logger.warning("session %s: a provider compaction was not applied: %s", self._parts.session_id, why)
        return Event(STAGE, "discarded", detail=f"compaction not applied: {why}")
