"""Anthropic Messages: exact round trips and the mapping onto the neutral model."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from contextfold import Conversation, Document, Image, Item, Opaque, Summary, Text, Thinking, ToolResult, ToolSpec
from contextfold.adapters import LossyConversion, from_anthropic, to_anthropic
from contextfold.codec import conversation_from_dict, conversation_to_dict
from contextfold.errors import InvalidContent

CACHE = {"type": "ephemeral"}


def _call(call_id: str, **input_: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "read", "input": input_}


def _round_trip(messages: list[Any], system: Any = None, tools: Any = None) -> Conversation:
    conversation = from_anthropic(messages, system=system, tools=tools)
    assert to_anthropic(conversation) == {"system": system, "messages": messages, "tools": tools or []}
    assert conversation.validate() == []
    return conversation


@pytest.mark.parametrize(
    "system",
    [
        None,
        "You are terse.",
        [],
        [{"type": "text", "text": "rules"}, {"type": "text", "text": "more", "cache_control": CACHE}],
    ],
    ids=["absent", "string", "empty-list", "blocks"],
)
def test_system_shapes(system: Any) -> None:
    conversation = _round_trip([{"role": "user", "content": "hi"}], system=system)
    assert conversation.header.system_text == (
        "" if not system else "You are terse." if isinstance(system, str) else "rules\nmore"
    )


def test_parallel_results_with_trailing_text_are_one_message_again() -> None:
    messages = [
        {"role": "user", "content": "read both"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "两个文件", "signature": "EqQBCkYIBxgC"},
                {"type": "text", "text": "Reading."},
                _call("toolu_a", path="a.py"),
                _call("toolu_b", path="b.py"),
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": "B", "is_error": False},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_a",
                    "content": [{"type": "text", "text": "A"}],
                    "cache_control": CACHE,
                },
                {"type": "text", "text": "and now?"},
            ],
        },
    ]
    conversation = _round_trip(messages)
    assert [item.role for item in conversation] == ["user", "assistant", "tool", "tool", "user"]
    assert [r.call_id for r in (conversation[2].tool_result, conversation[3].tool_result)] == ["toolu_b", "toolu_a"]
    assert conversation.rounds()[0].call_ids == ("toolu_a", "toolu_b")
    assert conversation[4].meta["group"] == conversation[2].meta["group"]


def test_text_before_results_keeps_its_position() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [_call("t1")]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "note"}, {"type": "tool_result", "tool_use_id": "t1", "content": "r"}],
        },
    ]
    conversation = _round_trip(messages)
    assert [item.role for item in conversation][2:] == ["tool", "user"]


@pytest.mark.parametrize(
    "result",
    [
        {"type": "tool_result", "tool_use_id": "t1"},
        {"type": "tool_result", "tool_use_id": "t1", "content": ""},
        {"type": "tool_result", "tool_use_id": "t1", "content": []},
        {"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": True},
        {
            "type": "tool_result",
            "tool_use_id": "t1",
            "content": [
                {"type": "text", "text": "see"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "doc"},
                    "title": "t",
                },
                {
                    "type": "search_result",
                    "source": "https://x",
                    "title": "x",
                    "content": [{"type": "text", "text": "s"}],
                },
            ],
        },
    ],
    ids=["absent", "empty-string", "empty-list", "error", "blocks"],
)
def test_tool_result_shapes(result: dict[str, Any]) -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [_call("t1")]},
        {"role": "user", "content": [result]},
    ]
    conversation = _round_trip(messages)
    block = conversation[2].tool_result
    assert block is not None and block.is_error is result.get("is_error")
    assert (block.tool_name, block.arguments) == ("read", {})  # linked to the call, never sent back


def test_blocks_map_to_neutral_kinds() -> None:
    content = [
        {
            "type": "text",
            "text": "cited",
            "citations": [
                {
                    "type": "char_location",
                    "cited_text": "c",
                    "document_index": 0,
                    "start_char_index": 0,
                    "end_char_index": 1,
                }
            ],
        },
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}, "cache_control": CACHE},
        {"type": "image", "source": {"type": "file", "file_id": "file_1"}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
            "context": "c",
            "citations": {"enabled": True},
        },
        {"type": "document", "source": {"type": "content", "content": [{"type": "text", "text": "x"}]}},
        {"type": "container_upload", "file_id": "file_2"},
    ]
    conversation = _round_trip([{"role": "user", "content": content}])
    blocks = conversation[0].blocks
    assert [type(b) for b in blocks] == [Text, Image, Image, Document, Document, Opaque]
    assert blocks[1] == Image(url="https://example.com/a.png", extra={"cache_control": CACHE})
    assert blocks[2].extra == {"source": {"type": "file", "file_id": "file_1"}}


def test_assistant_reasoning_and_server_tools_pass_through() -> None:
    messages = [
        {"role": "user", "content": "search"},
        {
            "role": "assistant",
            "content": [
                {"type": "redacted_thinking", "data": "EmwKAhgB"},
                {"type": "thinking", "thinking": "plan", "signature": "sig"},
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
                {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
                {"type": "text", "text": "found"},
            ],
        },
        {"role": "system", "content": "mid-conversation instruction"},
        {"role": "user", "content": "thanks", "metadata": {"k": 1}},
    ]
    tools = [
        {
            "name": "read",
            "description": "Read a file",
            "input_schema": {"type": "object", "properties": {}},
            "cache_control": CACHE,
        },
        {"name": "noschema", "input_schema": {}},
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 2},
    ]
    conversation = _round_trip(messages, tools=tools)
    assert conversation.header.tools[0] == ToolSpec(
        "read", "Read a file", {"type": "object", "properties": {}}, {"cache_control": CACHE}
    )
    assert isinstance(conversation.header.tools[2], Opaque)
    assert [b.kind for b in conversation[1].blocks] == ["redacted_thinking", "thinking", "opaque", "opaque", "text"]
    assert conversation[2].role == "system" and conversation[3].meta["extra"] == {"metadata": {"k": 1}}


def test_codec_reload_still_round_trips() -> None:
    """Meta written here survives the transcript's JSON form, so a resumed session sends the same bytes."""
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [_call("t1"), _call("t2")]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t2"},
                {"type": "tool_result", "tool_use_id": "t1", "content": "x"},
                {"type": "text", "text": "more"},
            ],
        },
    ]
    conversation = from_anthropic(messages, system="s")
    reloaded = conversation_from_dict(conversation_to_dict(conversation))
    assert to_anthropic(reloaded)["messages"] == messages


def test_sdk_response_blocks_are_accepted() -> None:
    """``messages.append({"role": "assistant", "content": response.content})`` works as with the SDK."""
    response = anthropic.types.Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
            "content": [
                {"type": "text", "text": "ok"},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"p": 1}},
            ],
        }
    )
    conversation = from_anthropic(
        [{"role": "user", "content": "go"}, {"role": "assistant", "content": response.content}]
    )
    assert conversation[1].tool_calls[0].arguments == {"p": 1}
    assert to_anthropic(conversation)["messages"][1]["content"][1] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "read",
        "input": {"p": 1},
    }


def test_items_changed_by_a_stage_are_written_in_canonical_shape() -> None:
    """A shape recorded at read time is only reused while it still fits the blocks."""
    conversation = from_anthropic(
        [
            {"role": "user", "content": "long text"},
            {"role": "assistant", "content": [_call("t1")]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]},
        ]
    )
    edited = [
        conversation[0].with_blocks((Summary("earlier: asked for a read", covers=3), Text("long text"))),
        conversation[1],
        conversation[2].with_blocks((ToolResult("t1", "[cleared]"),)),
    ]
    messages = to_anthropic(conversation.with_items(edited))["messages"]
    assert messages[0]["content"] == [
        {"type": "text", "text": "earlier: asked for a read"},
        {"type": "text", "text": "long text"},
    ]
    assert messages[2]["content"] == [{"type": "tool_result", "tool_use_id": "t1", "content": "[cleared]"}]


def test_summary_item_is_a_user_text_message() -> None:
    conversation = Conversation(
        [Item("user", (Summary("so far: fixed the bug", covers=12),)), Item("assistant", (Text("ok"),))]
    )
    assert to_anthropic(conversation)["messages"][0] == {"role": "user", "content": "so far: fixed the bug"}


def test_repaired_results_join_the_round_message() -> None:
    """A synthetic result from repair() (no group) is sent in the same user message as the real ones."""
    conversation = from_anthropic(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [_call("t1"), _call("t2")]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "r"}]},
            {"role": "assistant", "content": "done"},
        ]
    )
    repaired, repairs = conversation.repair()
    assert [r.action for r in repairs] == ["answered_call"]
    messages = to_anthropic(repaired)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert [b["tool_use_id"] for b in messages[2]["content"]] == ["t1", "t2"]
    assert messages[2]["content"][1]["is_error"] is True


def test_neutral_thinking_needs_a_signature() -> None:
    with pytest.warns(LossyConversion, match="reasoning"):
        out = to_anthropic(
            Conversation(
                [
                    Item("user", (Text("q"),)),
                    Item("assistant", (Thinking("unsigned"), Thinking("signed", "sig"), Text("a"))),
                ]
            )
        )
    assert out["messages"][1]["content"][:1] == [{"type": "thinking", "thinking": "signed", "signature": "sig"}]


def test_a_compatible_backends_server_tool_result_in_the_models_turn_is_read_and_sent_back() -> None:
    """GLM behind Claude Code answers its own ``server_tool_use`` with a plain ``tool_result`` in the assistant
    turn: that is the server tool's output, kept opaque and sent back as it came, not a refused message."""
    result = {"type": "tool_result", "tool_use_id": "call_9", "content": "[{\"title\": \"Database\"}]"}
    messages = [
        {"role": "user", "content": "which database does it need?"},
        {
            "role": "assistant",
            "content": [
                {"type": "server_tool_use", "id": "call_9", "name": "webReader", "input": {"url": "https://x"}},
                result,
                {"type": "text", "text": "PostgreSQL or MySQL."},
            ],
        },
    ]
    conversation = _round_trip(messages)
    assert [b.kind for b in conversation[1].blocks] == ["opaque", "opaque", "text"]
    assert to_anthropic(conversation)["messages"][1]["content"][1] == result


def test_a_tool_result_answering_a_client_call_in_the_models_turn_is_still_refused() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [_call("t1")]},
        {"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
    ]
    with pytest.raises(InvalidContent) as caught:
        from_anthropic(messages)
    assert caught.value.index == 2 and "cannot appear in a assistant message" in str(caught.value)
    with pytest.raises(InvalidContent):  # an id that is not a string is refused, not looked up
        from_anthropic([{"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": ["t1"]}]}])
