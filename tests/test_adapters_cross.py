"""Converting between formats gives requests the target accepts, or a typed error; reasoning drops are warned.

Validity is checked against the official SDKs' request types (their TypedDicts,
validated by pydantic), and structurally by reading the result back: every
call answered, ids preserved.
"""

from __future__ import annotations

import warnings
from functools import cache
from typing import Any

import pytest
from anthropic.types import MessageParam, ToolUnionParam
from hypothesis import HealthCheck
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolUnionParam
from openai.types.responses import ResponseInputItemParam, ToolParam
from pydantic import TypeAdapter
from strategies import anthropic_requests, conversations, openai_chat_requests, responses_requests
from sweeps import Sweep

from contextfold import Conversation, InvalidContent
from contextfold.adapters import (
    LossyConversion,
    from_anthropic,
    from_openai,
    from_responses,
    to_anthropic,
    to_openai,
    to_responses,
    tools_to_openai,
    tools_to_responses,
)

FORMATS = ("anthropic", "openai", "responses")


@cache
def _schema(name: str) -> TypeAdapter[Any]:
    types = {
        "anthropic": MessageParam,
        "anthropic-tools": ToolUnionParam,
        "openai": ChatCompletionMessageParam,
        "openai-tools": ChatCompletionToolUnionParam,
        "responses": ResponseInputItemParam,
        "responses-tools": ToolParam,
    }
    return TypeAdapter(list[types[name]])  # type: ignore[valid-type]


def _materialize(value: Any) -> Any:
    """Pydantic checks ``Iterable`` fields lazily: walk everything so every error surfaces."""
    if isinstance(value, dict):
        return {k: _materialize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or hasattr(value, "__next__"):
        return [_materialize(v) for v in value]
    return value


def _valid(name: str, value: list[Any]) -> None:
    _materialize(_schema(name).validate_python(value))


def _send(conversation: Conversation, target: str) -> Conversation:
    """Write for ``target``, check the request against the SDK types, and read it back."""
    if target == "anthropic":
        request = to_anthropic(conversation)
        _valid("anthropic", request["messages"])
        _valid("anthropic-tools", request["tools"])
        return from_anthropic(request["messages"], system=request["system"], tools=request["tools"])
    if target == "openai":
        messages = to_openai(conversation)
        _valid("openai", messages)
        _valid("openai-tools", tools_to_openai(conversation))
        return from_openai(messages, tools=tools_to_openai(conversation))
    items = to_responses(conversation)
    _valid("responses", items)
    _valid("responses-tools", tools_to_responses(conversation))
    return from_responses(items, tools=tools_to_responses(conversation))


def _call_ids(conversation: Conversation) -> list[str]:
    return [c.id for item in conversation for c in item.tool_calls]


def _read(source: str, request: dict[str, Any]) -> Conversation:
    if source == "anthropic":
        return from_anthropic(request["messages"], system=request["system"], tools=request["tools"])
    if source == "openai":
        return from_openai(request["messages"], tools=request["tools"])
    return from_responses(request["items"], tools=request["tools"])


def _assert_converts(conversation: Conversation, target: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LossyConversion)
        back = _send(conversation, target)
    assert back.validate() == []
    assert _call_ids(back) == _call_ids(conversation)
    answered = [item.tool_result.call_id for item in back if item.tool_result is not None]
    assert sorted(answered) == sorted(_call_ids(conversation))


PORTABLE = {
    "anthropic": anthropic_requests(portable=True),
    "openai": openai_chat_requests(portable=True),
    "responses": responses_requests(portable=True),
}


@pytest.mark.parametrize("source", FORMATS)
def portable_conversations_convert_to_every_format(source: str, data: st.DataObject) -> None:
    conversation = _read(source, data.draw(PORTABLE[source]))
    for target in FORMATS:
        _assert_converts(conversation, target)


test_portable_conversations_convert_to_every_format, test_portable_conversations_convert_to_every_format_sweep = (
    Sweep(main=15, full=40, suppress_health_check=[HealthCheck.too_slow]).tests(
        portable_conversations_convert_to_every_format, data=st.data()))


def neutral_conversations_convert_to_every_format(conversation: Conversation) -> None:
    for target in FORMATS:
        _assert_converts(conversation, target)


test_neutral_conversations_convert_to_every_format, test_neutral_conversations_convert_to_every_format_sweep = (
    Sweep(main=25, full=60, suppress_health_check=[HealthCheck.too_slow]).tests(
        neutral_conversations_convert_to_every_format, conversations()))


ANTHROPIC = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in these?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
                "title": "spec.pdf",
            },
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "look closer", "signature": "EqQB"},
            {"type": "tool_use", "id": "toolu_1", "name": "zoom", "input": {"x": 1}},
            {"type": "tool_use", "id": "toolu_2", "name": "zoom", "input": {"x": 2}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a cat"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "zoom failed", "is_error": True},
        ],
    },
]


def test_anthropic_to_openai_chat() -> None:
    conversation = from_anthropic(ANTHROPIC, system="Be precise.")
    messages = to_openai(conversation)
    assert messages[0] == {"role": "system", "content": "Be precise."}
    assert messages[1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
    }
    assert messages[1]["content"][2] == {
        "type": "file",
        "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "spec.pdf"},
    }
    assert messages[2] == {
        "role": "assistant",
        "reasoning_content": "look closer",
        "content": None,
        "tool_calls": [
            {"id": "toolu_1", "type": "function", "function": {"name": "zoom", "arguments": '{"x": 1}'}},
            {"id": "toolu_2", "type": "function", "function": {"name": "zoom", "arguments": '{"x": 2}'}},
        ],
    }
    assert messages[3:] == [
        {"role": "tool", "tool_call_id": "toolu_1", "content": "a cat"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "[tool error] zoom failed"},
    ]
    _valid("openai", messages)


def test_anthropic_to_responses_drops_the_signed_thinking_with_a_warning() -> None:
    with pytest.warns(LossyConversion, match="reasoning from anthropic"):
        items = to_responses(from_anthropic(ANTHROPIC))
    assert [i.get("type") for i in items] == [
        "message",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert items[0]["content"][1] == {
        "type": "input_image",
        "image_url": "data:image/png;base64,iVBORw0KGgo=",
        "detail": "auto",
    }
    _valid("responses", items)


def test_openai_chat_to_anthropic() -> None:
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "developer", "content": "dev"},
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/", "detail": "low"}},
                {"type": "image_url", "image_url": {"url": "https://example.com/x.png"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "hmm",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}},
                {"id": "call_2", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "one"},
        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "two"}]},
        {"role": "system", "content": "mid-run reminder"},
    ]
    with pytest.warns(LossyConversion, match="openai reasoning"):
        request = to_anthropic(from_openai(messages))
    assert request["system"] == [{"type": "text", "text": "sys"}, {"type": "text", "text": "dev"}]
    out = request["messages"]
    assert out[0]["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/x.png"}},
    ]
    assert out[1]["content"] == [
        {"type": "tool_use", "id": "call_1", "name": "f", "input": {"a": 1}},
        {"type": "tool_use", "id": "call_2", "name": "f", "input": {}},
    ]
    assert out[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "one"},
            {"type": "tool_result", "tool_use_id": "call_2", "content": [{"type": "text", "text": "two"}]},
        ],
    }
    assert out[3] == {"role": "system", "content": "mid-run reminder"}
    _valid("anthropic", out)


def test_responses_to_openai_chat_keeps_reasoning_text() -> None:
    items = [
        {"role": "user", "content": "q"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "plan"}],
            "encrypted_content": "gAAA",
        },
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": [{"type": "input_text", "text": "r"}]},
    ]
    messages = to_openai(from_responses(items))
    assert messages[1] == {
        "role": "assistant",
        "reasoning_content": "plan",
        "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    }
    assert messages[2] == {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "r"}]}


@pytest.mark.parametrize(
    "source, target, field",
    [
        (
            lambda: from_anthropic(
                [
                    {"role": "user", "content": "s"},
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
                            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
                        ],
                    },
                ]
            ),
            to_openai,
            "blocks[0]",
        ),
        (
            lambda: from_anthropic(
                [
                    {"role": "user", "content": "go"},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "shot", "input": {}}]},
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "t1",
                                "content": [{"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}],
                            }
                        ],
                    },
                ]
            ),
            to_openai,
            "blocks[0].content[0]",
        ),
        (
            lambda: from_responses(
                [{"role": "user", "content": [{"type": "input_image", "detail": "auto", "file_id": "file-1"}]}]
            ),
            lambda c: to_anthropic(c),
            "blocks[0]",
        ),
        (
            lambda: from_anthropic(
                [{"role": "user", "content": [{"type": "document", "source": {"type": "file", "file_id": "file_1"}}]}]
            ),
            to_responses,
            "blocks[0]",
        ),
        (
            lambda: from_openai([{"role": "user", "content": [{"type": "file", "file": {"file_id": "file-abc"}}]}]),
            lambda c: to_anthropic(c),
            "blocks[0]",
        ),
    ],
    ids=[
        "server-blocks-to-chat",
        "image-result-to-chat",
        "file-id-image-to-anthropic",
        "file-document-to-responses",
        "file-id-to-anthropic",
    ],
)
def test_what_the_target_cannot_express_raises(source: Any, target: Any, field: str) -> None:
    conversation = source()
    with pytest.raises(InvalidContent) as caught:
        target(conversation)
    assert caught.value.field == field
    assert caught.value.index == len(conversation) - 1


def test_server_tools_cannot_be_sent_to_another_format() -> None:
    conversation = from_anthropic(
        [{"role": "user", "content": "x"}],
        tools=[{"name": "f", "input_schema": {}}, {"type": "web_search_20250305", "name": "web_search"}],
    )
    with pytest.raises(InvalidContent) as caught:
        tools_to_openai(conversation)
    assert (caught.value.index, caught.value.field) == (None, "header.tools[1]")


def test_tools_convert_with_a_schema_every_target_accepts() -> None:
    conversation = from_openai(
        [{"role": "user", "content": "x"}], tools=[{"type": "function", "function": {"name": "ping"}}]
    )
    assert to_anthropic(conversation)["tools"] == [
        {"name": "ping", "input_schema": {"type": "object", "properties": {}}}
    ]
    assert tools_to_responses(conversation) == [
        {"type": "function", "name": "ping", "parameters": {"type": "object", "properties": {}}, "strict": False}
    ]


def test_an_item_of_only_foreign_reasoning_is_left_out() -> None:
    items = [
        {"role": "user", "content": "q"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
        {"role": "user", "content": "again"},
    ]
    conversation = from_responses(items)
    with pytest.warns(LossyConversion):
        assert [m["content"] for m in to_anthropic(conversation)["messages"]] == ["q", "again"]
    with pytest.warns(LossyConversion):
        assert [m["content"] for m in to_openai(conversation)] == ["q", "again"]
