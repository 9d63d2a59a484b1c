"""One compaction of a framework's history, as contextfold would make it: what to summarize, and the summary.

Frameworks that persist a compaction themselves (ADK appends a compaction
event; LangChain's ``before_model`` replaces the state's messages) need the
decision and the text, not a request: which items the summary replaces
(always a pair-safe span after the task, chosen by
:func:`~contextfold.boundary.choose_cut`), the summary item, and the
restored-files item that goes with it. :func:`fold` runs a throwaway
:class:`~contextfold.context.Context` over the history for that, so the
policy, the escalation to a shorter tail and the summarizer's fallback are
the same as in a contextfold agent loop.

A summary carries structured state for the next one (``Summary.extra["state"]``);
a framework that stores only the text loses it, so :class:`SummaryStates`
remembers the state of the summaries this process wrote, by their text.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..context import Context
from ..conversation import Conversation, Item, Summary
from ..events import Event
from ..pipeline.consent import consent_of
from ..pipeline.receipts import Receipt
from ..pipeline.restore import RESTORED_HEADING
from ..summarizers.base import SUMMARY_PREAMBLE

log = logging.getLogger("contextfold.integrations")


@dataclass(frozen=True)
class Folded:
    """A compaction: ``span`` (the history items it replaces, in order), ``summary`` and ``restored`` (or ``None``),
    and its ``receipt`` (the refs it lists are the ids of the items of the history it was given)."""

    span: tuple[Item, ...]
    summary: Item
    restored: Item | None
    events: tuple[Event, ...]
    receipt: Receipt | None = None

    @property
    def texts(self) -> list[str]:
        """What the framework stores in place of the span: the summary, then the restored files."""
        return [self.summary.text] + ([self.restored.text] if self.restored is not None else [])


@dataclass(frozen=True)
class Settings:
    """What an integration is configured with: ``model`` and ``options`` as :class:`~contextfold.context.Context`
    takes them, and ``on_event``, which hears every event of every Context built from them."""

    model: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    on_event: Callable[[Event], None] | None = None

    def context(self) -> Context:
        context = Context(self.model, **self.options)
        context.subscribe(report)
        if self.on_event is not None:
            context.subscribe(self.on_event)
        return context


def report(event: Event) -> None:
    """Log an event: a fault (a summarizer that failed or fell back, a repair) as a warning, the rest as info."""
    faulty = event.action in ("failed", "fallback", "breaker_open", "repaired")
    log.log(logging.WARNING if faulty else logging.INFO, "%s %s: %s", event.stage, event.action, event.detail)


class SummaryStates:
    """The structured state of recent summaries, by their text (bounded: the oldest are forgotten)."""

    def __init__(self, size: int = 64) -> None:
        self._states: OrderedDict[str, Mapping[str, Any]] = OrderedDict()
        self._size = size

    def remember(self, summary: Item) -> None:
        for block in summary.blocks:
            if isinstance(block, Summary):
                state = block.extra.get("state")
                self._states[block.text] = state if isinstance(state, Mapping) else {}
                self._states.move_to_end(block.text)
        while len(self._states) > self._size:
            self._states.popitem(last=False)

    def revive(self, item: Item) -> Item:
        """``item`` as a summary item if it opens with a contextfold summary (with its state when remembered), as
        the restored-files item if it opens as one.

        The framework stored only text; the summary's first block becomes a
        :class:`~contextfold.conversation.Summary` again, so the next summary
        carries its facts forward, and the item is marked as a summary, so it
        is never taken for the task. Both are marked as contextfold's: a later
        compaction's receipt gives them no ``read_history`` reference (the
        history tools hold what they stood for, not them).
        """
        first = item.blocks[0] if item.blocks else None
        text = getattr(first, "text", None)
        if isinstance(text, str) and text.startswith(RESTORED_HEADING) and not item.provenance.restored:
            return replace(item, provenance=replace(item.provenance, restored=True))
        if not isinstance(text, str) or not text.startswith(SUMMARY_PREAMBLE) or isinstance(first, Summary):
            return item
        block = Summary(text, preamble=len(SUMMARY_PREAMBLE), extra={"state": dict(self._states.get(text, {}))})
        return Item("user", (block, *item.blocks[1:]), id=item.id, timestamp=item.timestamp,
                    meta=item.meta, provenance=replace(item.provenance, summary=True))


def fold(conversation: Conversation, settings: Settings, instructions: str | None = None) -> Folded | None:
    """Summarize ``conversation`` the way the pipeline would now; ``None`` when there is nothing to summarize.

    The task (the first user message) and a recent tail within the policy's
    budget stay out of the span; the span never splits a call from its result. The framework calls this when
    its history is due: with ``Policy(mode="manual")`` or ``"off"`` nothing is folded.
    """
    context = settings.context()
    if context.policy.mode != "auto":  # the framework's trigger is no one asking: manual and off wait to be asked
        return None
    context.add(conversation)
    events = context.compact(instructions)
    done = [e for e in events if e.stage == "summarize" and e.action == "summarized"]
    if not done or not _consented(context, settings):
        return None
    view = context.view()
    summary = next(item for item in view if item.provenance.summary)
    restored = next((item for item in view if item.provenance.restored), None)
    covered = set(done[-1].items)
    span = tuple(item for item in conversation if item.id in covered)
    return Folded(span, summary, restored, tuple(events), context.last_receipt)


def _consented(context: Context, settings: Settings) -> bool:
    """Whether the app's ``on_compaction`` (among the options) lets the framework store this compaction: the
    framework decided it is due, so it is announced like an automatic one, and may be declined while the history
    still fits the window (nothing is stored then; the framework asks again next time)."""
    consent = consent_of(settings.options.get("on_compaction"))
    receipt = context.last_receipt
    if consent is None or receipt is None:
        return True
    verdict = consent(receipt, receipt.tokens_before <= context.hard_tokens)
    context.record_events(verdict.events)
    return verdict.proceed
