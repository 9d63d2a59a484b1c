"""The replayer: request points, what a strategy is handed, cache and cost figures, summarizer calls, invariants."""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from contextfold.adapters import adapter_for
from contextfold.conversation import (
    Conversation,
    Header,
    Image,
    Item,
    Summary,
    Text,
    ToolCall,
    ToolResult,
    UNANSWERED_TEXT,
    ToolSpec,
    assistant,
    tool,
    user,
)
from contextfold.pipeline.base import Prices
from contextfold.replay import Sent, Step, StrategyConfig, replay, strategies
from contextfold.replay.render import item_tokens, render_tools, tools_tokens
from contextfold.synthetic import generate_session
from contextfold.tokens import Estimator, HeuristicText
from contextfold.usage import CacheRule, Usage

ESTIMATE = Estimator()
CONFIG = StrategyConfig(window_tokens=100_000)
PRICES = Prices()


class Edited:
    """A test strategy: the full history so far, passed through ``edit`` before it is sent.

    ``edit(items, step)`` returns the items to send; edited copies are made
    once per original item (kept in ``copies``) so that an unchanged edit
    keeps its cached prefix, as a real strategy would.
    """

    def __init__(
        self,
        name: str,
        edit: Callable[[list[Item], Step, dict[str, Item]], list[Item]],
        header: Callable[[Header], Header] = lambda h: h,
    ) -> None:
        self.name = name
        self.edit = edit
        self.header_edit = header
        self.items: list[Item] = []
        self.copies: dict[str, Item] = {}
        self.steps: list[Step] = []
        self.usages: list[Usage] = []

    def start(self, header: Header) -> None:
        self.header = self.header_edit(header)

    def step(self, step: Step) -> Sent:
        self.steps.append(step)
        self.items.extend(step.new_items)
        return Sent(Conversation(self.edit(list(self.items), step, self.copies), self.header))

    def record_usage(self, usage: Usage) -> None:
        self.usages.append(usage)


PLACEHOLDER = "[output cleared]"


def cleared(item: Item, copies: dict[str, Item]) -> Item:
    if item.id not in copies:
        result = item.tool_result
        assert result is not None
        copies[item.id] = item.with_blocks((replace(result, content=PLACEHOLDER),))
    return copies[item.id]


def mask_old_outputs(items: list[Item], step: Step, copies: dict[str, Item]) -> list[Item]:
    """Every tool output but the latest becomes a placeholder (observation masking at its harshest)."""
    last = max((k for k, item in enumerate(items) if item.role == "tool"), default=-1)
    return [cleared(item, copies) if item.role == "tool" and k != last else item for k, item in enumerate(items)]


def keep_last_round(items: list[Item], step: Step, copies: dict[str, Item]) -> list[Item]:
    """Only the last round: loses the task (an invariant violation) and most facts."""
    units = Conversation(items).units()
    return items[units[-1][0] :] if units else items


LOSSY_STRATEGIES: dict[str, Callable[[StrategyConfig], Edited]] = {
    "mask-old-outputs": lambda config: Edited("mask-old-outputs", mask_old_outputs),
    "keep-last-round": lambda config: Edited("keep-last-round", keep_last_round),
}
"""Test strategies that lose things on purpose, so that probes and recounts see more than 100 %."""


def session(with_times: bool = True) -> Conversation:
    """task; a read; a failing test run; an edit; a final answer (request points at 1, 3, 5, 7)."""
    times = iter(range(0, 1000, 10))

    def t() -> float | None:
        return float(next(times)) if with_times else None

    header = Header(system=(Item("system", (Text("You are a coding agent."),), id="sys"),),
                    tools=(ToolSpec("bash", "Run a command.", {"type": "object"}),))
    calls = [ToolCall(f"c{k}", "bash", {"command": command}) for k, command in
             enumerate(["cat src/app.py", "python -m pytest -q", "sed -i 's/a/b/' src/app.py"])]
    items = [
        user("Fix the crash in src/app.py reported in #42 (ValueError in parse_config).", id="task", timestamp=t()),
        assistant("Reading.", [calls[0]], id="a0", timestamp=t()),
        tool("c0", "def parse_config(text):\n    return int(text)\n", id="r0", timestamp=t()),
        assistant("", [calls[1]], id="a1", timestamp=t()),
        tool("c1", "E   ValueError: invalid literal for int()\n1 failed in 0.1s", is_error=True, id="r1", timestamp=t()),
        assistant("Editing.", [calls[2]], id="a2", timestamp=t()),
        tool("c2", "", id="r2", timestamp=t()),
        assistant("Fixed parse_config.", id="a3", timestamp=t()),
    ]
    return Conversation(items, header)


def run(conversation: Conversation, strategy, **kw):  # type: ignore[no-untyped-def]
    return replay(conversation, strategy, kw.pop("config", CONFIG), tokenizer=ESTIMATE, **kw)


def tokens_of(conversation: Conversation, items: Sequence[Item]) -> int:
    """Tokens of the tool definitions, the system items and ``items``: a request's prompt."""
    header = conversation.header
    return tools_tokens(render_tools(header), ESTIMATE) + sum(item_tokens(i, ESTIMATE) for i in (*header.system, *items))


# --------------------------------------------------------------------------- steps


def test_every_assistant_item_is_a_request_point_and_items_are_handed_over_as_they_are() -> None:
    conversation = session()
    strategy = Edited("spy", lambda items, step, copies: items)
    result = run(conversation, strategy)
    assert [s.index for s in strategy.steps] == [1, 3, 5, 7]
    assert [s.number for s in strategy.steps] == [0, 1, 2, 3]
    handed = [item for s in strategy.steps for item in s.new_items]
    assert all(a is b for a, b in zip(handed, conversation.items[:7], strict=True))
    assert [s.time_s for s in strategy.steps] == [0.0, 20.0, 40.0, 60.0]  # the last new item's time
    assert [r.index for r in result.requests] == [1, 3, 5, 7]


def test_request_time_falls_back_to_the_reply_then_to_unknown() -> None:
    conversation = session()
    items = [replace(item, timestamp=None) if item.role != "assistant" else item for item in conversation.items]
    strategy = Edited("spy", lambda items, step, copies: items)
    run(conversation.with_items(items), strategy)
    assert [s.time_s for s in strategy.steps] == [10.0, 10.0, 30.0, 50.0]  # the reply, then the previous reply
    strategy = Edited("spy", lambda items, step, copies: items)
    run(session(with_times=False), strategy)
    assert [s.time_s for s in strategy.steps] == [None] * 4


# --------------------------------------------------------------------------- tokens, cache and cost


def test_full_history_reads_the_previous_request_from_cache_and_writes_the_rest() -> None:
    conversation = session()
    result = run(conversation, strategies.create("none", CONFIG))
    inputs = [r.input_tokens for r in result.requests]
    assert inputs == [tokens_of(conversation, conversation.items[:k]) for k in (1, 3, 5, 7)]
    assert [r.cache_read_tokens for r in result.requests] == [0, *inputs[:-1]]
    assert all(r.cache_write_tokens == r.input_tokens - r.cache_read_tokens for r in result.requests)
    outputs = [item_tokens(conversation.items[k], ESTIMATE) for k in (1, 3, 5, 7)]
    assert [r.output_tokens for r in result.requests] == outputs
    totals = result.totals
    read, write, out = totals.cache_read_tokens, totals.cache_write_tokens, totals.output_tokens
    assert totals.cost_usd == pytest.approx((read * 0.30 + write * 3.75 + out * 15) / 1e6)
    assert totals.cost_no_cache_usd == pytest.approx((totals.input_tokens * 3 + out * 15) / 1e6)
    assert totals.cache_hit_ratio == pytest.approx(read / totals.input_tokens)
    assert totals.peak_tokens == inputs[-1] and totals.requests == 4


def test_openais_cache_rule_reads_nothing_under_its_minimum_then_whole_steps() -> None:
    """OpenAI's automatic cache serves a common prefix of at least 1,024 tokens in steps of 128 above that; the
    default rule serves every token (Anthropic's, minimum ignored). Replay priced OpenAI sessions the second way."""
    rule = adapter_for("openai").cache_rule
    assert [rule.serves(n) for n in (0, 1_023, 1_024, 1_151, 1_152, 5_000)] == [0, 0, 1_024, 1_024, 1_152, 4_992]
    assert [CacheRule().serves(n) for n in (0, 1_023, 5_000)] == [0, 1_023, 5_000]
    conversation = session()
    full = run(conversation, strategies.create("none", CONFIG))
    stepped = run(conversation, strategies.create("none", CONFIG), cache_rule=CacheRule(minimum=0, increment=50))
    assert [r.cache_read_tokens for r in stepped.requests] == [r.cache_read_tokens // 50 * 50 for r in full.requests]
    assert stepped.totals.cost_usd > full.totals.cost_usd


def test_a_changed_item_breaks_the_cached_prefix_where_it_stands() -> None:
    conversation = session()

    def clear_first_output(items: list[Item], step: Step, copies: dict[str, Item]) -> list[Item]:
        return [cleared(i, copies) if i.id == "r0" and step.number >= 2 else i for i in items]

    result = run(conversation, Edited("clear", clear_first_output))
    before_change = tokens_of(conversation, conversation.items[:2])  # tools, system, task, first call
    assert result.requests[2].cache_read_tokens == before_change
    assert result.requests[3].cache_read_tokens == result.requests[2].input_tokens  # the edit is kept: cached again


def test_a_pause_longer_than_the_ttl_reads_nothing_from_cache() -> None:
    conversation = session()
    late = [replace(i, timestamp=i.timestamp + 1000) if k >= 4 and i.timestamp is not None else i
            for k, i in enumerate(conversation.items)]
    result = run(conversation.with_items(late), strategies.create("none", CONFIG))
    assert [r.cache_read_tokens > 0 for r in result.requests] == [False, True, False, True]
    result = run(conversation.with_items(late), strategies.create("none", CONFIG), cache_ttl_s=2000)
    assert [r.cache_read_tokens > 0 for r in result.requests] == [False, True, True, True]


def test_a_pause_of_exactly_the_ttl_still_reads_from_cache() -> None:
    """The cache lives for the TTL after its last use: a request at exactly that moment still finds it."""
    conversation = session()
    late = [replace(i, timestamp=i.timestamp + 1000) if k >= 4 and i.timestamp is not None else i
            for k, i in enumerate(conversation.items)]
    gap = 1020.0  # from the request at 20 s to the one at 1,040 s
    at_the_limit = run(conversation.with_items(late), strategies.create("none", CONFIG), cache_ttl_s=gap)
    assert [r.cache_read_tokens > 0 for r in at_the_limit.requests] == [False, True, True, True]
    just_over = run(conversation.with_items(late), strategies.create("none", CONFIG), cache_ttl_s=gap - 0.5)
    assert [r.cache_read_tokens > 0 for r in just_over.requests] == [False, True, False, True]


def test_new_tool_definitions_break_the_whole_cached_prefix() -> None:
    """Tools come first in the prompt: a request with other tools reads nothing from the cache, the next reads again."""

    class NewToolAtStep2(Edited):
        def step(self, step: Step) -> Sent:
            if step.number == 2:
                grep = ToolSpec("grep", "Search.", {"type": "object"})
                self.header = replace(self.header, tools=(*self.header.tools, grep))
            return super().step(step)

    result = run(session(), NewToolAtStep2("new-tool", lambda items, step, copies: items))
    assert [r.cache_read_tokens > 0 for r in result.requests] == [False, True, False, True]


def test_prices_are_applied_as_given() -> None:
    prices = Prices(input_per_mtok=1, cache_write_per_mtok=2, cache_read_per_mtok=0.5, output_per_mtok=4)
    totals = run(session(), strategies.create("none", CONFIG), prices=prices).totals
    expected = totals.cache_read_tokens * 0.5 + totals.cache_write_tokens * 2 + totals.output_tokens * 4
    assert totals.cost_usd == pytest.approx(expected / 1e6)


def test_the_strategy_hears_the_usage_of_each_request() -> None:
    strategy = Edited("spy", lambda items, step, copies: items)
    result = run(session(), strategy)
    assert [u.prompt_tokens for u in strategy.usages] == [r.input_tokens for r in result.requests]
    assert [u.cache_read_tokens for u in strategy.usages] == [r.cache_read_tokens for r in result.requests]


def test_requests_over_the_window_are_counted_with_and_without_the_reply_reserve() -> None:
    conversation = session()
    inputs = [r.input_tokens for r in run(conversation, strategies.create("none", CONFIG)).requests]
    config = StrategyConfig(window_tokens=inputs[2], max_output_tokens=inputs[2] - inputs[1])
    totals = run(conversation, strategies.create("none", config), config=config).totals
    assert (totals.overflows, totals.overflows_reserve) == (1, 2)
    assert (totals.window, totals.max_output_tokens) == (config.window_tokens, config.max_output_tokens)


def test_summarizer_requests_are_priced_uncached_and_dumped_before_the_agent_request(tmp_path: Path) -> None:
    conversation = session()
    summary_request = Conversation([user("Summarize: " + "x " * 300)])

    class Summarizing(Edited):
        def step(self, step: Step) -> Sent:
            sent = super().step(step)
            if step.number != 2:
                return sent
            return Sent(sent.request, summarizer_calls=[(summary_request, Usage(900, output_tokens=77))])

    dump = tmp_path / "requests.jsonl"
    result = run(conversation, Summarizing("s", lambda items, step, copies: items), requests_path=dump)
    helper = [r for r in result.requests if r.kind == "summarizer"]
    assert len(helper) == 1 and helper[0].step == 2 and helper[0].output_tokens == 77
    assert helper[0].input_tokens == tokens_of(summary_request, summary_request.items)
    assert helper[0].cache_read_tokens == helper[0].cache_write_tokens == 0
    assert helper[0].cost_usd == pytest.approx((helper[0].input_tokens * 3 + 77 * 15) / 1e6)
    totals = result.totals
    assert (totals.requests, totals.summarizer_calls, totals.summarizer_output_tokens) == (4, 1, 77)
    assert totals.cost_usd == pytest.approx(sum(r.cost_usd for r in result.requests))
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    assert [(line["step"], line["kind"]) for line in lines] == [
        (0, "agent"), (1, "agent"), (2, "summarizer"), (2, "agent"), (3, "agent")
    ]


def test_counting_is_once_per_item_not_once_per_request() -> None:
    calls = 0

    class Counting(HeuristicText):
        name = "counting"

        def __call__(self, text: str) -> int:
            nonlocal calls
            calls += 1
            return super().__call__(text)

    conversation = generate_session(rounds=60, seed=3)
    result = replay(conversation, strategies.create("none", CONFIG), CONFIG, tokenizer=Estimator(Counting()))
    assert result.totals.requests > 60
    blocks = sum(len(item.blocks) for item in conversation.items)
    assert calls <= 3 * blocks + 3 * len(conversation.header.tools) + 10  # text, name, arguments per block at most


def test_progress_is_reported_after_every_step() -> None:
    seen: list[tuple[int, int]] = []
    run(session(), strategies.create("none", CONFIG), progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]


# --------------------------------------------------------------------------- invariants


def test_the_full_history_breaks_no_invariant_and_keeps_every_probe() -> None:
    totals = run(session(), strategies.create("none", CONFIG)).totals
    assert totals.violations == 0
    assert totals.survival == {"task": 1.0, "edited": 1.0, "last_error": 1.0, "latest_output": 1.0, "mean": 1.0}


def test_a_dropped_result_a_lost_task_and_a_changed_header_are_violations() -> None:
    def drop_first_output(items: list[Item], step: Step, copies: dict[str, Item]) -> list[Item]:
        return [i for i in items if i.id != "r0"]

    records = run(session(), Edited("drop", drop_first_output)).requests
    assert records[0].violations == ()
    assert any("structure" in v and "unanswered_call" in v for v in records[1].violations)

    records = run(session(), Edited("last", keep_last_round)).requests
    assert any(v.startswith("task:") for v in records[-1].violations)

    def other_system(header: Header) -> Header:
        return replace(header, system=(Item("system", (Text("Another prompt."),)),))

    records = run(session(), Edited("header", lambda items, step, copies: items, other_system)).requests
    assert all(any(v.startswith("header:") for v in r.violations) for r in records)


def test_the_task_may_live_on_in_a_summary_or_a_pinned_item() -> None:
    conversation = session()
    task = conversation.items[0]

    def summarized(items: list[Item], step: Step, copies: dict[str, Item]) -> list[Item]:
        summary = Item("user", (Summary(f"So far: the task was: {task.text}", covers=len(items) - 1),), id="sum")
        return [summary, *keep_last_round(items, step, copies)] if step.number >= 2 else items

    assert run(conversation, Edited("summary", summarized)).totals.violations == 0

    def pin(header: Header) -> Header:
        return replace(header, pinned=(Item("user", (Text(f"Task: {task.text}"),), id="pin"),))

    assert run(conversation, Edited("pinned", keep_last_round, pin)).totals.violations == 0


def test_an_image_in_a_tool_result_is_counted_though_chat_completions_cannot_carry_it() -> None:
    header = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + struct.pack(">II", 800, 600) + b"\x08\x06\x00\x00\x00"
    png = base64.b64encode(header).decode()
    result = ToolResult("c0", (Text("screenshot:"), Image(data=png, media_type="image/png")))
    items = [user("Look at the page."), assistant("", [ToolCall("c0", "screenshot", {})]),
             Item("tool", (result,), meta={"origin": "anthropic"}), assistant("Done.")]
    records = run(Conversation(items), strategies.create("none", CONFIG)).requests
    image = ESTIMATE.block(Image(data=png, media_type="image/png"))
    assert image == 640  # 800 x 600 pixels, at 750 pixels a token
    assert records[1].input_tokens - records[0].input_tokens > image


def test_the_same_replay_writes_the_same_requests(tmp_path: Path) -> None:
    """Summaries and previews name items by id (the refs ``read_history`` takes); the ids a replay makes are
    drawn from a seeded stream, so two replays of one recording write byte-identical request logs. (Each run
    loads it afresh, as the CLI does: items keep what was read of them, and a second reading makes fewer ids.)"""
    config = StrategyConfig(window_tokens=8_000, results_dir=str(tmp_path / "results"))
    dumps = []
    for run in ("first", "second"):
        path = tmp_path / f"{run}.jsonl"
        replay(generate_session(rounds=60), strategies.create("default", config), config, tokenizer=ESTIMATE, requests_path=path,
               session="synthetic")
        dumps.append(path.read_bytes())
    assert b"read_history(" in dumps[0]  # its summaries and previews name items
    assert dumps[0] == dumps[1]


def test_a_call_the_recording_lost_the_result_of_is_answered_and_the_replay_goes_on(
        caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    """A harness that dropped a record leaves a call with no result before the agent's next request: no provider
    takes such a request, so the replay answers the call with an error result (and says so) instead of refusing
    the whole session; a call left open by the recording's end is no fault."""
    lost = ToolCall("lost", "Write", {"file_path": "notes.md", "content": "draft"})
    read = ToolCall("read", "Read", {"file_path": "notes.md"})
    items = [user("Write the notes, then check them."), assistant("Writing.", [lost], id="a0"),
             assistant("Checking.", [read], id="a1"), tool("read", "draft", id="r1"), assistant("Done.", id="a2"),
             user("And the summary?"), assistant("Writing it.", [ToolCall("open", "Write", {})], id="a3")]
    with caplog.at_level("WARNING", logger="contextfold.replay"):
        result = run(Conversation(items), strategies.create("default", CONFIG), session="lost-record",
                     requests_path=tmp_path / "requests.jsonl")
    assert len(result.requests) == 4 and result.totals.violations == 0
    assert "1 tool call(s) have no recorded result (first at item 1)" in caplog.text
    sent = [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert [UNANSWERED_TEXT in json.dumps(request["messages"]) for request in sent] == [False, True, True, True]
