"""``contextfold tune``: the frontier sweep on one's own sessions, cross-validated, written as a policy file."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..bench.frontier import GRID, beats
from ..bench.plots import require_matplotlib, write_frontier_chart
from ..bench.run import Settings, Skipped, estimator_for, find_sessions
from ..bench.tune import RUNS_FOLDER, Sweep, Tuned, choose_policy, holds_up, paired, sweep
from ..conversation import JSONValue
from ..replay.base import StrategyConfig
from ..tokens import TOKENIZER_CHOICES
from .bench import by_session_line, check_out
from .options import check_window, progress_bar, reports_errors, resolved_tokenizer

POLICY_FILE = "policy.json"
TUNE_FILE = "tune.json"
CHART_FILE = "frontier.png"


@click.command("tune")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--window", type=click.IntRange(min=1), required=True, help="Context window in tokens.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("tune-out"), show_default=True,
              help=f"Folder for {POLICY_FILE}, {TUNE_FILE}, {CHART_FILE} and the finished runs ({RUNS_FOLDER}/: "
              "run the command again with the same folder to go on where it stopped).")
@click.option("--folds", type=click.IntRange(min=2), default=5, show_default=True,
              help="Folds of sessions for the cross-validation (at most one per session).")
@click.option("--budget-minutes", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Stop sweeping after this long and report what was measured [default: no limit].")
@click.option("--jobs", type=click.IntRange(min=1), default=None,
              help="Worker processes [default: the cores available].")
@click.option("--tokenizer", type=click.Choice(TOKENIZER_CHOICES), default="auto", show_default=True,
              help="Token counter (auto: o200k when its file is on this machine, else the estimate).")
@click.option("--max-output", type=click.IntRange(min=1), default=StrategyConfig.max_output_tokens, show_default=True,
              help="Tokens reserved for each reply.")
@click.option("--pairs/--no-pairs", default=True, show_default=True,
              help="Also sweep every two of the grid's changes of one preset together "
              f"({len(paired()) - len(GRID)} more policies).")
@click.option("--no-charts", "charts", flag_value=False, default=True, help=f"No {CHART_FILE} (no matplotlib needed).")
@reports_errors
def tune_command(paths: tuple[Path, ...], window: int, out: Path, folds: int, budget_minutes: float | None,
                 jobs: int | None, tokenizer: str, max_output: int, pairs: bool, charts: bool) -> None:
    """Tune the policy on your own recorded sessions under PATHS (any format `replay` reads: a Claude Code projects
    folder, Codex rollouts, ...): replay them with every policy of the frontier's grid, choose one against the
    default by the rule that holds up best cross-validated on them (no strict recall lost, then the most cost
    saved), report its held-out figures pooled and session by session, and write it to OUT/policy.json
    (`--policy OUT/policy.json` on replay, bench and chat; `Policy.load` in code), or the default when the choice
    does not hold up on the sessions held out."""
    check_window(window, max_output)
    check_out(out)
    if charts:
        require_matplotlib()
    tokenizer = resolved_tokenizer(tokenizer)
    estimator_for(tokenizer)  # fail here, once, if the tokenizer cannot be loaded
    sessions, skipped = find_sessions(paths)
    if not sessions:
        why = "".join(f"\n  {entry.where}: {entry.reason}" for entry in skipped) or " (no file there)"
        raise click.UsageError(f"no recorded session to replay under {', '.join(map(str, paths))}{why}")
    out.mkdir(parents=True, exist_ok=True)
    budget_s = None if budget_minutes is None else budget_minutes * 60
    try:
        grid = paired() if pairs else GRID
        with progress_bar(f"{len(sessions)} sessions × {len(grid) + 1} strategies") as update:
            result = sweep(sessions, Settings(window, max_output, tokenizer), out, grid=grid, jobs=jobs,
                           progress=update, budget_s=budget_s)
    except KeyboardInterrupt:
        click.echo(f"contextfold: tune interrupted; the finished runs are kept in {out / RUNS_FOLDER}: run the same "
                   "command to go on", err=True)
        raise click.exceptions.Exit(130) from None
    console = Console()
    console.print(_measured(result, budget_minutes, out))
    if not result.complete:
        raise click.ClickException("no session was measured with every policy: no policy chosen (a larger "
                                   "--budget-minutes, or run again to go on)")
    tuned = choose_policy(result, window, folds)
    written = [tuned.policy.save(out / POLICY_FILE)]
    (out / TUNE_FILE).write_text(json.dumps(tune_json(result, tuned, skipped), indent=1) + "\n", encoding="utf-8")
    written.append(out / TUNE_FILE)
    if charts:
        written.append(write_frontier_chart(tuned.found, out / CHART_FILE, tuned=tuned.chosen))
    console.print(tune_table(tuned))
    if tuned.inert:
        console.print(escape(f"ran as {tuned.anchor} did on every session (what they change does not act on these "
                             f"sessions at this window): {', '.join(tuned.inert)}"))
    for line in _folds(tuned):
        console.print(escape(line))
    console.print(escape(_verdict(tuned)))
    if skipped:
        console.print(f"{len(skipped)} file(s) or conversation(s) skipped: {TUNE_FILE} names them")
    console.print(f"wrote {', '.join(str(path) for path in written)}")


def _measured(result: Sweep, budget_minutes: float | None, out: Path) -> str:
    """What the sweep did: runs made and read back, the time, and, when the budget ran out, what is left."""
    found = len(result.complete) + len(result.incomplete) + len(result.failed)
    line = (f"{result.measured} runs made in {result.seconds:.0f} s, {result.cached} read back from "
            f"{out / RUNS_FOLDER}; {len(result.complete)} of {found} sessions measured with every policy")
    for why in result.failed.values():
        line += f"\nleft out: {why}"
    if result.stopped:
        line += (f"\nthe budget of {budget_minutes:g} min ran out after {result.measured + result.cached} of "
                 f"{result.planned} runs: the figures below are over the sessions measured; the same command goes on")
    return escape(line)


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def tune_table(tuned: Tuned) -> Table:
    """Every grid point over the sessions measured, the frontier, the default and the choice marked."""
    found = tuned.found
    table = Table(title=f"window {found.window:,} tokens, {max(p.sessions for p in found.points)} sessions: cost "
                  "relative to the full history (LLM: summaries priced as LLM calls; ride: riding the agent's cache)",
                  title_justify="left")
    table.add_column("policy", overflow="fold")  # a long pair's name folds; every figure stays whole
    for header in ("cost LLM", "cost ride", "strict", "asked"):
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("", overflow="fold")
    for p in found.points:
        marks = [mark for mark, on in (("frontier", p.name in found.frontier), ("default", p.name == tuned.anchor),
                                       ("tuned", p.name == tuned.chosen),
                                       (f"as {tuned.anchor}", p.name in tuned.inert)) if on]
        table.add_row(p.name, f"{p.cost:.3f}", f"{p.cost_ride:.3f}", _share(p.strict), _share(tuned.asked.get(p.name)),
                      " ".join(marks))
    return table


def _folds(tuned: Tuned) -> list[str]:
    """Which sessions each fold held out, and what was chosen on the others."""
    if not tuned.found.folds:
        return ["no cross-validation: fewer than two sessions were measured"]
    lines = [f"cross-validated over {len(tuned.found.folds)} folds (each chose against {tuned.anchor} on the other "
             "folds' sessions, by the rule that held up best cross-validated on them alone, and was scored on its "
             f"own; {TUNE_FILE} has the full labels):"]
    for fold in tuned.found.folds:
        held_out = ", ".join("/".join(Path(label).parts[-2:]) for label in fold.held_out)  # file and its folder
        lines.append(f"  fold {fold.number}: chose {fold.chosen[tuned.anchor]} ({fold.rules[tuned.anchor]}); "
                     f"held out {held_out}")
    return lines


def _verdict(tuned: Tuned) -> str:
    """The held-out figures of the choice against the default's, pooled and session by session, and a plain
    verdict either way: what was written and why."""
    held = tuned.found.held_out.get(tuned.anchor)
    if held is None:
        return f"{POLICY_FILE} holds {tuned.written}, chosen on every session measured (not cross-validated)"
    anchor_asked, chosen_asked = tuned.held_out_asked
    figures = (f"held out: chosen strict {_share(held.chosen.strict)} asked {_share(chosen_asked)} at cost "
               f"{held.chosen.cost:.3f}, against {tuned.anchor}'s strict {_share(held.anchor.strict)} asked "
               f"{_share(anchor_asked)} at {held.anchor.cost:.3f}")
    if all(name == tuned.anchor for name in held.chosen_names):
        outcome = (f"every fold chose {tuned.anchor} itself: no grid policy held up against it on the sessions it "
                   "was chosen on")
    elif holds_up(held) and beats(held.chosen, held.anchor):
        outcome = f"the cross-validated choice beats {tuned.anchor} on sessions it was not chosen on"
    elif holds_up(held):
        outcome = f"the cross-validated choice holds {tuned.anchor}'s figures on sessions it was not chosen on"
    else:
        outcome = f"the cross-validated choice does not beat {tuned.anchor} on sessions it was not chosen on"
    if tuned.written == tuned.chosen and tuned.chosen != tuned.anchor:
        written = f"verdict: {POLICY_FILE} holds {tuned.chosen}, chosen on every session measured ({tuned.rule})"
    elif tuned.written == tuned.chosen:
        written = f"verdict: {POLICY_FILE} keeps {tuned.anchor}: nothing on the grid did better on these sessions"
    else:
        written = (f"verdict: {POLICY_FILE} keeps {tuned.anchor}: {tuned.chosen}, chosen on every session, would be "
                   "fitted to them")
    return f"{figures}\n{by_session_line(held.by_session, tuned.anchor)}\n{outcome}\n{written}"


def tune_json(result: Sweep, tuned: Tuned, skipped: list[Skipped]) -> dict[str, JSONValue]:
    """``tune.json``: what was measured, the frontier and its folds (which sessions each held out), the choice."""
    return {
        "chosen": tuned.chosen, "rule": tuned.rule, "written": tuned.written, "anchor": tuned.anchor,
        "asked": tuned.asked, "inert": list(tuned.inert),
        "held_out_asked": {"anchor": tuned.held_out_asked[0], "chosen": tuned.held_out_asked[1]},
        "sessions": list(result.complete), "not_measured": list(result.incomplete), "failed": result.failed,
        "runs": {"made": result.measured, "read_back": result.cached, "planned": result.planned},
        "budget_ran_out": result.stopped, "seconds": round(result.seconds, 1),
        "skipped": [asdict(entry) for entry in skipped], "frontier": tuned.found.to_json(),
    }
