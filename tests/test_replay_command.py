"""The replay command, run through click as a user would, and the strategy registry behind --strategy."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from test_replay_run import CONFIG, ESTIMATE

from contextfold import importers
from contextfold.cli import cli
from contextfold.replay import StrategyConfig, recount, replay, strategies
from contextfold.replay.cost import parse_prices
from contextfold.replay.strategies.none import FullHistory
from contextfold.tokens import exact_estimator

TOTALS_FIELDS = {
    "session", "strategy", "window", "requests", "input_tokens", "cache_read_tokens", "cache_write_tokens",
    "output_tokens", "cost_usd", "cost_no_cache_usd", "cache_hit_ratio", "peak_tokens", "overflows", "violations",
    "survival",
}


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["replay", *args], catch_exceptions=False)


def json_rows(result: Result) -> list[dict]:
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]


def test_json_totals_for_one_conversation_of_a_file_of_several(corpus_dir: Path, tmp_path: Path) -> None:
    path = corpus_dir / "tau-bench" / "gpt-4o-airline.json"
    dump = tmp_path / "requests.jsonl"
    rows = json_rows(invoke(str(path), "--window", "4000", "--index", "2", "--tokenizer", "estimate", "--json",
                            "--strategy", "none", "--requests", str(dump), "--prices", "output=20", "--max-output", "500"))
    assert len(rows) == 1
    row = rows[0]
    assert TOTALS_FIELDS <= set(row) and set(row["survival"]) == {"task", "edited", "last_error", "latest_output", "mean"}
    assert row["session"] == f"{path}#2" and row["strategy"] == "none" and row["window"] == 4000
    conversation = importers.load(path)[2]
    assert row["requests"] == sum(item.role == "assistant" for item in conversation.items)
    recounted = recount(dump, 4000, ESTIMATE, parse_prices("output=20"), session=conversation, max_output_tokens=500)
    assert row["cost_usd"] == pytest.approx(recounted.cost_usd, rel=0.01)
    assert (row["overflows"], row["overflows_reserve"]) == (recounted.overflows, recounted.overflows_reserve)


def test_every_conversation_without_index_and_a_table_for_people(corpus_dir: Path) -> None:
    path = corpus_dir / "aider" / "AlexShchuka__mozgoslav" / ".aider.chat.history.md"
    rows = json_rows(invoke(str(path), "--window", "8000", "--tokenizer", "estimate", "--json"))
    assert [row["session"] for row in rows] == [f"{path}#{n}" for n in range(len(importers.load(path)))]
    result = invoke(str(path), "--window", "8000", "--tokenizer", "estimate", "--index", "0")
    assert result.exit_code == 0
    for label in ("read from cache", "cost", "peak request", "over the window", "survival: latest output"):
        assert label in result.output


def test_exact_counting_is_the_default(corpus_dir: Path, tokenizers_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXTFOLD_TOKENIZERS_DIR", str(tokenizers_dir))
    path = corpus_dir / "swe-agent" / "marshmallow-code__marshmallow-1867.traj"
    (row,) = json_rows(invoke(str(path), "--window", "100000", "--json"))
    assert row["tokenizer"] == "tiktoken:o200k_base"


def test_usage_errors_exit_with_2_and_one_line(corpus_dir: Path, tmp_path: Path) -> None:
    tau = str(corpus_dir / "tau-bench" / "gpt-4o-airline.json")
    for args in (
        [tau, "--window", "8000", "--requests", str(tmp_path / "r.jsonl"), "--tokenizer", "estimate"],
        [tau, "--window", "8000", "--index", "100000", "--tokenizer", "estimate"],
        [tau, "--window", "4000", "--prices", "input=cheap"],
        [tau, "--window", "4000", "--strategy", "no-such-strategy"],
        [tau, "--window", "4096", "--tokenizer", "estimate"],  # no room beside the 4,096 tokens kept for the reply
    ):
        result = CliRunner().invoke(cli, ["replay", *args])
        assert result.exit_code == 2, args
        assert "Traceback" not in result.output


def test_the_registry_creates_by_name_and_takes_registrations() -> None:
    assert strategies.names()[0] == "none"
    assert isinstance(strategies.create("none", CONFIG), FullHistory)
    with pytest.raises(ValueError, match="none"):
        strategies.create("no-such-strategy", CONFIG)
    strategies.register("test-full-history", FullHistory)
    try:
        assert "test-full-history" in strategies.names()
        assert isinstance(strategies.create("test-full-history", CONFIG), FullHistory)
    finally:
        strategies._registered.pop("test-full-history")


def test_the_longest_corpus_session_replays_in_seconds(corpus_dir: Path, tokenizers_dir: Path) -> None:
    conversation = importers.load(corpus_dir / "mini-swe-agent" / "pylint-dev__astroid-1333.traj.json")[0]
    estimator = exact_estimator("o200k_base", tokenizers_dir)
    config = StrategyConfig(window_tokens=200_000)
    started = time.perf_counter()
    totals = replay(conversation, strategies.create("none", config), config, tokenizer=estimator).totals
    assert time.perf_counter() - started < 10  # about 0.2 s here; quadratic tokenization would take minutes
    assert totals.requests == 176 and totals.violations == 0 and totals.survival["mean"] == 1.0


def test_a_preset_sets_how_late_the_pipeline_compacts(corpus_dir: Path) -> None:
    path = corpus_dir / "tau-bench" / "gpt-4o-airline.json"
    args = (str(path), "--window", "8000", "--index", "33", "--tokenizer", "estimate", "--json")
    lean, balanced = (json_rows(invoke(*args, "--preset", name))[0] for name in ("lean", "balanced"))
    assert json_rows(invoke(*args))[0] == balanced  # balanced is the default
    assert lean["peak_tokens"] < balanced["peak_tokens"] <= 8_000 - 2_000  # its trigger is later, the reply's room kept
    assert balanced["overflows"] == lean["overflows"] == 0
    result = CliRunner().invoke(cli, ["replay", *args, "--preset", "frugal"])
    assert result.exit_code == 2 and "lean" in result.output
