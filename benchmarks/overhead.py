"""How much time contextfold adds to an agent step, beside LangChain's trim_messages on the same history.

    python benchmarks/overhead.py [--corpus ../shared/corpus] [--messages 1000] [--repeat 3]
    python benchmarks/overhead.py [--fire-only] --side-by-side OTHER/src [--repeat 5]

Prints one JSON object:
  prepare_ms_nofire      median Context.prepare() on a 1,000-message history when no stage fires
                         (one new round added before each call, usage recorded after it, as an agent does)
  prepare_ms_summary     median prepare() over the calls in which a summary fired, when the same
                         history is fed step by step with a trigger that makes summaries fire (bar:
                         <= 50 ms), over --repeat runs of the loop; prepare_ms_summary_p90 their 90th
                         percentile, prepare_calls_summarized how many calls that is;
                         prepare_cpu_ms_summary the median CPU time of those calls (time.process_time:
                         what the call itself costs, which the load of a shared machine does not inflate)
  prepare_ms_fire        the same over every call that compacted something (a snip alone included)
  langchain_trim_ms      median langchain_core.messages.trim_messages(strategy="last",
                         token_counter=count_tokens_approximately) on the same history
  speedup_vs_langchain   langchain_trim_ms / prepare_ms_nofire
  extractive_summary_ms_500  median extractive summary of a 500-message span
  add_ms_at_2k, add_ms_at_80k  median Context.add() of one round (a tool call and its result, in
                         Anthropic's format) on histories of 2,000 and 80,000 items, measured
                         alternately in the same run; add_ratio_80k_to_2k is their ratio (bar: <= 2,
                         adding must not grow with the history)

The history is built from real tool outputs of the mini-swe-agent recordings
in the shared corpus (ids renamed so the sessions can be joined).

The machine is shared, so one figure says little: ``--side-by-side DIR`` measures the
summary calls of this checkout and of the ``contextfold`` package under DIR (another
checkout's ``src``, say the commit before a change) in alternation, one loop each in a
fresh process, and prints both (``ours`` and ``theirs``): same machine state, same harness; without
``--fire-only``, the calls in which nothing fires too (``prepare_ms_nofire``, one loop each in turn).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from contextfold import Context, Usage
from contextfold.adapters import to_openai
from contextfold.conversation import Conversation, Item, ToolCall, ToolResult
from contextfold.importers import load
from contextfold.pipeline.base import Policy
from contextfold.summarizers.base import SummaryRequest
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.tokens import Estimator

HERE = Path(__file__).resolve().parent


def renamed(item: Item, tag: str) -> Item:
    """``item`` with its id and call ids made unique by ``tag``."""
    blocks = tuple(
        replace(b, id=f"{b.id}{tag}") if isinstance(b, ToolCall)
        else replace(b, call_id=f"{b.call_id}{tag}") if isinstance(b, ToolResult) else b
        for b in item.blocks
    )
    return replace(item, blocks=blocks, id=f"{item.id}{tag}")


def history(corpus: Path, messages: int) -> tuple[Conversation, list[Item]]:
    """``messages`` items of real sessions (the first with its header), plus spare rounds to add later."""
    items: list[Item] = []
    header = None
    for number, path in enumerate(sorted((corpus / "mini-swe-agent").glob("*.json"))):
        conversation = load(path)[0]
        header = header or conversation.header
        body = [item for item in conversation.items if item.role != "system"]
        if items:
            body = body[1:]  # one task only
        items.extend(renamed(item, f"~{number}") for item in body)
    spare = [renamed(item, "~spare") for item in items[1:401]]
    while items[messages - 1].tool_calls:  # end on a complete round, as a request must
        messages -= 1
    return Conversation(items[:messages], header), spare


def fresh_copies(items: list[Item]) -> list[Item]:
    """Equal items with empty memos, so no run profits from another's cached work."""
    return [replace(item) for item in items]


def median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 3)


def prepare_nofire(base: Conversation, spare: list[Item]) -> float:
    return median_ms(nofire_samples(base, spare))


def nofire_samples(base: Conversation, spare: list[Item]) -> list[float]:
    """prepare() in seconds over the calls in which no stage fires."""
    # A horizon of one request: no edit of the middle ever pays, so nothing fires (the common step);
    # no message-count trigger either, or the 1,000 messages would be summarized.
    context = Context(window_tokens=50_000_000, max_output_tokens=8_000,
                      policy=Policy(min_horizon_requests=1, max_horizon_requests=1, economic_summaries=False,
                                    trigger_messages=None))
    context.set_header(base.header)
    context.add(list(base.items))
    context.prepare()
    context.record_usage(Usage(prompt_tokens=context.counter.count(context.view())))
    samples = []
    for k in range(0, len(spare) - 1, 2):
        if spare[k].role != "assistant":
            continue
        context.add(spare[k : k + 2])
        started = time.perf_counter()
        context.prepare()
        samples.append(time.perf_counter() - started)
        context.record_usage(Usage(prompt_tokens=context.counter.count(context.view())))
    assert not [e for e in context.events if e.items], "a stage fired in the no-fire run"
    return samples


def prepare_fire(base: Conversation, trigger_tokens: int = 40_000) -> tuple[list[float], list[float], list[float]]:
    """prepare() in seconds over the calls of an agent loop in which a stage fired, over those in which
    a summary fired, and the CPU time of the latter.

    The history is fed one step at a time, as an agent loop does (usage
    recorded after each request), with a trigger that makes summaries fire;
    the calls in which anything was compacted are timed.
    """
    # Summaries inline, in the call that fires them: the one whose latency is measured, never in the background
    # (a checkout from before background summaries, timed --side-by-side, has no such option and runs them inline).
    inline = {"background_summaries": "never"} if "background_summaries" in {f.name for f in fields(Policy)} else {}
    policy = Policy(trigger_tokens=trigger_tokens, **inline)
    context = Context(window_tokens=400_000, max_output_tokens=8_000, policy=policy)
    context.set_header(base.header)
    items = fresh_copies(list(base.items))
    samples = []
    summaries = []
    cpu = []
    start = 0
    for end in range(1, len(items) + 1):
        if end < len(items) and (items[end].role != "assistant" or items[end - 1].tool_calls):
            continue  # a request goes out before each assistant reply
        context.add(items[start:end])
        start = end
        seen = len(context.events)
        started, started_cpu = time.perf_counter(), time.process_time()
        context.prepare()
        elapsed, elapsed_cpu = time.perf_counter() - started, time.process_time() - started_cpu
        context.record_usage(Usage(prompt_tokens=context.counter.count(context.view())))
        if any(e.items for e in context.events[seen:]):
            samples.append(elapsed)
        if any(e.action == "summarized" for e in context.events[seen:]):
            summaries.append(elapsed)
            cpu.append(elapsed_cpu)
    assert summaries, "no summary fired"
    return samples, summaries, cpu


def p90_ms(samples: list[float]) -> float:
    return round(statistics.quantiles(samples, n=10)[-1] * 1000, 3)


def fire_figures(base: Conversation, repeat: int) -> dict[str, float | int]:
    """The fire figures over ``repeat`` runs of the loop (each on fresh copies of the items)."""
    fired: list[float] = []
    summaries: list[float] = []
    cpu: list[float] = []
    for _ in range(repeat):
        more_fired, more_summaries, more_cpu = prepare_fire(base)
        fired += more_fired
        summaries += more_summaries
        cpu += more_cpu
    return {
        "prepare_ms_summary": median_ms(summaries),
        "prepare_ms_summary_p90": p90_ms(summaries),
        "prepare_cpu_ms_summary": median_ms(cpu),
        "prepare_calls_summarized": len(summaries),
        "prepare_ms_fire": median_ms(fired),
        "prepare_ms_fire_p90": p90_ms(fired),
        "prepare_ms_fire_max": round(max(fired) * 1000, 3),
        "prepare_calls_that_fired": len(fired),
        "repeat": repeat,
    }


def side_by_side(args: argparse.Namespace) -> dict[str, dict[str, float | int]]:
    """The summary calls (and, unless ``--fire-only``, the calls in which nothing fires) of this checkout and of the
    package under ``args.side_by_side``, one loop each in turn."""
    ours = str(HERE.parent / "src")
    samples: dict[str, list[float]] = {"ours": [], "theirs": []}
    cpu: dict[str, list[float]] = {"ours": [], "theirs": []}
    idle: dict[str, list[float]] = {"ours": [], "theirs": []}

    def run(source: str, flag: str) -> Any:
        command = [sys.executable, __file__, "--corpus", str(args.corpus), "--messages", str(args.messages), flag]
        done = subprocess.run(command, env={**os.environ, "PYTHONPATH": source}, capture_output=True, text=True,
                              check=True)
        return json.loads(done.stdout)

    for _ in range(args.repeat):
        for name, source in (("ours", ours), ("theirs", str(args.side_by_side))):
            wall, spent = run(source, "--samples")
            samples[name] += wall
            cpu[name] += spent
            if not args.fire_only:
                idle[name] += run(source, "--idle-samples")
    return {name: {"prepare_ms_summary": median_ms(values), "prepare_ms_summary_p90": p90_ms(values),
                   "prepare_cpu_ms_summary": median_ms(cpu[name]), "prepare_calls_summarized": len(values),
                   **({"prepare_ms_nofire": median_ms(idle[name])} if idle[name] else {})}
            for name, values in samples.items()}


def langchain_trim(base: Conversation, runs: int = 15) -> float:
    from langchain_core.messages import convert_to_messages, trim_messages
    from langchain_core.messages.utils import count_tokens_approximately

    messages = convert_to_messages(to_openai(base))
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        trim_messages(messages, max_tokens=100_000, strategy="last", token_counter=count_tokens_approximately,
                      start_on="human", include_system=True)
        samples.append(time.perf_counter() - started)
    return median_ms(samples)


def extractive_500(base: Conversation, runs: int = 15) -> float:
    estimator = Estimator()
    span = list(base.items[1:501])
    summarizer = ExtractiveSummarizer()
    samples = []
    for _ in range(runs):
        request = SummaryRequest(span, base.header, 4_000, estimator.text)
        started = time.perf_counter()
        summarizer.summarize(request)
        samples.append(time.perf_counter() - started)
    return median_ms(samples)


def filled(base: Conversation, size: int) -> Context:
    """A context whose history holds ``size`` items (the corpus history repeated, ids made unique)."""
    context = Context(window_tokens=50_000_000, max_output_tokens=8_000)
    context.set_header(base.header)
    body = list(base.items)
    items = [renamed(body[k % len(body)], f"~r{k // len(body)}") for k in range(size)]
    while items[-1].tool_calls:  # end on a complete round, so the next round's result has its call
        items.pop()
    context.add(items)
    return context


def one_round(n: int) -> list[dict]:
    """A tool call and its result, as an agent adds them."""
    call_id = f"toolu_bench_{n}"
    return [
        {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": "bash", "input": {"command": f"cat f{n}.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": f"print({n})\n" * 20}]},
    ]


def add_ms(base: Conversation, sizes: tuple[int, ...] = (2_000, 80_000), rounds: int = 300) -> dict[int, float]:
    """Median add() of one round per history size, the sizes measured in alternation (same machine state)."""
    contexts = {size: filled(base, size) for size in sizes}
    samples: dict[int, list[float]] = {size: [] for size in sizes}
    for n in range(rounds):
        for size, context in contexts.items():
            messages = one_round(n)
            started = time.perf_counter()
            context.add(messages)
            samples[size].append(time.perf_counter() - started)
    return {size: median_ms(values) for size, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=HERE.parent.parent / "shared" / "corpus")
    parser.add_argument("--messages", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of the loop in which summaries fire")
    parser.add_argument("--fire-only", action="store_true", help="only the figures of the calls that fire")
    parser.add_argument("--side-by-side", type=Path, metavar="DIR",
                        help="also time the contextfold package under DIR, in alternation with this checkout's")
    parser.add_argument("--samples", action="store_true", help=argparse.SUPPRESS)  # one loop's summary calls, in s
    parser.add_argument("--idle-samples", action="store_true", help=argparse.SUPPRESS)  # the no-fire calls, in s
    args = parser.parse_args()
    if args.side_by_side:
        print(json.dumps(side_by_side(args)))
        return
    base, spare = history(args.corpus, args.messages)
    if args.samples:
        print(json.dumps(prepare_fire(base)[1:]))
        return
    if args.idle_samples:
        print(json.dumps(nofire_samples(base, spare)))
        return
    fire = fire_figures(base, args.repeat)
    if args.fire_only:
        print(json.dumps({"messages": len(base), **fire}))
        return
    nofire = prepare_nofire(base, spare)
    trim = langchain_trim(base)
    adds = add_ms(base)
    print(json.dumps({
        "messages": len(base),
        "prepare_ms_nofire": nofire,
        **fire,
        "langchain_trim_ms": trim,
        "speedup_vs_langchain": round(trim / nofire, 1),
        "extractive_summary_ms_500": extractive_500(base),
        "add_ms_at_2k": adds[2_000],
        "add_ms_at_80k": adds[80_000],
        "add_ratio_80k_to_2k": round(adds[80_000] / adds[2_000], 2),
    }))


if __name__ == "__main__":
    main()
