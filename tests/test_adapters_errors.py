"""Malformed input raises a typed error naming the message index and the field at fault."""

from __future__ import annotations

from typing import Any

import pytest

from contextfold import (
    EmptyContent,
    InvalidContent,
    InvalidEncoding,
    InvalidMessage,
    InvalidToolArguments,
    OversizedBlock,
    UnknownRole,
)
from contextfold.adapters import (
    MAX_BLOCK_BYTES,
    from_anthropic,
    from_openai,
    from_responses,
    to_anthropic,
    to_openai,
    to_responses,
)

HUGE = "x" * (MAX_BLOCK_BYTES + 1)
USER = {"role": "user", "content": "hi"}
CALL = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]}
CHAT_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
}
RS_CALL = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}

ANTHROPIC_CASES = [
    ("unknown role", [{"role": "bot", "content": "x"}], UnknownRole, 0, "role"),
    ("missing role", [{"content": "x"}], UnknownRole, 0, "role"),
    (
        "result without call",
        [USER, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "nope", "content": "r"}]}],
        InvalidContent,
        1,
        "content[0].tool_use_id",
    ),
    (
        "result before its call",
        [USER, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}, CALL],
        InvalidContent,
        1,
        "content[0].tool_use_id",
    ),
    (
        "lone surrogate in text",
        [{"role": "user", "content": [{"type": "text", "text": "ok"}, {"type": "text", "text": "bad \ud800"}]}],
        InvalidEncoding,
        0,
        "content[1].text",
    ),
    ("lone surrogate in string content", [{"role": "user", "content": "bad \udfff"}], InvalidEncoding, 0, "content"),
    (
        "undecodable bytes in tool input",
        [
            USER,
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {"p": b"\xff\xfe"}}],
            },
        ],
        InvalidEncoding,
        1,
        "content[0].input.p",
    ),
    (
        "surrogate inside a tool result",
        [
            USER,
            CALL,
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "\ud83d"}]}
                ],
            },
        ],
        InvalidEncoding,
        2,
        "content[0].content[0].text",
    ),
    (
        "empty string content before the end",
        [{"role": "user", "content": ""}, {"role": "assistant", "content": "a"}],
        EmptyContent,
        0,
        "content",
    ),
    (
        "empty list content before the end",
        [USER, {"role": "assistant", "content": []}, USER],
        EmptyContent,
        1,
        "content",
    ),
    (
        "empty text block",
        [{"role": "user", "content": [{"type": "text", "text": ""}]}],
        EmptyContent,
        0,
        "content[0].text",
    ),
    (
        "empty text inside a tool result",
        [
            USER,
            CALL,
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": ""}]}],
            },
        ],
        EmptyContent,
        2,
        "content[0].content[0].text",
    ),
    (
        "oversized block",
        [USER, {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": HUGE}]}],
        OversizedBlock,
        1,
        "content[1]",
    ),
    ("content an int", [{"role": "user", "content": 5}], InvalidContent, 0, "content"),
    ("content missing", [{"role": "user"}], InvalidContent, 0, "content"),
    ("message not an object", [USER, "hello"], InvalidContent, 1, "message"),
    ("block not an object", [{"role": "user", "content": ["hello"]}], InvalidContent, 0, "content[0]"),
    (
        "tool input not an object",
        [USER, {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "{}"}]}],
        InvalidToolArguments,
        1,
        "content[0].input",
    ),
    (
        "tool_use in a user message",
        [{"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}],
        InvalidContent,
        0,
        "content[0].type",
    ),
    (
        "is_error-carrying result with int content",
        [USER, CALL, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": 3}]}],
        InvalidContent,
        2,
        "content[0].content",
    ),
    (
        "image without source",
        [{"role": "user", "content": [{"type": "image"}]}],
        InvalidContent,
        0,
        "content[0].source",
    ),
    (
        "base64 image without data",
        [{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png"}}]}],
        InvalidContent,
        0,
        "content[0].source.data",
    ),
]

CHAT_CASES = [
    ("unknown role", [USER, {"role": "robot", "content": "x"}], UnknownRole, 1, "role"),
    ("deprecated function role", [USER, {"role": "function", "name": "f", "content": "x"}], UnknownRole, 1, "role"),
    (
        "tool message without call",
        [USER, {"role": "tool", "tool_call_id": "zz", "content": "r"}],
        InvalidContent,
        1,
        "tool_call_id",
    ),
    ("tool message without id", [USER, CHAT_CALL, {"role": "tool", "content": "r"}], InvalidContent, 2, "tool_call_id"),
    (
        "tool_calls not a list",
        [USER, {"role": "assistant", "content": None, "tool_calls": {"id": "c"}}],
        InvalidContent,
        1,
        "tool_calls",
    ),
    (
        "arguments not a string",
        [
            USER,
            {
                "role": "assistant",
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": {}}}],
            },
        ],
        InvalidContent,
        1,
        "tool_calls[0].function.arguments",
    ),
    ("content an int", [{"role": "user", "content": 7}], InvalidContent, 0, "content"),
    ("user content null", [{"role": "user", "content": None}], InvalidContent, 0, "content"),
    (
        "surrogate in arguments",
        [
            USER,
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a": "\ud800"}'}}
                ],
            },
        ],
        InvalidEncoding,
        1,
        "tool_calls[0].function.arguments",
    ),
    (
        "undecodable bytes in a part",
        [{"role": "user", "content": [{"type": "text", "text": b"\xc3\x28"}]}],
        InvalidEncoding,
        0,
        "content[0].text",
    ),
    (
        "decodable bytes are still not text",
        [{"role": "user", "content": [{"type": "text", "text": b"ok"}]}],
        InvalidContent,
        0,
        "content[0].text",
    ),
    (
        "oversized string content",
        [{"role": "system", "content": "s"}, {"role": "user", "content": HUGE}],
        OversizedBlock,
        1,
        "content",
    ),
    (
        "oversized image",
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + HUGE}}]}],
        OversizedBlock,
        0,
        "content[0]",
    ),
]

RESPONSES_CASES = [
    ("unknown message role", [{"role": "tool", "content": "x"}], UnknownRole, 0, "role"),
    (
        "output without call",
        [USER, {"type": "function_call_output", "call_id": "c9", "output": "r"}],
        InvalidContent,
        1,
        "call_id",
    ),
    ("item without type or role", [USER, {"content": "x"}], InvalidContent, 1, "type"),
    (
        "output an int",
        [USER, RS_CALL, {"type": "function_call_output", "call_id": "c1", "output": 1}],
        InvalidContent,
        2,
        "output",
    ),
    (
        "call without name",
        [USER, {"type": "function_call", "call_id": "c1", "arguments": "{}"}],
        InvalidContent,
        1,
        "name",
    ),
    (
        "surrogate in a reasoning summary",
        [USER, {"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": "\udc00"}]}],
        InvalidEncoding,
        1,
        "summary[0].text",
    ),
    ("oversized call", [USER, {**RS_CALL, "arguments": HUGE}], OversizedBlock, 1, "item"),
    ("summary not a list", [USER, {"type": "reasoning", "id": "rs", "summary": "text"}], InvalidContent, 1, "summary"),
]


def _raises(read: Any, wire: list[Any], error: type[InvalidMessage], index: int, field: str) -> None:
    with pytest.raises(error) as caught:
        read(wire)
    assert type(caught.value) is error
    assert (caught.value.index, caught.value.field) == (index, field)
    assert f"message {index}" in str(caught.value)


@pytest.mark.parametrize("name, wire, error, index, field", ANTHROPIC_CASES, ids=[c[0] for c in ANTHROPIC_CASES])
def test_anthropic_rejects(name: str, wire: list[Any], error: type[InvalidMessage], index: int, field: str) -> None:
    _raises(from_anthropic, wire, error, index, field)


@pytest.mark.parametrize("name, wire, error, index, field", CHAT_CASES, ids=[c[0] for c in CHAT_CASES])
def test_openai_chat_rejects(name: str, wire: list[Any], error: type[InvalidMessage], index: int, field: str) -> None:
    _raises(from_openai, wire, error, index, field)


@pytest.mark.parametrize("name, wire, error, index, field", RESPONSES_CASES, ids=[c[0] for c in RESPONSES_CASES])
def test_responses_rejects(name: str, wire: list[Any], error: type[InvalidMessage], index: int, field: str) -> None:
    _raises(from_responses, wire, error, index, field)


def test_header_errors_have_no_message_index() -> None:
    with pytest.raises(InvalidEncoding) as caught:
        from_anthropic([USER], system=[{"type": "text", "text": "\ud800"}])
    assert (caught.value.index, caught.value.field) == (None, "system[0].text")
    with pytest.raises(InvalidContent) as caught:
        from_openai([USER], tools=[{"type": "function", "function": {"description": "no name"}}])
    assert (caught.value.index, caught.value.field) == (None, "tools[0].function.name")


def test_messages_not_a_list() -> None:
    with pytest.raises(InvalidContent) as caught:
        from_openai({"role": "user", "content": "x"})  # type: ignore[arg-type]
    assert caught.value.field == "messages"


def test_the_final_message_may_be_empty() -> None:
    """Anthropic accepts empty content on the last message (an empty assistant prefill), so it is carried."""
    for content in ("", []):
        wire = [USER, {"role": "assistant", "content": content}]
        assert to_anthropic(from_anthropic(wire))["messages"] == wire


def test_openai_empty_content_is_carried() -> None:
    wire = [{"role": "user", "content": ""}, {"role": "assistant", "content": ""}, {"role": "user", "content": []}]
    assert to_openai(from_openai(wire)) == wire


def test_a_block_at_the_limit_is_accepted() -> None:
    wire = [{"role": "user", "content": "y" * MAX_BLOCK_BYTES}]
    assert to_openai(from_openai(wire)) == wire


def test_limit_counts_utf8_bytes() -> None:
    """Three-byte CJK characters reach the limit in a third of the characters."""
    text = "字" * (MAX_BLOCK_BYTES // 3 + 1)
    with pytest.raises(OversizedBlock):
        from_anthropic([{"role": "user", "content": text}])


def test_non_json_arguments_are_carried_but_not_sent_to_anthropic() -> None:
    """OpenAI takes a non-JSON argument string in history; Anthropic needs an object: typed error, index, field."""
    wire = [
        USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c0", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{'bad': json"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c0", "content": "a"},
        {"role": "tool", "tool_call_id": "c1", "content": "b"},
    ]
    conversation = from_openai(wire)
    call = conversation[1].tool_calls[1]
    assert (call.arguments, call.raw_arguments) == ({}, "{'bad': json")
    assert conversation[1].meta["invalid_arguments"] == ["c1"]
    assert to_openai(conversation) == wire
    assert (
        to_openai(from_responses(to_responses(conversation)))[1]["tool_calls"][1]["function"]["arguments"]
        == "{'bad': json"
    )
    with pytest.raises(InvalidToolArguments) as caught:
        to_anthropic(conversation)
    assert (caught.value.index, caught.value.field) == (1, "blocks[1].arguments")
