"""How long 200 sessions appending and compacting on one asyncio loop stall that loop, on PostgreSQL and Redis.

    python benchmarks/async_load.py [--sessions 200] [--turns 12] [--backends postgresql,redis]

Starts a throwaway PostgreSQL and Redis on 127.0.0.1 (as the tests do; a
backend whose server cannot run here is reported as skipped). For each
backend, one async store (:func:`~contextfold.stores.open_async_store`:
psycopg's ``AsyncConnection``, ``redis.asyncio``) serves ``--sessions``
concurrent sessions on one event loop. Each session is a
:class:`~contextfold.Context` made with ``Context.acreate`` that, turn after
turn, adds a tool call and its result (``aadd``), asks for the request
(``aprepare``; summaries fire on their own over the trigger) and, every
``--compact-every`` turns, compacts (``acompact``); then it closes
(``aclose``). Meanwhile a ticker task sleeps ``--tick-ms`` again and again and
notes how late it wakes: that lateness is how long something held the loop.

One session runs first, unwatched (the first Context imports the pipeline's
modules, as a server does once at start). Afterwards every session is read
back through the blocking store and every item an ``aadd`` acknowledged is
looked for by its id. The ticker measures everything that holds the loop,
the machine's other load included: the load average is printed beside the
figures. Prints a table and then one JSON object a backend:
  stall_ms_p50, stall_ms_p99, stall_ms_max   the ticker's lateness (bar: p99 <= 20 ms)
  full_gc, full_gc_ms_max                    the garbage collector's full collections meanwhile, and the
                                             longest (it holds every thread, the loop's too: what the
                                             largest stalls are made of)
  lost, duplicated                           acknowledged items missing, or stored twice (bar: 0)
  appends, prepares, compactions, summaries  what the sessions did
  seconds                                    the wall time of the whole load
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from contextfold import Context, Storage
from contextfold.pipeline.base import Policy
from contextfold.stores import open_async_store, open_store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from store_servers import missing, postgres_server, redis_server

SERVERS = {"postgresql": postgres_server, "redis": redis_server}
SYSTEM = "You are a coding agent. Read files with bash; keep answers short."


def turn(session: int, k: int) -> list[dict[str, Any]]:
    """One tool call and its result (about 2,500 characters), in Anthropic's format."""
    output = "\n".join(f"src/module_{session}/file_{k}.py:{line}: value_{line} = compute({line}, {k})"
                       for line in range(40))
    return [
        {"role": "assistant", "content": [
            {"type": "text", "text": f"Reading file {k} of module {session}."},
            {"type": "tool_use", "id": f"toolu_{session}_{k}", "name": "bash",
             "input": {"command": f"cat src/module_{session}/file_{k}.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{session}_{k}",
                                      "content": output}]},
    ]


class FullCollections:
    """How long each of the garbage collector's full (generation 2) collections took while installed: it runs in
    whichever thread allocates, holding the interpreter's lock, so the loop waits for it too."""

    def __init__(self) -> None:
        self.pauses_s: list[float] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses_s.append(time.perf_counter() - self._started)

    def __enter__(self) -> FullCollections:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


class Ticker:
    """A task that sleeps ``tick_s`` again and again and keeps how late each wake-up was."""

    def __init__(self, tick_s: float) -> None:
        self.tick_s = tick_s
        self.late_s: list[float] = []
        self._running = True

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._running:
            due = loop.time() + self.tick_s
            await asyncio.sleep(self.tick_s)
            self.late_s.append(max(0.0, loop.time() - due))

    def stop(self) -> None:
        self._running = False


async def one_session(store: Any, number: int, args: argparse.Namespace, acknowledged: list[str],
                      counts: Counter[str]) -> None:
    context = await Context.acreate(window_tokens=args.window,
                                    storage=Storage(store=store, session_id=f"load-{number}"),
                                    policy=Policy(trigger_tokens=args.trigger))
    try:
        added = await context.aadd([{"role": "user", "content": f"Fix the failing test in module {number}."}],
                                   system=SYSTEM)
        acknowledged.extend(item.id for item in added)
        for k in range(args.turns):
            added = await context.aadd(turn(number, k))
            acknowledged.extend(item.id for item in added)
            counts["appends"] += 1
            await context.aprepare()
            counts["prepares"] += 1
            if (k + 1) % args.compact_every == 0:
                await context.acompact()
                counts["compactions"] += 1
        counts["summaries"] += sum(1 for e in context.events if e.stage == "summarize" and e.action == "summarized")
    finally:
        await context.aclose()


async def load(url: str, args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    """The figures of one backend's load, and the ids of the items every ``aadd`` acknowledged."""
    store = await open_async_store(url)
    # one session first, unwatched: the first Context imports the pipeline's modules (a server does that once,
    # at start), and the store opens its first connections
    await one_session(store, args.sessions, args, [], Counter())
    ticker = Ticker(args.tick_ms / 1000)
    ticking = asyncio.create_task(ticker.run())
    acknowledged: list[str] = []
    counts: Counter[str] = Counter()
    started = time.perf_counter()
    try:
        with FullCollections() as collections:
            await asyncio.gather(*(one_session(store, n, args, acknowledged, counts) for n in range(args.sessions)))
    finally:
        seconds = time.perf_counter() - started
        ticker.stop()
        await ticking
        await store.close()
    late_ms = sorted(late * 1000 for late in ticker.late_s)
    return {
        "sessions": args.sessions,
        "stall_ms_p50": round(statistics.median(late_ms), 2),
        "stall_ms_p99": round(late_ms[min(len(late_ms) - 1, int(0.99 * len(late_ms)))], 2),
        "stall_ms_max": round(late_ms[-1], 2),
        "ticks": len(late_ms),
        "full_gc": len(collections.pauses_s),
        "full_gc_ms_max": round(max(collections.pauses_s, default=0.0) * 1000, 2),
        **dict(counts),
        "seconds": round(seconds, 1),
    }, acknowledged


def checked(url: str, args: argparse.Namespace) -> dict[str, Any]:
    """The load on the store at ``url``, and whether every acknowledged item is stored once (read after the loop)."""
    figures, acknowledged = asyncio.run(load(url, args))
    stored = Counter(stored_ids(url, args.sessions))
    figures["lost"] = sum(1 for item_id in acknowledged if stored[item_id] == 0)
    figures["duplicated"] = sum(1 for item_id in acknowledged if stored[item_id] > 1)
    figures["acknowledged"] = len(acknowledged)
    return figures


def stored_ids(url: str, sessions: int) -> list[str]:
    """The id of every item of every session, as the blocking store reads them back."""
    store = open_store(url)
    try:
        return [record["item"]["id"] for n in range(sessions) for record in store.read(f"load-{n}")
                if record["type"] == "item"]
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=12, help="tool calls each session adds")
    parser.add_argument("--compact-every", type=int, default=6, help="an acompact() every this many turns")
    parser.add_argument("--window", type=int, default=16_000, help="each session's window (tokens)")
    parser.add_argument("--trigger", type=int, default=6_000, help="prompt tokens over which a summary is due")
    parser.add_argument("--tick-ms", type=float, default=5.0, help="the ticker's sleep")
    parser.add_argument("--backends", default="postgresql,redis")
    args = parser.parse_args()

    results: dict[str, dict[str, Any]] = {}
    for backend in args.backends.split(","):
        reason = missing(backend)
        if reason is not None:
            print(f"{backend}: skipped ({reason})", file=sys.stderr)
            continue
        with SERVERS[backend]() as url:
            results[backend] = checked(url, args)

    print(f"{'backend':<11}{'sessions':>9}{'p50 ms':>8}{'p99 ms':>8}{'max ms':>8}{'gc ms':>8}{'lost':>5}{'dup':>4}"
          f"{'appends':>8}{'compacts':>9}{'s':>6}")
    for backend, r in results.items():
        print(f"{backend:<11}{r['sessions']:>9}{r['stall_ms_p50']:>8}{r['stall_ms_p99']:>8}{r['stall_ms_max']:>8}"
              f"{r['full_gc_ms_max']:>8}{r['lost']:>5}{r['duplicated']:>4}{r.get('appends', 0):>8}"
              f"{r.get('compactions', 0):>9}{r['seconds']:>6}")
    print(f"(load average of the machine: {', '.join(f'{n:.1f}' for n in os.getloadavg())} on {os.cpu_count()} cores)")
    for backend, r in results.items():
        print(json.dumps({"backend": backend, **r}))


if __name__ == "__main__":
    main()
