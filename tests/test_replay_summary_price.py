"""Summaries priced as if an LLM had written them: input the request replaced, cached by kind, output the summary."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_replay_run import CONFIG, ESTIMATE, Edited, keep_last_round, run, session, tokens_of

from contextfold.conversation import Conversation, Item, Summary
from contextfold.replay import Sent, Step, recount, strategies
from contextfold.replay.render import item_tokens, message_tokens
from contextfold.replay.summary_price import INSTRUCTION, LIVE_INSTRUCTION
from contextfold.usage import Usage

INSTRUCTION_TOKENS = message_tokens(INSTRUCTION, ESTIMATE)
LIVE_INSTRUCTION_TOKENS = message_tokens(LIVE_INSTRUCTION, ESTIMATE)


def summarizing(from_step: int, text: str = "Summary: parse_config fails on text input."):  # type: ignore[no-untyped-def]
    """A strategy that, from step ``from_step`` on, sends one summary (made once) then the last round."""
    summary = Item("user", (Summary(text, covers=3),), id="sum")

    def edit(items: list[Item], step: Step, copies: dict[str, Item]) -> list[Item]:
        return [items[0], summary, *keep_last_round(items, step, copies)] if step.number >= from_step else items

    return Edited("summarizing", edit), summary


def test_a_new_summary_costs_one_summarizer_call_on_the_request_it_replaces_by_each_rule(tmp_path: Path) -> None:
    conversation = session()
    strategy, summary = summarizing(2)
    dump = tmp_path / "requests.jsonl"
    result = run(conversation, strategy, requests_path=dump)
    records = result.requests
    # step 2 brings the summary: the previous request (task .. the test run's call) plus the instruction,
    # all written to the cache (no summarizer call before), and the summary's tokens at the output price
    replaced = tokens_of(conversation, conversation.items[:3])
    expected = ((replaced + INSTRUCTION_TOKENS) * 3.75 + item_tokens(summary, ESTIMATE) * 15) / 1e6
    assert records[2].cost_llm_usd - records[2].cost_usd == pytest.approx(expected)
    # the same summary sent again at step 3 is not written again
    assert [r.cost_llm_usd - r.cost_usd for r in (records[0], records[1], records[3])] == [0, 0, 0]
    totals = result.totals
    assert totals.cost_llm_usd == pytest.approx(totals.cost_usd + expected)
    # as the live path pays: the call is the agent's next request and the live instruction; the replaced request
    # is in the agent's cache (read at 0.30), what came since (the reply and the result) and the instruction are
    # written (in so short a session the live instruction outweighs the replaced request: no upper bound here)
    since = sum(item_tokens(item, ESTIMATE) for item in conversation.items[3:5])
    live = (replaced * 0.30 + (since + LIVE_INSTRUCTION_TOKENS) * 3.75 + item_tokens(summary, ESTIMATE) * 15) / 1e6
    assert [r.cost_live_usd - r.cost_usd for r in records] == pytest.approx([0, 0, live, 0])
    assert totals.cost_live_usd == pytest.approx(totals.cost_usd + live)
    recounted = recount(dump, CONFIG.window_tokens, ESTIMATE, session=conversation)
    assert (recounted.cost_llm_usd, recounted.cost_live_usd) == pytest.approx((totals.cost_llm_usd, totals.cost_live_usd))


def test_a_second_summary_reads_the_first_call_from_the_cache_within_the_ttl() -> None:
    conversation = session()
    first, _ = summarizing(1, "Summary one.")
    second, _ = summarizing(1, "Summary two.")

    class Twice:
        """Summary one at step 1, a new summary at step 3: the second call shares the first one's prefix."""

        name = "twice"

        def start(self, header):  # type: ignore[no-untyped-def]
            first.start(header)
            second.start(header)

        def step(self, step: Step) -> Sent:
            sent_first, sent_second = first.step(step), second.step(step)
            return sent_second if step.number >= 3 else sent_first

        def record_usage(self, usage: Usage) -> None:
            pass

    records = run(conversation, Twice()).requests
    added = [r.cost_llm_usd - r.cost_usd for r in records]
    assert added[0] == added[2] == 0 and added[1] > 0 and added[3] > 0
    # the second call's prompt starts with what the first one sent (tools, system, task): read, not written
    shared = tokens_of(conversation, conversation.items[:1])
    replaced = records[2].input_tokens
    summary_tokens = item_tokens(Item("user", (Summary("Summary two.", covers=3),)), ESTIMATE)
    expected = (shared * 0.30 + (replaced + INSTRUCTION_TOKENS - shared) * 3.75 + summary_tokens * 15) / 1e6
    assert added[3] == pytest.approx(expected)


def test_a_step_whose_summarizer_call_was_recorded_is_not_priced_twice() -> None:
    conversation = session()
    inner, _ = summarizing(2)

    class Paid:
        name = "paid"

        def start(self, header):  # type: ignore[no-untyped-def]
            inner.start(header)

        def step(self, step: Step) -> Sent:
            sent = inner.step(step)
            calls = ((Conversation(sent.request.items[:1]), Usage(prompt_tokens=10, output_tokens=5)),) \
                if step.number == 2 else ()
            return Sent(sent.request, calls)

        def record_usage(self, usage: Usage) -> None:
            pass

    totals = run(conversation, Paid()).totals
    assert totals.summarizer_calls == 1 and totals.cost_llm_usd == pytest.approx(totals.cost_usd)


def test_the_full_history_pays_nothing_more() -> None:
    totals = run(session(), strategies.create("none", CONFIG)).totals
    assert totals.cost_llm_usd == pytest.approx(totals.cost_usd)
