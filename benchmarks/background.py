"""An agent loop while a slow summary is made in the background: does prepare() ever wait below the hard level?

    python benchmarks/background.py [--steps 200] [--window 16384] [--summary-s 2] [--model-s 0.5] [--api both]

Runs an agent loop of ``--steps`` steps at a ``--window``-token window with a summarizer that takes
``--summary-s`` seconds (a sleep, then the extractive summary: what a model summary costs the loop is its
latency), each step adding one tool call and its output (10 to 30 lines of code-like text, seeded: about 500 tokens), calling
prepare(), and "calling the model" for ``--model-s`` seconds. With ``--api both`` it runs the sync loop
(prepare(), the summary in a thread) and the async one (await aprepare(), the summary an asyncio task).

Prints one JSON object per API:
  prepare_ms_p50/p99/max_running  prepare() while a summary ran in the background and the view was below the
                                  hard level (bar: p99 <= 5 ms); *_all: over every step
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
    """What each step measured."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self.running_ms: list[float] = []
        self.all_ms: list[float] = []
        self.waits_below = self.waits_above = self.overs = self.max_tokens = 0
        self._step_events: list[Event] = []
        context.subscribe(self._step_events.append)

    def step(self, before_tokens: int, running: bool, elapsed_s: float) -> None:
        ms = elapsed_s * 1000
        self.all_ms.append(ms)
        waited = any(e.stage == "summarize" and e.action == "waiting" for e in self._step_events)
        if waited:
            if before_tokens <= self.context.hard_tokens:
                self.waits_below += 1
            else:
                self.waits_above += 1
        elif running and before_tokens <= self.context.hard_tokens:
            self.running_ms.append(ms)
        self._step_events.clear()
        tokens = self.context.counter.count(self.context.view())
        self.max_tokens = max(self.max_tokens, tokens)
        self.overs += tokens > self.context.window_tokens

    def report(self, api: str) -> dict[str, Any]:
        actions = [e.action for e in self.context.events if e.stage == "summarize"]
        return {
            "api": api,
            "steps": len(self.all_ms),
            "window_tokens": self.context.window_tokens,
            "trigger_tokens": self.context.trigger_tokens,
            "hard_tokens": self.context.hard_tokens,
            "prepare_calls_running": len(self.running_ms),
            "prepare_ms_p50_running": _round(_quantile(self.running_ms, 0.5)),
            "prepare_ms_p99_running": _round(_quantile(self.running_ms, 0.99)),
            "prepare_ms_max_running": _round(max(self.running_ms, default=0.0)),
            "prepare_ms_p50_all": _round(_quantile(self.all_ms, 0.5)),
            "prepare_ms_p99_all": _round(_quantile(self.all_ms, 0.99)),
            "waits_below_hard": self.waits_below,
            "waits_above_hard": self.waits_above,
            "overs": self.overs,
            "max_request_tokens": self.max_tokens,
            "started": actions.count("started"),
            "applied": actions.count("applied"),
            "discarded": actions.count("discarded"),
        }


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
        self._before = (0, False, 0.0)

    def add(self, k: int) -> None:
        """The tool's output comes in; the clock starts for prepare()."""
        self.context.add(turn(k, self.rng))
        self._before = (self.context.counter.count(self.context.view()), self.context.summary_running,
                        time.perf_counter())

    def prepared(self) -> None:
        tokens, running, started = self._before
        self.figures.step(tokens, running, time.perf_counter() - started)

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
