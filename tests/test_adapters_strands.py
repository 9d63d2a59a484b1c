"""The Strands message adapter: exact round trips, results grouped back into their message, typed errors."""

from __future__ import annotations

import pytest

from contextfold import Conversation, InvalidContent, Summary, ToolResult, UnknownRole
from contextfold.adapters.strands import from_strands, to_strands, usage_from_strands
from contextfold.conversation import Item

CALLS = {"role": "assistant", "content": [
    {"text": "Two reads."},
    {"toolUse": {"toolUseId": "t1", "name": "read", "input": {"path": "a.py"}}},
    {"toolUse": {"toolUseId": "t2", "name": "read", "input": {}, "reasoningSignature": "x"}},
], "metadata": {"usage": {"inputTokens": 50, "outputTokens": 9, "totalTokens": 89, "cacheReadInputTokens": 30}}}
RESULTS = {"role": "user", "content": [
    {"toolResult": {"toolUseId": "t2", "status": "error", "content": [{"text": "no such file"}, {"json": {"code": 2}}]}},
    {"text": "and a note between"},
    {"toolResult": {"toolUseId": "t1", "content": []}},
    {"toolResult": {"toolUseId": "t1x", "status": "success"}},
]}
HISTORIES = [
    [{"role": "user", "content": [{"text": "task"}]}],
    [{"role": "user", "content": [{"text": "task"}, {"image": {"format": "png", "source": {"bytes": "aGk="}}}]},
     {**CALLS, "content": [*CALLS["content"], {"toolUse": {"toolUseId": "t1x", "name": "ls", "input": {}}}]},
     RESULTS,
     {"role": "assistant", "content": [{"reasoningContent": {"reasoningText": {"text": "r", "signature": "s"}}},
                                       {"text": "done"}, {"cachePoint": {"type": "default"}}]}],
]


@pytest.mark.parametrize("messages", HISTORIES)
def test_round_trip_is_exact(messages: list[dict]) -> None:
    conversation = from_strands(messages)
    assert to_strands(conversation) == messages
    assert conversation.validate() == []


def test_results_are_tool_items_and_errors_are_flagged() -> None:
    conversation = from_strands(HISTORIES[1])
    results = [item.tool_result for item in conversation if item.role == "tool"]
    assert [(r.call_id, r.is_error) for r in results] == [("t2", True), ("t1", None), ("t1x", False)]
    assert results[0].text.startswith("no such file")


def test_foreign_items_are_written_as_strands_messages() -> None:
    task = from_strands([{"role": "user", "content": [{"text": "task"}]}, CALLS])
    summary = Item("user", (Summary("what happened", covers=3),))
    synthetic = [Item("tool", (ToolResult(call, "(no result)", True),)) for call in ("t1", "t2")]
    written = to_strands(Conversation([*task.items, *synthetic, summary]))
    assert written[2] == {"role": "user", "content": [
        {"toolResult": {"toolUseId": "t1", "status": "error", "content": [{"text": "(no result)"}]}},
        {"toolResult": {"toolUseId": "t2", "status": "error", "content": [{"text": "(no result)"}]}},
    ]}
    assert written[3] == {"role": "user", "content": [{"text": "what happened"}]}


def test_errors_name_the_message_and_field() -> None:
    with pytest.raises(InvalidContent) as error:
        from_strands([{"role": "user", "content": [{"toolResult": {"toolUseId": "zz", "content": []}}]}])
    assert (error.value.index, error.value.field) == (0, "content[0].toolResult.toolUseId")
    with pytest.raises(UnknownRole):
        from_strands([{"role": "system", "content": [{"text": "x"}]}])
    assert from_strands([{"role": "user", "content": [{"toolResult": {"toolUseId": "t9"}}]}],
                        known_call_ids={"t9"}).validate() != []  # known from before: read, though unpaired here


def test_usage_counts_the_whole_prompt_once() -> None:
    usage = usage_from_strands(CALLS)  # Anthropic style: the cache reads are not in inputTokens
    assert (usage.prompt_tokens, usage.cache_read_tokens, usage.output_tokens) == (80, 30, 9)
    openai_style = {"metadata": {"usage": {"inputTokens": 50, "outputTokens": 9, "totalTokens": 59,
                                           "cacheReadInputTokens": 30}}}
    assert usage_from_strands(openai_style).prompt_tokens == 50
    assert usage_from_strands({"role": "user", "content": []}) is None
