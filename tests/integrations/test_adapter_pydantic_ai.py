"""The pydantic-ai message adapter: exact round trips over every part kind, pairs kept, foreign items written."""

from __future__ import annotations

from support import require

from contextfold import Conversation, Summary, ToolResult
from contextfold.adapters.pydantic_ai import from_pydantic_ai, to_pydantic_ai, usage_from_pydantic_ai
from contextfold.conversation import Item

m = require("pydantic_ai.messages", "pydantic-ai")
usage_module = require("pydantic_ai.usage", "pydantic-ai")

HISTORY = [
    m.ModelRequest(parts=[
        m.SystemPromptPart("You audit logs."),
        m.UserPromptPart(["Read this and the log:", m.ImageUrl("https://example.com/a.png")]),
    ], instructions="Be brief."),
    m.ModelResponse(parts=[
        m.ThinkingPart("first a", signature="sig"),
        m.TextPart("Reading."),
        m.ToolCallPart("read_chunk", '{"chunk": 0}', "c1"),
        m.ToolCallPart("read_chunk", {"chunk": 1}, "c2"),
        m.ToolCallPart("ls", None, "c3"),
        m.NativeToolCallPart("web_search", {"q": "x"}, "b1", provider_name="openai"),
    ], usage=usage_module.RequestUsage(input_tokens=120, output_tokens=30, cache_read_tokens=100), model_name="gpt"),
    m.ModelRequest(parts=[
        m.ToolReturnPart("read_chunk", "== chunk 0 ==", "c1"),
        m.ToolReturnPart("read_chunk", {"lines": 24}, "c2"),
        m.ToolReturnPart("ls", "no such directory", "c3", outcome="retried"),
        m.UserPromptPart("carry on"),
    ]),
    m.ModelResponse(parts=[m.TextPart("Done.")]),
]


def test_round_trip_is_exact() -> None:
    conversation = from_pydantic_ai(HISTORY)
    assert to_pydantic_ai(conversation) == HISTORY
    assert conversation.validate() == []
    assert [i.role for i in conversation] == ["system", "user", "assistant", "tool", "tool", "tool", "user", "assistant"]


def test_calls_and_returns_are_paired_and_retries_are_errors() -> None:
    conversation = from_pydantic_ai(HISTORY)
    calls = conversation.items[2].tool_calls
    assert [(c.id, dict(c.arguments)) for c in calls] == [("c1", {"chunk": 0}), ("c2", {"chunk": 1}), ("c3", {})]
    results = [item.tool_result for item in conversation if item.role == "tool"]
    assert [(r.call_id, r.is_error) for r in results] == [("c1", False), ("c2", False), ("c3", True)]


def test_foreign_items_become_requests_and_responses() -> None:
    head = from_pydantic_ai(HISTORY[:2]).items
    synthetic = [Item("tool", (ToolResult(c, "(no result)", True, "read_chunk"),)) for c in ("c1", "c2", "c3")]
    summary = Item("user", (Summary("what happened", covers=4),))
    written = to_pydantic_ai(Conversation([*head, *synthetic, summary]))
    assert [type(x).__name__ for x in written] == ["ModelRequest", "ModelResponse", "ModelRequest", "ModelRequest"]
    assert [p.tool_call_id for p in written[2].parts] == ["c1", "c2", "c3"]
    assert written[3].parts[0].content == "what happened"


def test_usage_of_a_response() -> None:
    usage = usage_from_pydantic_ai(HISTORY[1])
    assert (usage.prompt_tokens, usage.cache_read_tokens, usage.output_tokens) == (120, 100, 30)
    assert usage_from_pydantic_ai(HISTORY[0]) is None
