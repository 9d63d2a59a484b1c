"""Idle compaction: a session left idle compacts just before its cache expires, when a warm summary costs less.

The clock is injected everywhere (a Context's ``clock``, a recording's timestamps): nothing here waits or reads
the time. The corpus test replays the recorded Claude Code sessions with real idle gaps and skips, saying why,
when ``../shared`` is absent.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from idle_sessions import Clock, busy_context, gapped_session

from contextfold import Context, Policy, ToolCall, importers
from contextfold.conversation import Conversation, assistant, tool, user
from contextfold.errors import InvalidPolicy
from contextfold.replay import strategies
from contextfold.replay.base import StrategyConfig
from contextfold.replay.result import Totals
from contextfold.replay.run import replay
from contextfold.tokens import Estimator

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "claude-code-transcript"
TTL_S, MARGIN_S = 300.0, 30.0


def test_off_by_default_and_its_knobs_are_checked() -> None:
    clock = Clock(1_000.0)
    context = Context(window_tokens=32_000, clock=clock)
    context.add([user("hello")])
    context.prepare_view()
    assert Policy().idle_compaction is False and context.idle_compaction_at() is None
    clock.now += 10 * TTL_S
    assert context.compact_if_idle() == []
    with pytest.raises(InvalidPolicy, match="idle_compaction_margin_s"):
        Policy(idle_compaction_margin_s=-1.0)
    with pytest.raises(InvalidPolicy, match="idle_compaction"):
        Policy(idle_compaction="yes")  # type: ignore[arg-type]


def test_just_before_expiry_an_idle_session_compacts_once() -> None:
    clock = Clock(1_000.0)
    context = busy_context(clock)
    sent_at = clock.now
    due = context.idle_compaction_at()
    assert due == sent_at + TTL_S - MARGIN_S
    clock.now = due - 1
    assert context.compact_if_idle() == []  # not yet: the cache has a while to live
    clock.now = due
    tokens = context.counter.count(context.view())
    events = context.compact_if_idle()
    assert [(e.stage, e.action) for e in events][:1] == [("idle", "compacting")]
    assert any(e.stage == "summarize" and e.action == "summarized" for e in events)
    assert context.counter.count(context.view()) < tokens / 2
    assert context.idle_compaction_at() is None and context.compact_if_idle() == []  # this idle period is decided
    context.add([user("Next part.")])
    context.prepare_view()
    assert context.idle_compaction_at() == clock.now + TTL_S - MARGIN_S  # a new request, a new idle period


def test_no_idle_compaction_once_the_cache_has_expired_or_mid_turn() -> None:
    clock = Clock(1_000.0)
    context = busy_context(clock)
    clock.now += TTL_S + 1  # the loop came back too late: a summary now would read a cold cache
    assert [(e.action, "expired" in e.detail) for e in context.compact_if_idle()] == [("deferred", True)]
    clock = Clock(1_000.0)
    context = busy_context(clock)
    context.add([assistant("", [ToolCall("late", "run_tests", {})])])  # a call still running
    clock.now += TTL_S - MARGIN_S
    assert [(e.action, "turn is not over" in e.detail) for e in context.compact_if_idle()] == [("deferred", True)]


def test_a_summary_that_does_not_pay_is_deferred_with_its_figures() -> None:
    clock = Clock(1_000.0)
    context = Context(window_tokens=32_000, clock=clock, policy=Policy(idle_compaction=True))
    context.add([user("Audit the two modules.")])
    for n in range(12):  # outputs a cold cache clears for free: a summary would save little more than that
        context.add([assistant("", [ToolCall(f"c{n}", "read_file", {"path": f"m{n}.py"})])])
        context.add([tool(f"c{n}", "\n".join(f"value_{n}_{k} = {k}" for k in range(60)))])
        context.prepare_view()
    context.add([assistant("Done.")])
    clock.now += TTL_S - MARGIN_S
    events = context.compact_if_idle()
    assert [e.action for e in events] == ["deferred"] and "against" in events[0].detail


def _replayed(conversation: Conversation, idle: bool, window: int = 32_000) -> tuple[Totals, int]:
    config = StrategyConfig(window, 4_096, None, None, Policy(idle_compaction=idle))
    strategy = strategies.create("default", config)
    totals = replay(conversation, strategy, config, tokenizer=Estimator(), session="idle").totals
    fired = sum(1 for e in strategy.context.events if e.stage == "idle" and e.action == "compacting")  # type: ignore[attr-defined]
    return totals, fired


@pytest.mark.parametrize("pasted_lines, rounds", [(150, 12), (0, 12), (300, 8), (0, 3)])
def test_replayed_with_real_gaps_it_never_costs_more_nor_sends_more_over_the_window(pasted_lines: int,
                                                                                     rounds: int) -> None:
    def conversation() -> Conversation:  # afresh for each replay: a replay leaves what it read in the items
        return gapped_session(6, 3_600.0, pasted_lines=pasted_lines, rounds=rounds)

    off, never = _replayed(conversation(), idle=False)
    on, fired = _replayed(conversation(), idle=True)
    assert never == 0 and on.requests == off.requests and on.overflows <= off.overflows
    assert on.cost_live_usd <= off.cost_live_usd + 1e-9
    if fired:  # a warm summary that paid: cheaper than the cold prompts it spared
        assert on.cost_live_usd < off.cost_live_usd


def test_replayed_without_gaps_nothing_changes() -> None:
    off, _ = _replayed(gapped_session(6, 60.0, pasted_lines=150, rounds=12), idle=False)  # the cache never expires
    on, fired = _replayed(gapped_session(6, 60.0, pasted_lines=150, rounds=12), idle=True)
    assert fired == 0 and on.cost_live_usd == off.cost_live_usd and on.strict == off.strict


def test_recorded_sessions_with_real_gaps_cost_no_more_with_it() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"the shared corpus is not at {CORPUS} (../shared): no recorded sessions to replay")
    names = ("e10914de-6f90-43b1-8374-efa2a330c3c0.jsonl", "95c8727c-24a7-4c9a-8b98-dc0842f69917.jsonl")
    paths = [path for name in names for path in CORPUS.rglob(name)]
    if len(paths) < len(names):
        pytest.skip(f"the corpus at {CORPUS} lacks {', '.join(names)}")
    for path in paths:
        off, _ = _replayed(importers.load(path)[0], idle=False)
        on, _ = _replayed(importers.load(path)[0], idle=True)
        assert on.requests == off.requests and on.overflows <= off.overflows, path.name
        assert on.cost_live_usd <= off.cost_live_usd, (path.name, on.cost_live_usd, off.cost_live_usd)


def test_the_async_twin_decides_the_same_off_the_loop() -> None:
    clock = Clock(1_000.0)
    context = busy_context(clock)
    clock.now = context.idle_compaction_at() or 0.0
    events = asyncio.run(context.acompact_if_idle())
    assert [e.action for e in events if e.stage == "idle"] == ["compacting"]
    assert any(e.stage == "summarize" and e.action == "summarized" for e in events)


def with_one_hour_marks(value: object) -> object:
    """A request whose cache breakpoints ask for 1-hour entries (``"ttl": "1h"``), as an app caching for an hour sends."""
    if isinstance(value, dict):
        return {key: ({**mark, "ttl": "1h"} if key == "cache_control" else with_one_hour_marks(mark))
                for key, mark in value.items()}
    if isinstance(value, list):
        return [with_one_hour_marks(entry) for entry in value]
    return value


@pytest.mark.parametrize(("ttl", "lifetime_s"), [("5m", 300.0), ("1h", 3_600.0)])
def test_the_lifetime_the_provider_reports_times_the_idle_compaction(ttl: str, lifetime_s: float) -> None:
    anthropic = pytest.importorskip("anthropic")
    from contextfold.adapters import adapter_for
    from contextfold.testing.scripted import ScriptedModel, Seen, Turn

    def answer(seen: Seen) -> Turn:
        return Turn("Audited.")

    clock = Clock(1_000.0)
    context = Context(window_tokens=32_000, max_output_tokens=2_000, clock=clock, policy=Policy(idle_compaction=True))
    spec = "\n".join(f"spec {k}: the retry budget of service {k} is {k * 7} ms, owner team {k % 5}" for k in range(300))
    context.add([user(f"Check this specification:\n{spec}")])
    request = context.prepare("anthropic")
    with ScriptedModel(answer) as server:
        client = anthropic.Anthropic(base_url=server.base_url("anthropic"), api_key="test", max_retries=0)
        body = with_one_hour_marks(request) if ttl == "1h" else request
        reported = client.messages.create(model="claude-sonnet-4-6", max_tokens=1_000, **body).usage  # type: ignore[arg-type]
    assert getattr(reported.cache_creation, f"ephemeral_{ttl}_input_tokens") > 0  # the SDK's own type says it
    usage = adapter_for("anthropic").read_usage(reported)
    assert usage.cache_write_ttl_s == lifetime_s
    context.record_usage(usage)
    assert context.idle_compaction_at() == clock.now + lifetime_s - MARGIN_S
    clock.now += 2 * TTL_S  # past the 5-minute guess: a 1-hour cache is still warm, and the idle compaction waits
    assert (context.compact_if_idle() == []) == (ttl == "1h")


def test_a_lifetime_the_caller_chose_wins_over_the_reported_one() -> None:
    from contextfold.usage import Usage

    clock = Clock(1_000.0)
    context = busy_context(clock, cache_ttl_s=600.0)
    context.prepare_view()
    context.record_usage(Usage(prompt_tokens=20_000, cache_write_tokens=20_000, cache_write_ttl_s=3_600.0))
    assert context.idle_compaction_at() == clock.now + 600.0 - MARGIN_S


def test_the_write_lifetime_is_the_larger_parts_and_a_malformed_one_names_its_field() -> None:
    from contextfold.adapters.usage import anthropic_usage
    from contextfold.errors import InvalidContent
    from contextfold.usage import Usage

    def lifetime(split: object) -> float | None:
        return anthropic_usage({"input_tokens": 10, "cache_creation_input_tokens": 900,
                                "cache_creation": split}).cache_write_ttl_s

    assert lifetime({"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 800}) == 3_600.0
    assert lifetime({"ephemeral_5m_input_tokens": 800, "ephemeral_1h_input_tokens": 100}) == 300.0
    assert lifetime({"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0}) is None  # nothing written
    assert lifetime(None) is None  # an API that does not split the write says nothing of its lifetime
    with pytest.raises(InvalidContent, match="usage.cache_creation"):
        lifetime([800])
    with pytest.raises(InvalidContent, match="ephemeral_1h_input_tokens"):
        lifetime({"ephemeral_1h_input_tokens": "800"})
    usage = Usage(prompt_tokens=900, cache_write_tokens=900, cache_write_ttl_s=3_600.0)
    assert Usage.from_dict(usage.to_dict()) == usage and "cache_write_ttl_s" not in Usage(prompt_tokens=1).to_dict()
    with pytest.raises(InvalidContent, match="usage.cache_write_ttl_s"):
        Usage.from_dict({"prompt_tokens": 900, "cache_write_ttl_s": "1h"})
