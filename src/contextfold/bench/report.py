"""The bench's figures for people and programs: totals per strategy, ``results.json`` and ``results.md``.

Totals per strategy are sums over its runs (costs, requests over the window,
violations: the replay's broken invariants plus the requests emptied of every
message), the largest peak, the cache hit ratio of all its agent requests
pooled (cache reads over input tokens), and for survival each probe's mean
over every request of every session where the probe had something to look
for (each run's mean weighted by its count of such requests), with ``mean``
the mean of those. Every one of them is computed from the per-run figures in
``results.json``, themselves recomputable from the request dumps.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ..conversation import JSONValue
from ..replay.lint import SummaryLint
from ..replay.probes import PROBES
from ..replay.recall import SessionRecall, mean_recall
from ..replay.strict import SessionStrict, mean_strict
from .run import BenchRun, Session, Settings, Skipped


@dataclass(frozen=True)
class StrategyTotals:
    """One strategy over every session (see the module docstring for how each figure is pooled)."""

    strategy: str
    sessions: int
    requests: int
    cost_usd: float
    cost_no_cache_usd: float
    cache_hit_ratio: float
    peak_tokens: int
    overflows: int
    violations: int
    survival: dict[str, float | None]
    cost_llm_usd: float
    recall: float | None
    recall_far: float | None
    worst_request_recall: float | None
    strict: SessionStrict
    """Strict recall (:mod:`contextfold.replay.strict`): each figure the mean of the sessions' that have it."""
    recoverable_recall: float | None = None
    """Of the needed tokens a request did not hold, the share one search_history call returned (mean over
    sessions; ``None`` for a strategy that offers no search)."""
    lint: SummaryLint = field(default_factory=SummaryLint)
    """The summary lint (:mod:`contextfold.replay.lint`) summed over the sessions: each count should be 0."""


def strategy_totals(runs: Sequence[BenchRun], strategy: str) -> StrategyTotals:
    """The totals of ``strategy``'s runs."""
    mine = [run for run in runs if run.strategy == strategy]
    totals = [run.totals for run in mine]
    input_tokens = sum(t.input_tokens for t in totals)
    survival: dict[str, float | None] = {}
    for probe in PROBES:
        weighted: list[tuple[float, int]] = []
        for run in mine:
            value, count = run.totals.survival.get(probe), run.survival_requests.get(probe)
            if value is not None and count:
                weighted.append((value, count))
        weight = sum(count for _, count in weighted)
        survival[probe] = sum(value * count for value, count in weighted) / weight if weight else None
    counted = [value for value in survival.values() if value is not None]
    survival["mean"] = sum(counted) / len(counted) if counted else None
    recall = mean_recall([SessionRecall(t.recall, t.recall_far, t.worst_request_recall, t.recall_needed,
                                        t.recall_far_needed, t.recoverable_recall, t.recoverable_missing)
                          for t in totals])
    strict = mean_strict([t.strict for t in totals])
    return StrategyTotals(
        strategy=strategy,
        sessions=len(mine),
        requests=sum(t.requests for t in totals),
        cost_usd=sum(t.cost_usd for t in totals),
        cost_no_cache_usd=sum(t.cost_no_cache_usd for t in totals),
        cache_hit_ratio=sum(t.cache_read_tokens for t in totals) / input_tokens if input_tokens else 0.0,
        peak_tokens=max((t.peak_tokens for t in totals), default=0),
        overflows=sum(t.overflows for t in totals),
        violations=sum(run.violations for run in mine),
        survival=survival,
        cost_llm_usd=sum(t.cost_llm_usd for t in totals),
        recall=recall.recall,
        recall_far=recall.recall_far,
        worst_request_recall=recall.worst_request_recall,
        strict=strict,
        recoverable_recall=recall.recoverable,
        lint=sum((t.lint for t in totals), SummaryLint()),
    )


@dataclass(frozen=True)
class Report:
    """A finished bench: what was run, on what, and every run's figures."""

    settings: Settings
    strategies: Sequence[str]
    sessions: Sequence[Session]
    runs: Sequence[BenchRun]
    skipped: Sequence[Skipped] = ()
    unavailable: dict[str, str] | None = None
    seconds: float | None = None
    command: str | None = None

    def totals(self) -> list[StrategyTotals]:
        return [strategy_totals(self.runs, name) for name in self.strategies]


# --------------------------------------------------------------------------- results.json


def results_json(report: Report) -> dict[str, JSONValue]:
    """The whole bench as one JSON document (``runs``: one object per session and strategy)."""
    s = report.settings
    return {
        "window": s.window_tokens,
        "max_output_tokens": s.max_output_tokens,
        "tokenizer": s.tokenizer,
        "prices_usd_per_mtok": asdict(s.prices),
        "cache_ttl_s": s.cache_ttl_s,
        "command": report.command,
        "seconds": report.seconds,
        "strategies": list(report.strategies),
        "unavailable": dict(report.unavailable or {}),
        "totals": [asdict(t) for t in report.totals()],
        "sessions": [{"session": x.label, "file": x.path, "conversation": x.index, "format": x.format,
                      "items": len(x.conversation), "requests": x.requests} for x in report.sessions],
        "skipped": [asdict(x) for x in report.skipped],
        "runs": [_run_json(run) for run in report.runs],
    }


def _run_json(run: BenchRun) -> dict[str, JSONValue]:
    return {
        **run.totals.to_dict(),
        "invariant_violations": run.totals.violations,
        "empty_requests": run.empty_requests,
        "violations": run.violations,
        "survival_requests": run.survival_requests,
        "requests_file": run.requests_file,
        "context_tokens": list(run.context_tokens),
        "step_cost_usd": [round(cost, 8) for cost in run.step_cost_usd],
    }


# --------------------------------------------------------------------------- results.md


@dataclass(frozen=True)
class Column:
    """A column of a table: its heading, how a value reads, and which way is better (``None``: neither)."""

    title: str
    value: Callable[[Any], float | None]
    show: Callable[[float], str]
    lower_is_better: bool | None = True


def _money(value: float) -> str:
    return f"{value:,.2f}"


def _share(value: float) -> str:
    return f"{value:.1%}"


def _recall(value: float) -> str:
    return f"{value:.3f}"


def _count(value: float) -> str:
    return f"{value:,}"


TOTALS_COLUMNS = (
    Column("cost $", lambda t: t.cost_usd, _money),
    Column("cost, summaries by LLM $", lambda t: t.cost_llm_usd, _money),
    Column("cost without cache $", lambda t: t.cost_no_cache_usd, _money),
    Column("cache hits", lambda t: t.cache_hit_ratio, _share, lower_is_better=False),
    Column("peak tokens", lambda t: t.peak_tokens, _count),
    Column("over window", lambda t: t.overflows, _count),
    Column("violations", lambda t: t.violations, _count),
    Column("survival", lambda t: t.survival["mean"], _share, lower_is_better=False),
    Column("strict", lambda t: t.strict.strict, _recall, lower_is_better=False),
    Column("recall", lambda t: t.recall, _recall, lower_is_better=False),
)


def _strict_figure(name: str) -> Callable[[Any], float | None]:
    """A strategy's strict recall figure ``name`` (a field of :class:`SessionStrict`)."""
    return lambda totals: getattr(totals.strict, name)


STRICT_COLUMNS = tuple(
    Column(title, _strict_figure(name), _recall, lower_is_better=False)
    for name, title in (("strict", "strict"), ("kwic", "in context"), ("kwic_far", "in context, far"),
                        ("line", "lines"), ("line_far", "lines, far"), ("outcome", "outcome"),
                        ("outcome_far", "outcome, far"), ("asked", "asked"))
)
STRICT_INTRO = (
    "What each recorded reply went on to use, still in its request *with its context*, which a bare list of "
    "identifiers cannot satisfy: in context, the specific tokens the reply wrote that were held with 24 characters "
    "of their earlier line on each side; lines, the lines it wrote that occurred earlier, held verbatim; outcome, "
    "the share of the last error (its line and the failing frame) and the last test-result line held. Strict is "
    "the mean of the three; asked (beside it) the share of the first lines of the person's first and latest "
    "messages held, harness text not being the person; far counts only what occurred before the last 6 messages. "
    "Each figure is the mean over "
    "sessions of a session's figure (pooled over its requests), with the definitions of the shared referee."
)
RECALL_COLUMNS = (
    Column("recall", lambda t: t.recall, _recall, lower_is_better=False),
    Column("far recall", lambda t: t.recall_far, _recall, lower_is_better=False),
    Column("worst request", lambda t: t.worst_request_recall, _recall, lower_is_better=False),
    Column("recoverable", lambda t: t.recoverable_recall, _recall, lower_is_better=False),
)
SURVIVAL_INTRO = (
    "Share of requests that still hold each fact the agent needs (where there was one to hold): the task's "
    "identifiers, the paths edited so far, the last error line (any tool's, verbatim, until the same call runs again "
    "without one), the latest tool output. Recall is forward-reference "
    "recall: of the specific tokens (identifiers, paths, values) each recorded reply used from earlier messages, the "
    "share its request still held, weighted by tokens within a session and averaged over sessions; far recall counts "
    "only tokens from before the last 6 messages; the worst request is the lowest share of any one request; "
    "recoverable is, of the needed tokens a request did not hold, the share one search_history call with the token "
    "as its query returned on a matching line (strategies without the tool have none)."
)
def _survival(totals: StrategyTotals, probe: str) -> float | None:
    return totals.survival[probe]


SURVIVAL_COLUMNS = (
    *(Column(title, partial(_survival, probe=probe), _share, lower_is_better=False)
      for probe, title in (("task", "task"), ("edited", "edited files"), ("last_error", "last error"),
                           ("latest_output", "latest output"), ("mean", "mean"))),
    *RECALL_COLUMNS,
)


def table(rows: Sequence[tuple[str, Any]], columns: Sequence[Column], first: str) -> list[str]:
    """A Markdown table, one row per ``(name, figures)``; in each column every cell that reads as the best is bold."""
    best: list[str | None] = []
    for column in columns:
        values = [v for v in (column.value(figures) for _, figures in rows) if v is not None]
        pick = min if column.lower_is_better else max
        best.append(column.show(pick(values)) if values and column.lower_is_better is not None and len(rows) > 1 else None)
    lines = [f"| {first} | " + " | ".join(c.title for c in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    for name, figures in rows:
        cells = [_cell(column.value(figures), column.show, top) for column, top in zip(columns, best)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def _cell(value: float | None, show: Callable[[float], str], best: str | None) -> str:
    text = "–" if value is None else show(value)
    return f"**{text}**" if text == best else text


def _session_row(session: Session, runs: Sequence[BenchRun | None]) -> str:
    """Cost per strategy, overflows and violations noted; the cheapest run with neither is bold."""
    valid = [run.totals.cost_usd for run in runs if run is not None and not run.totals.overflows and not run.violations]
    best = _money(min(valid)) if valid and len(runs) > 1 else None
    cells = []
    for run in runs:
        if run is None:
            cells.append("–")
            continue
        t = run.totals
        notes = [note for count, note in ((t.overflows, f"{t.overflows} over"), (run.violations, f"{run.violations} viol."))
                 if count]
        cells.append(f"{_money(t.cost_usd)} ({', '.join(notes)})" if notes else _cell(t.cost_usd, _money, best))
    return f"| {session.label} | {session.requests} | {' | '.join(cells)} |"


def _per_session(report: Report) -> list[str]:
    """The sessions where context management matters (some request reaches half the window), one row each."""
    half = report.settings.window_tokens // 2
    by_key = {(run.session, run.strategy): run for run in report.runs}
    shown = [s for s in report.sessions if any(run.totals.peak_tokens >= half for run in
                                               (by_key.get((s.label, name)) for name in report.strategies) if run)]
    intro = (f"Cost in USD of the {len(shown)} sessions where some request reaches half the window ({half:,} tokens), "
             "with requests over the window and violations noted; the cheapest run with neither is in bold. The other "
             f"{len(report.sessions) - len(shown)} sessions stay under half the window with every strategy.")
    lines = [intro, ""]
    if shown:
        lines += [f"| session | requests | {' | '.join(report.strategies)} |",
                  "|---|---:|" + "---:|" * len(report.strategies)]
        lines += [_session_row(s, [by_key.get((s.label, name)) for name in report.strategies]) for s in shown]
    return lines


def results_markdown(report: Report) -> str:
    """``results.md``: the totals per strategy, strict recall, what survived, and cost per session."""
    s = report.settings
    totals = report.totals()
    intro = (
        f"{len(report.sessions)} recorded sessions replayed with {len(report.strategies)} strategies; tokens counted "
        f"with {s.tokenizer}, {s.max_output_tokens:,} tokens reserved for each reply; prices in USD per million tokens: "
        f"input {s.prices.input_per_mtok:g}, cache write {s.prices.cache_write_per_mtok:g}, cache read "
        f"{s.prices.cache_read_per_mtok:g}, output {s.prices.output_per_mtok:g}; cache TTL {s.cache_ttl_s:g} s. "
        "In each column the best value is in bold. A request over the window is priced as if it had been accepted; "
        "the second cost prices every summary as if an LLM had written it (one summarizer request on the request it "
        "replaces, cached like any other of its kind, the summary's tokens at the output price); "
        "violations are broken invariants (a call without its result, a lost task or system prompt) and requests "
        "holding nothing but the system prompt (Anthropic's API rejects those; no agent can go on from one)."
    )
    lines = [
        f"# Replay bench: window {s.window_tokens:,} tokens",
        "",
        intro,
        "",
        *table([(t.strategy, t) for t in totals], TOTALS_COLUMNS, "strategy"),
        "",
        "## Strict recall",
        "",
        STRICT_INTRO,
        "",
        *table([(t.strategy, t) for t in totals], STRICT_COLUMNS, "strategy"),
        "",
        "## What survived",
        "",
        SURVIVAL_INTRO,
        "",
        *table([(t.strategy, t) for t in totals], SURVIVAL_COLUMNS, "strategy"),
        "",
        "## Per session",
        "",
        *_per_session(report),
    ]
    notes = [f"- {name} did not run: {why}" for name, why in (report.unavailable or {}).items()]
    notes += [f"- skipped {x.where}: {x.reason}" for x in report.skipped]
    if notes:
        lines += ["", "## Not included", "", *notes]
    if report.command:
        took = f"; the replays took {report.seconds:.0f} s." if report.seconds else "."
        lines += ["", f"Produced by `{report.command}`{took}"]
    return "\n".join(lines) + "\n"


def write_results(report: Report, folder: Path) -> list[Path]:
    """``results.json`` and ``results.md`` in ``folder``; the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    data, text = folder / "results.json", folder / "results.md"
    data.write_text(json.dumps(results_json(report), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    text.write_text(results_markdown(report), encoding="utf-8")
    return [data, text]
