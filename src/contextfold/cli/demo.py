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
from dataclasses import dataclass, field

import click
from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table

from ..pipeline.base import Event
from ..replay import replay
from ..replay.base import Sent, Step, StrategyConfig
from ..replay.strategies import create
from ..synthetic import generate_session
from ..tokens import named_estimator
from .options import reports_errors, tokenizer_option

RECENT_ROWS = 12


@dataclass
class _Recorder:
    """Wraps a strategy to keep the events of each step."""

    inner: object
    events: dict[int, list[Event]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.inner.name  # type: ignore[attr-defined]

    def start(self, header):
        self.inner.start(header)  # type: ignore[attr-defined]

    def step(self, step: Step) -> Sent:
        sent = self.inner.step(step)  # type: ignore[attr-defined]
        self.events[step.number] = [e for e in sent.events if e.items]
        return sent

    def record_usage(self, usage):
        self.inner.record_usage(usage)  # type: ignore[attr-defined]


def _describe(events: list[Event]) -> tuple[str, str]:
    if not events:
        return "", ""
    stages = ", ".join(dict.fromkeys(e.stage for e in events))
    return stages, f"{sum(e.saved_tokens for e in events):,}"


@click.command()
@click.option("--rounds", type=int, default=200, show_default=True, help="Tool rounds in the generated session.")
@click.option("--seed", type=int, default=7, show_default=True)
@click.option("--window", type=int, default=64_000, show_default=True, help="Context window in tokens.")
@click.option("--delay", "delay_s", type=float, default=0.02, show_default=True,
              help="Seconds between steps of the live view.")
@tokenizer_option
@reports_errors
def demo(rounds: int, seed: int, window: int, delay_s: float, tokenizer: str) -> None:
    """Replay a long generated coding-agent session through the pipeline, live, against the full history."""
    console = Console()
    session = generate_session(rounds=rounds, seed=seed)
    estimator = named_estimator(tokenizer)
    config = StrategyConfig(window_tokens=window)
    console.print(f"Replaying a generated coding-agent session: {len(session)} messages, {rounds} tool rounds, "
                  f"window {window:,} tokens, counted with {estimator.text.name}.")
    full = replay(session, create("none", config), config, tokenizer=estimator, session="demo")
    recorder = _Recorder(create("default", config))
    ours = replay(session, recorder, config, tokenizer=estimator, session="demo")  # type: ignore[arg-type]
    agent = [r for r in ours.requests if r.kind == "agent"]
    baseline = [r for r in full.requests if r.kind == "agent"]
    recent: deque[tuple[str, ...]] = deque(maxlen=RECENT_ROWS)
    spent = {"none": 0.0, "default": 0.0}

    def view(number: int, tokens: int) -> Group:
        table = Table("request", "contextfold", "full history", "stage fired", "saved", title_justify="left",
                      title="Each request: tokens sent with contextfold and without")
        for row in recent:
            table.add_row(*row)
        used = min(tokens / window, 1.0)
        caption = (f"request {number}: {tokens:,} of {window:,} tokens ({used:.0%}); cost so far "
                   f"${spent['default']:.3f} with contextfold, ${spent['none']:.3f} with the full history")
        return Group(table, Panel(Group(ProgressBar(total=1.0, completed=used, width=60), caption), title="context"))

    with Live(view(0, 0), console=console, refresh_per_second=20) as live:
        for number, (mine, theirs) in enumerate(zip(agent, baseline)):
            spent["default"] += sum(r.cost_usd for r in ours.requests if r.step == mine.step)
            spent["none"] += theirs.cost_usd
            stages, saved = _describe(recorder.events.get(mine.step, []))
            over = " [red](over the window)[/]" if theirs.input_tokens > window else ""
            recent.append((str(number), f"{mine.input_tokens:,}", f"{theirs.input_tokens:,}{over}", stages, saved))
            live.update(view(number, mine.input_tokens))
            if delay_s:
                time.sleep(delay_s)
    _final_table(console, full.totals.to_dict(), ours.totals.to_dict(), recorder)


def _final_table(console: Console, full: dict, ours: dict, recorder: _Recorder) -> None:
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
    fired = [e for events in recorder.events.values() for e in events]
    stages = Table("stage", "times", "tokens saved", title="What contextfold did", title_justify="left")
    for stage in dict.fromkeys(e.stage for e in fired):
        mine = [e for e in fired if e.stage == stage]
        stages.add_row(stage, str(len(mine)), f"{sum(e.saved_tokens for e in mine):,}")
    console.print(stages)
    ratio = ours["cost_usd"] / full["cost_usd"] if full["cost_usd"] else 1.0
    console.print(f"contextfold cost {ratio:.0%} of the full history, with no request over the window.")
