"""``contextfold tune`` and the policy file: save/load round trips, typed errors, the sweep kept on disk, the budget."""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from dataclasses import replace
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from contextfold import InvalidPolicy, Policy, Prices, Rule
from contextfold.bench import Session, Settings, find_sessions, run_bench
from contextfold.bench.frontier import GRID, grid_policies
from contextfold.bench.plots import frontier_chart
from contextfold.bench.frontier import (CHOICE_RULES, Paired, assign_folds, best_strict_at_cost, clears_noise,
                                        paired_difference, rule_outcome)
from contextfold.bench.tune import PER_JOB, RUNS_FOLDER, Sweep, choose_policy, holds_up, paired, sweep, sweep_names
from contextfold.cli import cli
from contextfold.context import Context
from contextfold.conversation import Conversation, Header, Item, Text
from contextfold.errors import InvalidConversation
from contextfold.pipeline.base import POLICY_FILE_VERSION
from contextfold.pipeline.presets import PRESETS
from contextfold.replay import strategies
from contextfold.synthetic import generate_session

from test_bench import write_tau_bench
from test_frontier import run

SMALL = ("--window", "3000", "--max-output", "500", "--tokenizer", "estimate")
"""A window the generated tau-bench chats overflow, so the policies differ."""


# --------------------------------------------------------------------------- the policy file


@pytest.mark.parametrize("policy", [
    *(Policy.preset(name) for name in PRESETS),
    Policy(prices=Prices(1.0, 1.25, 0.1, 5.0), exclude_tools=("bash", "grep"), mask_window_rounds=10,
           selective_rules=(Rule("image", "drop", 1, 5),), budget_steps=((0.4, 20_000),), trigger_fraction=0.8,
           history_tools=True, background_summaries="never", economic_summaries=True),
], ids=[*PRESETS, "every-kind-of-knob"])
def test_a_saved_policy_loads_back_equal_from_an_owner_only_json_file(policy: Policy, tmp_path: Path) -> None:
    path = policy.save(tmp_path / "policy.json")
    assert Policy.load(path) == policy
    data = json.loads(path.read_text())
    assert data["version"] == POLICY_FILE_VERSION and data["policy"]["summary_target_tokens"] == \
        policy.summary_target_tokens
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    context = Context(window_tokens=32_000, policy=Policy.load(path))
    assert context.policy.summary_target_tokens == policy.summary_target_tokens


def test_a_knob_left_out_of_the_file_takes_its_default(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"version": 1, "policy": {"trigger_min_fraction": 0.75}}))
    assert Policy.load(path) == Policy(trigger_min_fraction=0.75)


def policy_file(**knobs: Any) -> dict[str, Any]:
    return {"version": POLICY_FILE_VERSION, "policy": knobs}


@pytest.mark.parametrize(("data", "field", "words"), [
    (policy_file(trigger_min_fractoin=0.8), "trigger_min_fractoin", "no such knob"),
    ({**policy_file(), "comment": "mine"}, "comment", "not a key of a policy file"),
    ({"version": 2, "policy": {}}, "version", "not 2"),
    ({"policy": {}}, "version", "not None"),
    ([1, 2], "version", "a JSON object"),
    ({"version": 1, "policy": [1]}, "policy", "an object of knobs"),
    (policy_file(economic_summaries="yes"), "economic_summaries", "true or false"),
    (policy_file(exclude_tools="bash"), "exclude_tools", "a list"),
    (policy_file(exclude_tools=["bash", 3]), "exclude_tools[1]", "a name"),
    (policy_file(selective_rules=[{"kind": "image", "colour": "red"}]), "selective_rules[0].colour", "not a field"),
    (policy_file(selective_rules=[{"kind": "image", "keep_recent": "2"}]), "selective_rules[0].keep_recent", "int"),
    (policy_file(selective_rules=[{"action": "drop"}]), "selective_rules[0]", "needs kind"),
    (policy_file(prices={"input_per_mtok": True}), "prices.input_per_mtok", "float"),
    (policy_file(budget_steps=[[0.7, 15_000], [0.5, 30_000]]), "budget_steps[1]", "outside 0.7 to 1"),
    (policy_file(trigger_min_fraction=1.5), "trigger_min_fraction", "outside 0 to 1"),
    (policy_file(summary_target_tokens=2.5), "summary_target_tokens", "whole number"),
])
def test_a_bad_policy_file_is_refused_naming_the_key_and_the_file(data: Any, field: str, words: str,
                                                                   tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidPolicy, match=words) as caught:
        Policy.load(path)
    assert caught.value.field == field and str(path) in str(caught.value)


def test_a_file_that_is_not_json_is_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text("trigger = 0.8\n")
    with pytest.raises(InvalidPolicy, match="not a JSON policy file") as caught:
        Policy.load(path)
    assert str(path) in str(caught.value)


def test_the_commands_run_the_policy_file_they_are_given(tmp_path: Path) -> None:
    write_tau_bench(tmp_path / "chats.json", 3)  # a chat lean and balanced compact differently
    lean = Policy.preset("lean").save(tmp_path / "lean.json")

    def replay(*args: str) -> dict[str, Any]:
        result = CliRunner().invoke(cli, ["replay", str(tmp_path / "chats.json"), *SMALL, "--json", *args],
                                    catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return dict(json.loads(next(line for line in result.output.splitlines() if line.startswith("{"))))

    from_file, preset, balanced = replay("--policy", str(lean)), replay("--preset", "lean"), replay()
    assert from_file == preset != balanced
    both = CliRunner().invoke(cli, ["replay", str(tmp_path / "chats.json"), *SMALL, "--policy", str(lean),
                                    "--preset", "lean"])
    assert both.exit_code == 2 and "give one" in both.output
    (tmp_path / "bad.json").write_text(json.dumps(policy_file(tail_fraction=2)))
    for command in (["replay", str(tmp_path / "chats.json"), *SMALL], ["bench", str(tmp_path), *SMALL], ["chat"]):
        bad = CliRunner().invoke(cli, [*command, "--policy", str(tmp_path / "bad.json")])
        assert bad.exit_code == 2 and "Policy.tail_fraction" in bad.output and "Traceback" not in bad.output


# --------------------------------------------------------------------------- the sweep


def tune(*args: str) -> Result:
    return CliRunner().invoke(cli, ["tune", *args], catch_exceptions=False)


def test_tune_writes_a_loadable_policy_the_frontier_and_which_sessions_each_fold_held_out(tmp_path: Path) -> None:
    (tmp_path / "sessions").mkdir()
    write_tau_bench(tmp_path / "sessions" / "chats.json", 1, 2, 3)
    out = tmp_path / "out"
    result = tune(str(tmp_path / "sessions"), *SMALL, "--folds", "3", "--out", str(out))
    assert result.exit_code == 0, result.output
    data = json.loads((out / "tune.json").read_text())
    labels = [f"chats.json#{n}" for n in range(3)]
    grid = paired()  # the grid and its pairs, by default
    assert len(grid) > len(GRID) and "clear-early+summary-2.5k" in grid and "trigger-0.6+trigger-0.75" not in grid
    assert sorted(data["sessions"]) == labels and data["chosen"] in grid and data["anchor"] == "balanced"
    folds = data["frontier"]["folds"]
    assert sorted(label for fold in folds for label in fold["held_out"]) == labels  # each held out once
    planned = 3 * len(sweep_names(grid))
    assert data["runs"] == {"made": planned, "read_back": 0, "planned": planned}
    assert data["written"] in (data["chosen"], "balanced")
    assert Policy.load(out / "policy.json") == grid_policies(grid)[data["written"]]
    assert (out / "frontier.png").stat().st_size > 0
    shown = " ".join(result.output.split())
    assert "held out: chosen strict" in shown and "fold 0: chose" in shown and "default" in shown
    assert "session by session (3 held out): strict" in shown and "verdict: policy.json" in shown


def test_an_interrupted_sweep_goes_on_from_the_runs_it_kept(tmp_path: Path) -> None:
    write_tau_bench(tmp_path / "chats.json", 1, 2)
    sessions, _ = find_sessions([tmp_path / "chats.json"])
    settings = Settings(3_000, 500, "estimate")
    names = len(sweep_names())

    def interrupt(done: int, total: int) -> None:
        if done:  # the first job's runs are in: Ctrl-C
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(sessions, settings, tmp_path / "out", jobs=1, progress=interrupt)
    assert len(list((tmp_path / "out" / RUNS_FOLDER).iterdir())) == PER_JOB  # kept as they land, not per session
    told: list[tuple[int, int]] = []
    resumed = sweep(sessions, settings, tmp_path / "out", jobs=1, progress=lambda done, of: told.append((done, of)))
    assert (resumed.cached, resumed.measured, resumed.stopped) == (PER_JOB, 2 * names - PER_JOB, False)
    assert told[0] == (PER_JOB, 2 * names) and told[-1] == (2 * names, 2 * names)  # the bar starts at what was kept
    fresh = sweep(sessions, settings, tmp_path / "fresh", jobs=1)
    assert resumed.runs == fresh.runs  # a run read back is the run made


def test_a_damaged_run_file_is_made_again_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_tau_bench(tmp_path / "chats.json", 1)
    sessions, _ = find_sessions([tmp_path / "chats.json"])
    settings = Settings(3_000, 500, "estimate")
    sweep(sessions, settings, tmp_path / "out", jobs=1)
    victim = sorted((tmp_path / "out" / RUNS_FOLDER).iterdir())[0]
    victim.write_text(victim.read_text()[:100])  # cut short by a crash
    with caplog.at_level(logging.WARNING, logger="contextfold.bench.tune"):
        again = sweep(sessions, settings, tmp_path / "out", jobs=1)
    assert (again.cached, again.measured) == (len(sweep_names()) - 1, 1)
    assert victim.name in caplog.text


def test_a_changed_window_measures_again_instead_of_reading_back(tmp_path: Path) -> None:
    write_tau_bench(tmp_path / "chats.json", 1)
    sessions, _ = find_sessions([tmp_path / "chats.json"])
    sweep(sessions, Settings(3_000, 500, "estimate"), tmp_path / "out", jobs=1)
    other = sweep(sessions, Settings(3_500, 500, "estimate"), tmp_path / "out", jobs=1)
    assert (other.cached, other.measured) == (0, len(sweep_names()))


def test_at_the_budget_tune_stops_and_reports_what_it_measured(tmp_path: Path) -> None:
    (tmp_path / "sessions").mkdir()
    write_tau_bench(tmp_path / "sessions" / "a.json", 1)
    write_tau_bench(tmp_path / "sessions" / "b.json", 2)
    out = tmp_path / "out"
    assert tune(str(tmp_path / "sessions"), *SMALL, "--out", str(out), "--no-charts", "--no-pairs").exit_code == 0
    write_tau_bench(tmp_path / "sessions" / "c.json", 3)  # a new session, and no time to replay it
    result = tune(str(tmp_path / "sessions"), *SMALL, "--out", str(out), "--no-charts", "--no-pairs",
                  "--budget-minutes", "1e-9")
    assert result.exit_code == 0, result.output
    data = json.loads((out / "tune.json").read_text())
    assert data["budget_ran_out"] and data["not_measured"] == ["c.json"] and sorted(data["sessions"]) == ["a.json",
                                                                                                           "b.json"]
    assert data["runs"]["made"] == 0 and data["runs"]["read_back"] == 2 * len(sweep_names())
    assert "budget of 1e-09 min ran out" in " ".join(result.output.split())
    assert Policy.load(out / "policy.json") == grid_policies()[data["written"]]


def test_with_no_session_measured_in_the_budget_no_policy_is_written(tmp_path: Path) -> None:
    write_tau_bench(tmp_path / "chats.json", 1)
    result = tune(str(tmp_path / "chats.json"), *SMALL, "--out", str(tmp_path / "out"), "--budget-minutes", "1e-9")
    assert result.exit_code == 1 and "no policy chosen" in result.output
    assert not (tmp_path / "out" / "policy.json").exists()


def test_a_bench_past_its_deadline_starts_no_session(tmp_path: Path) -> None:
    write_tau_bench(tmp_path / "chats.json", 1, 2)
    sessions, _ = find_sessions([tmp_path / "chats.json"])
    kept: list[str] = []
    runs = run_bench(sessions, ["none"], Settings(3_000, 500, "estimate"), jobs=1,
                     finished=lambda done: kept.extend(run.session for run in done), deadline=time.monotonic())
    assert runs == [] and kept == []
    runs = run_bench(sessions, ["none"], Settings(3_000, 500, "estimate"), jobs=1,
                     finished=lambda done: kept.extend(run.session for run in done))
    assert sorted(kept) == sorted(run.session for run in runs) and len(runs) == 2


def test_the_chart_rings_the_tuned_policy(tmp_path: Path) -> None:
    write_tau_bench(tmp_path / "chats.json", 1, 2)
    sessions, _ = find_sessions([tmp_path / "chats.json"])
    tuned = choose_policy(sweep(sessions, Settings(3_000, 500, "estimate"), tmp_path / "out", jobs=1), 3_000, 2)
    labels = frontier_chart(tuned.found, tuned.chosen).legends[0].get_texts()
    assert "tuned (the policy file written)" in [text.get_text() for text in labels]


class Refusing:
    """contextfold's pipeline, except that a session whose system prompt says ``BREAK`` raises, as a session the
    replay cannot take does (a recording cut inside a tool call)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name

    def start(self, header: Any) -> None:
        if "BREAK" in header.system_text:
            raise InvalidConversation("last assistant turn has a tool call without results")
        self.inner.start(header)

    def step(self, step: Any) -> Any:
        return self.inner.step(step)

    def record_usage(self, usage: Any) -> None:
        self.inner.record_usage(usage)


def test_a_session_that_cannot_be_replayed_is_left_out_naming_why_and_the_others_are_tuned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(strategies._registered, "default",
                        lambda config: Refusing(import_module("contextfold.replay.strategies.default").create(config)))
    good = [Session(f"good-{seed}", generate_session(rounds=30, seed=seed)) for seed in (1, 2)]
    conversation = generate_session(rounds=30, seed=3)
    broken = Session("broken", Conversation(conversation.items, header=Header((Item("system", (Text("BREAK"),)),))))
    result = sweep([good[0], broken, good[1]], Settings(6_000, 1_000, "estimate"), tmp_path / "out", jobs=1)
    assert result.complete == ("good-1", "good-2") and list(result.failed) == ["broken"]
    assert "broken could not be replayed" in result.failed["broken"] and not result.stopped
    assert choose_policy(result, 6_000, 2).found.folds  # the two left are tuned, cross-validated


def swept(strict: dict[str, dict[str, float]], cost: dict[str, float] | None = None) -> Sweep:
    """A sweep of every session, each policy's strict recall per session as given, and its cost on each session
    (``cost``; 1.0, the full history's, when not given)."""
    sessions = list(next(iter(strict.values())))
    runs = [run(label, "none", 1.0, 1.0) for label in sessions]
    runs += [run(label, name, (cost or {}).get(name, 1.0), value)
             for name, by_session in strict.items() for label, value in by_session.items()]
    policies = {name: Policy(summary_target_tokens=1_000 + n) for n, name in enumerate(strict)}
    return Sweep(policies, tuple(runs), tuple(sessions), (), {}, 0, len(runs), len(runs), False, 0.0)


def test_a_choice_that_holds_up_on_held_out_sessions_is_written() -> None:
    labels = [f"s{n}" for n in range(4)]
    tuned = choose_policy(swept({"balanced": dict.fromkeys(labels, 0.9), "better": dict.fromkeys(labels, 0.95)}),
                          32_000, 2)
    assert (tuned.chosen, tuned.written) == ("better", "better") and tuned.policy.summary_target_tokens == 1_001


def test_a_choice_fitted_to_its_sessions_is_not_made_and_the_default_is_kept() -> None:
    """``fitted`` is the best on all sessions and ``other`` on half of them, but each fold's choice loses on the
    fold it was not chosen on: cross-validated on all sessions, the rule that keeps the default holds up best."""
    labels = [f"s{n}" for n in range(4)]
    fold = assign_folds(labels, 2)
    first, second = ([label for label in labels if fold[label] == k] for k in (0, 1))
    tuned = choose_policy(swept({
        "balanced": dict.fromkeys(labels, 0.95),
        "fitted": {**dict.fromkeys(second, 1.0), **dict.fromkeys(first, 0.94)},  # the best on all sessions...
        "other": {**dict.fromkeys(first, 1.0), **dict.fromkeys(second, 0.5)},  # ...but each fold picks wrong
    }), 32_000, 2)
    held = tuned.found.held_out["balanced"]
    assert held.chosen_names == ("fitted", "other") and held.chosen.strict is not None and held.chosen.strict < 0.95
    assert (tuned.chosen, tuned.rule) == ("balanced", "cheapest-within-noise")  # it moves nowhere: nothing lost
    assert tuned.written == "balanced" and tuned.policy.summary_target_tokens == 1_000
    assert not holds_up(held) and holds_up(replace(held, chosen=held.anchor))


def test_a_gain_smaller_than_its_noise_is_not_chosen_and_the_verdict_says_so() -> None:
    """``lucky`` is ahead of the default on average over every fold's tuning sessions, but by less than one
    standard error of its per-session differences (far ahead on one session, behind on the others): the best of
    a grid by such a margin is the best by luck, so the default is kept, by every fold and on all sessions."""
    labels = [f"s{n}" for n in range(6)]
    tuned = choose_policy(swept({"balanced": dict.fromkeys(labels, 0.9),
                                 "lucky": {**dict.fromkeys(labels, 0.89), "s0": 1.0}}), 32_000, 3)
    held = tuned.found.held_out["balanced"]
    assert (tuned.chosen, tuned.written) == ("balanced", "balanced")
    assert held.chosen_names == ("balanced",) * 3
    assert held.by_session == Paired(6, 0.0, 0.0, 0.0, 0, 0, 6, 0.0, 0.0)
    with_a_real_gain = choose_policy(swept({"balanced": dict.fromkeys(labels, 0.9),
                                            "steady": {**dict.fromkeys(labels, 0.92), "s0": 0.9}}), 32_000, 3)
    assert with_a_real_gain.chosen == "steady"  # ahead on five sessions, level on one: more than its noise


def test_the_held_out_choice_is_compared_with_the_default_session_by_session() -> None:
    runs = [run("a", "none", 10.0, 1.0), run("b", "none", 20.0, 1.0), run("c", "none", 10.0, None),
            run("a", "balanced", 6.0, 0.90), run("b", "balanced", 12.0, 0.80), run("c", "balanced", 5.0, None),
            run("a", "other", 5.0, 0.95), run("b", "other", 12.0, 0.70), run("c", "other", 6.0, None)]
    difference = paired_difference(runs, "other", "balanced", {"a", "b", "c"})
    assert difference.sessions == 2 and (difference.better, difference.worse, difference.same) == (1, 1, 0)
    assert difference.strict_mean == pytest.approx(-0.025) and difference.strict_sd == pytest.approx(0.1061, abs=1e-4)
    assert difference.strict_se == pytest.approx(0.075)
    assert difference.cost_mean == pytest.approx(0.0)  # a: 10 % of its full history less; b: 0; c: 10 % more
    assert difference.cost_sd == pytest.approx(0.1)
    assert not clears_noise(difference) and clears_noise(paired_difference(runs, "balanced", "balanced", {"a", "b"}))


def test_the_rule_that_holds_up_on_the_sessions_makes_the_choice() -> None:
    """``lucky`` holds the most on every fold's tuning sessions that include ``s0`` (far ahead there, a little
    behind everywhere else), at the default's cost; ``cheap`` holds what the default holds, for a sixth less.
    Choosing the best strict recall at the default's cost picks ``lucky`` and loses held out; cross-validated on
    the sessions, a rule that does not take it holds up better, and its choice is ``cheap``."""
    labels = [f"s{n}" for n in range(10)]
    runs = swept({"balanced": dict.fromkeys(labels, 0.9), "cheap": dict.fromkeys(labels, 0.9),
                  "lucky": {**dict.fromkeys(labels, 0.89), "s0": 1.0}}, cost={"balanced": 0.6, "cheap": 0.5,
                                                                               "lucky": 0.6})
    grid, everything = ["balanced", "cheap", "lucky"], set(labels)
    assert best_strict_at_cost(runs.runs, grid, "balanced", everything) == "lucky"
    outcomes = {name: rule_outcome(runs.runs, rule, grid, "balanced", everything, 5)
                for name, rule in CHOICE_RULES.items()}
    assert outcomes["best-strict-at-cost"][0] < 0 == outcomes["best-strict-beyond-noise"][0]
    tuned = choose_policy(runs, 32_000, 5)
    held = tuned.found.held_out["balanced"]
    assert (tuned.chosen, tuned.written, tuned.rule) == ("cheap", "cheap", "best-strict-beyond-noise")
    assert set(held.chosen_names) == {"cheap"} and held.chosen.strict == pytest.approx(held.anchor.strict)
    assert held.by_session.cost_mean == pytest.approx(-0.1) and held.by_session.same == 10
    assert tuned.inert == ()  # cheap costs less: it acts


def test_a_grid_point_that_runs_as_the_default_does_on_every_session_is_named_inert() -> None:
    labels = [f"s{n}" for n in range(3)]
    tuned = choose_policy(swept({"balanced": dict.fromkeys(labels, 0.9), "same": dict.fromkeys(labels, 0.9),
                                 "once": {**dict.fromkeys(labels, 0.9), "s1": 0.8}},
                                cost={"balanced": 0.6, "same": 0.60001, "once": 0.6}), 32_000, 3)
    assert tuned.inert == ("same",)  # a cost 0.001 % of the full history apart is no difference
