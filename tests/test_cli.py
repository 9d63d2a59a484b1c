"""The command line: inspect, tokens and demo, run through click as a user would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import CORPUS
from test_importers_corpus import expected_calls, unanswered

from contextfold.cli import cli

CORPUS_FILES = sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.name != "SOURCES.md") if CORPUS.exists() else []


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def json_lines(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_inspect_json_counts_match_the_corpus_description(corpus_dir: Path, path: Path) -> None:
    rows = json_lines(run("inspect", str(path), "--json", "--tokenizer", "estimate"))
    assert rows, "inspect printed no conversation"
    for row in rows:
        assert all(isinstance(row[k], int) for k in ("items", "tool_calls", "tool_results"))
        assert isinstance(row["tokens_by_kind"], dict)
    assert sum(sum(r["tokens_by_kind"].values()) for r in rows) > 0
    relative = str(path.relative_to(corpus_dir))
    calls = sum(r["tool_calls"] for r in rows)
    assert calls == expected_calls(relative)  # sub-agent sidechains included, each its own conversation
    results = sum(r["tool_results"] for r in rows)
    assert calls - results == unanswered(relative)  # calls a recording was cut off in or never answered


def test_inspect_reports_a_bad_file_as_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "session.json"
    bad.write_text('{"messages": [}', encoding="utf-8")
    result = CliRunner().invoke(cli, ["inspect", str(bad)])
    assert result.exit_code == 2
    assert "contextfold:" in result.output and "Traceback" not in result.output


def test_tokens_json_prints_each_request_and_a_summary(corpus_dir: Path) -> None:
    path = corpus_dir / "mini-swe-agent" / "astropy__astropy-12907.traj.json"
    rows = json_lines(run("tokens", str(path), "--json", "--tokenizer", "estimate"))
    requests, summary = rows[:-1], rows[-1]
    assert len(requests) == summary["requests"] > 50
    assert all({"step", "estimate", "reported"} <= set(r) for r in requests)
    assert 0 <= summary["median_abs_error"] <= 0.02
    assert 0 <= summary["p95_abs_error"] <= 0.05


def test_demo_runs_offline_and_prints_its_figures() -> None:
    output = run("demo", "--rounds", "40", "--window", "16000", "--delay", "0", "--tokenizer", "estimate")
    assert "The whole session" in output and "requests over the window" in output
    final = output[output.index("The whole session"):]
    over = next(line for line in final.splitlines() if "requests over the window" in line)
    assert over.split("│")[-2].strip() == "0"  # contextfold's column: nothing over the window
    assert "What contextfold did" in output
