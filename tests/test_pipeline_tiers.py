"""The pipeline owns the whole path: a stage removed from any tier never runs, and a user's stage added to
any tier runs there, its event carrying the request's tokens before and after.

The stages are wrapped in counters that call the real stage (a spy, not a stand-in: what runs is the
pipeline under test). The stage of docs/architecture.md's "How to add a stage" is run as written.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from contextfold import DEFAULT_PIPELINE, Budget, Context, Conversation, Event, Pipeline, Policy, Stage
from contextfold.pipeline import TIERS, Tier
from contextfold.pipeline.base import stage_name

DOCS = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
SECTION = DOCS.split("### How to add a stage", 1)[1].split("\n## ", 1)[0]
EVERY_STAGE = sorted({stage_name(s) for tier in TIERS for s in DEFAULT_PIPELINE.stages(tier)})


def docs_stage() -> dict[str, Any]:
    """The names of docs/architecture.md's stage block, after running it."""
    block = re.search(r"runs as written: [^\n]*\n```python\n(.*?)```", SECTION, re.DOTALL)  # not the signature
    assert block, "docs/architecture.md's 'How to add a stage' has no Python block"
    names: dict[str, Any] = {"__name__": "docs_stage"}
    exec(compile(block.group(1), "architecture.md", "exec"), names)  # noqa: S102 - the docs' own example, as written
    return names


def counted(pipeline: Pipeline, calls: Counter[str]) -> Pipeline:
    """``pipeline`` with every stage counting its calls in ``calls`` (by name) before it runs as it is."""
    def spy(stage: Stage) -> Stage:
        def counting(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
            calls[stage_name(stage)] += 1
            return stage(conversation, budget)
        counting.__name__ = stage_name(stage)
        return counting
    return Pipeline(**{tier: tuple(spy(s) for s in pipeline.stages(tier)) for tier in TIERS})


def session(pipeline: Pipeline, *, trigger_tokens: int = 400, log_lines: int = 60, said: int = 20) -> Context:
    """A step that reaches every tier by default: a trigger no summary can meet (so the escalation goes on to its
    last rung) over 14 rounds of build logs (``log_lines`` each, the agent saying a sentence ``said`` times
    before each call), at a turn boundary."""
    context = Context(window_tokens=50_000, policy=Policy(trigger_tokens=trigger_tokens), pipeline=pipeline)
    context.add([{"role": "user", "content": "Make the build pass"}], system="You are a coding agent.")
    for k in range(14):
        log = "\n".join(f"line {n} of step {k}: compiling module_{n}.c" for n in range(log_lines))
        context.add([
            {"role": "assistant", "content": [{"type": "text", "text": f"Running step {k} of the build. " * said}
                                              ] * bool(said) + [{"type": "tool_use", "id": f"toolu_{k}",
                                                                 "name": "bash", "input": {"command": f"make step{k}"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": log}]},
        ])
    context.prepare_view()
    return context


def test_the_session_calls_every_stage_of_the_default_pipeline() -> None:
    calls: Counter[str] = Counter()
    session(counted(DEFAULT_PIPELINE, calls))
    assert sorted(calls) == EVERY_STAGE


@pytest.mark.parametrize("removed", EVERY_STAGE)
def test_a_stage_removed_from_the_pipeline_never_runs(removed: str) -> None:
    calls: Counter[str] = Counter()
    context = session(counted(DEFAULT_PIPELINE.remove(removed), calls))
    assert calls[removed] == 0
    assert not [e for e in context.events if e.stage == removed and e.items]
    assert calls  # the others still ran


def test_removing_clear_means_nothing_clears_even_when_a_summary_is_due() -> None:
    """The issue's bug: ``remove("clear")`` left the escalation's own clearing in place. Here clearing alone
    would be enough (the default pipeline clears and summarizes nothing): without ``clear`` a summary is made."""
    def long_logs(pipeline: Pipeline) -> Context:
        return session(pipeline, trigger_tokens=12_000, log_lines=150, said=0)

    default = [(e.stage, e.action) for e in long_logs(DEFAULT_PIPELINE).events]
    assert ("clear", "cleared") in default and not any(stage == "summarize" for stage, _ in default)
    calls: Counter[str] = Counter()
    context = long_logs(counted(DEFAULT_PIPELINE.remove("clear"), calls))
    assert calls["clear"] == 0 and calls["summarize"] == 1
    assert not any(e.stage == "clear" for e in context.events)
    assert not any(item.provenance.compacted == "clear" for item in context.prepare_view().items)


def where(tier: Tier, stage: Stage) -> Pipeline:
    """The default pipeline with ``stage`` added to ``tier``: in ``escalate`` before the summary (the rung that
    clears first), elsewhere last."""
    if tier == "escalate":
        return DEFAULT_PIPELINE.add(stage, before="summarize", tier="escalate")
    return DEFAULT_PIPELINE.add(stage, tier=tier)


@pytest.mark.parametrize("tier", TIERS)
def test_a_user_stage_runs_in_the_tier_it_was_added_to_and_reports_its_tokens(tier: Tier) -> None:
    first_lines = docs_stage()["first_lines"]
    seen: list[tuple[Budget, list[Event]]] = []

    def everywhere(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
        """The docs' stage over the whole request (outside ``cheap``, any item may change)."""
        result, events = first_lines(conversation, budget if tier == "cheap" else replace(budget, new_from=0))
        seen.append((budget, events))
        return result, events
    everywhere.__name__ = "first_lines"

    context = session(where(tier, everywhere), trigger_tokens=1_500)
    assert seen, f"the stage did not run in the {tier} tier"
    budget, events = seen[0]
    assert (budget.compacted_from is not None) == (tier == "after")  # the after tier knows what was compacted
    assert budget.compaction_due == (tier == "escalate")  # the first rung runs with the prefix rewritten anyway
    made = [e for _, produced in seen for e in produced]
    assert made and all(e.stage == "first_lines" and e.action == "cut" for e in made)
    assert all(e.tokens_before is not None and e.tokens_after is not None and e.tokens_after < e.tokens_before
               for e in made)
    if tier in ("cheap", "after"):  # kept whatever it saves (batch and escalate results are kept if they pay/fit)
        assert [e for e in context.events if e.stage == "first_lines"] == made


def test_the_docs_stage_as_written_cuts_new_long_outputs() -> None:
    names = docs_stage()
    context: Context = names["context"]
    assert context.steward.pipeline.names()["cheap"] == ["persist", "truncate", "first_lines", "put_back"]
    context.add([{"role": "user", "content": "Make the build pass"}])
    context.add([{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash",
                                                     "input": {"command": "make"}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                               "content": "\n".join(f"line {n}" for n in range(50))}]}])
    view = context.prepare_view()
    assert view[2].text == "line 0\nline 1\nline 2\nline 3\nline 4\n[45 more lines cut]"
    event = next(e for e in context.events if e.stage == "first_lines")
    assert event.items == (view[2].id,) and event.tokens_before > event.tokens_after  # type: ignore[operator]


def test_a_pipeline_made_with_its_first_two_tiers_still_escalates_and_checks_survival_as_before() -> None:
    assert Pipeline(cheap=DEFAULT_PIPELINE.cheap, batch=DEFAULT_PIPELINE.batch) == DEFAULT_PIPELINE
