"""``contextfold chat`` compacts an idle session before its cache expires: the policy it runs with, the timer.

The schedule and the clock are injected: the test runs the scheduled call itself, nothing waits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from idle_sessions import Clock, busy_context

from contextfold import Event, Policy
from contextfold.agent.idle import IdleCompactor, chat_policy


def test_chat_turns_it_on_only_when_asked_at_the_models_cache_life() -> None:
    assert Policy().idle_compaction is False
    chosen = Policy.preset("lean")
    assert chat_policy("claude-sonnet-4-5", chosen).idle_compaction is False  # off by default (see the README)
    policy = chat_policy("claude-sonnet-4-5", chosen, idle_compaction=True)
    assert policy.idle_compaction and policy.cache_ttl_s == 300.0 and policy.economic_summaries  # the preset kept
    assert chat_policy("claude-sonnet-4-5", Policy(idle_compaction=True)).idle_compaction  # a policy file's stands
    assert chat_policy("a-model-nobody-lists", chosen).cache_ttl_s == chosen.cache_ttl_s


def test_while_the_person_is_away_one_compaction_is_scheduled_at_the_due_time_and_cancelled_after() -> None:
    clock = Clock(1_000.0)
    context = busy_context(clock)
    scheduled: list[tuple[float, Callable[[], None]]] = []
    cancelled: list[bool] = []

    def schedule(delay_s: float, call: Callable[[], None]) -> Callable[[], None]:
        scheduled.append((delay_s, call))
        return lambda: cancelled.append(True)

    reported: list[list[Event]] = []
    lock = threading.Lock()
    idle = IdleCompactor(lambda: context, lock, reported.append, schedule=schedule, clock=clock)
    with idle.waiting():
        [(delay, fire)] = scheduled
        assert delay == context.policy.cache_ttl_s - context.policy.idle_compaction_margin_s
        clock.now += delay  # the person is still away when the timer fires
        fire()
    assert cancelled == [True]
    assert [e.action for e in reported[0] if e.stage == "idle"] == ["compacting"]
    assert any(e.stage == "summarize" and e.action == "summarized" for e in reported[0])
    with idle.waiting():  # decided for this idle period: nothing more is scheduled
        assert len(scheduled) == 1
    assert not lock.locked()
