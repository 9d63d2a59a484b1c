"""Asking the app before a compaction: the contract of ``Context(on_compaction=...)``.

An app may want to tell its user before contextfold compacts on its own
(``"warn"``), or, in an interactive loop that can wait for an answer, let the
user put it off (``"ask"``). The callback is called once per automatic
compaction, after the pipeline decided it and before anything is committed
or sent, with a :class:`CompactionNotice`:

- ``notice.receipt``: what the compaction would do (:class:`~contextfold.pipeline.receipts.Receipt`:
  what it replaces, the tokens before and after, its checks);
- ``notice.mode``: ``"warn"`` or ``"ask"``, as configured;
- ``notice.can_decline``: the answer counts: the mode is ``"ask"``, the compaction is a due one (not the
  provider refusing the request as too long), and the request fits the window without it.

What it returns:

- ``None`` or ``"proceed"``: the compaction goes ahead (in ``"warn"`` mode whatever it returns);
- ``"decline"``, when ``notice.can_decline``: nothing of the compaction is kept; the view goes out as the cheap
  stages left it, a ``receipt``/``declined`` event says so, and the callback is asked again at the next step
  where a compaction is due (an app that always declines runs uncompacted until the window itself is at
  stake: then ``can_decline`` is false and the compaction is made);
- anything else: the compaction goes ahead, with a warning and an event naming the answer.

If it raises an ``Exception``, the compaction goes ahead (the safe option: the request keeps fitting), with
a ``receipt``/``callback_failed`` event and a log line; a ``BaseException`` that is not an ``Exception``
(``KeyboardInterrupt``) reaches the caller. A compaction asked for (``Context.compact()``) is not announced:
it is wanted. A summary made in the background is announced when it is put in, and cannot be declined then
(it is paid for). It runs on the thread of the step (off the event loop for the async API).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ..errors import InvalidPolicy
from ..conversation import Conversation, Item
from ..events import Event
from .receipts import STAGE, Receipt, made

logger = logging.getLogger(__name__)

AskMode = Literal["warn", "ask"]
ASK_MODES = ("warn", "ask")
PROCEED, DECLINE = "proceed", "decline"


@dataclass(frozen=True)
class CompactionNotice:
    """What the ``on_compaction`` callback is given (see the module doc)."""

    receipt: Receipt
    mode: AskMode
    can_decline: bool


@dataclass(frozen=True)
class OnCompaction:
    """``Context(on_compaction=OnCompaction(callback, "ask"))``; a bare callable is ``OnCompaction(callback)``,
    the ``"warn"`` mode."""

    callback: Callable[[CompactionNotice], object]
    mode: AskMode = "warn"

    def __post_init__(self) -> None:
        if not callable(self.callback):
            raise InvalidPolicy("on_compaction", f"a callable is needed, not {self.callback!r}")
        if self.mode not in ASK_MODES:
            raise InvalidPolicy("on_compaction", f'mode "warn" or "ask" is needed, not {self.mode!r}')


@dataclass(frozen=True)
class Verdict:
    """The callback's answer as the step reads it: whether to go ahead, and the events to record."""

    proceed: bool
    events: tuple[Event, ...] = ()


Consent = Callable[[Receipt, bool], Verdict]
"""What the step asks before it keeps a compaction: the receipt, and whether a "decline" may be honoured."""


def consent_of(hook: OnCompaction | Callable[[CompactionNotice], object] | None) -> Consent | None:
    """The step's :data:`Consent` for ``Context(on_compaction=hook)``; ``None`` when there is no hook."""
    if hook is None:
        return None
    watch = hook if isinstance(hook, OnCompaction) else OnCompaction(hook)

    def consent(receipt: Receipt, declinable: bool) -> Verdict:
        notice = CompactionNotice(receipt, watch.mode, declinable and watch.mode == "ask")
        try:
            answer = watch.callback(notice)
        except Exception as error:  # noqa: BLE001 - an app's callback must not take the agent down: go ahead
            logger.warning("the on_compaction callback failed (%s: %s); the compaction goes ahead",
                           type(error).__name__, error)
            return Verdict(True, (Event(STAGE, "callback_failed", detail=f"{type(error).__name__}: {error}"),))
        if answer == DECLINE and notice.can_decline:
            logger.info("the on_compaction callback declined a compaction: %s", receipt.headline())
            return Verdict(False, (Event(STAGE, "declined", tokens_before=receipt.tokens_before,
                                         tokens_after=receipt.tokens_before, detail=receipt.headline()),))
        if answer in (None, PROCEED) or not notice.can_decline:
            return Verdict(True)
        logger.warning("the on_compaction callback answered %r (not %r or %r); the compaction goes ahead",
                       answer, PROCEED, DECLINE)
        return Verdict(True, (Event(STAGE, "callback_failed", detail=f"unknown answer {answer!r}"),))

    return consent


def announced(before: Conversation, after: Conversation, events: Sequence[Event], count: Callable[[Conversation], int],
              count_item: Callable[[Item], int], occasion: str, consent: Consent | None) -> list[Event]:
    """The receipt event of a compaction already made (a background summary put in, the provider's own), told to
    the callback, which cannot decline it; nothing when it changed no item."""
    receipt, faults = made(before, after, events, count, count_item, occasion)
    if receipt is None:
        return faults
    told = consent(receipt, False).events if consent is not None else ()
    return [*told, receipt.event()]
