"""``contextfold demo`` as a new user meets it: narrow terminals, piped output, small and silly windows."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections import deque

import pytest
from click.testing import CliRunner
from rich.console import Console

from contextfold.cli import cli
from contextfold.cli.demo import status_view, verdict

STATUS_LINES = ("request 417: 61,234 of 64,000 tokens (96%)",
                "cost so far: $12.345 with contextfold, $123.456 with the full history")


@pytest.mark.parametrize("columns", [80, 120])
def test_the_live_status_is_never_cut_off(columns: int) -> None:
    recent = deque([("417", "61,234", "98,765 (over the window)", "summarize, survival", "12,345")])
    out = io.StringIO()
    spent = {"default": 12.345, "none": 123.456}
    Console(file=out, width=columns).print(status_view(recent, 417, 61_234, 64_000, spent))
    lines = out.getvalue().splitlines()
    assert all(len(line) <= columns for line in lines)
    for expected in STATUS_LINES:
        assert any(expected in line for line in lines), (expected, out.getvalue())


def _demo(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns)}
    command = [sys.executable, "-m", "contextfold", "demo", "--delay", "0", "--tokenizer", "estimate", *args]
    return subprocess.run(command, check=False, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("columns", [80, 120])
def test_piped_output_keeps_the_status_whole_and_the_next_title_on_its_own_line(columns: int) -> None:
    result = _demo("--rounds", "30", "--window", "16000", columns=columns)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= columns
    assert "The whole session" in [line.strip() for line in lines]  # not glued to the panel's border
    status = [line for line in lines if "cost so far:" in line]
    assert status and status[-1].rstrip(" │").endswith("with the full history")


@pytest.mark.parametrize("window", ["0", "-5", "1000", "4096"])
def test_a_window_with_no_room_beside_the_reply_is_a_one_line_usage_error(window: str) -> None:
    result = CliRunner().invoke(cli, ["demo", "--window", window, "--delay", "0", "--tokenizer", "estimate"])
    assert result.exit_code == 2
    assert "--window" in result.output and "Traceback" not in result.output
    assert "Replaying" not in result.output  # refused before any work


def test_the_closing_sentence_agrees_with_the_table() -> None:
    result = CliRunner().invoke(cli, ["demo", "--rounds", "40", "--window", "5000", "--delay", "0",
                                      "--tokenizer", "estimate"])
    assert result.exit_code == 0, result.output
    table = result.output[result.output.index("The whole session"):]
    over = next(line for line in table.splitlines() if "requests over the window" in line)
    full_over, ours_over = (int(cell.strip()) for cell in over.split("│")[2:4])
    closing = " ".join(table.split("└")[-1].split())
    assert full_over > 0 and f"the full history sent {full_over} requests over it" in closing
    assert ("no request over the window" in closing) == (ours_over == 0)
    assert "left less than the 4,096 tokens reserved for the reply" in closing  # 5,000 leaves under 4,096 for a prompt


def _totals(overflows: int, reserve: int, full_overflows: int = 231) -> tuple[dict, dict]:
    full = {"cost_usd": 2.0, "overflows": full_overflows}
    ours = {"cost_usd": 1.0, "overflows": overflows, "overflows_reserve": reserve, "requests": 240,
            "max_output_tokens": 4096}
    return full, ours


def test_the_verdict_never_claims_what_the_figures_deny() -> None:
    assert "no request over the window" not in verdict(*_totals(231, 240))
    assert "231 requests of 240 still went over the window" in verdict(*_totals(231, 240))
    assert verdict(*_totals(0, 0)) == ("contextfold cost 50% of the full history, with no request over the window "
                                       "(the full history sent 231 requests over it).")
    assert "1 request left less than the 4,096 tokens" in verdict(*_totals(0, 1))
    assert "(the full history fit too)" in verdict(*_totals(0, 0, full_overflows=0))
