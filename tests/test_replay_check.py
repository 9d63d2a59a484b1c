"""Honesty: every figure a replay reports is recomputed from its --requests dump alone, for every strategy."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from test_replay_run import ESTIMATE, LOSSY_STRATEGIES, Edited

from contextfold import importers
from contextfold.adapters.openai_chat import from_openai, to_openai, tools_to_openai
from contextfold.conversation import Conversation, Item, user
from contextfold.errors import SessionFormatError
from contextfold.pipeline.base import Prices
from contextfold.replay import Step, StrategyConfig, Totals, recount, replay, strategies
from contextfold.replay.base import Strategy
from contextfold.replay.dump import read_requests
from contextfold.replay.render import message_tokens, tools_tokens
from contextfold.synthetic import generate_session
from contextfold.tokens import Estimator, exact_estimator

WINDOW = 20_000
CONFIG = StrategyConfig(window_tokens=WINDOW, max_output_tokens=2_000)
PRICES = Prices(input_per_mtok=2.5, cache_write_per_mtok=3.1, cache_read_per_mtok=0.25, output_per_mtok=10)
TTL_S = 120.0
FACTORIES: dict[str, Callable[[StrategyConfig], Strategy]] = {
    **{name: (lambda config, name=name: strategies.create(name, config)) for name in strategies.names()},
    **LOSSY_STRATEGIES,
}
"""Every registered strategy (new ones are covered as they are registered), and the lossy test strategies."""


def replay_and_recount(conversation: Conversation, name: str, estimator: Estimator, dump: Path) -> tuple[Totals, Totals]:
    factory = FACTORIES[name]
    replayed = replay(conversation, factory(CONFIG), CONFIG, tokenizer=estimator, prices=PRICES, cache_ttl_s=TTL_S,
                      requests_path=dump).totals
    recounted = recount(dump, WINDOW, estimator, PRICES, TTL_S, session=conversation,
                        max_output_tokens=CONFIG.max_output_tokens)
    return replayed, recounted


def priced_from_scratch(dump: Path, estimator: Estimator, prices: Prices, ttl_s: float) -> dict[str, float]:
    """The cost figures of a dump, by the cache rule the replay documents, written here apart from its code.

    Tokens are the replay's own per-message rule (counting is not what is
    checked here); the cache, the TTL and the prices are recomputed: an agent
    request reads from the cache the tools and the longest run of leading
    messages unchanged since the previous agent request, if that came at most
    ``ttl_s`` earlier with the same tools, and writes the rest; a summarizer
    request is read as plain input.
    """
    previous: dict | None = None
    figures = {"cost_usd": 0.0, "cost_no_cache_usd": 0.0, "cache_read_tokens": 0, "input_tokens": 0}
    for line in dump.read_text().splitlines():
        request = json.loads(line)
        tools = tools_tokens(request["tools"], estimator)
        tokens = [message_tokens(message, estimator) for message in request["messages"]]
        sent, output = tools + sum(tokens), request["output_tokens"]
        read = 0
        if request["kind"] == "agent":
            if previous is not None and previous["tools"] == request["tools"] and (
                    None in (previous["t"], request["t"]) or request["t"] - previous["t"] <= ttl_s):
                same = 0
                while same < min(len(tokens), len(previous["messages"])) and \
                        previous["messages"][same] == request["messages"][same]:
                    same += 1
                read = tools + sum(tokens[:same])
            previous = request
            cost = read * prices.cache_read_per_mtok + (sent - read) * prices.cache_write_per_mtok
        else:
            cost = sent * prices.input_per_mtok
        figures["cost_usd"] += (cost + output * prices.output_per_mtok) / 1e6
        figures["cost_no_cache_usd"] += (sent * prices.input_per_mtok + output * prices.output_per_mtok) / 1e6
        figures["cache_read_tokens"] += read
        figures["input_tokens"] += sent
    return figures


def assert_priced_as_documented(replayed: Totals, dump: Path, estimator: Estimator) -> None:
    for figure, value in priced_from_scratch(dump, estimator, PRICES, TTL_S).items():
        assert getattr(replayed, figure) == pytest.approx(value, rel=1e-9), figure


def assert_agree(replayed: Totals, recounted: Totals) -> None:
    for figure in ("cost_usd", "cost_no_cache_usd", "cost_llm_usd", "cost_live_usd", "cache_hit_ratio", "peak_tokens",
                   "input_tokens", "output_tokens"):
        assert getattr(recounted, figure) == pytest.approx(getattr(replayed, figure), rel=0.01), figure
    for probe, value in replayed.survival.items():
        assert recounted.survival[probe] == (None if value is None else pytest.approx(value, abs=0.01)), probe
    for figure in ("recall", "recall_far", "worst_request_recall", "recall_needed", "recall_far_needed"):
        assert getattr(recounted, figure) == getattr(replayed, figure), figure
    assert (recounted.requests, recounted.summarizer_calls) == (replayed.requests, replayed.summarizer_calls)
    assert recounted.violations == replayed.violations


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_a_corpus_session_recounts_to_the_same_figures(
    corpus_dir: Path, tokenizers_dir: Path, tmp_path: Path, name: str
) -> None:
    conversation = importers.load(corpus_dir / "mini-swe-agent" / "astropy__astropy-12907.traj.json")[0]
    replayed, recounted = replay_and_recount(
        conversation, name, exact_estimator("o200k_base", tokenizers_dir), tmp_path / "requests.jsonl"
    )
    assert replayed.requests == 64 and replayed.cache_read_tokens > 0
    assert_agree(replayed, recounted)
    assert_priced_as_documented(replayed, tmp_path / "requests.jsonl", exact_estimator("o200k_base", tokenizers_dir))


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", sorted(FACTORIES))  # every strategy on one seed in the main run, on three under -m slow
def test_synthetic_sessions_recount_to_the_same_figures(tmp_path: Path, name: str, seed: int) -> None:
    conversation = generate_session(rounds=50, seed=seed)
    replayed, recounted = replay_and_recount(conversation, name, ESTIMATE, tmp_path / "requests.jsonl")
    assert replayed.peak_tokens > 0
    assert_agree(replayed, recounted)
    assert_priced_as_documented(replayed, tmp_path / "requests.jsonl", ESTIMATE)


def test_lossy_strategies_give_the_recount_something_to_disagree_about(tmp_path: Path) -> None:
    conversation = generate_session(rounds=50, seed=1)
    replayed, recounted = replay_and_recount(conversation, "keep-last-round", ESTIMATE, tmp_path / "r.jsonl")
    assert replayed.violations > 0 and replayed.survival["mean"] < 0.9
    assert_agree(replayed, recounted)


def test_the_recount_reads_the_dump_not_the_replay(tmp_path: Path) -> None:
    conversation = generate_session(rounds=20, seed=4)
    dump = tmp_path / "requests.jsonl"
    replayed, _ = replay_and_recount(conversation, "none", ESTIMATE, dump)
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    middle = lines[len(lines) // 2]
    middle["messages"][2]["content"] += " and some words added after the fact" * 20
    dump.write_text("".join(json.dumps(line) + "\n" for line in lines[:-1]))
    tampered = recount(dump, WINDOW, ESTIMATE, PRICES, TTL_S, session=conversation)
    assert tampered.requests == replayed.requests - 1
    assert tampered.cache_read_tokens < replayed.cache_read_tokens - replayed.peak_tokens  # two prefixes broken
    assert tampered.cost_usd != pytest.approx(replayed.cost_usd, rel=0.01)


def test_the_dump_holds_each_request_in_chat_completions_form(tmp_path: Path) -> None:
    conversation = generate_session(rounds=10, seed=6)
    dump = tmp_path / "requests.jsonl"
    result = replay(conversation, strategies.create("none", CONFIG), CONFIG, tokenizer=ESTIMATE, requests_path=dump)
    requests = list(read_requests(dump))
    assert [(r.step, r.index, r.kind) for r in requests] == [(r.step, r.index, "agent") for r in result.requests]
    assert [r.output_tokens for r in requests] == [r.output_tokens for r in result.requests]
    assert [r.time_s for r in requests] == [r.time_s for r in result.requests]
    last = requests[-1]
    assert last.messages == to_openai(conversation.with_items(conversation.items[: last.index]))
    assert last.tools == tools_to_openai(conversation)
    assert from_openai(last.messages).validate() == []


def test_without_the_session_only_what_the_dump_can_say_is_recounted(tmp_path: Path) -> None:
    conversation = generate_session(rounds=10, seed=6)
    dump = tmp_path / "requests.jsonl"
    replayed = replay(conversation, LOSSY_STRATEGIES["keep-last-round"](CONFIG), CONFIG, tokenizer=ESTIMATE,
                      requests_path=dump).totals
    alone = recount(dump, WINDOW, ESTIMATE)
    assert alone.cost_usd == pytest.approx(replayed.cost_usd, rel=0.01)
    assert set(alone.survival.values()) == {None}
    assert alone.violations == 0 < replayed.violations  # the lost task needs the session to be noticed


def test_a_malformed_dump_names_the_line_and_field(tmp_path: Path) -> None:
    dump = tmp_path / "requests.jsonl"
    dump.write_text('{"step": 0, "index": 1, "t": null, "kind": "agent", "output_tokens": 3, "tools": [], "messages": []}\n'
                    '{"step": 1, "index": 3, "t": null, "kind": "agent", "output_tokens": "3"}\n')
    with pytest.raises(SessionFormatError) as error:
        recount(dump, WINDOW, ESTIMATE)
    assert error.value.location == "line 2, field 'output_tokens'"
    dump.write_text("{not json\n")
    with pytest.raises(SessionFormatError, match="line 1"):
        recount(dump, WINDOW, ESTIMATE)


def test_the_task_the_invariants_hold_to_is_the_persons_first_message_not_a_harness_text_before_it(tmp_path: Path) -> None:
    """A Claude Code transcript may open with harness text (a slash command's caveat) before the person's first
    request: the pipeline keeps the request as the task and lets the caveat go, and neither the replay nor a
    recount of its dump calls that a lost task; losing the request still is one."""
    caveat = user("<local-command-caveat>Caveat: The messages below were generated by the user while running local "
                  "commands. DO NOT respond to these messages unless the user explicitly asks you to."
                  "</local-command-caveat>", id="caveat")
    rounds = generate_session(rounds=6, seed=3)
    conversation = rounds.with_items([caveat, *rounds.items])

    def without(item_id: str) -> Callable[[list[Item], Step, dict[str, Item]], list[Item]]:
        return lambda items, step, copies: [i for i in items if i.id != item_id]

    task_id = rounds.items[0].id
    for dropped, lost in (("caveat", False), (task_id, True)):
        dump = tmp_path / f"{dropped}.jsonl"
        replayed = replay(conversation, Edited(f"drop {dropped}", without(dropped)), CONFIG, tokenizer=ESTIMATE,
                          requests_path=dump).totals
        recounted = recount(dump, WINDOW, ESTIMATE, PRICES, TTL_S, session=conversation)
        assert (replayed.violations > 0, recounted.violations > 0) == (lost, lost)
