"""``contextfold demo``: a long coding-agent session, generated here, replayed through the pipeline.

The session comes from :mod:`contextfold.synthetic` (no network, no key). It
is replayed request by request twice, as the agent would have sent it: once
with the full history (what an agent without context management sends) and
once through contextfold's pipeline. The live view then walks through the
requests: the size of each against the window, which stage fired and what it
saved; the final table gives cost with prompt-cache pricing, peak context,
requests over the window and what survived.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import click
from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table

from ..events import Event
from ..replay import replay
from ..replay.base import StrategyConfig
from ..replay.fired import Recorder, stage_counts
from ..replay.strategies import create
from ..synthetic import generate_session
from ..tokens import named_estimator
from .options import check_window, reports_errors, tokenizer_option

RECENT_ROWS = 12


def _describe(events: list[Event]) -> tuple[str, str]:
    if not events:
        return "", ""
    stages = ", ".join(dict.fromkeys(e.stage for e in events))
    return stages, f"{sum(e.saved_tokens for e in events):,}"


@click.command()
@click.option("--rounds", type=click.IntRange(min=1), default=200, show_default=True,
              help="Tool rounds in the generated session.")
@click.option("--seed", type=int, default=7, show_default=True)
@click.option("--window", type=click.IntRange(min=1), default=64_000, show_default=True,
              help="Context window in tokens.")
@click.option("--max-output", type=click.IntRange(min=1), default=StrategyConfig.max_output_tokens, show_default=True,
              help="Tokens reserved for each reply.")
@click.option("--delay", "delay_s", type=click.FloatRange(min=0), default=0.02, show_default=True,
              help="Seconds between steps of the live view.")
@tokenizer_option
@reports_errors
def demo(rounds: int, seed: int, window: int, max_output: int, delay_s: float, tokenizer: str) -> None:
    """Replay a long generated coding-agent session through the pipeline, live, against the full history."""
    check_window(window, max_output)
    console = Console()
    session = generate_session(rounds=rounds, seed=seed)
    estimator = named_estimator(tokenizer)
    config = StrategyConfig(window_tokens=window, max_output_tokens=max_output)
    console.print(f"Replaying a generated coding-agent session: {len(session)} messages, {rounds} tool rounds, "
                  f"window {window:,} tokens, counted with {estimator.text.name}.")
    full = replay(session, create("none", config), config, tokenizer=estimator, session="demo")
    recorder = Recorder(create("default", config))
    ours = replay(session, recorder, config, tokenizer=estimator, session="demo")
    agent = [r for r in ours.requests if r.kind == "agent"]
    baseline = [r for r in full.requests if r.kind == "agent"]
    recent: deque[tuple[str, ...]] = deque(maxlen=RECENT_ROWS)
    spent = {"none": 0.0, "default": 0.0}
    with Live(status_view(recent, 0, 0, window, spent), console=console, refresh_per_second=20) as live:
        for number, (mine, theirs) in enumerate(zip(agent, baseline)):
            spent["default"] += sum(r.cost_usd for r in ours.requests if r.step == mine.step)
            spent["none"] += theirs.cost_usd
            stages, saved = _describe(recorder.events(mine.step))
            over = " [red](over the window)[/]" if theirs.input_tokens > window else ""
            recent.append((str(number), f"{mine.input_tokens:,}", f"{theirs.input_tokens:,}{over}", stages, saved))
            live.update(status_view(recent, number, mine.input_tokens, window, spent))
            if delay_s:
                time.sleep(delay_s)
    if not console.is_terminal:
        console.line()  # rich ends a live display with a new line only on a terminal
    _final_table(console, full.totals.to_dict(), ours.totals.to_dict(), recorder)


def status_view(
    recent: deque[tuple[str, ...]], number: int, tokens: int, window: int, spent: dict[str, float]
) -> Group:
    """The live view: the latest requests, then the context bar and its figures on lines of their own (no cut-off)."""
    table = Table("request", "contextfold", "full history", "stage fired", "saved", title_justify="left",
                  title="Each request: tokens sent with contextfold and without")
    for row in recent:
        table.add_row(*row)
    used = min(tokens / window, 1.0)
    status = Table.grid(expand=True)
    status.add_column(overflow="fold")
    status.add_row(ProgressBar(total=1.0, completed=used))
    status.add_row(f"request {number}: {tokens:,} of {window:,} tokens ({used:.0%})")
    status.add_row(f"cost so far: ${spent['default']:.3f} with contextfold, ${spent['none']:.3f} with the full history")
    return Group(table, Panel(status, title="context"))


def _final_table(console: Console, full: dict[str, Any], ours: dict[str, Any], recorder: Recorder) -> None:
    table = Table("", "full history", "contextfold", title="The whole session", title_justify="left")
    rows = [
        ("cost, prompt-cache pricing", f"${full['cost_usd']:.3f}", f"${ours['cost_usd']:.3f}"),
        ("cost without caching", f"${full['cost_no_cache_usd']:.3f}", f"${ours['cost_no_cache_usd']:.3f}"),
        ("prompt served from cache", f"{full['cache_hit_ratio']:.0%}", f"{ours['cache_hit_ratio']:.0%}"),
        ("peak context (tokens)", f"{full['peak_tokens']:,}", f"{ours['peak_tokens']:,}"),
        ("requests over the window", str(full["overflows"]), str(ours["overflows"])),
        ("invalid requests", str(full["violations"]), str(ours["violations"])),
        ("facts that survived", f"{full['survival']['mean']:.1%}", f"{ours['survival']['mean']:.1%}"),
    ]
    for row in rows:
        table.add_row(*row)
    console.print(table)
    stages = Table("stage", "times", "tokens saved", title="What contextfold did", title_justify="left")
    for count in stage_counts(recorder.all_events()):
        stages.add_row(count.stage, str(count.times), f"{count.saved_tokens:,}")
    console.print(stages)
    console.print(verdict(full, ours))


def verdict(full: dict[str, Any], ours: dict[str, Any]) -> str:
    """The closing sentence, from the figures in the table above it (never a claim the table contradicts)."""
    ratio = ours["cost_usd"] / full["cost_usd"] if full["cost_usd"] else 1.0
    theirs = "the full history fit too"
    if full["overflows"]:
        theirs = f"the full history sent {_requests(full['overflows'])} over it"
    if ours["overflows"]:
        return (f"contextfold cost {ratio:.0%} of the full history; {_requests(ours['overflows'])} of "
                f"{ours['requests']:,} still went over the window, because what every request keeps (the system "
                f"prompt, the task and the latest tool round) did not fit in it ({theirs}).")
    short = ours["overflows_reserve"]
    if short:
        return (f"contextfold cost {ratio:.0%} of the full history, with no request over the window ({theirs}); "
                f"{_requests(short)} left less than the {ours['max_output_tokens']:,} tokens reserved for the reply.")
    return f"contextfold cost {ratio:.0%} of the full history, with no request over the window ({theirs})."


def _requests(n: int) -> str:
    return f"{n:,} request" + ("" if n == 1 else "s")
