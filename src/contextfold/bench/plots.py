"""The bench's charts, as PNG files: prompt tokens per request against the window, and cumulative cost.

* ``plots/<session>.png``: one chart per session, one line per strategy,
  the window drawn as a horizontal line;
* ``overview.png``: the same for the sessions that grow the largest, side by side;
* ``cost.png``: cumulative cost per strategy, summed over every session by
  request number (a session that has ended adds its final cost);
* ``cost-strict.png``, the headline: the trade-off at a glance, one point per
  strategy and window: strict recall across (what the replies went on to use,
  held with its context: :mod:`contextfold.replay.strict`), cost relative to
  the full history up (a filled marker with summaries free, a hollow one
  joined to it with summaries priced as LLM calls). Earlier benches'
  ``results.json`` (other windows) can be drawn in the same chart;
* ``cost-recall.png``: the same against forward-reference recall, which a
  bare list of identifiers can raise (compare the two);
* ``frontier.png`` (``bench --frontier``): the grid of policies, its frontier
  line, the presets and the peers, and the cross-validated choices
  (:mod:`.frontier`).

matplotlib (the ``bench`` extra) is imported only here, and only when a
chart is drawn; the figures are drawn with its object API on the Agg canvas,
so no display and no global pyplot state are involved.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from ..errors import MissingDependency
from ..pipeline.presets import PRESETS
from .frontier import Frontier
from .report import Report

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

OVERVIEW_SESSIONS = 6
DPI = 100
PALETTE_COLORS = 256
_STYLES = ("-", "--", "-.", ":")


MARKERS = ("o", "s", "D", "^", "v", "P")
"""One marker shape per window in the trade-off charts."""

MEASURES = {
    "strict": "strict recall (share of what was used later that the request held with its context)",
    "recall": "forward-reference recall (share of the facts used later that the request still held)",
}
"""The measures a trade-off chart can draw across, with their axis labels."""


@dataclass(frozen=True)
class TradeOff:
    """One point of a trade-off chart: a strategy at a window, its strict recall and recall, its costs relative to
    ``none`` (a measure is ``None`` when no request needed anything, or in a bench from before it was reported)."""

    strategy: str
    window: int
    strict: float | None
    recall: float | None
    cost: float
    cost_llm: float


def require_matplotlib() -> None:
    """Fail now, naming the extra, when the charts could not be drawn (before hours of replays, not after)."""
    try:
        import matplotlib.figure  # noqa: F401
    except ImportError as error:
        raise MissingDependency("matplotlib", "bench", "the charts are drawn with it", "pass --no-charts") from error


def write_plots(
    report: Report, folder: Path, *, dpi: int = DPI, other_results: Sequence[Path] = ()
) -> list[Path]:
    """Every chart of ``report`` into ``folder``; the paths written (see :func:`require_matplotlib`).

    ``other_results`` are ``results.json`` files of other benches whose
    points join the trade-off charts.
    """
    plots = folder / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    written = [_save(session_chart(report, session.label), plots / f"{session.slug}.png", dpi)
               for session in report.sessions]
    written.append(_save(overview_chart(report), folder / "overview.png", dpi))
    written.append(_save(cost_chart(report), folder / "cost.png", dpi))
    points = [point for path in other_results for point in trade_offs(json.loads(path.read_text(encoding="utf-8")))]
    points += trade_offs({"window": report.settings.window_tokens,
                          "totals": [asdict(t) for t in report.totals()]})
    written += [_save(trade_off_chart(points, measure), folder / f"cost-{measure}.png", dpi) for measure in MEASURES]
    return written


def trade_offs(results: dict[str, Any]) -> list[TradeOff]:
    """The charts' points of one bench (its ``results.json`` data): every strategy, when ``none`` ran."""
    totals = results["totals"]
    base = next((t["cost_usd"] for t in totals if t["strategy"] == "none"), None)
    if not base:
        return []
    return [TradeOff(t["strategy"], results["window"], (t.get("strict") or {}).get("strict"), t.get("recall"),
                     t["cost_usd"] / base, t["cost_llm_usd"] / base) for t in totals]


def trade_off_chart(points: Sequence[TradeOff], measure: str = "strict") -> Figure:
    """Cost relative to the full history against ``measure`` (a key of :data:`MEASURES`), one point per strategy and
    window that has it (see the module docstring)."""
    figure = _figure((8, 5))
    ax = figure.subplots()
    drawn = [(p, x) for p, x in ((p, getattr(p, measure)) for p in points) if x is not None]
    names = list(dict.fromkeys(p.strategy for p, _ in drawn))
    windows = sorted({p.window for p, _ in drawn})
    for p, x in drawn:
        style = _line(p.strategy, names)
        marker = MARKERS[windows.index(p.window) % len(MARKERS)]
        ax.plot([x, x], [p.cost, p.cost_llm], color=style["color"], linewidth=1, zorder=style["zorder"])
        ax.plot([x], [p.cost_llm], marker=marker, markersize=7, linestyle="none", markerfacecolor="white",
                color=style["color"], zorder=style["zorder"])
        ax.plot([x], [p.cost], marker=marker, markersize=7, linestyle="none", color=style["color"],
                label=f"{p.strategy}, {p.window:,}", zorder=style["zorder"])
        ax.annotate(p.strategy, (x, p.cost), textcoords="offset points", xytext=(6, -3), fontsize="x-small")
    ax.set_xlabel(MEASURES[measure])
    ax.set_ylabel("cost relative to the full history")
    ax.set_title(f"Cost against {MEASURES[measure].split(' (')[0]} (hollow: summaries priced as LLM calls)",
                 fontsize="medium")
    ax.grid(alpha=0.3)
    _legend(figure)
    return figure


def frontier_chart(frontier: Frontier, tuned: str | None = None) -> Figure:
    """Strict recall across, cost relative to the full history up (summaries priced as LLM calls): every grid
    point, the frontier joined by a line, the presets as stars (``balanced`` is the default), the peers as
    crosses, each preset's cross-validated choice as a hollow diamond (its held-out figures), and the grid point
    ``tuned`` (``contextfold tune``'s choice) ringed."""
    figure = _figure((10, 6))
    ax = figure.subplots()
    by_name = {p.name: p for p in frontier.points}
    line = [(p.strict, p.cost) for p in (by_name[name] for name in frontier.frontier) if p.strict is not None]
    ax.plot([strict for strict, _ in line], [cost for _, cost in line], color="black", linewidth=1.5, zorder=2,
            label="frontier (no grid point beats these on both)")
    peers = list(frontier.peers)
    for p in frontier.points:
        if p.strict is None:
            continue
        if p.name in peers:
            style: PointStyle = {"marker": "X", "markersize": 8, "color": _line(p.name, peers)["color"],
                                     "label": f"{p.name} (peer stand-in)"}
        elif p.name in PRESETS:
            style = {"marker": "*", "markersize": 14, "color": _PRESET_COLORS.get(p.name, "tab:olive"),
                     "label": f"{p.name} (preset{', the default' if p.name == 'balanced' else ''})"}
        else:
            style = {"marker": "o", "markersize": 6, "color": "tab:gray", "label": "grid point"}
        ax.plot([p.strict], [p.cost], linestyle="none", zorder=3, **style)
        ax.annotate(p.name, (p.strict, p.cost), textcoords="offset points", xytext=(6, -3), fontsize="x-small")
        if p.name == tuned:
            ax.plot([p.strict], [p.cost], marker="o", markersize=18, linestyle="none", zorder=4, markerfacecolor="none",
                    markeredgewidth=2, color="tab:green", label="tuned (the policy file written)")
    for anchor, result in frontier.held_out.items():
        chosen = result.chosen
        if chosen.strict is not None:
            ax.plot([chosen.strict], [chosen.cost], marker="D", markersize=8, linestyle="none", zorder=3,
                    markerfacecolor="none", color="tab:blue", label="held out: chosen at ≤ a preset's cost")
            ax.annotate(f"held out ≤ {anchor}", (chosen.strict, chosen.cost), textcoords="offset points",
                        xytext=(6, 5), fontsize="x-small", color="tab:blue")
    ax.set_xlabel("strict recall (what was used later, held with its context)")
    ax.set_ylabel("cost relative to the full history\n(summaries priced as LLM calls)")
    ax.set_title(f"Frontier, window {frontier.window:,} tokens ({max((p.sessions for p in frontier.points), default=0)} "
                 f"sessions, {len(frontier.folds)} folds)", fontsize="medium")
    ax.grid(alpha=0.3)
    _legend(figure)
    return figure


_PRESET_COLORS = {"lean": "gold", "balanced": "red", "thorough": "darkviolet"}


def write_frontier_chart(frontier: Frontier, path: Path, *, dpi: int = DPI, tuned: str | None = None) -> Path:
    """:func:`frontier_chart` saved as a PNG at ``path``."""
    return _save(frontier_chart(frontier, tuned), path, dpi)


def session_chart(report: Report, label: str) -> Figure:
    """Prompt tokens per request of the session labelled ``label``, one line per strategy, and the window."""
    figure = _figure((8, 4.5))
    _tokens(figure.subplots(), report, label)
    _legend(figure)
    return figure


def overview_chart(report: Report, count: int = OVERVIEW_SESSIONS) -> Figure:
    """:func:`session_chart` for the ``count`` sessions whose largest request is largest, side by side."""
    peaks: dict[str, int] = {}
    for run in report.runs:
        peaks[run.session] = max(peaks.get(run.session, 0), run.totals.peak_tokens)
    chosen = sorted(report.sessions, key=lambda s: peaks.get(s.label, 0), reverse=True)[:count]
    columns = min(3, max(len(chosen), 1))
    rows = max(1, -(-len(chosen) // columns))
    figure = _figure((4.2 * columns + 1.6, 3.2 * rows + 0.6))
    axes = figure.subplots(rows, columns, squeeze=False).flatten()
    for ax, session in zip(axes, chosen):
        _tokens(ax, report, session.label)
    for ax in axes[len(chosen) :]:
        ax.set_visible(False)
    figure.suptitle(f"Prompt tokens per request, window {report.settings.window_tokens:,} "
                    f"(the {len(chosen)} sessions that grow the largest)")
    _legend(figure)
    return figure


def cost_chart(report: Report) -> Figure:
    """Cumulative USD per strategy over all sessions, by request number."""
    figure = _figure((8, 4.5))
    ax = figure.subplots()
    for name in report.strategies:
        series = [list(accumulate(r.step_cost_usd)) for r in report.runs if r.strategy == name and r.step_cost_usd]
        length = max((len(s) for s in series), default=0)
        summed = [sum(s[min(k, len(s) - 1)] for s in series) for k in range(length)]
        ax.plot(range(1, length + 1), summed, label=name, **_line(name, report.strategies))
    ax.set_xlabel("request number in its session")
    ax.set_ylabel("cumulative cost, all sessions (USD)")
    ax.set_title(f"Cumulative cost, window {report.settings.window_tokens:,} tokens ({len(report.sessions)} sessions)")
    ax.grid(alpha=0.3)
    _legend(figure)
    return figure


# --------------------------------------------------------------------------- drawing


def _figure(size: tuple[float, float]) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=size, layout="constrained")


def _tokens(ax: Axes, report: Report, label: str) -> None:
    window = report.settings.window_tokens
    for run in report.runs:
        if run.session == label:
            steps = range(1, len(run.context_tokens) + 1)
            ax.plot(steps, run.context_tokens, label=run.strategy, **_line(run.strategy, report.strategies))
    ax.axhline(window, color="black", linewidth=1.2, linestyle=(0, (6, 3)), label=f"context window ({window:,})")
    ax.set_xlabel("request number")
    ax.set_ylabel("prompt tokens")
    ax.set_title(label if len(label) <= 60 else "…" + label[-59:], fontsize="medium")
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter("{x:,.0f}")
    ax.grid(alpha=0.3)


class LineStyle(TypedDict):
    """How a strategy's line is drawn: keyword arguments of ``Axes.plot``."""

    color: tuple[float, float, float, float]
    linewidth: float
    zorder: int
    linestyle: str


class PointStyle(TypedDict):
    """How a point of the frontier chart is drawn: keyword arguments of ``Axes.plot``."""

    marker: str
    markersize: int
    color: str | tuple[float, float, float, float]
    label: str


def _line(name: str, names: Sequence[str]) -> LineStyle:
    """A strategy's colour (its place in ``names``) and dash; contextfold's own drawn thicker and on top."""
    from matplotlib import colormaps

    palette = colormaps["tab10"]  # ten colours; an integer picks one of them
    number = names.index(name)
    ours = name == "default"
    return {"color": palette(number % palette.N), "linewidth": 2.4 if ours else 1.3, "zorder": 3 if ours else 2,
            "linestyle": "-" if ours else _STYLES[number % len(_STYLES)]}


def _legend(figure: Figure) -> None:
    """One legend for the figure, right of the charts, each label once."""
    handles: dict[str, Artist] = {}
    for ax in figure.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    figure.legend(list(handles.values()), list(handles), loc="outside right upper", fontsize="small")


def _save(figure: Figure, path: Path, dpi: int) -> Path:
    """``figure`` as a PNG with a palette of :data:`PALETTE_COLORS` (a chart has few colours; a third of the bytes)."""
    from io import BytesIO

    from PIL import Image  # matplotlib's own dependency

    buffer = BytesIO()
    figure.savefig(buffer, dpi=dpi, format="png")
    buffer.seek(0)
    with Image.open(buffer) as image:
        image.convert("RGB").quantize(PALETTE_COLORS, Image.Quantize.MAXCOVERAGE).save(path, format="png", optimize=True)
    return path
