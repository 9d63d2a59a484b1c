"""Two workers, one session: each span summarized once, retried appends stored once, a dead holder taken over.

Usage: ``python3 benchmarks/fleet.py [--compactions 100] [--backends postgresql,redis] [--overshoot 0.97]``

Two threads, each its own ``Context`` resumed on one shared session (its own
connection), add turns and call ``at_turn_boundary()`` until the session has
had ``--compactions`` summaries. A counting summarizer records every span it
is asked to summarize (``--overshoot`` pads each summary past its target to that
share of its span, as a model that overshoots does); the figures are the summarizer calls, the
compactions the workers committed (their ``summarized`` events, emitted only
once the store took the view), the distinct summaries in the store's view
checkpoints, and how many items were summarized more than once (double work).
Each span summarized once means calls == compactions == summaries committed.
Then 1,000 appends, each timed out after its commit and retried, and the
duplicates found. Then a worker killed (SIGKILL) while it summarizes, holding the session's summary lease
(``tests/lease_holder_child.py``), and the seconds from the kill until another worker's ``compact()`` has
its summary in (the lease is taken over once the dead holder's heartbeat stops, not at its expiry).
Throwaway servers as in the tests (``tests/store_servers.py``).
"""

from __future__ import annotations

import argparse
import logging
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from store_servers import any_store

from contextfold import Context, Policy, Storage
from contextfold.conversation import Item, Text
from contextfold.errors import StoreUnavailable
from contextfold.stores import StoredSession, open_store
from contextfold.stores import outbox as outbox_module
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.tokens import Estimator

WORDS = "the parser reads the config file and checks each key against the schema " * 30


class Counting:
    """The extractive summarizer, recording the ids of every span it is given (and setting ``enough`` at the
    ``limit``-th); with ``overshoot`` its text is padded past its target to that share of the span's tokens, as
    a model that ignores the target does: the request after it stays over the trigger whatever the tail, yet
    smaller than before the summary."""

    name = "counting"
    offline = True

    def __init__(self, limit: int = 0, overshoot: float = 0.0) -> None:
        self._inner = ExtractiveSummarizer()
        self._estimator = Estimator()
        self.spans: list[tuple[str, ...]] = []
        self.workers: list[str] = []
        self.enough = threading.Event()
        self._limit = limit
        self._overshoot = overshoot
        self._lock = threading.Lock()

    def summarize(self, request):
        with self._lock:
            self.spans.append(tuple(item.id for item in request.items))
            self.workers.append(threading.current_thread().name)
            if len(self.spans) >= self._limit:
                self.enough.set()
        result = self._inner.summarize(request)
        if not self._overshoot:
            return result
        wanted = int(self._overshoot * sum(self._estimator.item(item) for item in request.items))
        return replace(result, text=result.text + " note" * max(wanted - self._estimator.text(result.text), 0))


def worker(url: str, name: str, summarizer: Counting, compactions: list[str], errors: list[str]) -> None:
    try:
        context = Context.resume(url, "s1", window_tokens=32_000, summarizer=summarizer,
                                 policy=Policy(trigger_tokens=12_000, economic_summaries=False))
        context.subscribe(lambda e: compactions.append(name) if (e.stage, e.action) == ("summarize", "summarized")
                          else None)
        turn = 0
        while not summarizer.enough.is_set() and turn < 5_000:
            context.add([Item("user", (Text(f"{name} turn {turn}: {WORDS}"),), id=f"{name}-{turn}-q"),
                         Item("assistant", (Text(f"done with turn {turn}: {WORDS}"),), id=f"{name}-{turn}-a")])
            context.at_turn_boundary()
            turn += 1
        context.close()
    except Exception as error:  # noqa: BLE001 - reported in the figures
        errors.append(f"{name}: {type(error).__name__}: {error}")


def summaries_committed(url: str) -> int:
    """Distinct summaries in the session's view checkpoints (a summary stays in every later checkpoint)."""
    store = open_store(url)
    try:
        return len({e["item"]["id"] for r in store.read("s1") if r["type"] == "event" and r.get("kind") == "view"
                    for e in r["data"]["items"] if "item" in e and e["item"].get("provenance", {}).get("summary")})
    finally:
        store.close()


def run_two_workers(url: str, compactions: int, overshoot: float = 0.0) -> tuple[Counting, list[str], list[str]]:
    """Two workers on a new session ``s1`` until ``compactions`` summarizer calls: the summarizer, the worker of
    each compaction committed, and the errors."""
    StoredSession.create(url, "s1").close()
    summarizer, done, errors = Counting(compactions, overshoot), [], []
    threads = [threading.Thread(target=worker, args=(url, name, summarizer, done, errors), name=name)
               for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return summarizer, done, errors


def two_workers(url: str, compactions: int, overshoot: float) -> None:
    summarizer, done, errors = run_two_workers(url, compactions, overshoot)
    twice, both = double_work(summarizer)
    print(f"  two workers: {len(summarizer.spans)} summarizer calls, {len(done)} compactions committed "
          f"({done.count('a')} by a, {done.count('b')} by b), {summaries_committed(url)} summaries in the store's "
          f"views, {both} item(s) summarized by both workers, {twice} summarized more than once, "
          f"errors: {errors or 'none'}")


def double_work(summarizer: Counting) -> tuple[int, int]:
    """Items (the workers' own, not summaries) summarized more than once, and by both workers."""
    by: dict[str, set[str]] = {}
    calls: Counter[str] = Counter()
    for name, span in zip(summarizer.workers, summarizer.spans):
        for item in span:
            if not item.startswith("it_"):
                calls[item] += 1
                by.setdefault(item, set()).add(name)
    return sum(1 for n in calls.values() if n > 1), sum(1 for names in by.values() if len(names) > 1)


class TimesOutAfterCommit:
    """A real store whose every other append commits, then reports a timeout."""

    def __init__(self, store) -> None:
        self._store, self.appends, self.url, self.exclusive = store, 0, store.url, store.exclusive

    def append(self, session_id, records):
        seqs = self._store.append(session_id, records)
        self.appends += 1
        if self.appends % 2 == 1:
            raise StoreUnavailable(f"{self.url}: timed out waiting for the reply")
        return seqs

    def __getattr__(self, name):
        return getattr(self._store, name)


def append_retried(url: str, session_id: str, count: int = 1000) -> tuple[int, list[str]]:
    """``count`` appends to a new session, each timed out after its commit and retried: the tries, the item ids stored."""
    store = TimesOutAfterCommit(open_store(url))
    try:
        StoredSession.create(store, session_id).close()
        session = StoredSession.resume(store, session_id)
        for n in range(count):
            session.append(Item("user", (Text(f"item {n}"),), id=f"it-{n}"))
        return store.appends, [r["item"]["id"] for r in store.read(session_id) if r["type"] == "item"]
    finally:
        store.close()


def retried_appends(url: str) -> None:
    tries, ids = append_retried(url, "r1")
    print(f"  1,000 appends retried after a timeout: {tries} tries, {len(ids)} stored, "
          f"{len(ids) - len(set(ids))} duplicate(s)")


CHILD = Path(__file__).resolve().parents[1] / "tests" / "lease_holder_child.py"


def killed_holder_delay(url: str, session_id: str = "k1",
                        before_kill: Callable[[], None] | None = None) -> tuple[float, bool]:
    """A worker killed while summarizing ``session_id`` (``before_kill`` called first, while it holds the lease),
    then another's ``compact()``: the seconds from the kill until that ``compact()`` returned, and whether it
    committed a summary."""
    context = Context(window_tokens=32_000, storage=Storage(store=url, session_id=session_id))
    for turn in range(12):
        context.add([Item("user", (Text(f"turn {turn}: {WORDS}"),), id=f"{session_id}-{turn}-q"),
                     Item("assistant", (Text(f"done with turn {turn}: {WORDS}"),), id=f"{session_id}-{turn}-a")])
    context.close()
    holder = subprocess.Popen([sys.executable, str(CHILD), url, session_id], stdout=subprocess.PIPE, text=True)
    try:
        line = holder.stdout.readline() if holder.stdout else ""
        if line.strip() != "summarizing":
            raise RuntimeError(f"the holder did not start summarizing (it said {line!r})")
        if before_kill is not None:
            before_kill()
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        killed = time.monotonic()
        other = Context.resume(url, session_id, window_tokens=32_000)
        events = other.compact()
        delay = time.monotonic() - killed
        other.close()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        if holder.stdout:
            holder.stdout.close()
    return delay, any((e.stage, e.action) == ("summarize", "summarized") for e in events)


def killed_holder(url: str) -> None:
    delay, summarized = killed_holder_delay(url)
    print(f"  a worker killed while summarizing: the next worker's compact() returned {delay:.1f} s after the "
          f"kill, {'with' if summarized else 'WITHOUT'} its summary")


def main() -> None:
    logging.disable(logging.WARNING)  # each simulated timeout is logged; the figures are what is read here
    outbox_module.RETRY_DELAYS_S = (0.0,)  # the pauses between tries are not what is measured
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compactions", type=int, default=100)
    parser.add_argument("--backends", default="postgresql,redis", help="any of sqlite,postgresql,redis")
    parser.add_argument("--overshoot", type=float, default=0.0,
                        help="pad each summary to this share of its span's tokens (0: as the summarizer made it)")
    args = parser.parse_args()
    for backend in args.backends.split(","):
        print(backend)
        with any_store(backend) as url:
            two_workers(url, args.compactions, args.overshoot)
            retried_appends(url)
            killed_holder(url)


if __name__ == "__main__":
    main()
