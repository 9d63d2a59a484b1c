"""An agent loop while a slow summary is made in the background: does prepare() ever wait below the hard level?

    python benchmarks/background.py [--steps 200] [--window 16384] [--summary-s 2] [--model-s 0.5] [--api both]

Runs an agent loop of ``--steps`` steps at a ``--window``-token window with a summarizer that takes
``--summary-s`` seconds (a sleep, then the extractive summary: what a model summary costs the loop is its
latency), each step adding one tool call and its output (10 to 30 lines of code-like text, seeded: about 500 tokens), calling
prepare(), and "calling the model" for ``--model-s`` seconds. With ``--api both`` it runs the sync loop
(prepare(), the summary in a thread) and the async one (await aprepare(), the summary an asyncio task).

Prints one JSON object per API:
  prepare_ms_p50/p99/max_running  prepare() while a summary ran in the background and the view was below the
                                  hard level (bar: p99 <= 5 ms); prepare_cpu_ms_*: the loop thread's CPU time
                                  in those calls (what prepare() itself costs: on a loaded machine the wall
                                  time is mostly waiting for a core; load_average_1m says how loaded it was);
                                  *_start: the calls that started a summary, *_apply: that swapped one in,
                                  *_all: every call
  waits_below_hard                steps that waited for the summary with the view at or below the hard level
                                  (bar: 0); waits_above_hard: those that waited above it (allowed)
  overs                           requests larger than the window (bar: 0); max_request_tokens, the largest
  started/applied/discarded       background summaries that started, were swapped in, were discarded
Timing figures depend on the machine; run it on a quiet one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import statistics
import time
from typing import Any

from contextfold import Context, Usage
from contextfold.events import Event
from contextfold.pipeline.base import Policy
from contextfold.summarizers.base import SummaryRequest, SummaryResult
from contextfold.summarizers.extractive import ExtractiveSummarizer

SYSTEM = "You are a coding agent. Fix the failing test."
TOOLS = [{"name": "bash", "description": "run a command", "input_schema": {"type": "object", "properties": {}}}]


class Slow:
    """A summarizer that takes ``seconds`` (as a model would), then writes the extractive summary."""

    name = "slow"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline_s = 40.0  # a model summarizer's: the Context makes its summaries in the background

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        time.sleep(self.seconds)
        return ExtractiveSummarizer().summarize(request)

    async def asummarize(self, request: SummaryRequest) -> SummaryResult:
        await asyncio.sleep(self.seconds)
        return ExtractiveSummarizer().summarize(request)


def turn(k: int, rng: random.Random) -> list[dict[str, Any]]:
    lines = rng.randint(10, 30)
    body = "".join(f"src/mod{k}.py:{n}: result_{k}_{n} = check(value_{n}, limit={rng.randint(1, 999)})\n"
                   for n in range(lines))
    call = f"toolu_{k}"
    return [
        {"role": "assistant", "content": [{"type": "tool_use", "id": call, "name": "bash",
                                           "input": {"command": f"sed -n 1,80p src/mod{k}.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": body}]},
    ]


class Figures:
    """What each step measured: wall and CPU time of prepare() (the loop thread's own CPU: on a loaded
    machine the wall figure is mostly waiting for a core), by what the step did."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self.kinds: dict[str, list[tuple[float, float]]] = {kind: [] for kind in ("running", "start", "apply", "all")}
        self.waits_below = self.waits_above = self.overs = self.max_tokens = 0
        self._step_events: list[Event] = []
        context.subscribe(self._step_events.append)

    def step(self, before_tokens: int, running: bool, wall_s: float, cpu_s: float) -> None:
        timing = (wall_s * 1000, cpu_s * 1000)
        actions = {e.action for e in self._step_events if e.stage == "summarize"}
        self.kinds["all"].append(timing)
        if "waiting" in actions:
            if before_tokens <= self.context.hard_tokens:
                self.waits_below += 1
            else:
                self.waits_above += 1
        elif running and before_tokens <= self.context.hard_tokens:
            self.kinds["running"].append(timing)
        if "started" in actions:
            self.kinds["start"].append(timing)
        if "applied" in actions:
            self.kinds["apply"].append(timing)
        self._step_events.clear()
        tokens = self.context.counter.count(self.context.view())
        self.max_tokens = max(self.max_tokens, tokens)
        self.overs += tokens > self.context.window_tokens

    def report(self, api: str) -> dict[str, Any]:
        actions = [e.action for e in self.context.events if e.stage == "summarize"]
        figures: dict[str, Any] = {
            "api": api,
            "steps": len(self.kinds["all"]),
            "window_tokens": self.context.window_tokens,
            "trigger_tokens": self.context.trigger_tokens,
            "hard_tokens": self.context.hard_tokens,
            "prepare_calls_running": len(self.kinds["running"]),
        }
        for kind, timings in self.kinds.items():
            for measure, values in (("ms", [w for w, _ in timings]), ("cpu_ms", [c for _, c in timings])):
                figures[f"prepare_{measure}_p50_{kind}"] = _round(_quantile(values, 0.5))
                figures[f"prepare_{measure}_p99_{kind}"] = _round(_quantile(values, 0.99))
                figures[f"prepare_{measure}_max_{kind}"] = _round(max(values, default=0.0))
        figures.update({
            "waits_below_hard": self.waits_below,
            "waits_above_hard": self.waits_above,
            "overs": self.overs,
            "max_request_tokens": self.max_tokens,
            "started": actions.count("started"),
            "applied": actions.count("applied"),
            "discarded": actions.count("discarded"),
            "load_average_1m": round(os.getloadavg()[0], 1),
        })
        return figures


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def _round(value: float) -> float:
    return round(value, 3)


class Loop:
    """One agent loop's context, turns and figures; the sync and async drivers differ only in how they wait."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.context = Context(window_tokens=args.window, summarizer=Slow(args.summary_s), policy=Policy())
        self.context.add([{"role": "user", "content": "The test tests/test_mod.py::test_limit fails; fix it."}],
                         system=SYSTEM, tools=TOOLS)
        self.figures = Figures(self.context)
        self.rng = random.Random(args.seed)
        self._before = (0, False, 0.0, 0.0)

    def add(self, k: int) -> None:
        """The tool's output comes in; the clock starts for prepare()."""
        self.context.add(turn(k, self.rng))
        self._before = (self.context.counter.count(self.context.view()), self.context.summary_running,
                        time.perf_counter(), time.thread_time())

    def prepared(self) -> None:
        tokens, running, wall, cpu = self._before
        self.figures.step(tokens, running, time.perf_counter() - wall, time.thread_time() - cpu)

    def answered(self) -> None:
        self.context.record_usage(Usage(prompt_tokens=self.context.counter.count(self.context.view()), output_tokens=50))

    def report(self, api: str) -> dict[str, Any]:
        figures = self.figures.report(api)
        self.context.close()  # a summary still running is discarded: not counted above
        return figures


def run_sync(args: argparse.Namespace) -> dict[str, Any]:
    loop = Loop(args)
    for k in range(1, args.steps + 1):
        loop.add(k)
        loop.context.prepare()
        loop.prepared()
        time.sleep(args.model_s)  # the model answers
        loop.answered()
    return loop.report("sync")


def run_async(args: argparse.Namespace) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        loop = Loop(args)
        for k in range(1, args.steps + 1):
            loop.add(k)
            await loop.context.aprepare()
            loop.prepared()
            await asyncio.sleep(args.model_s)
            loop.answered()
        return loop.report("async")

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--window", type=int, default=16_384)
    parser.add_argument("--summary-s", type=float, default=2.0)
    parser.add_argument("--model-s", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--api", choices=("sync", "async", "both"), default="both")
    args = parser.parse_args()
    logging.getLogger("contextfold").setLevel(logging.ERROR)  # the figures are the output
    for api in ("sync", "async") if args.api == "both" else (args.api,):
        print(json.dumps(run_sync(args) if api == "sync" else run_async(args)))


if __name__ == "__main__":
    main()
