"""``Policy`` refuses a knob out of its range, of the wrong type, or in conflict with another, naming the knob."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from contextfold import InvalidPolicy, Policy
from contextfold.context import Context
from contextfold.pipeline.base import Budget
from contextfold.pipeline.presets import PRESETS


@pytest.mark.parametrize(("knobs", "field", "words"), [
    ({"trigger_tokens": 100_000, "trigger_fraction": 0.5}, "trigger_fraction", "not both"),
    ({"trigger_fraction": 1.5}, "trigger_fraction", "outside 0 to 1"),
    ({"trigger_fraction": 0.0}, "trigger_fraction", "every turn"),
    ({"trigger_tokens": 0}, "trigger_tokens", "below 1"),
    ({"trigger_messages": -5}, "trigger_messages", "below 1"),
    ({"tail_fraction": -0.1}, "tail_fraction", "outside 0 to 1"),
    ({"survival_max_share": 2}, "survival_max_share", "outside 0 to 1"),
    ({"cache_ttl_s": -1.0}, "cache_ttl_s", "below 0"),
    ({"horizon_factor": float("nan")}, "horizon_factor", "a number is needed"),
    ({"persist_max_chars": "30k"}, "persist_max_chars", "whole number"),
    ({"max_consecutive_failures": True}, "max_consecutive_failures", "whole number"),
    ({"mask_window_rounds": 0}, "mask_window_rounds", "below 1"),
    ({"budget_steps": ((0.7, 15_000), (0.5, 30_000))}, "budget_steps[1]", "outside 0.7 to 1"),
    ({"budget_steps": ((0.5, 0),)}, "budget_steps[0]", "from 1"),
    ({"budget_steps": [(0.5, 1_000)]}, "budget_steps", "a tuple"),
    ({"history_tools": "yes"}, "history_tools", '"auto", True or False'),
    ({"history_tools": 1}, "history_tools", '"auto", True or False'),
    ({"history_tools": None}, "history_tools", '"auto", True or False'),
])
def test_a_bad_knob_is_refused_by_name(knobs: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(InvalidPolicy, match=words) as caught:
        Policy(**knobs)
    assert caught.value.field == field and f"Policy.{field}:" in str(caught.value)


def test_a_copy_with_a_bad_knob_is_refused_too() -> None:
    with pytest.raises(InvalidPolicy):
        replace(Policy(trigger_tokens=50_000), trigger_fraction=0.6)


def test_the_edges_of_each_range_are_accepted() -> None:
    Policy()
    Policy(history_tools=True), Policy(history_tools=False), Policy(history_tools="auto")
    Policy(trigger_fraction=1.0, tail_fraction=0.0, trigger_messages=None, mask_window_rounds=1, cache_ttl_s=0,
           budget_steps=(), survival_max_tokens=0, snip_keep_search_results=0)
    Policy(trigger_tokens=1, budget_steps=((0.5, 1), (0.5, 2)))


@pytest.mark.parametrize(("window", "reply", "trigger"), [
    (8_000, 4_096, 6_000),  # the reply's room (at most a quarter of the window) caps the share
    (16_000, 4_096, 12_000),
    (32_000, 4_096, 27_904),  # the reply's room again: the fixed margin alone would summarize at 14,904
    (128_000, 4_096, 115_200),  # the share: the margin alone, 110,904
    (200_000, 64_000, 167_000),  # the margin, past the share: a large window is compacted near its end
    (1_000_000, 64_000, 967_000),
])
def test_the_default_trigger_is_a_share_of_the_window_that_keeps_room_for_the_reply(
        window: int, reply: int, trigger: int) -> None:
    assert Context(window_tokens=window, max_output_tokens=reply).trigger_tokens == trigger
    explicit = Context(window_tokens=window, max_output_tokens=reply, policy=Policy(trigger_fraction=0.5))
    assert explicit.trigger_tokens == window // 2  # a trigger set by hand is taken as it is


def test_a_preset_is_a_policy_whose_every_knob_can_be_overridden() -> None:
    assert Policy.preset("balanced") == Policy()
    for name, knobs in PRESETS.items():
        policy = Policy.preset(name)
        assert all(getattr(policy, knob) == value for knob, value in knobs.items())
        assert Policy.preset(name, summary_target_tokens=1_234).summary_target_tokens == 1_234
    assert Policy.preset("lean") != Policy.preset("thorough")
    with pytest.raises(InvalidPolicy, match="lean, balanced, thorough") as caught:
        Policy.preset("frugal")
    assert caught.value.field == "preset"
    with pytest.raises(InvalidPolicy, match="no such knob") as caught:
        Policy.preset("lean", trigger_fractoin=0.5)
    assert caught.value.field == "trigger_fractoin"
    with pytest.raises(InvalidPolicy, match="outside 0 to 1"):
        Policy.preset("thorough", trigger_min_fraction=2.0)


def test_each_preset_spends_the_window_after_a_summary_where_the_next_one_saves() -> None:
    # at 32k, after a summary balanced keeps 35 % of the trigger verbatim where lean keeps a tenth and thorough
    # half, and a 20,000-character file read is a preview under balanced and whole under thorough (README, "Presets")
    window = 32_000
    budgets = {}
    for name in PRESETS:
        context = Context(window_tokens=window, policy=Policy.preset(name))
        budgets[name] = Budget(context.policy, window, context.trigger_tokens, count=lambda _: 0,
                               count_item=lambda _: 0)
    assert (budgets["balanced"].policy.persist_max_chars, budgets["thorough"].policy.persist_max_chars) == (
        16_000, 32_000)
    balanced, lean = budgets["balanced"], budgets["lean"]
    assert balanced.tail_budget_tokens == int(0.35 * balanced.trigger_tokens) > 3 * lean.tail_budget_tokens
    assert lean.tail_budget_tokens == int(0.1 * lean.trigger_tokens)
    thorough = budgets["thorough"]
    assert thorough.tail_budget_tokens == int(0.5 * thorough.trigger_tokens) > balanced.tail_budget_tokens
    assert (lean.policy.survival_max_tokens, balanced.policy.survival_max_tokens,
            thorough.policy.survival_max_tokens) == (800, 1_600, 2_400)
    assert (balanced.report_whole_tokens, thorough.report_whole_tokens) == (0, 3_200)


def test_the_output_limits_grow_with_the_window_unless_told_not_to() -> None:
    assert Policy().for_window(32_000) == Policy()  # half a character per token: 16,000, as set
    assert Policy().for_window(64_000) == replace(Policy(), persist_max_chars=32_000, truncate_max_chars=64_000)
    wide = Context(window_tokens=200_000).policy
    assert (wide.persist_max_chars, wide.truncate_max_chars) == (100_000, 200_000)
    assert Context(window_tokens=16_000).policy.persist_max_chars == 16_000  # never below what was set
    assert Policy(persist_chars_per_window_token=1.0).for_window(200_000).persist_max_chars == 200_000
    fixed = Context(window_tokens=200_000, policy=Policy(output_limits_scale_with_window=False)).policy
    assert (fixed.persist_max_chars, fixed.truncate_max_chars) == (16_000, 50_000)
