"""``contextfold compact`` on real sessions at windows far larger than they are: never a larger session back."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from contextfold.cli import cli

SESSIONS = [
    "openhands-sdk/traj_safety-unauth-discount.json",  # a browsing agent
    "openhands-sdk/traj_safety-resumes-reject.json",
    "tau-bench/gpt-4o-airline.json",  # a support agent (its first conversation)
    "swe-agent/i_got_id_demo.traj",
    "claude-code-transcript/python-to-rust-port/transcript.jsonl",
    "hive-mind-solve-logs/original-solve-log.txt",
]
_SIZES = re.compile(r"(\d+) items, ([\d,]+) tokens -> (\d+) items, ([\d,]+) tokens")


@pytest.mark.parametrize("window", ["400000", "1000000"])
@pytest.mark.parametrize("session", SESSIONS)
def test_compact_never_returns_a_larger_session(corpus_dir: Path, session: str, window: str, tmp_path: Path) -> None:
    out = tmp_path / "compacted.json"
    result = CliRunner().invoke(cli, ["compact", str(corpus_dir / session), "--window", window, "--index", "0",
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    items_before, before, items_after, after = _SIZES.search(result.stderr).groups()
    assert int(after.replace(",", "")) <= int(before.replace(",", ""))
    assert int(items_after) <= int(items_before)
    assert out.stat().st_size > 0
