"""bench --frontier: the Pareto set, the folds, the cross-validated choice, and the command's files."""

from __future__ import annotations

import json
from dataclasses import MISSING, fields
from pathlib import Path

import pytest
from click.testing import CliRunner

from contextfold.bench import BenchRun, Settings, find_sessions, run_bench
from contextfold.bench.run import ReplayFailed
from contextfold.bench.frontier import GRID, Point, assign_folds, choose, frontier, grid_policies, pareto, point
from contextfold.cli import cli
from contextfold.errors import InvalidMessage
from contextfold.pipeline.base import Policy
from contextfold.pipeline.presets import PRESETS
from contextfold.replay import strategies
from contextfold.replay.result import Totals
from contextfold.replay.strict import SessionStrict

from test_bench import write_tau_bench


def run(session: str, strategy: str, cost: float, strict: float | None, ride: float | None = None) -> BenchRun:
    numbers = {f.name: 0 for f in fields(Totals) if f.default is MISSING and f.default_factory is MISSING}
    totals = Totals(**{**numbers, "session": session, "strategy": strategy, "tokenizer": "estimate",
                       "cost_llm_usd": cost, "cost_live_usd": cost if ride is None else ride,
                       "strict": SessionStrict(strict=strict)})
    return BenchRun(session, strategy, totals, (), ())


def test_the_pareto_set_keeps_exactly_the_points_nothing_beats_on_both_cheapest_first() -> None:
    points = [Point("a", 0.90, 0.50, 0.5, 3), Point("b", 0.95, 0.60, 0.6, 3), Point("c", 0.85, 0.55, 0.5, 3),
              Point("d", 0.95, 0.70, 0.7, 3), Point("e", None, 0.10, 0.1, 3), Point("f", 0.97, 0.80, 0.8, 3),
              Point("a2", 0.90, 0.50, 0.5, 3)]
    # c costs more than a and holds less; d holds what b holds at more; e has no strict recall; a and a2 tie
    assert [p.name for p in pareto(points)] == ["a", "a2", "b", "f"]
    assert pareto([]) == []


def test_folds_are_balanced_and_depend_only_on_the_set_of_sessions() -> None:
    labels = [f"session-{n}" for n in range(11)]
    folds = assign_folds(labels, 3)
    assert sorted(folds) == sorted(labels)
    assert sorted(list(folds.values()).count(k) for k in range(3)) == [3, 4, 4]
    assert assign_folds(list(reversed(labels)), 3) == folds == assign_folds(labels + labels[:2], 3)
    assert folds != {label: n % 3 for n, label in enumerate(labels)}  # dealt by hash, not by the order given
    with pytest.raises(ValueError):
        assign_folds(labels, 0)


def test_the_choice_is_the_best_strict_recall_at_no_more_than_the_anchors_cost() -> None:
    points = [Point("balanced", 0.90, 0.60, 0.6, 2), Point("cheap", 0.88, 0.40, 0.4, 2),
              Point("better", 0.93, 0.59, 0.6, 2), Point("best-but-dear", 0.99, 0.90, 0.9, 2)]
    assert choose(points, "balanced").name == "better"
    assert choose(points, "cheap").name == "cheap"
    assert choose([*points, Point("same-cheaper", 0.93, 0.50, 0.5, 2)], "balanced").name == "same-cheaper"


def test_each_session_is_scored_by_the_choice_made_on_the_other_folds() -> None:
    """Four sessions, two folds. ``fitted`` is best on the folds' tuning sessions only by luck: the point
    of cross-validation is that its held-out score is the one reported, not its score where it was chosen."""
    sessions = ["s1", "s2", "s3", "s4"]
    runs = []
    for s in sessions:
        runs += [run(s, "none", 1.0, 1.0), run(s, "balanced", 0.6, 0.90, ride=0.5)]
    folds = assign_folds(sessions, 2)
    lucky = {s for s in sessions if folds[s] == 0}
    runs += [run(s, "fitted", 0.5, 0.99 if s in lucky else 0.70) for s in sessions]
    found = frontier(runs, ["balanced", "fitted"], ["none"], 32_000, 2, anchors=["balanced"])
    assert {p.name: (p.strict, p.cost) for p in found.points} == {
        "balanced": (pytest.approx(0.90), 0.6), "fitted": (pytest.approx(0.845), 0.5), "none": (1.0, 1.0)}
    assert next(p for p in found.points if p.name == "balanced").cost_ride == 0.5
    assert found.frontier == ("fitted", "balanced")
    by_fold = {fold.number: fold for fold in found.folds}
    assert set(by_fold[0].held_out) == lucky and by_fold[0].chosen == {"balanced": "balanced"}
    assert by_fold[1].chosen == {"balanced": "fitted"}  # tuned on the lucky fold, where fitted looked best
    held = found.held_out["balanced"]
    assert held.chosen_names == ("balanced", "fitted")
    # the lucky sessions were scored by balanced (chosen without them), the others by fitted: 0.90 and 0.70
    assert held.chosen.strict == pytest.approx(0.80) and held.chosen.cost == pytest.approx(0.55)
    assert held.anchor == point(runs, "balanced", set(sessions))
    assert json.loads(json.dumps(found.to_json()))["held_out"]["balanced"]["chosen_names"] == ["balanced", "fitted"]
    assert frontier(runs[:2], ["balanced"], ["none"], 32_000, 5).held_out == {}  # one session: nothing to tune on


def test_the_grid_holds_every_preset_at_its_own_policy() -> None:
    policies = grid_policies()
    for name in PRESETS:
        assert policies[name] == Policy.preset(name)
    assert len(set(map(repr, policies.values()))) == len(GRID)  # no two points the same policy


def test_bench_frontier_writes_the_frontier_and_its_chart(tmp_path: Path) -> None:
    write_tau_bench(tmp_path / "chats.json", *range(4))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["bench", str(tmp_path / "chats.json"), "--window", "3000", "--max-output", "500",
                                      "--strategies", "claude-code", "--jobs", "1", "--tokenizer", "estimate",
                                      "--frontier", "--folds", "2", "--out", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads((out / "frontier.json").read_text())
    assert data["window"] == 3000 and data["peers"] == ["none", "claude-code"] and data["grid"] == list(GRID)
    assert [p["name"] for p in data["points"]] == [*GRID, "none", "claude-code"]
    assert all(p["sessions"] == 4 for p in data["points"])
    assert data["frontier"] and set(data["frontier"]) <= set(GRID)
    assert len(data["folds"]) == 2 and sorted(s for f in data["folds"] for s in f["held_out"]) == [
        f"{tmp_path / 'chats.json'}#{n}" for n in range(4)]
    assert set(data["held_out"]) == set(PRESETS)
    assert (out / "frontier.png").stat().st_size > 0 and (out / "results.json").exists()
    assert "cross-validated over 2 folds" in result.output
    assert "session by session (" in " ".join(result.output.split())


class Broken:
    """A strategy whose every step raises an error that cannot be rebuilt from its message alone."""

    name = "broken"

    def start(self, header: object) -> None:
        pass

    def step(self, step: object) -> object:
        raise InvalidMessage(3, "content", "no such block")

    def record_usage(self, usage: object) -> None:
        pass


def test_a_replay_that_raises_in_a_worker_stops_the_bench_naming_the_session_instead_of_hanging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(strategies._registered, "broken", lambda config: Broken())  # gone after the test
    write_tau_bench(tmp_path / "chats.json", 1, 2)
    sessions, _ = find_sessions([tmp_path / "chats.json"])
    with pytest.raises(ReplayFailed, match=r"chats.json#\d could not be replayed with broken: InvalidMessage"):
        run_bench(sessions, ["none", "broken"], Settings(3_000, 500, "estimate"), jobs=2)
