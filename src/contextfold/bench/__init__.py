"""The replay benchmark: every recorded session, every strategy, figures people can read.

>>> from contextfold.bench import Report, Settings, find_sessions, run_bench, write_results
>>> sessions, skipped = find_sessions(["../shared/corpus"])
>>> settings = Settings(window_tokens=32_000)
>>> runs = run_bench(sessions, ["none", "default"], settings)
>>> write_results(Report(settings, ["none", "default"], sessions, runs, skipped), Path("out"))

Modules: :mod:`.run` (finding sessions, replaying them in parallel),
:mod:`.report` (totals per strategy, ``results.json``, ``results.md``),
:mod:`.plots` (PNG charts, with matplotlib); the ``bench`` command is in :mod:`contextfold.cli.bench`.
"""

from .report import Report, StrategyTotals, results_json, results_markdown, strategy_totals, write_results
from .run import BenchRun, Session, Settings, Skipped, available_strategies, find_sessions, run_bench

__all__ = [
    "BenchRun",
    "Report",
    "Session",
    "Settings",
    "Skipped",
    "StrategyTotals",
    "available_strategies",
    "find_sessions",
    "results_json",
    "results_markdown",
    "run_bench",
    "strategy_totals",
    "write_results",
]
