"""Every compaction in a replay of real recorded sessions has a receipt, and each of its read_history references
returns the item it names (skipped, saying why, without ../shared/corpus)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from test_receipts import assert_refs_read_back

from contextfold import importers
from contextfold.conversation import Header
from contextfold.events import Event
from contextfold.pipeline.receipts import STAGE, receipts_in
from contextfold.pipeline.tiers import DEFAULT_PIPELINE
from contextfold.replay.base import Sent, Step, StrategyConfig
from contextfold.replay.run import replay
from contextfold.replay.strategies.default import Pipeline
from contextfold.tokens import Estimator
from contextfold.usage import Usage

SESSIONS = [
    "mini-swe-agent/astropy__astropy-12907.traj.json",
    "claude-code-transcript/python-to-rust-port/transcript.jsonl",
    "hive-mind-solve-logs/pr-52-log.txt",
    "claude-code-transcript/SWORDIntel__claude-backups/95c8727c-24a7-4c9a-8b98-dc0842f69917.jsonl",
]
CHEAP = {"persist", "truncate", "put_back"}
"""The stages that run on every request on new items (``DEFAULT_PIPELINE.cheap``): they admit new outputs, or add
(a cleared file put back among them), and compact nothing."""
NO_COMPACTION = CHEAP | {"invariants"}
"""...and the last check before a request, whose repair (a call answered with an error result) adds, not compacts."""


@dataclass
class EveryStep:
    """contextfold's pipeline, keeping every event of each step (the replay's recorder keeps only item changes)."""

    inner: Pipeline
    steps: list[list[Event]] = field(default_factory=list)
    name: str = "default"

    def start(self, header: Header) -> None:
        self.inner.start(header)

    def step(self, step: Step) -> Sent:
        sent = self.inner.step(step)
        self.steps.append(list(sent.events))
        return sent

    def record_usage(self, usage: Usage) -> None:
        self.inner.record_usage(usage)


def test_the_cheap_stages_are_the_ones_named_here() -> None:
    assert {getattr(stage, "__name__", "") for stage in DEFAULT_PIPELINE.cheap} == CHEAP


@pytest.mark.parametrize("session", SESSIONS)
def test_every_compaction_of_a_replay_has_a_receipt_that_reads_back(corpus_dir: Path, session: str) -> None:
    conversation = importers.load(corpus_dir / session)[0]
    config = StrategyConfig(16_000)
    strategy = EveryStep(Pipeline(config))
    replay(conversation, strategy, config, tokenizer=Estimator(), session=session)
    compactions = receipts = 0
    for events in strategy.steps:
        compacted = any(e.items and e.stage not in NO_COMPACTION for e in events)
        made = [e for e in events if e.stage == STAGE and e.action == "compaction"]
        assert len(made) == int(compacted), [(e.stage, e.action) for e in events]
        compactions += compacted
        receipts += len(made)
    assert compactions > 0, f"{session} at 16k compacts"
    context = strategy.inner.context
    read = sum(assert_refs_read_back(context, receipt) for receipt in receipts_in(context.events))
    assert read > 0
