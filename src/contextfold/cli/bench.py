"""``contextfold bench``: every session under the paths, every strategy, a report and charts."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import click
from rich.console import Console
from rich.cells import cell_len
from rich.markup import escape
from rich.table import Table

from ..bench.frontier import GRID, PEERS, Frontier, Paired, frontier, grid_policies
from ..bench.plots import require_matplotlib, write_frontier_chart, write_plots
from ..bench.report import Report, StrategyTotals, write_results
from ..pipeline.base import Policy
from ..bench.run import (TAU_BENCH_LIMIT, Session, Settings, Skipped, available_strategies, estimator_for, find_sessions,
                         run_bench)
from ..replay import strategies
from ..replay.base import StrategyConfig
from ..tokens import TOKENIZER_CHOICES
from .options import check_window, preset_option, progress_bar, reports_errors, resolved_tokenizer


def _names(context: click.Context, parameter: click.Parameter, value: str | None) -> list[str] | None:
    if value is None:
        return None
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in strategies.names()]
    if unknown or not names:
        raise click.BadParameter(f"unknown strategy {', '.join(unknown) or '(none given)'}; "
                                 f"expected some of {', '.join(strategies.names())}")
    return names


@click.command("bench")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--window", type=click.IntRange(min=1), required=True, help="Context window in tokens.")
@click.option("--strategies", "names", callback=_names, default=None, metavar="NAME,...",
              help=f"Strategies to compare [default: every one available: {', '.join(strategies.names())}].")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("bench-out"),
              show_default=True, help="Folder for results.json, results.md and the charts.")
@click.option("--requests-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Dump every run's requests to DIR/<session>.<strategy>.jsonl (the replay --requests format).")
@click.option("--tau-bench-limit", type=click.IntRange(min=0), default=TAU_BENCH_LIMIT, show_default=True,
              help="Conversations replayed from each tau-bench file (its first N).")
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Worker processes [default: the cores available].")
@click.option("--tokenizer", type=click.Choice(TOKENIZER_CHOICES), default="auto", show_default=True,
              help="Token counter for every figure of every strategy (auto: o200k when its file is on this "
              "machine, else the estimate; stderr says which).")
@click.option("--max-output", type=click.IntRange(min=1), default=StrategyConfig.max_output_tokens, show_default=True,
              help="Tokens reserved for each reply.")
@click.option("--no-charts", "charts", flag_value=False, default=True,
              help="Write results.json and results.md only (no matplotlib needed).")
@click.option("--chart-with", "chart_with", multiple=True, metavar="FOLDER",
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="An earlier bench's --out folder (another window) whose points join the cost-versus-strict-recall and cost-versus-recall charts.")
@click.option("--frontier", "sweep", is_flag=True,
              help=f"Sweep contextfold's grid of policies ({', '.join(GRID)}; --preset is then one of them) beside "
              f"the --strategies given as peers [default: {', '.join(PEERS)}]: frontier.json and frontier.png, the "
              "policies no other beats on both cost and strict recall, with a choice cross-validated by session.")
@click.option("--folds", type=click.IntRange(min=2), default=5, show_default=True,
              help="With --frontier: folds of sessions for the cross-validation (at most one per session).")
@preset_option
@reports_errors
def bench_command(
    paths: tuple[Path, ...],
    window: int,
    names: list[str] | None,
    out: Path,
    requests_dir: Path | None,
    tau_bench_limit: int,
    jobs: int | None,
    tokenizer: str,
    max_output: int,
    charts: bool,
    chart_with: tuple[Path, ...],
    sweep: bool,
    folds: int,
    policy: Policy,
) -> None:
    """Replay every recorded session under PATHS with every strategy; write results.json, results.md and PNG charts."""
    check_window(window, max_output)
    check_out(out)
    started = time.perf_counter()
    if charts:
        require_matplotlib()
    tokenizer = resolved_tokenizer(tokenizer)  # every worker counts with the same one
    estimator_for(tokenizer)  # fail here, once, if the tokenizer cannot be loaded
    sessions, skipped = find_sessions(paths, tau_bench_limit)
    settings = Settings(window, max_output, tokenizer, requests_dir=None if requests_dir is None else str(requests_dir),
                        policy=policy, variants=grid_policies() if sweep else {})
    if sweep:  # the peers, the full history first (every cost is relative to it), then the grid
        names = list(dict.fromkeys(["none", *(names or PEERS)]))
    usable, unavailable = available_strategies(settings, names)
    if sweep:
        usable += list(GRID)
    _check_inputs(paths, names, unavailable, sessions, skipped, chart_with)
    try:
        with progress_bar(f"{len(sessions)} sessions × {len(usable)} strategies") as update:
            runs = run_bench(sessions, usable, settings, jobs=jobs, progress=update)
    except KeyboardInterrupt:  # Ctrl-C: the workers ignore it and are stopped; one line, the shell's exit code
        click.echo("contextfold: bench interrupted; no results written", err=True)
        raise click.exceptions.Exit(130) from None
    report = Report(settings, usable, sessions, runs, skipped, unavailable, time.perf_counter() - started,
                    shlex.join(["contextfold", *sys.argv[1:]]))
    _write_and_show(report, out, sweep=sweep, folds=folds, charts=charts, chart_with=chart_with)


def _check_inputs(paths: tuple[Path, ...], names: list[str] | None, unavailable: dict[str, str],
                  sessions: Sequence[Session], skipped: Sequence[Skipped], chart_with: tuple[Path, ...]) -> None:
    """A usage error for a strategy asked for that cannot run, no session to replay, or a folder with no results."""
    if names is not None and unavailable:
        raise click.UsageError("; ".join(f"{name}: {why}" for name, why in unavailable.items()))
    if not sessions:
        why = "".join(f"\n  {entry.where}: {entry.reason}" for entry in skipped) or " (no file there)"
        raise click.UsageError(f"no recorded session to replay under {', '.join(map(str, paths))}{why}")
    missing_results = [str(folder) for folder in chart_with if not (folder / "results.json").is_file()]
    if missing_results:
        raise click.UsageError(f"--chart-with: no results.json in {', '.join(missing_results)}")


def _write_and_show(report: Report, out: Path, *, sweep: bool, folds: int, charts: bool,
                    chart_with: tuple[Path, ...]) -> None:
    """Write the results (and the frontier of a sweep) to ``out``, and show their table and what was left out."""
    runs, usable, window = list(report.runs), list(report.strategies), report.settings.window_tokens
    written = write_results(report, out)
    console = Console()
    if sweep:
        found = frontier(runs, list(GRID), [name for name in usable if name not in GRID], window, folds)
        (out / "frontier.json").write_text(json.dumps(found.to_json(), indent=1) + "\n", encoding="utf-8")
        written.append(out / "frontier.json")
        if charts:
            written.append(write_frontier_chart(found, out / "frontier.png"))
        console.print(frontier_table(found))
    else:
        if charts:
            written += write_plots(report, out, other_results=[folder / "results.json" for folder in chart_with])
        console.print(totals_table(report.totals(), window, console.width))
    for name, why in (report.unavailable or {}).items():
        console.print(f"[yellow]{escape(f'{name} left out: {why}')}[/]")  # why may hold [extra] brackets
    if report.skipped:
        console.print(f"{len(report.skipped)} file(s) or conversation(s) skipped: see results.md")
    console.print(f"{len(written)} files written to {out}; the replays took {report.seconds:.0f} s")


def check_out(out: Path) -> None:
    """Refuse an ``--out`` the results could not be written to now, before the replays rather than after them.

    Nothing is created yet: the nearest folder that exists on the way to ``out`` must be a folder this
    process may write in (an existing ``out`` that is a file, click refuses already)."""
    nearest = next(path for path in (out.absolute(), *out.absolute().parents) if path.exists())
    if not nearest.is_dir():
        raise click.BadParameter(f"{nearest} is a file, so no folder can be made at {out}", param_hint="'--out'")
    if not os.access(nearest, os.W_OK | os.X_OK):
        raise click.BadParameter(f"{nearest} is not writable by this user", param_hint="'--out'")


def _share(value: float | None, style: str) -> str:
    return "–" if value is None else format(value, style)


_COLUMNS: dict[str, Callable[[StrategyTotals], str]] = {  # header -> the figure of a strategy, in table order
    "strategy": lambda t: t.strategy,
    "cost": lambda t: f"{t.cost_usd:,.2f}",
    "LLM summ.": lambda t: f"{t.cost_llm_usd:,.2f}",
    "no cache": lambda t: f"{t.cost_no_cache_usd:,.2f}",
    "cached": lambda t: f"{t.cache_hit_ratio:.1%}",
    "peak": lambda t: f"{t.peak_tokens:,}",
    "over": lambda t: f"{t.overflows:,}",
    "viol.": lambda t: f"{t.violations:,}",
    "survival": lambda t: _share(t.survival["mean"], ".1%"),
    "strict": lambda t: _share(t.strict.strict, ".3f"),
    "recall": lambda t: _share(t.recall, ".3f"),
    "far": lambda t: _share(t.recall_far, ".3f"),
}
_LEFT_OUT_FIRST = ("no cache", "far", "viol.", "LLM summ.", "strict", "over", "peak", "cached")
"""The columns a narrow terminal goes without, first to last (results.md has them all)."""


def totals_table(totals: list[StrategyTotals], window: int, width: int | None = None) -> Table:
    """The per-strategy totals for the terminal: within ``width`` columns, every figure whole on its line.

    A figure folded over two lines or cut to ``1.…`` cannot be read, so a terminal too narrow for every
    column gets fewer (:data:`_LEFT_OUT_FIRST`), named under the table."""
    rows = [{header: figure(t) for header, figure in _COLUMNS.items()} for t in totals]
    shown = list(_COLUMNS)
    left_out: list[str] = []

    def needed() -> int:  # each column: a border, a space either side of its widest cell; then the last border
        return 1 + sum(3 + max(cell_len(header), *(cell_len(row[header]) for row in rows)) for header in shown)

    for header in _LEFT_OUT_FIRST:
        if width is None or needed() <= width:
            break
        shown.remove(header)
        left_out.append(header)
    caption = f"left out at this width: {', '.join(left_out)} (results.md has every column)" if left_out else None
    table = Table(title=f"window {window:,} tokens, costs in USD (LLM summ.: summaries priced as LLM calls)",
                  title_justify="left", caption=caption, caption_justify="left")
    for header in shown:
        table.add_column(header, justify="left" if header == "strategy" else "right", no_wrap=True)
    for row in rows:
        table.add_row(*(row[header] for header in shown))
    return table


def frontier_table(found: Frontier) -> Table:
    """Every point of a frontier sweep, and each preset against its cross-validated choice."""
    table = Table(title=f"window {found.window:,} tokens: cost relative to the full history (LLM: summaries priced as "
                  "LLM calls; ride: riding the agent's cache), strict recall", title_justify="left",
                  caption=_held_out_caption(found), caption_justify="left")
    for header in ("policy or peer", "cost LLM", "cost ride", "strict", "frontier"):
        table.add_column(header, justify="left" if header == "policy or peer" else "right", no_wrap=True)
    for p in found.points:
        table.add_row(p.name, f"{p.cost:.3f}", f"{p.cost_ride:.3f}", _share(p.strict, ".3f"),
                      "peer" if p.name in found.peers else "yes" if p.name in found.frontier else "")
    return table


def _held_out_caption(found: Frontier) -> str:
    if not found.held_out:
        return "no cross-validation: fewer than two sessions"
    lines = [f"cross-validated over {len(found.folds)} folds (each session scored by the choice made without it):"]
    for anchor, result in found.held_out.items():
        lines.append(f"  at <= {anchor}'s cost: chose {', '.join(result.chosen_names)}; held out strict "
                     f"{_share(result.chosen.strict, '.3f')} cost {result.chosen.cost:.3f} against {anchor}'s "
                     f"{_share(result.anchor.strict, '.3f')} at {result.anchor.cost:.3f}")
        lines.append(f"    {by_session_line(result.by_session, anchor)}")
    return "\n".join(lines)


def by_session_line(difference: Paired, anchor: str) -> str:
    """The held-out choices against ``anchor`` session by session: the mean difference and its spread, how many
    sessions held more or less, and whether the mean is more than two standard errors from nothing."""
    if difference.same == difference.sessions:
        noise = "no difference"
    elif abs(difference.strict_mean) < 2 * difference.strict_se:
        noise = "within the noise"
    else:
        noise = "more than twice its standard error"
    return (f"session by session ({difference.sessions} held out): strict {difference.strict_mean:+.4f} against "
            f"{anchor} (spread {difference.strict_sd:.4f}, standard error {difference.strict_se:.4f}: {noise}); "
            f"more on {difference.better}, less on {difference.worse}, the same on {difference.same}; cost "
            f"{difference.cost_mean:+.2%} of each session's full history (spread {difference.cost_sd:.2%})")
