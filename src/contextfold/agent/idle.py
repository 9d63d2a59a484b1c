"""``contextfold chat --idle-compaction`` compacts an idle session just before its prompt cache expires, when that pays.

While the REPL waits for the person, :class:`IdleCompactor` schedules one call
of :meth:`~contextfold.Context.compact_if_idle` at
:meth:`~contextfold.Context.idle_compaction_at` (``Policy.idle_compaction``,
which ``--idle-compaction`` or a policy file turns on, with the model's cache
lifetime from the price table: :func:`chat_policy`; the lifetime Anthropic
reports for each cache write replaces that guess). It is off by default: on
the recorded sessions with idle gaps it cost less but lost strict recall on
some beyond what moving a compaction a little loses (see the README's idle
compaction). The call runs on a timer thread, so it holds the session's lock:
the person's next line waits for it rather than racing it. The schedule and
the clock are injected (a test runs the callback itself).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace

from contextfold import Context, Event, Policy

from ..context.idle import cache_lifetime_s

Cancel = Callable[[], None]
Schedule = Callable[[float, Callable[[], None]], Cancel]
"""``schedule(delay_s, call)`` runs ``call`` once after ``delay_s`` seconds; what it returns cancels it."""


def on_timer(delay_s: float, call: Callable[[], None]) -> Cancel:
    """:data:`Schedule` on a daemon ``threading.Timer``."""
    timer = threading.Timer(delay_s, call)
    timer.daemon = True
    timer.start()
    return timer.cancel


def chat_policy(model: str | None, chosen: Policy, *, idle_compaction: bool = False) -> Policy:
    """``chosen`` at ``model``'s cache lifetime when the price table knows it, with idle compaction on if asked
    (``idle_compaction``) or if ``chosen`` has it on already (a policy file)."""
    lifetime = cache_lifetime_s(model)
    return replace(chosen, idle_compaction=chosen.idle_compaction or idle_compaction,
                   cache_ttl_s=chosen.cache_ttl_s if lifetime is None else lifetime)


class IdleCompactor:
    """While the person is away, one idle compaction at the time the context says (see the module docstring)."""

    def __init__(self, context: Callable[[], Context], lock: threading.Lock, report: Callable[[list[Event]], None],
                 *, schedule: Schedule = on_timer, clock: Callable[[], float] = time.time) -> None:
        self.context = context
        self.lock = lock
        self.report = report
        self.schedule = schedule
        self.clock = clock

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """The block during which the person may be away: the idle compaction is due within it, or never."""
        due = self.context().idle_compaction_at()
        cancel = self.schedule(max(due - self.clock(), 0.0), self.fire) if due is not None else None
        try:
            yield
        finally:
            if cancel is not None:
                cancel()

    def fire(self) -> None:
        """Compact if idle, under the session's lock; the events go to ``report``."""
        with self.lock:
            events = self.context().compact_if_idle()
        if events:
            self.report(events)
