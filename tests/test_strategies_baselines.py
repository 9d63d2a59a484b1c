"""The peer baselines: each does what its public description says, pair-safe, and the replay sees what it sent."""

from __future__ import annotations

import sys

import pytest

from contextfold.conversation import Conversation, Header, Item, Summary, Text, ToolCall, assistant, tool, user
from contextfold.errors import ContextfoldError
from contextfold.replay import Sent, Step, StrategyConfig, fired, replay, strategies
from contextfold.replay.base import Strategy
from contextfold.replay.result import ReplayResult
from contextfold.replay.strategies.claude_code import auto_compact_tokens
from contextfold.replay.strategies.openhands import Condenser, next_boundary
from contextfold.synthetic import generate_session
from contextfold.tokens import Estimator

ESTIMATE = Estimator()


class Recorder(fired.Recorder):
    """Keeps, besides the events, a copy of the items and the header of every request the strategy sent."""

    def __init__(self, inner: Strategy) -> None:
        super().__init__(inner)
        self.requests: list[list[Item]] = []
        self.headers: list[Header] = []

    def step(self, step: Step) -> Sent:
        sent = super().step(step)
        self.requests.append(list(sent.request.items))
        self.headers.append(sent.request.header)
        return sent


def run(conversation: Conversation, strategy: Strategy, config: StrategyConfig) -> tuple[Recorder, ReplayResult]:
    recorder = Recorder(strategy)
    return recorder, replay(conversation, recorder, config, tokenizer=ESTIMATE)


def words(number: int, count: int) -> str:
    """``count`` distinct words (about ``count`` tokens), different for each ``number``."""
    return " ".join(f"w{number}x{k}" for k in range(count))


def notes_session(rounds: int, output_words: int) -> Conversation:
    """A task, then ``rounds`` rounds each reading a file of ``output_words`` words."""
    items = [user("Summarize the notes in notes/.")]
    for number in range(rounds):
        call = ToolCall(f"call{number}", "bash", {"command": f"cat notes/part{number}.txt"})
        items += [assistant(f"Reading part {number}.", [call]), tool(call.id, words(number, output_words))]
    return Conversation(items)


def test_every_baseline_is_registered_after_ours() -> None:
    assert strategies.names()[:7] == ["none", "default", "window", "mask", "openhands", "claude-code", "langchain"]


# --------------------------------------------------------------------------- window


def test_window_sends_the_task_and_the_newest_whole_rounds_that_fit() -> None:
    conversation = generate_session(rounds=40, seed=1)
    config = StrategyConfig(window_tokens=12_000, max_output_tokens=2_000)
    recorder, result = run(conversation, strategies.create("window", config), config)
    task = conversation.items[0]
    trimmed = 0
    for record, items in zip(result.requests, recorder.requests):
        history = list(conversation.items[: record.index])
        assert items[0] is task
        tail = items[1:]
        assert tail == history[len(history) - len(tail) :]  # the newest items, the same objects
        assert Conversation(items).validate() == []
        trimmed += len(items) < len(history)
    assert trimmed > 20
    assert result.totals.overflows_reserve == 0 and result.totals.violations == 0
    assert result.totals.peak_tokens > 0.8 * (config.window_tokens - config.max_output_tokens)


# --------------------------------------------------------------------------- mask


def test_mask_replaces_every_output_older_than_the_last_ten_rounds_on_every_request() -> None:
    conversation = generate_session(rounds=30, seed=2)
    config = StrategyConfig(window_tokens=200_000)
    recorder, result = run(conversation, strategies.create("mask", config), config)
    masked_somewhere = False
    for items in recorder.requests:
        request = Conversation(items)
        rounds = request.rounds()
        recent = rounds[-10].start if len(rounds) >= 10 else 0
        for index, item in enumerate(items):
            if item.role != "tool":
                continue
            original = next(i for i in conversation.items if i.id == item.id)
            masked = item.provenance.compacted == "mask"
            if index < recent:  # masked, unless the output is shorter than the placeholder would be
                assert masked or ESTIMATE.item(original) < 40, index
            assert masked or item is original
            masked_somewhere |= masked
        assert request.validate() == []
    assert masked_somewhere and result.totals.cache_read_tokens > 0


# --------------------------------------------------------------------------- openhands


def test_openhands_keeps_the_head_and_the_newest_events_and_summarizes_between() -> None:
    conversation = generate_session(rounds=40, seed=3)
    config = StrategyConfig(window_tokens=200_000)
    recorder, result = run(conversation, Condenser(config, max_size=30, keep_first=4), config)
    summary_ids = set()
    for record, items in zip(result.requests, recorder.requests):
        history = list(conversation.items[: record.index])
        if 1 + len(history) <= 30:  # the system prompt is an event
            assert items == history
            continue
        assert 1 + len(items) <= 30
        summaries = [k for k, item in enumerate(items) if item.kind == "summary"]
        assert len(summaries) == 1  # the previous summary is summarized again, never stacked
        at = summaries[0]
        # The first keep_first events (the system prompt is one), up to where the round under way ends.
        assert items[:at] == history[:at] and at == next_boundary(Conversation(history), 3)
        tail = items[at + 1 :]
        assert tail == history[len(history) - len(tail) :]
        if items[at].id not in summary_ids:  # condensed at this request: the newest max_size // 2 - keep_first - 1 at most
            assert len(tail) <= 30 // 2 - 4 - 1
            summary_ids.add(items[at].id)
        assert Conversation(items).validate() == []
    assert len(summary_ids) > 3
    assert result.totals.violations == 0


def test_openhands_does_nothing_below_its_event_count_whatever_the_tokens() -> None:
    conversation = notes_session(20, 3_000)
    config = StrategyConfig(window_tokens=32_000)
    _, result = run(conversation, strategies.create("openhands", config), config)
    assert result.totals.overflows > 0 and result.totals.violations == 0


def test_openhands_refuses_a_head_that_leaves_no_room() -> None:
    with pytest.raises(ValueError, match="keep_first"):
        Condenser(StrategyConfig(window_tokens=10_000), max_size=10, keep_first=4)


# --------------------------------------------------------------------------- claude-code


def test_claude_code_auto_compacts_at_the_window_less_the_reply_and_a_margin() -> None:
    assert auto_compact_tokens(StrategyConfig(200_000, 32_000)) == 200_000 - 20_000 - 13_000
    assert auto_compact_tokens(StrategyConfig(32_000, 4_096)) == 32_000 - 4_096 - 13_000
    assert auto_compact_tokens(StrategyConfig(16_000, 4_096)) == 4_000  # the formula is below a quarter of it


def test_claude_code_clears_all_but_the_last_three_rounds_once_that_saves_20k_tokens() -> None:
    conversation = notes_session(14, 2_500)
    config = StrategyConfig(window_tokens=1_000_000)
    recorder, result = run(conversation, strategies.create("claude-code", config), config)
    first = next(k for k, request in enumerate(recorder.requests) if any(i.provenance.compacted for i in request))
    before = recorder.requests[first - 1]
    assert not any(i.provenance.compacted for i in before)
    old_outputs = [i for i in before[: Conversation(before).rounds()[-3].start] if i.role == "tool"]
    assert sum(ESTIMATE.item(i) for i in old_outputs) < 20_000  # one request earlier the saving was too small
    request = Conversation(recorder.requests[first])
    recent = request.rounds()[-3].start
    for index, item in enumerate(request.items):
        if item.role == "tool":
            assert (item.provenance.compacted == "clear") == (index < recent)
    assert result.totals.violations == 0


def test_claude_code_summarizes_everything_but_the_newest_round_and_restores_files() -> None:
    conversation = notes_session(12, 1_500)
    config = StrategyConfig(window_tokens=32_000, max_output_tokens=4_096)
    recorder, result = run(conversation, strategies.create("claude-code", config), config)
    summarized = [k for k, request in enumerate(recorder.requests) if any(i.kind == "summary" for i in request)]
    assert summarized
    request = recorder.requests[summarized[0]]
    history = list(conversation.items[: result.requests[summarized[0]].index])
    assert request[0] is history[0] and request[1].kind == "summary"
    restored = [i for i in request if i.provenance.restored]
    assert len(restored) <= 1
    tail = request[2 + len(restored) :]
    assert tail == history[-2:]  # the newest round only: a full summary keeps no verbatim tail
    assert result.totals.overflows == 0 and result.totals.violations == 0


# --------------------------------------------------------------------------- langchain


def test_langchain_keeps_only_the_system_prompt_once_the_task_no_longer_fits() -> None:
    conversation = generate_session(rounds=40, seed=4)
    config = StrategyConfig(window_tokens=12_000, max_output_tokens=2_000)
    recorder, result = run(conversation, strategies.create("langchain", config), config)
    emptied = [k for k, items in enumerate(recorder.requests) if not items]
    assert emptied  # start_on="human": nothing after the task is a human message until the second one
    for k in emptied:
        assert recorder.headers[k].system == conversation.header.system
        assert result.requests[k].violations == (f"task: the person's first message (item {conversation.items[0].id!r}) is missing",)
    assert all(not v.startswith("structure") for record in result.requests for v in record.violations)


def test_langchain_keeps_a_tail_that_starts_on_a_human_message() -> None:
    system = Item("system", (Text("You are a helpful airline agent."),))
    items: list[Item] = []
    for number in range(30):
        items += [user(f"Question {number}: {words(number, 200)}"), assistant(f"Answer {number}: {words(-number, 150)}")]
    conversation = Conversation(items, Header(system=(system,)))
    config = StrategyConfig(window_tokens=6_000, max_output_tokens=1_000)
    recorder, result = run(conversation, strategies.create("langchain", config), config)
    shortened = 0
    for record, items_sent in zip(result.requests, recorder.requests):
        history = list(conversation.items[: record.index])
        assert items_sent and items_sent[0].role == "user"
        assert items_sent == history[len(history) - len(items_sent) :]
        shortened += len(items_sent) < len(history)
    assert shortened > 10 and result.totals.cache_read_tokens > 0


def test_langchain_without_langchain_core_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_core.messages", None)
    with pytest.raises(ContextfoldError, match=r"pip install -e '\.\[bench\]'"):
        strategies.create("langchain", StrategyConfig(window_tokens=10_000))


def test_a_summary_item_is_a_user_message_holding_a_summary_block() -> None:
    conversation = generate_session(rounds=40, seed=3)
    config = StrategyConfig(window_tokens=200_000)
    recorder, _ = run(conversation, Condenser(config, max_size=30, keep_first=4), config)
    summary = next(item for items in recorder.requests for item in items if item.kind == "summary")
    assert summary.role == "user" and isinstance(summary.blocks[0], Summary)
    assert summary.blocks[0].extra["state"]  # the summarizer's facts, carried into the next summary
