"""Provider-native context management: Anthropic's edits and server compaction, OpenAI's compaction endpoint."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import pytest

from contextfold.context import Context, Storage
from contextfold.conversation import Conversation, Header, Item, Summary, Text, ToolCall, assistant, tool, user
from contextfold.errors import ContextfoldError
from contextfold.pipeline.base import Budget, Policy
from contextfold.pipeline.stages.clear import clear
from contextfold.providers.anthropic_native import (
    COMPACTION_BETA,
    CONTEXT_MANAGEMENT_BETA,
    ClearThinking,
    ClearToolUses,
    ServerCompaction,
    native_events,
    with_context_management,
)
from contextfold.summarizers import SummaryRequest
from contextfold.summarizers.responses_compaction import OpenAIResponsesCompactionSummarizer
from contextfold.testing.fake_llm import FakeLLMServer, Fault, Reply
from contextfold.testing.wire_checks import check_responses, compaction_signature
from contextfold.tokens import Estimator, heuristic_tokens

NATIVE = Policy(native_clearing=True)
TOOLS = [{"name": "bash", "description": "run", "input_schema": {"type": "object", "properties": {}}}]


def test_edits_are_written_with_the_fields_and_betas_anthropic_defines() -> None:
    request = {"system": "s", "messages": [{"role": "user", "content": "hi"}], "tools": []}
    clearing = ClearToolUses(trigger_tokens=30_000, keep_tool_uses=3, clear_at_least_tokens=5_000,
                             exclude_tools=("todo_write",), clear_tool_inputs=True)
    sent, headers = with_context_management(request, clearing, ClearThinking(keep_turns=2),
                                            ServerCompaction(trigger_tokens=150_000, instructions="keep paths"),
                                            policy=NATIVE)
    assert sent["context_management"] == {"edits": [
        {"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 30_000},
         "keep": {"type": "tool_uses", "value": 3}, "clear_at_least": {"type": "input_tokens", "value": 5_000},
         "exclude_tools": ["todo_write"], "clear_tool_inputs": True},
        {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}},
        {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 150_000}, "instructions": "keep paths"},
    ]}
    assert headers == {"anthropic-beta": f"{COMPACTION_BETA},{CONTEXT_MANAGEMENT_BETA}"}
    assert "context_management" not in request and sent["messages"] is request["messages"]
    assert ClearToolUses(trigger_tool_uses=20, clear_tool_inputs=("bash",)).to_wire() == {
        "type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 20}, "clear_tool_inputs": ["bash"]}
    assert ClearThinking(keep_turns="all").to_wire() == {"type": "clear_thinking_20251015", "keep": "all"}
    assert ServerCompaction(pause_after_compaction=True).to_wire() == {"type": "compact_20260112",
                                                                       "pause_after_compaction": True}


def test_one_clearing_authority_at_a_time() -> None:
    request = {"messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(ContextfoldError, match="one clearing authority"):
        with_context_management(request, ClearToolUses(), policy=Policy())
    assert with_context_management(request, ClearThinking(), ServerCompaction(), policy=Policy())[0]  # no tool clearing
    with pytest.raises(ContextfoldError, match="once"):
        with_context_management(request, ClearThinking(), ClearThinking(keep_turns=1), policy=NATIVE)
    with pytest.raises(ValueError, match="not both"):
        ClearToolUses(trigger_tokens=1, trigger_tool_uses=1)
    # With native clearing the clear stage does nothing, even where it would otherwise clear everything old.
    items = [user("task")]
    for k in range(12):
        items += [assistant("", [ToolCall(f"c{k}", "bash", {"command": "ls"})]), tool(f"c{k}", "x " * 4_000)]
    conversation = Conversation([*items, user("Now the next file.")])  # an earlier turn's outputs: not spared
    estimator = Estimator()

    def budget(policy: Policy) -> Budget:
        return Budget(policy, 100_000, 80_000, estimator.conversation, estimator.item, idle_s=10_000)

    assert clear(conversation, budget(Policy()))[1]  # the cache is cold: contextfold would clear
    assert clear(conversation, budget(NATIVE)) == (conversation, [])


def test_a_native_request_through_the_sdk_and_what_the_server_did_recorded(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    context = Context(window_tokens=200_000, policy=NATIVE, storage=Storage(transcript=tmp_path, session_id="native"))
    context.add([{"role": "user", "content": "Fix f1.py"}], system="You are a coding agent.", tools=TOOLS)
    context.add([{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash",
                                                    "input": {"command": "cat f1.py"}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x = 1"}]}])
    applied = {"applied_edits": [{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 4,
                                  "cleared_input_tokens": 12_345}]}
    summary = "SERVER-SUMMARY: f1.py holds x = 1."
    compaction = {"type": "compaction", "content": summary, "signature": compaction_signature(summary)}
    fake_llm.script("messages", Reply("Done.", blocks=(compaction,), extra={"context_management": applied}),
                    Reply("Next."))
    client = anthropic.Anthropic(base_url=fake_llm.url, api_key="test-key", max_retries=0)
    edits = (ClearToolUses(trigger_tokens=30_000, keep_tool_uses=2), ServerCompaction(trigger_tokens=60_000))

    request, headers = with_context_management(context.prepare(), *edits, policy=context.policy)
    response = client.beta.messages.create(model="claude-sonnet-4-6", max_tokens=1_024, **request, extra_headers=headers)
    context.add_response(response)
    events = native_events(response)
    context.record_events(events)

    assert fake_llm.problems == []
    sent = fake_llm.requests[0]
    assert set(sent.headers["anthropic-beta"].split(",")) == {CONTEXT_MANAGEMENT_BETA, COMPACTION_BETA}
    assert [e["type"] for e in sent.body["context_management"]["edits"]] == ["clear_tool_uses_20250919", "compact_20260112"]
    assert [(e.stage, e.action) for e in events] == [("native", "cleared"), ("native", "compacted")]
    assert events[0].data["cleared_input_tokens"] == 12_345 and "4 tool uses" in events[0].detail
    assert events[1].data["summary_chars"] == len(compaction["content"]) and not events[1].data["failed"]
    assert all(e in context.events for e in events)

    kept = context.history.items[-1]  # the compaction block is kept in the history and goes back verbatim
    assert any(isinstance(b, Summary) and b.native == compaction and b.text == summary for b in kept.blocks)
    # It stands for everything the request sent: those items left the view, the reply leads it.
    assert [item.id for item in context.view()] == [kept.id]
    assert [(e.stage, e.action) for e in context.events[-1:]] == [("native", "compacted")]
    context.add([{"role": "user", "content": "Go on."}])
    follow_up, headers = with_context_management(context.prepare(), *edits, policy=context.policy)
    client.beta.messages.create(model="claude-sonnet-4-6", max_tokens=1_024, **follow_up, extra_headers=headers)
    assert fake_llm.problems == []
    first = fake_llm.requests[1].body["messages"][0]["content"][0]
    assert {k: v for k, v in first.items() if k != "cache_control"} == compaction  # first, as returned
    context.close()
    records = [json.loads(line) for line in (tmp_path / "native.jsonl").read_text().splitlines()]
    text = json.dumps(records)
    assert "SERVER-SUMMARY" in text and "12345" in text  # the block and the event are in the transcript


def test_a_failed_server_compaction_is_reported_as_such() -> None:
    (event,) = native_events({"content": [{"type": "compaction", "content": None}], "usage": {"input_tokens": 1}})
    assert event.data["failed"] and "no summary" in event.detail
    assert native_events({"content": [{"type": "text", "text": "hi"}]}) == []


# --------------------------------------------------------------------------- OpenAI's compaction endpoint


def span() -> list:
    return [
        user("Please rename the helper in utils.py."),
        assistant("Looking.", [ToolCall("call_1", "bash", {"command": "grep -n helper utils.py"})]),
        tool("call_1", "3: def helper():"),
        assistant("Renamed it."),
    ]


def test_the_compaction_endpoint_as_summarizer(fake_llm: FakeLLMServer) -> None:
    fake_llm.script("compact", Reply("ENCRYPTED-BLOB", input_tokens=700, output_tokens=90))
    header = Header(system=(Item("system", (Text("You are a coding agent."),)),))
    summarizer = OpenAIResponsesCompactionSummarizer(base_url=fake_llm.openai_url, api_key="test-key")
    result = summarizer.summarize(SummaryRequest(span(), header, 1_000, heuristic_tokens))

    (received,) = fake_llm.requests
    assert received.path == "/v1/responses/compact" and check_responses(received.headers, received.body) == []
    kinds = [item.get("type", "message") for item in received.body["input"]]
    assert kinds == ["message", "message", "function_call", "function_call_output", "message"]
    assert received.body["model"] == "gpt-5.1-codex-mini" and received.body["instructions"] == "You are a coding agent."
    assert result.fallback is None
    assert result.native_provider == "responses" and result.native is not None
    assert result.native["type"] == "compaction" and result.native["encrypted_content"] == "ENCRYPTED-BLOB"
    assert "## 1. Primary Request and Intent" in result.text and "rename the helper" in result.text
    ((_, usage),) = result.calls
    assert (usage.prompt_tokens, usage.output_tokens) == (700, 90)


def test_a_failing_compaction_endpoint_falls_back(fake_llm: FakeLLMServer) -> None:
    fake_llm.script("compact", Fault.server_error(), Fault.server_error())
    summarizer = OpenAIResponsesCompactionSummarizer(base_url=fake_llm.openai_url, api_key="k", max_retries=1,
                                                     sleep=lambda s: None)
    result = summarizer.summarize(SummaryRequest(span(), Header(), 1_000, heuristic_tokens))
    assert result.fallback is not None and "HTTP 500" in result.fallback and result.native is None
    assert len(fake_llm.requests) == 2
