"""Memory of a session with large outputs, and the first request after resuming a long session.

    python benchmarks/durability.py [--large 200] [--histories 6000 18000]

Prints one JSON object:
  history_mib_with_results   Python heap (tracemalloc) held after adding ``--large`` rounds whose
                             output is 1 MB each, with a results folder: outputs go to disk on arrival
  history_mib_in_memory      the same without a results folder or transcript (outputs stay in memory)
  resume_s_<n>, first_prepare_s_<n>, view_items_<n>
                             for a session of ``n`` items built as an agent does (300 items, then a
                             request): seconds to resume it, seconds for the first prepare() after,
                             and how many items that request holds (the first request should cost
                             what the view costs, not what the history costs)
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import tracemalloc
from pathlib import Path

from contextfold import Context, Storage
from contextfold.conversation import Item, Text, ToolCall, ToolResult


def large_round(k: int) -> list[Item]:
    return [Item("assistant", (ToolCall(f"c{k}", "bash", {"command": f"cat log{k}"}),)),
            Item("tool", (ToolResult(f"c{k}", f"{k} " + "x" * 1_000_000),))]


def held_mib(rounds: int, folder: Path | None) -> float:
    """Heap held by a context after ``rounds`` large outputs (what stays once the adds are done)."""
    tracemalloc.start()
    context = Context(window_tokens=200_000,
                      storage=Storage(transcript=folder, session_id="memory" if folder else None))
    context.add([Item("user", (Text("read the logs"),))])
    for k in range(rounds):
        context.add(large_round(k))
    held = tracemalloc.get_traced_memory()[0] / 2**20
    tracemalloc.stop()
    context.close()
    return round(held, 1)


def resumed_first_prepare(items: int, folder: Path) -> dict[str, float]:
    session = f"long-{items}"
    with Context(window_tokens=200_000, storage=Storage(transcript=folder, session_id=session)) as context:
        batch: list[Item] = []
        for k in range(items // 3):
            batch += [Item("user", (Text(f"step {k} please"),)),
                      Item("assistant", (ToolCall(f"r{k}", "bash", {"command": f"ls {k}"}),)),
                      Item("tool", (ToolResult(f"r{k}", f"out {k} " * 20),))]
            if len(batch) >= 300:
                context.add(batch)
                context.prepare()
                batch = []
    started = time.perf_counter()
    resumed = Context.resume(folder, session, window_tokens=200_000)
    loaded = time.perf_counter()
    resumed.prepare()
    done = time.perf_counter()
    resumed.close()
    return {f"resume_s_{items}": round(loaded - started, 3), f"first_prepare_s_{items}": round(done - loaded, 3),
            f"view_items_{items}": len(resumed.view())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", type=int, default=200, help="rounds with a 1 MB output")
    parser.add_argument("--histories", type=int, nargs="+", default=[6_000, 18_000], help="items in the resumed sessions")
    options = parser.parse_args()
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="contextfold-durability-") as scratch:
        figures["history_mib_with_results"] = held_mib(options.large, Path(scratch) / "sessions")
        figures["history_mib_in_memory"] = held_mib(options.large, None)
        for items in options.histories:
            figures.update(resumed_first_prepare(items, Path(scratch) / "sessions"))
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
