"""Every summary a corpus replay writes shows content under each heading, never a count standing for it.

The summarizer's own tests summarize whole sessions once; in a replay the
summaries follow one another, each carrying the state of the one before, at a
small window where many fire. Those are the summaries an agent reads.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from contextfold.importers import load
from contextfold.replay import StrategyConfig, replay, strategies
from contextfold.summarizers.base import SUMMARY_PREAMBLE
from contextfold.tokens import Estimator

STUB = re.compile(r"(?:…|\.\.\.)\s*\(?\d[\d,]*\s+(?:more|earlier)\b|\(\d+\)\s*$", re.MULTILINE)
"""A line standing for content it does not show: "… 30 more identifiers", "Commands that changed the system (3)"."""

SESSIONS = ("mini-swe-agent/pvlib__pvlib-python-1606.traj.json", "hive-mind-solve-logs/session-1-log.txt")


def written_summaries(requests: Path) -> list[str]:
    """Each distinct summary the requests carry (a summary stays in every later request until the next)."""
    found: dict[str, None] = {}
    for line in requests.read_text(encoding="utf-8").splitlines():
        for message in json.loads(line)["messages"]:
            content = message.get("content")
            texts = [content] if isinstance(content, str) else [p.get("text", "") for p in content or () if isinstance(p, dict)]
            found.update(dict.fromkeys(t for t in texts if t.startswith(SUMMARY_PREAMBLE)))
    return list(found)


@pytest.mark.parametrize("relative", SESSIONS)
def test_summaries_of_a_corpus_replay_have_no_stub(corpus_dir: Path, relative: str, tmp_path: Path) -> None:
    config = StrategyConfig(8_000)
    dump = tmp_path / "requests.jsonl"
    replay(load(corpus_dir / relative)[0], strategies.create("default", config), config, tokenizer=Estimator(),
           requests_path=dump)
    summaries = written_summaries(dump)
    assert len(summaries) >= 5, f"only {len(summaries)} summaries: the window no longer makes them follow one another"
    for summary in summaries:
        assert not STUB.search(summary), f"{STUB.search(summary)} in:\n{summary}"
        sections = re.split(r"^## \d+\. .+$", summary, flags=re.MULTILINE)[1:]
        assert sections and all(body.strip() for body in sections), summary


def test_the_stub_pattern_finds_stubs() -> None:
    for stub in ("- … 30 more identifiers", "- … 6 earlier actions", "Commands that changed the system (3)", "... 12 more"):
        assert STUB.search(stub), stub
    assert not STUB.search("- `$ pytest -x` → 3 passed\nsee version (3) of the spec for more")
