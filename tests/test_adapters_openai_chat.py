"""OpenAI Chat Completions: exact round trips and the mapping onto the neutral model."""

from __future__ import annotations

from typing import Any

import pytest

from contextfold import Conversation, Document, Image, Item, Opaque, Summary, Text, Thinking, ToolCall, ToolResult
from contextfold.adapters import from_openai, to_openai, tools_to_openai


def _round_trip(messages: list[Any], tools: Any = None) -> Conversation:
    conversation = from_openai(messages, tools=tools)
    assert to_openai(conversation) == messages
    assert tools_to_openai(conversation) == (tools or [])
    assert conversation.validate() == []
    return conversation


def _call(call_id: str, arguments: str = "{}", name: str = "bash") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_leading_system_and_developer_form_the_header() -> None:
    messages = [
        {"role": "system", "content": "policy"},
        {"role": "developer", "content": [{"type": "text", "text": "dev notes"}], "name": "ops"},
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "later instruction"},
    ]
    conversation = _round_trip(messages)
    assert [i.role for i in conversation.header.system] == ["system", "developer"]
    assert [i.role for i in conversation] == ["user", "system"]


@pytest.mark.parametrize(
    "assistant",
    [
        {"role": "assistant", "content": None, "tool_calls": [_call("c1")]},
        {"role": "assistant", "content": "", "tool_calls": [_call("c1")]},
        {"role": "assistant", "tool_calls": [_call("c1")]},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "t"}, {"type": "refusal", "refusal": "no"}],
            "tool_calls": [_call("c1")],
        },
        {
            "role": "assistant",
            "content": "calling",
            "tool_calls": [_call("c1")],
            "reasoning_content": "思考",
            "refusal": None,
            "name": "a",
        },
    ],
    ids=["null", "empty", "absent", "parts", "reasoning"],
)
def test_assistant_content_shapes(assistant: dict[str, Any]) -> None:
    messages = [{"role": "user", "content": "go"}, assistant, {"role": "tool", "tool_call_id": "c1", "content": "out"}]
    conversation = _round_trip(messages)
    item = conversation[1]
    assert item.tool_calls == (ToolCall("c1", "bash", {}, "{}", {"type": "function"}),)  # type is optional on input
    assert any(isinstance(b, Thinking) for b in item.blocks) == ("reasoning_content" in assistant)


def test_arguments_keep_their_exact_bytes() -> None:
    raw = '{"command":  "ls -la",\n "路径": "\\u4e2d"}'
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c1", raw), _call("c2", '{"n": 2}')]},
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "two"}]},
        {"role": "tool", "tool_call_id": "c1", "content": ""},
    ]
    conversation = _round_trip(messages)
    call = conversation[1].tool_calls[0]
    assert call.arguments == {"command": "ls -la", "路径": "中"}
    assert call.raw_arguments == raw
    assert conversation.rounds()[0].call_ids == ("c1", "c2")


def test_parts_map_to_neutral_kinds() -> None:
    content = [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "high"}},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"}},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
    ]
    conversation = _round_trip([{"role": "user", "content": content, "name": "alice"}])
    blocks = conversation[0].blocks
    assert [type(b) for b in blocks] == [Text, Image, Document, Opaque]
    assert blocks[1] == Image(url="data:image/png;base64,iVBORw0KGgo=", extra={"image_url": {"detail": "high"}})
    assert conversation[0].meta["extra"] == {"name": "alice"}


def test_unknown_keys_and_custom_calls_round_trip() -> None:
    messages = [
        {"role": "user", "content": "patch it"},
        {
            "role": "assistant",
            "content": None,
            "function_call": None,
            "provider_specific_fields": {"x": 1},
            "tool_calls": [
                {"id": "c1", "type": "custom", "custom": {"name": "apply_patch", "input": "*** Begin Patch"}},
                {"index": 1, "id": "c2", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "done", "extra": {"returncode": 0}},
        {"role": "tool", "tool_call_id": "c2", "content": "ok"},
        {"role": "assistant", "content": "fin", "tool_calls": []},
    ]
    tools = [
        {
            "type": "function",
            "function": {"name": "bash", "description": "Run", "parameters": {"type": "object"}, "strict": True},
        },
        {"type": "function", "function": {"name": "noargs"}},
        {"type": "custom", "custom": {"name": "apply_patch"}},
    ]
    conversation = _round_trip(messages, tools)
    assert conversation[1].tool_calls[0].raw_arguments == "*** Begin Patch"
    assert isinstance(conversation.header.tools[2], Opaque)


def test_known_call_ids_accept_results_of_earlier_batches() -> None:
    batch = [{"role": "tool", "tool_call_id": "c7", "content": "late"}]
    assert to_openai(from_openai(batch, known_call_ids={"c7"})) == batch


def test_summary_and_neutral_items_are_written_canonically() -> None:
    conversation = Conversation(
        [
            Item("user", (Summary("previously: tests pass", covers=4),)),
            Item("assistant", (Thinking("why"), ToolCall("c1", "bash", {"command": "ls"}))),
            Item("tool", (ToolResult("c1", "files", is_error=True),)),
        ]
    )
    messages = to_openai(conversation)
    assert messages == [
        {"role": "user", "content": "previously: tests pass"},
        {
            "role": "assistant",
            "reasoning_content": "why",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "[tool error] files"},
    ]
