"""Real recorded sessions from the shared corpus round-trip exactly through the adapters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfold.adapters import from_anthropic, from_openai, to_anthropic, to_openai


def test_tau_bench_chat_trajectories(corpus_dir: Path) -> None:
    trajectories = json.loads((corpus_dir / "tau-bench" / "gpt-4o-airline.json").read_text(encoding="utf-8"))
    for number, trajectory in enumerate(trajectories):
        messages = trajectory["traj"]
        assert to_openai(from_openai(messages)) == messages, f"trajectory {number}"


@pytest.mark.parametrize("pattern", ["mini-swe-agent/*.traj.json", "live-swe-agent/*.traj.json"])
def test_mini_swe_agent_messages_with_vendor_fields(corpus_dir: Path, pattern: str) -> None:
    """Their messages carry ``extra``, ``provider_specific_fields`` and ``function_call: null``; all come back."""
    paths = sorted(corpus_dir.glob(pattern))
    assert paths
    for path in paths:
        messages = [m for m in json.loads(path.read_text(encoding="utf-8"))["messages"] if m["role"] != "exit"]
        conversation = from_openai(messages)
        assert to_openai(conversation) == messages, path.name
        assert all(not v.kind.startswith(("orphan", "duplicate")) for v in conversation.validate()), path.name


def test_claude_code_transcript_messages(corpus_dir: Path) -> None:
    """API messages as Claude Code recorded them (assistant replies split over several records)."""
    path = corpus_dir / "claude-code-transcript" / "python-to-rust-port" / "transcript.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    messages = [r["message"] for r in records if r.get("type") in ("user", "assistant") and not r.get("isSidechain")]
    conversation = from_anthropic(messages)
    assert to_anthropic(conversation)["messages"] == messages
    assert sum(len(item.tool_calls) for item in conversation) == 39
