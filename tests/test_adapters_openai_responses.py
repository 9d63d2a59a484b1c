"""OpenAI Responses input items: exact round trips, turn grouping, and the mapping onto the neutral model."""

from __future__ import annotations

from typing import Any

from contextfold import Conversation, Document, Image, Opaque, Text, Thinking, ToolResult
from contextfold.adapters import from_responses, to_responses, tools_to_responses


def _round_trip(items: list[Any], tools: Any = None) -> Conversation:
    conversation = from_responses(items, tools=tools)
    assert to_responses(conversation) == items
    assert tools_to_responses(conversation) == (tools or [])
    assert conversation.validate() == []
    return conversation


def _call(call_id: str, **extra: Any) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "shell", "arguments": '{"cmd": ["ls"]}', **extra}


def test_a_turn_of_reasoning_messages_and_calls_is_one_assistant_item() -> None:
    items = [
        {"role": "developer", "content": "be brief"},
        {"role": "user", "content": "list files"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAB"},
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_1",
            "status": "completed",
            "phase": "commentary",
            "content": [{"type": "output_text", "text": "Listing.", "annotations": []}],
        },
        _call("call_a", id="fc_a", status="completed"),
        {
            "type": "reasoning",
            "id": "rs_2",
            "status": "completed",
            "summary": [{"type": "summary_text", "text": "one"}, {"type": "summary_text", "text": "two"}],
            "content": [{"type": "reasoning_text", "text": "raw chain"}],
        },
        _call("call_b"),
        {"type": "function_call_output", "call_id": "call_b", "output": [{"type": "input_text", "text": "b"}]},
        {"type": "function_call_output", "call_id": "call_a", "output": ""},
        {"role": "assistant", "content": "done"},
    ]
    conversation = _round_trip(items)
    assert [i.role for i in conversation.header.system] == ["developer"]
    assert [i.role for i in conversation] == ["user", "assistant", "tool", "tool", "assistant"]
    turn = conversation[1]
    assert [b.kind for b in turn.blocks] == ["thinking", "text", "tool_call", "thinking", "tool_call"]
    assert turn.blocks[0] == Thinking("", "gAAAAB", {"id": "rs_1"})
    assert turn.blocks[3].thinking == "one\n\ntwo"
    assert conversation.rounds()[0].call_ids == ("call_a", "call_b")


def test_parts_map_to_neutral_kinds() -> None:
    content = [
        {"type": "input_text", "text": "see"},
        {"type": "input_image", "detail": "high", "image_url": "https://example.com/a.png"},
        {"type": "input_image", "detail": "auto", "file_id": "file-1"},
        {"type": "input_file", "file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"},
        {"type": "input_file", "file_url": "https://example.com/a.pdf"},
        {"type": "input_audio", "input_audio": {"data": "x", "format": "mp3"}},
    ]
    conversation = _round_trip([{"type": "message", "role": "user", "content": content}])
    blocks = conversation[0].blocks
    assert [type(b) for b in blocks] == [Text, Image, Image, Document, Document, Opaque]
    assert blocks[2] == Image(extra={"detail": "auto", "file_id": "file-1"})
    assert blocks[4].source == {"file_url": "https://example.com/a.pdf"}


def test_unknown_items_ride_along() -> None:
    items = [
        {"role": "user", "content": "search then patch"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q"}},
        {"type": "custom_tool_call", "call_id": "call_p", "name": "apply_patch", "input": "*** Begin Patch"},
        {"type": "custom_tool_call_output", "call_id": "call_p", "output": "applied"},
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True},
        {"type": "item_reference", "id": "msg_9"},
    ]
    tools = [{"type": "function", "name": "shell", "parameters": None, "strict": True}, {"type": "web_search"}]
    conversation = _round_trip(items, tools)
    assert [b.kind for b in conversation[1].blocks] == ["opaque", "tool_call"]
    assert conversation[2].tool_result == ToolResult("call_p", "applied", tool_name="apply_patch", arguments={})
    assert conversation[3].role == "user" and isinstance(conversation[3].blocks[0], Opaque)
    assert isinstance(conversation.header.tools[1], Opaque)


def test_a_stage_edit_falls_back_to_derived_segments() -> None:
    items = [
        {"role": "user", "content": "go"},
        _call("c1"),
        {"type": "message", "role": "assistant", "content": "a"},
        {"type": "function_call_output", "call_id": "c1", "output": "x"},
    ]
    conversation = from_responses(items)
    turn = conversation[1]
    edited = conversation.with_items(
        [conversation[0], turn.with_blocks((Text("note"), *turn.blocks)), *conversation[2:]]
    )
    written = to_responses(edited)
    assert written[1] == {"type": "message", "role": "assistant", "content": "note"}
    assert written[2] == _call("c1")
