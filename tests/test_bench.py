"""The bench: every figure of results.json recounted from the request dumps, the report, the charts, the command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from contextfold.adapters.openai_chat import to_openai
from contextfold.bench import Report, Session, Settings, available_strategies, find_sessions, run_bench, write_results
from contextfold.bench.plots import session_chart, trade_off_chart, trade_offs, write_plots
from contextfold.cli import cli
from contextfold.errors import UnknownSessionFormat
from contextfold.replay import recount, strategies
from contextfold.replay.dump import read_requests
from contextfold.replay.probes import PROBES
from contextfold.synthetic import generate_session
from contextfold.tokens import exact_estimator

WINDOW = 20_000
MAX_OUTPUT = 2_000
CORPUS_SESSION = "mini-swe-agent/astropy__astropy-12907.traj.json"
FIGURES = ("cost_usd", "cost_no_cache_usd", "cost_llm_usd", "cache_hit_ratio", "peak_tokens", "input_tokens")


@pytest.fixture(scope="module")
def bench(corpus_dir: Path, tokenizers_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Report, Path]]:
    """One corpus session and two generated ones, every strategy, two worker processes, dumps and results written."""
    out = tmp_path_factory.mktemp("bench")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CONTEXTFOLD_TOKENIZERS_DIR", str(tokenizers_dir))  # the workers load o200k from there
        found, skipped = find_sessions([corpus_dir / CORPUS_SESSION])
        sessions = [*found, *(Session(f"generated/seed-{seed}", generate_session(rounds=40, seed=seed)) for seed in (1, 2))]
        settings = Settings(WINDOW, MAX_OUTPUT, "o200k", requests_dir=str(out / "requests"))
        names = strategies.names()
        runs = run_bench(sessions, names, settings, jobs=2)
        report = Report(settings, names, sessions, runs, skipped)
        write_results(report, out)
        yield report, out


def emptied(dump: str) -> int:
    """Agent requests of a dump with no message but the system prompt, after the recording had some."""
    return sum(request.kind == "agent" and request.index > 0
               and all(m["role"] in ("system", "developer") for m in request.messages)
               for request in read_requests(dump))


def test_every_figure_of_results_json_recounts_from_the_request_dumps(bench: tuple[Report, Path], tokenizers_dir: Path) -> None:
    report, out = bench
    data = json.loads((out / "results.json").read_text())
    conversations = {session.label: session.conversation for session in report.sessions}
    slugs = {session.label: session.slug for session in report.sessions}
    assert len(data["runs"]) == len(report.sessions) * len(report.strategies)
    recounted = {}
    for run in data["runs"]:
        assert Path(run["requests_file"]).name == f"{slugs[run['session']]}.{run['strategy']}.jsonl"
        again = recount(run["requests_file"], WINDOW, exact_estimator("o200k_base", tokenizers_dir),
                        session=conversations[run["session"]], max_output_tokens=MAX_OUTPUT)
        for figure in FIGURES:
            assert getattr(again, figure) == pytest.approx(run[figure], rel=0.01), (run["session"], run["strategy"], figure)
        assert (again.overflows, again.violations, again.requests) == \
               (run["overflows"], run["invariant_violations"], run["requests"])
        assert run["empty_requests"] == emptied(run["requests_file"])
        assert run["violations"] == run["invariant_violations"] + run["empty_requests"]
        for probe, value in run["survival"].items():
            assert again.survival[probe] == (None if value is None else pytest.approx(value, abs=0.01)), probe
        for figure in ("recall", "recall_far", "worst_request_recall", "recall_needed", "recall_far_needed"):
            assert getattr(again, figure) == run[figure], (run["session"], run["strategy"], figure)
        assert asdict(again.strict) == run["strict"], (run["session"], run["strategy"])
        assert len(run["context_tokens"]) == run["requests"] and max(run["context_tokens"]) == run["peak_tokens"]
        assert sum(run["step_cost_usd"]) == pytest.approx(run["cost_usd"], rel=1e-6)
        recounted[(run["session"], run["strategy"])] = (again, run["survival_requests"], run["empty_requests"])
    for totals in data["totals"]:
        mine = [value for (_, name), value in recounted.items() if name == totals["strategy"]]
        assert totals["cost_usd"] == pytest.approx(sum(t.cost_usd for t, _, _ in mine), rel=0.01)
        assert totals["cost_no_cache_usd"] == pytest.approx(sum(t.cost_no_cache_usd for t, _, _ in mine), rel=0.01)
        assert totals["overflows"] == sum(t.overflows for t, _, _ in mine)
        assert totals["violations"] == sum(t.violations + empty for t, _, empty in mine)
        assert totals["peak_tokens"] == max(t.peak_tokens for t, _, _ in mine)
        assert totals["cost_llm_usd"] == pytest.approx(sum(t.cost_llm_usd for t, _, _ in mine), rel=0.01)
        assert totals["cost_llm_usd"] >= totals["cost_usd"] - 1e-9
        for figure in ("recall", "recall_far"):  # the mean of the sessions'
            values = [getattr(t, figure) for t, _, _ in mine if getattr(t, figure) is not None]
            assert totals[figure] == pytest.approx(sum(values) / len(values)), (totals["strategy"], figure)
        for figure in ("strict", "kwic_far", "outcome"):  # so is strict recall
            values = [getattr(t.strict, figure) for t, _, _ in mine if getattr(t.strict, figure) is not None]
            assert totals["strict"][figure] == pytest.approx(sum(values) / len(values)), (totals["strategy"], figure)
        assert totals["worst_request_recall"] == min(t.worst_request_recall for t, _, _ in mine)
        read, sent = sum(t.cache_read_tokens for t, _, _ in mine), sum(t.input_tokens for t, _, _ in mine)
        assert totals["cache_hit_ratio"] == pytest.approx(read / sent, rel=0.01)
        for probe in PROBES:
            weighted = [(t.survival[probe], n[probe]) for t, n, _ in mine if t.survival[probe] is not None]
            expected = sum(v * n for v, n in weighted) / sum(n for _, n in weighted)
            assert totals["survival"][probe] == pytest.approx(expected, abs=0.01), (totals["strategy"], probe)


def test_the_generated_sessions_are_compacted_and_default_stays_inside_the_window(bench: tuple[Report, Path]) -> None:
    report, _ = bench
    by_name = {t.strategy: t for t in report.totals()}
    assert by_name["none"].overflows > 0  # the sessions outgrow the window: there is something to compare
    assert by_name["default"].overflows == 0 and by_name["default"].violations == 0
    assert (by_name["none"].recall, by_name["none"].recall_far, by_name["none"].worst_request_recall) == (1.0, 1.0, 1.0)
    assert by_name["langchain"].violations > 0  # it loses the task, and the bench says so
    assert any(run.empty_requests for run in report.runs if run.strategy == "langchain")
    assert not any(run.empty_requests for run in report.runs if run.strategy != "langchain")
    counts = {}
    for run in report.runs:  # how often a probe had something to look for depends on the session only
        assert counts.setdefault(run.session, run.survival_requests) == run.survival_requests


def markdown_tables(text: str) -> list[dict[str, list[str]]]:
    """Every table of a Markdown text: its rows by first cell, each a list of the other cells."""
    tables: list[dict[str, list[str]]] = []
    in_table = False
    for line in text.splitlines():
        if not line.startswith("|"):
            in_table = False
            continue
        cells = [cell.strip() for cell in line.split("|")[1:-1]]
        if all(set(cell) <= set("-:") for cell in cells):  # the row under the header
            continue
        if not in_table:
            tables.append({})
            in_table = True
        tables[-1][cells[0]] = cells[1:]
    return tables


MONEY, SHARE, RECALL, COUNT = "{:,.2f}".format, "{:.1%}".format, "{:.3f}".format, "{:,}".format
TOTALS_MD = (("cost $", "cost_usd", MONEY, min), ("cost, summaries by LLM $", "cost_llm_usd", MONEY, min),
             ("cost without cache $", "cost_no_cache_usd", MONEY, min), ("cache hits", "cache_hit_ratio", SHARE, max),
             ("peak tokens", "peak_tokens", COUNT, min), ("over window", "overflows", COUNT, min),
             ("violations", "violations", COUNT, min), ("survival", "survival.mean", SHARE, max),
             ("strict", "strict.strict", RECALL, max), ("recall", "recall", RECALL, max))
STRICT_MD = tuple((title, f"strict.{name}", RECALL, max) for title, name in (
    ("strict", "strict"), ("in context", "kwic"), ("in context, far", "kwic_far"), ("lines", "line"),
    ("lines, far", "line_far"), ("outcome", "outcome"), ("outcome, far", "outcome_far"), ("asked", "asked")))
SURVIVAL_MD = (("task", "survival.task", SHARE, max), ("edited files", "survival.edited", SHARE, max),
               ("last error", "survival.last_error", SHARE, max),
               ("latest output", "survival.latest_output", SHARE, max),
               ("mean", "survival.mean", SHARE, max), ("recall", "recall", RECALL, max),
               ("far recall", "recall_far", RECALL, max), ("worst request", "worst_request_recall", RECALL, max),
               ("recoverable", "recoverable_recall", RECALL, max))
"""Each column of the three totals tables of results.md: its title, the results.json figure, its format, the best."""


def test_results_md_shows_the_figures_of_results_json_with_the_best_of_each_column_in_bold(
    bench: tuple[Report, Path],
) -> None:
    """Read from the two files the bench wrote, checked against each other (not against the code that wrote them)."""
    _, out = bench
    data = json.loads((out / "results.json").read_text())
    text = (out / "results.md").read_text()
    totals_table, strict_table, survival_table = markdown_tables(text)[:3]
    for table, columns in ((totals_table, TOTALS_MD), (strict_table, STRICT_MD), (survival_table, SURVIVAL_MD)):
        assert table["strategy"] == [title for title, *_ in columns]
        assert list(table)[1:] == data["strategies"]  # after the header
        for k, (title, figure, show, best) in enumerate(columns):
            values = {}
            for totals in data["totals"]:
                value = totals
                for key in figure.split("."):
                    value = value[key]
                values[totals["strategy"]] = value
            known = [v for v in values.values() if v is not None]  # none: nothing was lost that could be recovered
            top = show(best(known)) if known else None
            for strategy, value in values.items():
                shown = "–" if value is None else show(value)
                cell = table[strategy][k]
                assert cell == (f"**{shown}**" if shown == top else shown), (strategy, title, cell)
    assert "## Strict recall" in text and "## What survived" in text and "## Per session" in text
    assert CORPUS_SESSION in text


def test_the_charts_label_their_axes_and_draw_the_window(bench: tuple[Report, Path], tmp_path: Path) -> None:
    report, _ = bench
    figure = session_chart(report, report.sessions[0].label)
    ax = figure.axes[0]
    assert ax.get_xlabel() == "request number" and ax.get_ylabel() == "prompt tokens"
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[: len(report.strategies)] == list(report.strategies)
    window = next(line for line in ax.get_lines() if line.get_label().startswith("context window"))
    assert set(window.get_ydata()) == {WINDOW}
    assert [text.get_text() for text in figure.legends[0].get_texts()] == labels
    written = write_plots(report, tmp_path)
    assert {p.name for p in written} >= {"overview.png", "cost.png", "cost-strict.png", "cost-recall.png",
                                      f"{report.sessions[0].slug}.png"}
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in written)


def test_the_trade_off_charts_have_one_point_per_strategy_and_window(bench: tuple[Report, Path]) -> None:
    _, out = bench
    results = json.loads((out / "results.json").read_text())
    other = {**results, "window": 2 * WINDOW}  # as if a second bench had run at another window
    points = trade_offs(results) + trade_offs(other)
    none = next(t for t in results["totals"] if t["strategy"] == "none")
    default = next(p for p in points if p.strategy == "default" and p.window == WINDOW)
    totals = next(t for t in results["totals"] if t["strategy"] == "default")
    assert (default.strict, default.recall, default.cost) == (
        totals["strict"]["strict"], totals["recall"], totals["cost_usd"] / none["cost_usd"])
    assert default.cost_llm == totals["cost_llm_usd"] / none["cost_usd"]
    assert len(points) == 2 * len(results["strategies"])
    for measure in ("strict", "recall"):
        ax = trade_off_chart(points, measure).axes[0]
        assert ax.get_ylabel() == "cost relative to the full history" and ax.get_xlabel().startswith(
            "strict recall" if measure == "strict" else "forward-reference recall")
        labelled = [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
        assert sorted(labelled) == sorted(f"{p.strategy}, {p.window:,}" for p in points
                                          if getattr(p, measure) is not None)
        assert [x for line in ax.get_lines() if not line.get_label().startswith("_") for x in line.get_xdata()] == [
            getattr(p, measure) for p in points if getattr(p, measure) is not None]
    assert trade_offs({**results, "totals": [t for t in results["totals"] if t["strategy"] != "none"]}) == []


# --------------------------------------------------------------------------- finding sessions and the command


def write_tau_bench(path: Path, *seeds: int) -> None:
    """Generated sessions in tau-bench's file format (a recording that is not in ../shared)."""
    results = [{"task_id": seed, "trial": 0, "reward": 1.0, "info": {}, "traj": to_openai(generate_session(rounds=8, seed=seed))}
               for seed in seeds]
    path.write_text(json.dumps(results))


def test_sessions_are_found_in_folders_with_what_was_passed_over(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    write_tau_bench(tmp_path / "runs" / "chats.json", 1, 2, 3)
    (tmp_path / "runs" / "notes.txt").write_text("not a session\n")
    sessions, skipped = find_sessions([tmp_path], tau_bench_limit=2)
    assert [s.label for s in sessions] == ["runs/chats.json#0", "runs/chats.json#1"]
    assert [s.slug for s in sessions] == ["runs_chats.json_0", "runs_chats.json_1"]
    assert sessions[1].index == 1 and sessions[1].format == "tau-bench" and sessions[1].requests > 0
    assert {x.where for x in skipped} == {"runs/chats.json", "runs/notes.txt"}
    with pytest.raises(UnknownSessionFormat, match="notes.txt"):
        find_sessions([tmp_path / "runs" / "notes.txt"])  # a file named on purpose must be a session


def test_a_file_is_read_once_and_labels_stay_distinct(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        write_tau_bench(tmp_path / folder / "chats.json", 1)
    sessions, skipped = find_sessions([tmp_path / "a", tmp_path / "b", tmp_path / "a" / "chats.json"])
    assert [s.label for s in sessions] == ["chats.json", str(tmp_path / "b" / "chats.json")]
    assert len({s.slug for s in sessions}) == 2
    assert [x.reason for x in skipped] == ["the same file was found under an earlier path"]
    twins = [Session("same", sessions[0].conversation), Session("same", sessions[1].conversation)]
    with pytest.raises(ValueError, match="share a label"):
        run_bench(twins, ["none"], Settings(3_000, tokenizer="estimate"))


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["bench", *args], catch_exceptions=False)


def test_the_command_writes_results_charts_and_dumps(tmp_path: Path) -> None:
    write_tau_bench(tmp_path / "chats.json", 4, 5)
    out, dumps = tmp_path / "out", tmp_path / "requests"
    result = invoke(str(tmp_path / "chats.json"), "--window", "3000", "--strategies", "none,window", "--jobs", "1",
                    "--tokenizer", "estimate", "--max-output", "500", "--out", str(out), "--requests-dir", str(dumps))
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text())
    assert data["window"] == 3000 and data["strategies"] == ["none", "window"] and len(data["runs"]) == 4
    assert sorted(p.name for p in dumps.iterdir()) == sorted(
        f"{slug}.{name}.jsonl" for slug in ("chats.json_0", "chats.json_1") for name in ("none", "window"))
    assert (out / "results.md").exists() and (out / "overview.png").exists() and (out / "plots").is_dir()
    assert (out / "cost-strict.png").exists() and (out / "cost-recall.png").exists()
    assert "window 3,000 tokens" in result.output
    again = invoke(str(tmp_path / "chats.json"), "--window", "6000", "--strategies", "none,window", "--jobs", "1",
                   "--tokenizer", "estimate", "--out", str(tmp_path / "out-6k"), "--chart-with", str(out))
    assert again.exit_code == 0, again.output
    assert invoke(str(tmp_path / "chats.json"), "--window", "6000", "--tokenizer", "estimate",
                  "--chart-with", str(tmp_path)).exit_code == 2  # no results.json there


def test_without_matplotlib_bench_stops_before_any_replay_with_one_line_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    write_tau_bench(tmp_path / "chats.json", 7)
    out = tmp_path / "out"
    args = [str(tmp_path / "chats.json"), "--window", "3000", "--max-output", "500", "--strategies", "none", "--jobs",
            "1", "--tokenizer", "estimate", "--out", str(out)]
    result = invoke(*args)
    assert result.exit_code == 2 and not out.exists()  # refused before the replays, not after
    assert result.stderr.strip() == ("contextfold: matplotlib is not installed (the charts are drawn with it): "
                                     "python3 -m pip install -e '.[bench]' in contextfold's checkout, or pass --no-charts")
    result = invoke(*args, "--no-charts")
    assert result.exit_code == 0 and (out / "results.json").exists() and not (out / "cost-recall.png").exists()


def test_a_strategy_that_cannot_run_is_left_out_or_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_core.messages", None)
    usable, missing = available_strategies(Settings(10_000))
    assert "langchain" not in usable and "pip install" in missing["langchain"] and "default" in usable
    write_tau_bench(tmp_path / "chats.json", 6)
    result = invoke(str(tmp_path / "chats.json"), "--window", "3000", "--max-output", "500", "--strategies", "langchain",
                    "--tokenizer", "estimate", "--out", str(tmp_path / "out"))
    assert result.exit_code == 2 and "langchain" in result.output and not (tmp_path / "out").exists()
    assert invoke(str(tmp_path / "chats.json"), "--window", "8000", "--strategies", "nonesuch").exit_code == 2


def test_the_terminal_table_fits_80_columns_with_every_figure_shown_whole(tmp_path: Path) -> None:
    write_tau_bench(tmp_path / "chats.json", 4, 5)
    out = tmp_path / "out"
    result = CliRunner(env={"COLUMNS": "80"}).invoke(
        cli, ["bench", str(tmp_path / "chats.json"), "--window", "3000", "--max-output", "500", "--jobs", "1",
              "--tokenizer", "estimate", "--no-charts", "--out", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80 and "…" not in result.stdout, result.stdout
    for totals in json.loads((out / "results.json").read_text())["totals"]:
        row = next(line for line in lines if line.startswith(f"│ {totals['strategy']} "))
        figures = [cell.strip() for cell in row.strip("│").split("│")]
        assert figures[:2] == [totals["strategy"], f"{totals['cost_usd']:,.2f}"] and f"{totals['recall']:.3f}" in figures
    assert "left out at this width" in result.stdout  # and says which columns a narrow terminal goes without


def test_an_out_folder_that_cannot_be_made_is_refused_before_any_replay(tmp_path: Path) -> None:
    write_tau_bench(tmp_path / "chats.json", 4)
    (tmp_path / "a-file").write_text("")
    dumps = tmp_path / "requests"
    result = invoke(str(tmp_path / "chats.json"), "--window", "3000", "--max-output", "500", "--jobs", "1",
                    "--tokenizer", "estimate", "--no-charts", "--requests-dir", str(dumps),
                    "--out", str(tmp_path / "a-file" / "out"))
    assert result.exit_code == 2 and "--out" in result.stderr and "a-file" in result.stderr, result.output
    assert not dumps.exists()  # no replay ran: the first one makes the dump folder


def _children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _as_in_a_terminal() -> None:
    """Ctrl-C's default action, as a command typed at a terminal has it: a suite started in the background of a
    script (``pytest &``) runs with SIGINT ignored, which every process it starts inherits, and Python then leaves
    it ignored (no KeyboardInterrupt): the bench would rightly run on, as a background job should."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_the_bench_with_one_line_and_exit_130(tmp_path: Path) -> None:
    """SIGINT to the whole process group, as a terminal's Ctrl-C sends it, while two workers replay."""
    write_tau_bench(tmp_path / "chats.json", *range(40))
    command = [sys.executable, "-m", "contextfold", "bench", str(tmp_path / "chats.json"), "--window", "3000",
               "--max-output", "500", "--jobs", "2", "--tau-bench-limit", "40", "--tokenizer", "estimate",
               "--no-charts", "--out", str(tmp_path / "out")]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True, preexec_fn=_as_in_a_terminal) as bench:
        while len(_children(bench.pid)) < 2 and bench.poll() is None:
            time.sleep(0.05)
        assert bench.poll() is None, bench.stderr.read() if bench.stderr else ""
        os.killpg(bench.pid, signal.SIGINT)
        try:
            _, stderr = bench.communicate(timeout=120)
        except subprocess.TimeoutExpired:  # a pool whose workers died of the signal waits for them for good
            os.killpg(bench.pid, signal.SIGKILL)
            raise
    assert bench.returncode == 130, stderr
    assert stderr.strip() == "contextfold: bench interrupted; no results written", stderr
    assert not (tmp_path / "out").exists()


def test_results_json_carries_the_summary_lint_of_each_strategy(bench: tuple[Report, Path]) -> None:
    _, out = bench
    data = json.loads((out / "results.json").read_text())
    for totals in data["totals"]:
        assert set(totals["lint"]) == {"summaries", "harness_quoted", "next_step_done", "closed_error_open",
                                       "mid_word_cuts"}
