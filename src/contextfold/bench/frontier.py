"""The frontier of cost against usable context: a grid of policies, the points no other beats, cross-validated.

``contextfold bench --frontier`` replays every session with each policy of
:data:`GRID` (the presets among them) and with the peers, then scores each
policy over the sessions by its strict recall (:mod:`contextfold.replay.strict`,
the mean of the sessions') and its cost relative to the full history (the sum
of its ``cost_llm_usd``, summaries priced as LLM calls, over the sum of
``none``'s; ``cost_ride`` the same with summaries riding the agent's cache).
The frontier is the set of policies no other policy beats on both.

A frontier drawn on the sessions it is measured on flatters whatever it picks,
so the choice is cross-validated by session: the sessions are split into
``k`` folds (:func:`assign_folds`), and for each fold a choice made on the
others against an anchor preset (:func:`choose_by_rule`, below) is scored on
the held-out fold. Pooled over the folds every
session is scored once, by a policy chosen without it: that is the figure to
hold against the anchor's own, and session by session (:class:`Paired`) the
spread that says whether a difference is more than noise. :func:`frontier`
does it all from the runs; ``contextfold tune`` can call it on its own grid.

How a point is chosen on the other folds is itself chosen there
(:func:`choose_rule`, among :data:`CHOICE_RULES`): each rule is cross-validated
on those sessions alone, and the one whose choices held up best (no strict
recall lost against the anchor, then the most cost saved) makes the fold's
choice. Across a few dozen sessions most points differ from the anchor by less
than the sessions differ among themselves, so one rule admits a point only when
its gain clears one standard error of the per-session differences
(:func:`clears_noise`), another takes the cheapest point whose loss is within
one (:func:`within_noise`); which of them holds up depends on the sessions. A
point that ran as the anchor did on every tuning session (:func:`inert`) is not
a candidate, and the anchor always is: with nothing that holds up, the choice
is the anchor.
"""

from __future__ import annotations

import hashlib
import math
import statistics
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, replace

from ..conversation import JSONObject, JSONValue
from ..pipeline.base import Policy
from ..pipeline.presets import PRESETS
from .run import BenchRun

BASELINE = "none"
"""The full history, unchanged: every cost is relative to its."""

PEERS = ("none", "openhands", "claude-code", "window", "mask")
"""The stand-ins for other agents drawn beside the grid by default."""

GRID: dict[str, tuple[str, dict[str, JSONValue]]] = {
    "lean": ("lean", {}),
    "lean-no-gate": ("lean", {"economic_summaries": False}),
    "trigger-0.6": ("balanced", {"trigger_min_fraction": 0.6}),
    "trigger-0.75": ("balanced", {"trigger_min_fraction": 0.75}),
    "balanced": ("balanced", {}),
    "balanced-gate": ("balanced", {"economic_summaries": True}),
    "tail-0.2": ("balanced", {"tail_max_trigger_fraction": 0.2}),
    "clear-early": ("balanced", {"clear_min_savings_tokens": 10_000, "clear_keep_recent_rounds": 2}),
    "summary-2.5k": ("balanced", {"summary_target_tokens": 2_500}),
    "restore-small": ("balanced", {"restore_max_files": 2, "restore_total_tokens": 15_000}),
    "thorough": ("thorough", {}),
    "thorough-clear-early": ("thorough", {"clear_min_savings_tokens": 10_000, "clear_keep_recent_rounds": 2}),
}
"""The policies swept, each a preset and the knobs it changes: the trigger (how full the window gets), the verbatim
tail, the clearing thresholds, the economic gate (summaries below the trigger), the summary's size and the files
restored after one, and ``thorough`` clearing as early as ``clear-early`` (what ``thorough`` spends on longer
summaries and restores, earlier clearing saves). Twelve replays of every session besides the peers': minutes over a
folder on two cores."""

ANCHORS = tuple(PRESETS)
"""The presets a cross-validated choice is held against, each at its own cost."""


def grid_policies(grid: Mapping[str, tuple[str, JSONObject]] = GRID) -> dict[str, Policy]:
    """Each grid point's policy."""
    return {name: Policy.preset(preset, **knobs) for name, (preset, knobs) in grid.items()}


@dataclass(frozen=True)
class Point:
    """A strategy over a set of sessions: its mean strict recall (``None`` when no session needed anything) and
    its costs relative to the full history's over the same sessions."""

    name: str
    strict: float | None
    cost: float
    cost_ride: float
    sessions: int


def point(runs: Sequence[BenchRun], name: str, sessions: Collection[str]) -> Point:
    """Strategy ``name`` over ``sessions`` (labels), priced against :data:`BASELINE`'s runs of the same sessions."""
    mine = [run.totals for run in runs if run.strategy == name and run.session in sessions]
    base = sum(run.totals.cost_llm_usd for run in runs if run.strategy == BASELINE and run.session in sessions)
    stricts = [t.strict.strict for t in mine if t.strict.strict is not None]
    return Point(name, sum(stricts) / len(stricts) if stricts else None,
                 sum(t.cost_llm_usd for t in mine) / base if base else float("nan"),
                 sum(t.cost_live_usd for t in mine) / base if base else float("nan"), len(mine))


def beats(a: Point, b: Point) -> bool:
    """``a`` is no dearer and holds no less than ``b``, and is cheaper or holds more."""
    if a.strict is None or b.strict is None:
        return False
    return a.cost <= b.cost and a.strict >= b.strict and (a.cost < b.cost or a.strict > b.strict)


def pareto(points: Sequence[Point]) -> list[Point]:
    """The points no other beats (:func:`beats`), cheapest first; a point without strict recall is never on it."""
    return sorted((p for p in points if p.strict is not None and not any(beats(q, p) for q in points)),
                  key=lambda p: (p.cost, p.name))


def assign_folds(labels: Sequence[str], k: int) -> dict[str, int]:
    """Each session's fold, 0 to ``k - 1``: sizes differ by at most one, and a label's fold depends only on the set
    of labels (ordered by a hash of each, dealt in turn), not on the order they are given in or on the run."""
    if k < 1:
        raise ValueError(f"{k} folds: at least one is needed")
    ordered = sorted(set(labels), key=lambda label: (hashlib.sha256(label.encode()).hexdigest(), label))
    return {label: position % k for position, label in enumerate(ordered)}


def choose(points: Sequence[Point], anchor: str, admitted: Collection[str] | None = None) -> Point:
    """The point of highest strict recall at no more than ``anchor``'s cost (the cheaper of equals), among the
    ``admitted`` names and the anchor (every point when ``admitted`` is ``None``): never worse than the anchor on
    the sessions it is chosen on, since the anchor itself is a candidate."""
    reference = next(p for p in points if p.name == anchor)
    affordable = [p for p in points if p.strict is not None and p.cost <= reference.cost
                  and (admitted is None or p.name in admitted or p.name == anchor)]
    if reference.strict is None or not affordable:
        return reference
    return max(affordable, key=lambda p: (p.strict, -p.cost, p.name == anchor))


@dataclass(frozen=True)
class Paired:
    """One strategy against another session by session: the differences in strict recall (``strict_mean`` their
    mean, ``strict_sd`` their spread, ``strict_se`` the standard error of the mean; over the sessions where both
    have one) and in cost, each session's relative to its own full history, and on how many sessions it held more,
    less or the same. ``sessions`` under two leaves the spread at 0: one session says nothing about noise."""

    sessions: int
    strict_mean: float
    strict_sd: float
    strict_se: float
    better: int
    worse: int
    same: int
    cost_mean: float
    cost_sd: float


def paired_difference(runs: Sequence[BenchRun], name: str, against: str, sessions: Collection[str]) -> Paired:
    """Strategy ``name`` against ``against`` over ``sessions``, each session compared with itself (``runs`` holds
    both strategies' runs and :data:`BASELINE`'s for each)."""
    totals = {(run.session, run.strategy): run.totals for run in runs if run.session in sessions}
    labels = sorted({session for session, strategy in totals if strategy == name})
    strict: list[float] = []
    cost: list[float] = []
    for label in labels:
        mine, theirs, base = totals[label, name], totals[label, against], totals[label, BASELINE]
        if mine.strict.strict is not None and theirs.strict.strict is not None:
            strict.append(mine.strict.strict - theirs.strict.strict)
        if base.cost_llm_usd:
            cost.append((mine.cost_llm_usd - theirs.cost_llm_usd) / base.cost_llm_usd)
    strict_sd = statistics.stdev(strict) if len(strict) > 1 else 0.0
    return Paired(len(strict), statistics.fmean(strict) if strict else 0.0, strict_sd,
                  strict_sd / math.sqrt(len(strict)) if strict else 0.0, sum(d > 0 for d in strict),
                  sum(d < 0 for d in strict), sum(d == 0 for d in strict),
                  statistics.fmean(cost) if cost else 0.0, statistics.stdev(cost) if len(cost) > 1 else 0.0)


def clears_noise(difference: Paired) -> bool:
    """The strategy's strict recall exceeds the other's by at least one standard error of the per-session
    differences (or equals it on every session: then only cost tells them apart), over two sessions at least."""
    return difference.sessions >= 2 and difference.strict_mean >= difference.strict_se


def admitted(runs: Sequence[BenchRun], grid: Sequence[str], anchor: str, sessions: Collection[str]) -> set[str]:
    """The grid points that may be chosen against ``anchor`` on ``sessions``: those that :func:`clears_noise`."""
    return {name for name in grid if name != anchor and clears_noise(paired_difference(runs, name, anchor, sessions))}


INERT_COST = 1e-4
"""A cost difference smaller than this share of a session's full history is none (:func:`inert`)."""


def inert(runs: Sequence[BenchRun], grid: Sequence[str], anchor: str, sessions: Collection[str]) -> tuple[str, ...]:
    """The points of ``grid`` (the anchor aside) whose strict recall equals the anchor's on every one of ``sessions``
    and whose cost is within :data:`INERT_COST` of it: what they change does not act on these sessions at this
    window (a summary target above what the summaries take, a restore budget no restore reaches), and choosing
    one over the anchor would be choosing by a rounding of its cost."""
    totals = {(run.session, run.strategy): run.totals for run in runs if run.session in sessions}

    def same(name: str, label: str) -> bool:
        mine, theirs, base = totals[label, name], totals[label, anchor], totals[label, BASELINE]
        return (mine.strict.strict == theirs.strict.strict
                and abs(mine.cost_llm_usd - theirs.cost_llm_usd) <= INERT_COST * base.cost_llm_usd)

    return tuple(name for name in grid if name != anchor and all(same(name, label) for label in sessions))


def within_noise(difference: Paired) -> bool:
    """The strategy's strict recall falls short of the other's by less than one standard error of the per-session
    differences (or not at all), over two sessions at least."""
    return difference.sessions >= 2 and difference.strict_mean + difference.strict_se >= 0


ChoiceRule = Callable[[Sequence[BenchRun], Sequence[str], str, Collection[str]], str]
"""A way to choose a grid point against an anchor from the runs of some sessions: (runs, grid, anchor, sessions)
-> the name chosen."""


def best_strict_at_cost(runs: Sequence[BenchRun], grid: Sequence[str], anchor: str, sessions: Collection[str]) -> str:
    """The highest strict recall at no more than the anchor's cost (:func:`choose`)."""
    return choose([point(runs, name, sessions) for name in grid], anchor).name


def best_strict_beyond_noise(runs: Sequence[BenchRun], grid: Sequence[str], anchor: str,
                             sessions: Collection[str]) -> str:
    """As :func:`best_strict_at_cost`, among the points whose gain :func:`clears_noise` (the one-standard-error
    rule: the best of many by less than that is the best by luck)."""
    return choose([point(runs, name, sessions) for name in grid], anchor, admitted(runs, grid, anchor, sessions)).name


def cheapest_within_noise(runs: Sequence[BenchRun], grid: Sequence[str], anchor: str,
                          sessions: Collection[str]) -> str:
    """The cheapest point, cheaper than the anchor, whose strict recall is :func:`within_noise` of the anchor's:
    cost differences between policies are steady from session to session, small strict ones are not."""
    points = {name: point(runs, name, sessions) for name in grid}
    cheaper = [name for name in grid if name != anchor and points[name].cost < points[anchor].cost
               and within_noise(paired_difference(runs, name, anchor, sessions))]
    return min([anchor, *cheaper], key=lambda name: (points[name].cost, name != anchor))


CHOICE_RULES: dict[str, ChoiceRule] = {
    "best-strict-beyond-noise": best_strict_beyond_noise,
    "cheapest-within-noise": cheapest_within_noise,
    "best-strict-at-cost": best_strict_at_cost,
}
"""The rules :func:`choose_rule` picks between, the first preferred when they hold up equally (it moves least)."""


def rule_outcome(runs: Sequence[BenchRun], rule: ChoiceRule, grid: Sequence[str], anchor: str,
                 sessions: Collection[str], k: int) -> tuple[float, float, float]:
    """``rule`` cross-validated over ``sessions`` in ``k`` folds, its held-out choices against the anchor: (the
    strict recall lost, 0 when none; the cost saved, relative to the full history; the strict recall gained),
    to be compared in that order, each rounded so that sums in another order do not tell equals apart."""
    labels = sorted(sessions)
    fold_of = assign_folds(labels, k)
    picked: dict[str, str] = {}
    for number in range(k):
        name = _choose_acting(runs, rule, grid, anchor, {label for label in labels if fold_of[label] != number})
        picked.update({label: name for label in labels if fold_of[label] == number})
    totals = {(run.session, run.strategy): run.totals for run in runs if run.session in picked}
    gains = [mine - theirs for label, name in picked.items()
             if (mine := totals[label, name].strict.strict) is not None
             and (theirs := totals[label, anchor].strict.strict) is not None]
    gained = statistics.fmean(gains) if gains else 0.0
    base = sum(totals[label, BASELINE].cost_llm_usd for label in picked)
    saved = sum(totals[label, anchor].cost_llm_usd - totals[label, name].cost_llm_usd
                for label, name in picked.items()) / base if base else 0.0
    return round(min(gained, 0.0), 9), round(saved, 9), round(gained, 9)


def choose_rule(runs: Sequence[BenchRun], grid: Sequence[str], anchor: str, sessions: Collection[str], k: int) -> str:
    """The name of the rule of :data:`CHOICE_RULES` whose choices held up best when cross-validated over
    ``sessions`` alone (:func:`rule_outcome`); the first rule under two sessions, with nothing to cross-validate."""
    k = min(k, len(sessions))
    if k < 2:
        return next(iter(CHOICE_RULES))
    mine = [run for run in runs if run.session in sessions]
    return max(CHOICE_RULES, key=lambda name: rule_outcome(mine, CHOICE_RULES[name], grid, anchor, sessions, k))


def choose_by_rule(runs: Sequence[BenchRun], grid: Sequence[str], anchor: str, sessions: Collection[str],
                   k: int) -> tuple[str, str]:
    """The rule :func:`choose_rule` picks on ``sessions`` and the grid point it chooses there, never one that ran
    as the anchor did on every one of them (:func:`inert`: it is the anchor there)."""
    rule = choose_rule(runs, grid, anchor, sessions, k)
    return rule, _choose_acting(runs, CHOICE_RULES[rule], grid, anchor, sessions)


def _choose_acting(runs: Sequence[BenchRun], rule: ChoiceRule, grid: Sequence[str], anchor: str,
                   sessions: Collection[str]) -> str:
    """``rule``'s choice among the points that are not :func:`inert` on ``sessions``."""
    still = set(inert(runs, grid, anchor, sessions))
    return rule(runs, [name for name in grid if name not in still], anchor, sessions)


@dataclass(frozen=True)
class Fold:
    """One fold: the sessions held out, the frontier drawn on the others, and each anchor's choice there."""

    number: int
    held_out: tuple[str, ...]
    tuning_frontier: tuple[str, ...]
    chosen: dict[str, str]
    """Anchor -> the grid point chosen for it on the tuning folds."""
    rules: dict[str, str]
    """Anchor -> the rule of :data:`CHOICE_RULES` that made the choice (:func:`choose_rule` on the tuning folds)."""


@dataclass(frozen=True)
class HeldOut:
    """An anchor against the points chosen for it, every session scored by the choice of the fold it was held out
    of (``chosen_names``: each fold's choice, in fold order)."""

    anchor: Point
    chosen: Point
    chosen_names: tuple[str, ...]
    by_session: Paired
    """The choices against the anchor, each held-out session compared with itself."""


@dataclass(frozen=True)
class Frontier:
    """A window's frontier over every session, its peers, and the cross-validated choices."""

    window: int
    points: tuple[Point, ...]
    """Every grid point and peer over every session."""
    grid: tuple[str, ...]
    peers: tuple[str, ...]
    frontier: tuple[str, ...]
    """The grid points no other grid point beats, cheapest first (peers are drawn beside it, not on it)."""
    folds: tuple[Fold, ...]
    held_out: dict[str, HeldOut]

    def to_json(self) -> dict[str, JSONValue]:
        return asdict(self)


def frontier(runs: Sequence[BenchRun], grid: Sequence[str], peers: Sequence[str], window: int, k: int,
             anchors: Sequence[str] = ANCHORS) -> Frontier:
    """The frontier of ``grid`` over the sessions of ``runs`` (which must hold :data:`BASELINE`'s), with ``peers``'
    points, and each anchor of ``grid`` against the choice made for it on ``k`` folds (no folds under two sessions:
    nothing would be left to tune on)."""
    labels = list(dict.fromkeys(run.session for run in runs))
    everything = set(labels)
    points = tuple(point(runs, name, everything) for name in (*grid, *peers))
    on_grid = [p for p in points if p.name in grid]
    anchors = [name for name in anchors if name in grid]
    k = min(k, len(labels))
    folds: list[Fold] = []
    if k >= 2:
        fold_of = assign_folds(labels, k)
        for number in range(k):
            tuning = {label for label in labels if fold_of[label] != number}
            tuned = [point(runs, name, tuning) for name in grid]
            made = {anchor: choose_by_rule(runs, grid, anchor, tuning, k) for anchor in anchors}
            folds.append(Fold(number, tuple(label for label in labels if fold_of[label] == number),
                              tuple(p.name for p in pareto(tuned)), {anchor: made[anchor][1] for anchor in anchors},
                              {anchor: made[anchor][0] for anchor in anchors}))
    held_out = {anchor: _held_out(runs, anchor, folds) for anchor in anchors} if folds else {}
    return Frontier(window, points, tuple(grid), tuple(peers), tuple(p.name for p in pareto(on_grid)),
                    tuple(folds), held_out)


def _held_out(runs: Sequence[BenchRun], anchor: str, folds: Sequence[Fold]) -> HeldOut:
    """The anchor over every session, and the runs of each fold's choice on its held-out sessions, pooled."""
    pooled = [run for fold in folds for run in runs if run.session in fold.held_out
              and run.strategy in (fold.chosen[anchor], BASELINE)]
    chosen = [run if run.strategy == BASELINE else replace(run, strategy="chosen") for run in pooled]
    everything = {run.session for run in runs}
    against = [run for run in runs if run.strategy == anchor]
    return HeldOut(point(runs, anchor, everything), point(chosen, "chosen", everything),
                   tuple(fold.chosen[anchor] for fold in folds),
                   paired_difference([*chosen, *against], "chosen", anchor, everything))

