"""``replay --summarizer anthropic``: the model's summary requests are dumped as ``kind: "summarizer"`` and priced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from contextfold import importers
from contextfold.cli import cli
from contextfold.codec import conversation_to_dict
from contextfold.replay import recount
from contextfold.replay.cost import DEFAULT_PRICES
from contextfold.synthetic import generate_session
from contextfold.testing.fake_llm import FakeLLMServer, Reply
from contextfold.tokens import Estimator

ANSWER = "<analysis>notes</analysis><summary>## 1. Primary Request and Intent\nREPLAYED-SUMMARY</summary>"
WINDOW = 12_000


def test_replay_records_and_prices_the_summarizer_requests(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    path.write_text(json.dumps(conversation_to_dict(generate_session(rounds=60))), encoding="utf-8")
    fake_llm.script("messages", *[Reply(ANSWER, input_tokens=9_000, output_tokens=321)] * 30)
    dump = tmp_path / "requests.jsonl"
    result = CliRunner().invoke(
        cli,
        ["replay", str(path), "--window", str(WINDOW), "--strategy", "default", "--tokenizer", "estimate", "--json",
         "--requests", str(dump), "--summarizer", "anthropic", "--model", "claude-haiku-4-5", "--base-url", fake_llm.url],
        env={"ANTHROPIC_API_KEY": "test-key"},
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    totals = json.loads(result.output.splitlines()[-1])

    answered = len(fake_llm.requests)
    assert answered >= 1 and fake_llm.problems == []
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    helpers = [line for line in lines if line["kind"] == "summarizer"]
    assert len(helpers) == answered == totals["summarizer_calls"]
    assert all(line["output_tokens"] == 321 for line in helpers)
    assert totals["summarizer_output_tokens"] == 321 * answered and totals["summarizer_input_tokens"] > 0
    # the summarizer request dumped is the one the model got: the agent's messages, then the instruction
    sent = fake_llm.requests[0].body["messages"]
    assert helpers[0]["messages"][-1]["content"] == sent[-1]["content"][-1]["text"]
    assert "## 9. Optional Next Step" in sent[-1]["content"][-1]["text"] and len(sent) > 2

    # The cost counts them: recounted from the dump, and without them it is lower by exactly their price.
    conversation = importers.load(path)[0]
    recounted = recount(dump, WINDOW, Estimator(), DEFAULT_PRICES, session=conversation)
    assert totals["cost_usd"] == pytest.approx(recounted.cost_usd, rel=1e-6)
    agent_only = tmp_path / "agent-only.jsonl"
    agent_only.write_text("".join(json.dumps(line) + "\n" for line in lines if line["kind"] == "agent"))
    without = recount(agent_only, WINDOW, Estimator(), DEFAULT_PRICES, session=conversation)
    price = (totals["summarizer_input_tokens"] * DEFAULT_PRICES.input_per_mtok
             + totals["summarizer_output_tokens"] * DEFAULT_PRICES.output_per_mtok) / 1e6
    assert totals["cost_usd"] - without.cost_usd == pytest.approx(price, rel=1e-6)

    summaries = [m for line in lines if line["kind"] == "agent" for m in line["messages"]
                 if "REPLAYED-SUMMARY" in json.dumps(m)]
    assert summaries  # and the agent's later requests carry the model's summary
