"""Appends per second and resume time of a 10,000-item session on every store, side by side, in one run.

    python benchmarks/stores.py [--items 10000] [--commit-items 300]

Starts a throwaway PostgreSQL and Redis on 127.0.0.1 (as the tests do; a
backend whose server cannot run here is reported as skipped) and, for each
backend, appends ``--items`` items one at a time to a new session through
:class:`~contextfold.stores.StoredSession` (what ``Context.add`` does: the
codec, the JSON body, one transaction), then resumes the session twice: the
records alone (``StoredSession.resume``) and the whole context with its view
(``Context.resume``). Items are tool results of about 600 characters.

Prints a table and then one JSON object a backend:
  append_ms_median, append_ms_p95   one append, acknowledged (bar: median <= 2 ms for SQLite and PostgreSQL)
  appends_per_s                     items / total append time
  resume_records_ms, resume_context_ms   reading the session back; rebuilding the Context on it
The SQL stores are measured at their default durability (``process``: an
acknowledged append survives any writer's crash) and, over ``--commit-items``
appends, at ``?durability=commit`` (flushed to disk before the acknowledgement),
whose cost is the disk's flush latency.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from contextfold import Context
from contextfold.conversation import Item, ToolResult
from contextfold.stores import StoredSession

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from store_servers import missing, postgres_server, redis_server


def items(count: int) -> Iterator[Item]:
    for n in range(count):
        text = f"$ pytest tests/test_{n % 97}.py\n" + f"line {n}: assert result == expected  # ok\n" * 14
        yield Item("tool", (ToolResult(f"call_{n}", text[:600]),), id=f"item-{n}")


def measure(url: str, count: int, resume: bool, session_id: str = "bench") -> dict[str, float]:
    session = StoredSession.create(url, session_id)
    latencies = []
    try:
        for item in items(count):
            start = time.perf_counter()
            session.append_items([item])
            latencies.append(time.perf_counter() - start)
    finally:
        session.close()
    figures = {
        "items": count,
        "append_ms_median": statistics.median(latencies) * 1000,
        "append_ms_p95": statistics.quantiles(latencies, n=20)[-1] * 1000,
        "appends_per_s": count / sum(latencies),
    }
    if resume:
        start = time.perf_counter()
        StoredSession.resume(url, "bench").close()
        figures["resume_records_ms"] = (time.perf_counter() - start) * 1000
        start = time.perf_counter()
        context = Context.resume(url, "bench", window_tokens=1_000_000)
        figures["resume_context_ms"] = (time.perf_counter() - start) * 1000
        assert len(context.history) == count
        context.close()
    return figures


def with_durability(url: str, durability: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}durability={durability}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--commit-items", type=int, default=300)
    args = parser.parse_args()
    results: dict[str, dict[str, float] | str] = {}
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as servers:
        urls = {"jsonl": f"jsonl:///{folder}/jsonl", "sqlite": f"sqlite:///{folder}/sessions.db"}
        for name, start in (("postgresql", postgres_server), ("redis", redis_server)):
            reason = missing(name)
            if reason is None:
                urls[name] = servers.enter_context(start())
            else:
                results[name] = f"skipped: {reason}"
        for name, url in urls.items():
            results[name] = measure(url, args.items, resume=True)
            if name in ("sqlite", "postgresql"):
                durable = with_durability(url, "commit")
                results[f"{name} (durability=commit)"] = measure(durable, args.commit_items, False, "bench-commit")
    print(f"{'backend':<32}{'items':>7}{'append ms p50':>15}{'p95':>8}{'appends/s':>11}{'resume records ms':>19}"
          f"{'resume Context ms':>19}")
    for name, figures in results.items():
        if isinstance(figures, str):
            print(f"{name:<32}{figures}")
            continue
        print(f"{name:<32}{figures['items']:>7}{figures['append_ms_median']:>15.3f}{figures['append_ms_p95']:>8.2f}"
              f"{figures['appends_per_s']:>11,.0f}{figures.get('resume_records_ms', float('nan')):>19.0f}"
              f"{figures.get('resume_context_ms', float('nan')):>19.0f}")
    for name, figures in results.items():
        print(json.dumps({"backend": name, **figures} if isinstance(figures, dict) else {"backend": name, "skipped": figures}))


if __name__ == "__main__":
    main()
