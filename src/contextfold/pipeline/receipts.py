"""Receipts: what one compaction did to the view, and how to get back each thing it took out.

Events say what each stage did; a person (or the app in front of one) asks a
different question after a compaction: which turns went, what replaced them,
what was kept word for word, and how to read each one again. A
:class:`Receipt` answers it, one per compaction, from the view before and the
view after (so a user's own stage is covered like the built-in ones):

- the span it replaced (first and last item ids, and their times);
- the request's tokens before and after;
- what was kept verbatim, and what contextfold wrote in (the summary, restored
  files, a survival note);
- every item it took out or changed, summarized, cleared, offloaded or
  removed, with the ``read_history`` reference that returns it (an item's id,
  looked up in the history, which is never changed: :mod:`contextfold.lookback`);
- the result's own checks, read from the session rather than from the
  summarizer's notes, so a model's summary is checked the same way: the task
  is still there, every error left unresolved is still named, and the
  person's latest request is still there (:mod:`contextfold.reading` says who
  speaks and what a request's opening is; the errors are those the summaries'
  own reader, :mod:`contextfold.summarizers._facts`, finds unresolved).

A receipt travels as an event (stage ``receipt``, action ``compaction``, the
receipt in ``data``), so it is in the transcript and the store like every
event, and :func:`receipts_in` reads receipts back from any list of events.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from ..conversation import Conversation, Item, Summary, readable_text
from ..events import Event
from ..lookback.offloaded import is_offloaded
from ..reading import added_by_contextfold, is_person, opening, reading_of, says_something
from ..stores.transcript_reading import TranscriptEvent
from ..summarizers._facts import Facts, read_on
from .task import task_index

logger = logging.getLogger(__name__)

STAGE, ACTION = "receipt", "compaction"
SUMMARY_ACTIONS = frozenset({"summarized", "compacted"})
"""Actions of the events whose items a summary replaced: contextfold's summary, the provider's own compaction."""
CHECK_CHARS = 80
"""A line looked for in the compacted request is its first this many characters (whitespace collapsed): a summary
may shorten a long error line, never its start."""
OCCASIONS = {"due": "auto", "forced": "manual", "reactive": "reactive", "none": "background"}
"""What a step's summary mode (:class:`~contextfold.pipeline.step.Occasion`) says about why it compacted."""


@dataclass(frozen=True)
class Taken:
    """One item the compaction took out of the view, or changed in it: ``how`` (``summarized``, ``cleared``,
    ``offloaded``, ``removed``), by which ``stage``, its ``role``, the ``tokens`` it took before, its time.

    ``readable``: the history holds it, so :attr:`read_history` returns it whole; an item contextfold wrote itself
    (an earlier summary summarized again) is not in the history: the receipt of the compaction that wrote it
    lists what it stood for.
    """

    ref: str
    how: str
    stage: str
    role: str
    tokens: int
    time: float | None = None
    readable: bool = True

    @property
    def read_history(self) -> str | None:
        """The call that reads it back (``read_history("it_…")``), or ``None`` when the history does not hold it."""
        return f"read_history({json.dumps(self.ref)})" if self.readable else None


@dataclass(frozen=True)
class Check:
    """One check of the compacted request: ``present`` (``None`` when there was nothing to look for) and the
    lines ``missing`` from it."""

    name: str
    present: bool | None
    missing: tuple[str, ...] = ()


@dataclass(frozen=True)
class Receipt:
    """What one compaction did (see the module doc). ``occasion``: ``auto``, ``manual``, ``reactive`` (after the
    provider said the prompt was too long), ``background`` (a summary made off the loop, put in) or ``provider``
    (the provider's own compaction)."""

    occasion: str
    stages: tuple[str, ...]
    first_id: str
    last_id: str
    first_time: float | None
    last_time: float | None
    tokens_before: int
    tokens_after: int
    kept: tuple[str, ...]
    added: tuple[str, ...]
    taken: tuple[Taken, ...]
    checks: tuple[Check, ...]

    def of_kind(self, how: str) -> tuple[Taken, ...]:
        """The items taken ``how`` (``summarized``, ``cleared``, ``offloaded``, ``removed``)."""
        return tuple(taken for taken in self.taken if taken.how == how)

    @property
    def failed_checks(self) -> tuple[Check, ...]:
        return tuple(check for check in self.checks if check.present is False)

    def to_dict(self) -> dict[str, Any]:
        """As JSON data (what the event carries), as ``asdict`` writes it. Every field holds immutable values
        (strings, numbers, tuples of them) or records of them, which are shared rather than copied: ``asdict``
        copies each id of the request one call at a time, at every compaction."""
        data = _fields(self)
        data["taken"] = tuple(map(_fields, self.taken))
        data["checks"] = tuple(map(_fields, self.checks))
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Receipt:
        """The receipt :meth:`to_dict` wrote (read back from an event, the transcript or a store); fields a later
        version added are left out. ``ValueError`` for data that is no receipt."""
        try:
            values = {key: data[key] for key in cls.__dataclass_fields__}
            values["taken"] = tuple(Taken(**{key: entry[key] for key in Taken.__dataclass_fields__ if key in entry})
                                    for entry in data["taken"])
            values["checks"] = tuple(Check(c["name"], c["present"], tuple(c.get("missing", ()))) for c in data["checks"])
            for key in ("stages", "kept", "added"):
                values[key] = tuple(data[key])
            return cls(**values)
        except (KeyError, TypeError) as error:
            raise ValueError(f"not a receipt: {type(error).__name__}: {error}") from None

    def headline(self) -> str:
        """One line: why, what, and the tokens before and after."""
        counts = ", ".join(f"{len(self.of_kind(how))} {how}" for how in ("summarized", "cleared", "offloaded", "removed")
                           if self.of_kind(how))
        return (f"{self.occasion} compaction ({', '.join(self.stages)}): {counts}, {len(self.kept)} kept verbatim; "
                f"{self.tokens_before:,} -> {self.tokens_after:,} tokens")

    def lines(self, limit: int = 12) -> list[str]:
        """The receipt as a person reads it: the headline, the span, the checks, and up to ``limit`` items taken
        with the call that reads each back."""
        span = f"span {self.first_id} .. {self.last_id}"
        if self.first_time is not None and self.last_time is not None:
            span += f" ({_clock(self.first_time)} to {_clock(self.last_time)})"
        checks = "; ".join(f"{c.name} {'ok' if c.present else 'n/a' if c.present is None else 'MISSING'}"
                           + (f" ({', '.join(repr(m) for m in c.missing[:2])})" if c.missing else "")
                           for c in self.checks)
        shown = [f"  {t.how:<10} {t.role:<9} {t.tokens:>7,} tok  {t.read_history or '(written by contextfold)'}"
                 for t in self.taken[:limit]]
        more = [f"  … {len(self.taken) - limit} more"] if len(self.taken) > limit else []
        return [self.headline(), span, f"checks: {checks}", *shown, *more]

    def event(self) -> Event:
        """The event that carries the receipt (no items of its own: the stages' events name them)."""
        return Event(STAGE, ACTION, tokens_before=self.tokens_before, tokens_after=self.tokens_after,
                     detail=self.headline(), data=self.to_dict())


def _fields(record: Receipt | Taken | Check) -> dict[str, Any]:
    """A record's fields by name, their values shared (see :meth:`Receipt.to_dict`)."""
    return {field.name: getattr(record, field.name) for field in fields(record)}


def receipts_in(events: Iterable[Event]) -> list[Receipt]:
    """The receipts among ``events`` (a Context's, a replay's, a stored session's), in order."""
    return [Receipt.from_dict(event.data) for event in events if event.stage == STAGE and event.action == ACTION]


def stored_receipts(events: Iterable[TranscriptEvent]) -> list[Receipt]:
    """The receipts among a stored session's events (:attr:`~contextfold.stores.records.Restored.events`), in order;
    one that cannot be read (a damaged record) is left out with a warning naming its record."""
    receipts = []
    for event in events:
        if event.kind != STAGE or event.data.get("action") != ACTION:
            continue
        try:
            data = event.data.get("data")
            if not isinstance(data, Mapping):
                raise ValueError("its data is not a mapping")
            receipts.append(Receipt.from_dict(data))
        except ValueError as error:
            logger.warning("the receipt of record %d is left out: %s", event.seq, error)
    return receipts


def made(before: Conversation, after: Conversation, events: Sequence[Event], count: Callable[[Conversation], int],
         count_item: Callable[[Item], int], occasion: str) -> tuple[Receipt | None, list[Event]]:
    """:func:`receipt_of`, a fault in it kept from the agent loop: no receipt then, a ``receipt``/``failed`` event
    and a log line instead (the compaction itself stands)."""
    try:
        return receipt_of(before, after, events, count, count_item, occasion), []
    except Exception as error:  # noqa: BLE001 - a receipt is a report: its bug must not undo the compaction
        logger.warning("the receipt of a compaction could not be made: %s: %s", type(error).__name__, error)
        return None, [Event(STAGE, "failed", detail=f"{type(error).__name__}: {error}")]


def receipt_of(before: Conversation, after: Conversation, events: Sequence[Event], count: Callable[[Conversation], int],
               count_item: Callable[[Item], int], occasion: str) -> Receipt | None:
    """The receipt of the compaction that turned ``before`` into ``after`` with ``events``; ``None`` when no event
    changed an item (nothing was compacted). ``occasion`` is a step's summary mode or a name of :class:`Receipt`'s."""
    changing = [event for event in events if event.items]
    if not changing:
        return None
    by_stage = {ref: event.stage for event in changing for ref in event.items}
    summarized = {ref for event in changing if event.action in SUMMARY_ACTIONS for ref in event.items}
    now = {item.id: item for item in after.items}
    kept: list[str] = []
    taken: list[Taken] = []
    gone: list[Item] = []
    for item in before.items:
        new = now.get(item.id)
        if new is not None and (new is item or new == item):
            kept.append(item.id)
            continue
        if new is not None:
            how = "offloaded" if is_offloaded(new) and not is_offloaded(item) else "cleared"
        else:
            how = "summarized" if item.id in summarized else "removed"
        taken.append(Taken(item.id, how, by_stage.get(item.id, "?"), item.role, count_item(item), item.timestamp,
                           not added_by_contextfold(item)))
        gone.append(item)
    if not taken:
        return None
    known = {item.id for item in before.items}
    return Receipt(
        occasion=OCCASIONS.get(occasion, occasion),
        stages=tuple(dict.fromkeys(event.stage for event in changing)),
        first_id=gone[0].id, last_id=gone[-1].id, first_time=gone[0].timestamp, last_time=gone[-1].timestamp,
        tokens_before=count(before), tokens_after=count(after),
        kept=tuple(kept), added=tuple(item.id for item in after.items if item.id not in known),
        taken=tuple(taken), checks=checks(before, after),
    )


def checks(before: Conversation, after: Conversation) -> tuple[Check, ...]:
    """Whether ``after`` still holds the task, every error ``before`` left unresolved, and the person's latest request.

    Each is looked for as text anywhere in ``after`` (a summary, a kept item), line by line: a request by its
    opening lines that say something, an error by its failure line.
    """
    shown = _collapsed("\n".join(readable_text(item) for item in after.items))
    task = task_index(before)
    latest = next((item for item in reversed(before.items) if item.role == "user" and is_person(item)), None)
    facts = _reading(before, after)
    errors = list(dict.fromkeys(error.line for error in facts.errors if error.resolved is None and not error.retired))
    return (
        _check("task", _request_lines(before[task]) if task is not None else None, shown),
        _check("open_errors", errors or None, shown),
        _check("latest_request", _request_lines(latest) if latest is not None else None, shown),
    )


def _reading(before: Conversation, after: Conversation) -> Facts:
    """What a reading of ``before`` finds. When this compaction wrote a summary with the extractive reader's state
    and only the task precedes it, that is the state read on over the items kept after it: the summarizer read the
    span once already, and reading it again made a compaction's receipt cost as much as its summary."""
    known = {item.id for item in before.items}
    for index, item in enumerate(after.items):
        if item.id in known or not item.provenance.summary:
            continue
        if any(earlier.role != "user" or earlier.provenance.summary for earlier in after.items[:index]):
            break
        state = next((block.extra.get("state") for block in item.blocks if isinstance(block, Summary)), None)
        kept = [later for later in after.items[index + 1:] if not added_by_contextfold(later)]
        facts = read_on(state, kept) if isinstance(state, Mapping) else None
        if facts is not None:
            return facts
        break
    facts = Facts()
    facts.read(before.items, details=False)
    return facts


def _check(name: str, wanted: Sequence[str] | None, shown: str) -> Check:
    if not wanted:
        return Check(name, None)
    missing = tuple(line for line in wanted if _collapsed(line)[:CHECK_CHARS] not in shown)
    return Check(name, not missing, missing)


def _request_lines(item: Item) -> list[str]:
    """The lines of a request a reader must not lose: its opening's lines that say something."""
    head, _ = opening(reading_of(item).words)
    return [line for line in head.splitlines() if says_something(_collapsed(line))]


def _collapsed(text: str) -> str:
    return " ".join(text.split())


def _clock(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))
