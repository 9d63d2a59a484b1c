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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..adapters import adapter_for
from ..adapters.base import CompactionCall
from ..conversation import Conversation, Item, Summary
from ..summarizers.base import SUMMARY_PREAMBLE, SummaryRequest
from ..summarizers.extractive import ExtractiveSummarizer
from .background import splice

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
    """How to ask (the adapter's :attr:`~contextfold.adapters.base.Adapter.compaction_shapes`); ``None``: its default."""

    def call(self, client: Any, *, model: str, max_tokens: int, timeout_s: float | None = None) -> CompactionCall:
        """The SDK call that asks for it, written by the provider's adapter (``client`` sync or async)."""
        return adapter_for(self.provider).compaction_call(
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
