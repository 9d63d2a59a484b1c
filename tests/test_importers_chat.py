"""Plain chat logs (``chat-messages``): a request body, a bare array or JSON Lines of provider messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contextfold.conversation import Thinking, ToolCall, ToolSpec
from contextfold.errors import SessionFormatError
from contextfold.importers import detect, load

from session_files import write_session


LS = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
OPENAI_CHAT = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": None, "tool_calls": [LS]},
    {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
    {"role": "assistant", "content": "one file"},
]
CLINE = [  # Cline's api_conversation_history.json: Anthropic messages (Roo Code adds ``ts``, milliseconds)
    {"role": "user", "content": [{"type": "text", "text": "<task>list files</task>"}], "ts": 1735689600123},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Listing."},
            {"type": "tool_use", "id": "toolu_1", "name": "list_files", "input": {"path": "."}},
        ],
        "ts": 1735689601000,
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"}]},
]


def test_an_openai_request_body_is_read_with_its_system_tools_and_model(tmp_path: Path) -> None:
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
    path = write_session(tmp_path, "chat.json", {"model": "gpt-4o", "messages": OPENAI_CHAT, "tools": tools})
    assert detect(path) == "chat-messages"
    (conversation,) = load(path)
    assert conversation.validate() == [] and conversation.header.system_text == "be brief"
    assert [item.kind for item in conversation] == ["user", "tool_call", "tool_result", "assistant"]
    ls = ToolCall("c1", "bash", {"command": "ls"}, '{"command": "ls"}', {"type": "function"})
    assert conversation[1].tool_calls == (ls,)
    assert conversation.header.tools == (ToolSpec("bash", None, {"type": "object"}),)
    assert {k: conversation.header.meta[k] for k in ("format", "wire", "model")} == {
        "format": "chat-messages", "wire": "openai", "model": "gpt-4o"
    }


def test_a_bare_array_of_anthropic_messages_with_millisecond_times(tmp_path: Path) -> None:
    (conversation,) = load(write_session(tmp_path, "api_conversation_history.json", CLINE))
    assert conversation.header.meta["wire"] == "anthropic" and conversation.validate() == []
    assert [item.kind for item in conversation] == ["user", "tool_call", "tool_result"]
    assert conversation[0].timestamp == pytest.approx(1735689600.123)
    assert conversation[2].tool_result.text == "a.txt" and conversation[2].tool_result.tool_name == "list_files"
    assert "extra" not in conversation[0].meta  # the recorder's time is not left for the writer to send


def test_json_lines_one_message_a_line_with_iso_times(tmp_path: Path) -> None:
    records = [{**message, "timestamp": f"2025-01-01T00:00:0{i}Z"} for i, message in enumerate(OPENAI_CHAT)]
    path = write_session(tmp_path, "log.jsonl", records)
    assert detect(path) == "chat-messages"
    (conversation,) = load(path)
    assert [item.kind for item in conversation] == ["user", "tool_call", "tool_result", "assistant"]
    assert conversation[3].timestamp == 1735689604.0


def test_a_responses_input_list_keeps_one_responses_parts_in_one_item(tmp_path: Path) -> None:
    items = [
        {"role": "user", "content": "hi"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "two calls"}]},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "pwd", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a"},
        {"type": "function_call_output", "call_id": "c2", "output": "/"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
    ]
    (conversation,) = load(write_session(tmp_path, "body.json", {"instructions": "sys", "input": items}))
    assert conversation.header.meta["wire"] == "responses" and conversation.header.system_text == "sys"
    assert [item.kind for item in conversation] == ["user", "tool_call", "tool_result", "tool_result", "assistant"]
    reply = conversation[1]
    assert isinstance(reply.blocks[0], Thinking) and [c.id for c in reply.tool_calls] == ["c1", "c2"]
    assert conversation.validate() == []


def test_a_role_that_is_no_chat_role_is_skipped_and_counted(tmp_path: Path) -> None:
    exit_record = {"role": "exit", "content": "Submitted"}
    (conversation,) = load(write_session(tmp_path, "run.json", {"messages": [*OPENAI_CHAT, exit_record]}))
    assert len(conversation) == 4 and conversation.header.meta["unknown_records"] == {"role exit": 1}


@pytest.mark.parametrize(
    ("name", "content", "location", "reason"),
    [
        ("a.json", {"messages": [OPENAI_CHAT[1], "hi"]}, "$.messages[1]", "must be an object"),
        ("b.json", {"messages": [OPENAI_CHAT[1], {"role": "user", "content": 5}]}, "$.messages[1].content", ""),
        ("c.json", {"messages": [OPENAI_CHAT[1], {"role": 7, "content": "x"}]}, "$.messages[1].role", "string"),
        ("d.json", [OPENAI_CHAT[1], OPENAI_CHAT[3]], "$[1].tool_call_id", "c1"),
        ("e.jsonl", [CLINE[0], {"role": "assistant", "content": [{"type": "tool_use", "id": "t"}]}],
         "line 2.content[0]", ""),
    ],
)
def test_a_malformed_message_is_a_typed_error_naming_index_and_field(
    tmp_path: Path, name: str, content: Any, location: str, reason: str
) -> None:
    with pytest.raises(SessionFormatError) as caught:
        load(write_session(tmp_path, name, content))
    assert caught.value.location.startswith(location) and reason in caught.value.reason


def test_formats_with_keys_of_their_own_still_win(tmp_path: Path) -> None:
    mini = {"trajectory_format": "mini-swe-agent-1.1", "info": {}, "messages": OPENAI_CHAT}
    assert detect(write_session(tmp_path, "mini.json", mini)) == "mini-swe-agent"
    assert detect(write_session(tmp_path, "tau.json", [{"task_id": 0, "traj": OPENAI_CHAT}])) == "tau-bench"


def test_the_liberties_recorders_take_with_the_openai_shape_are_read(tmp_path: Path) -> None:
    """tau2-bench style: a flat call with object arguments, a tool message naming its call by ``id``, an output
    that is an object; and a tool output recorded as null."""
    messages = [
        {"role": "user", "content": "hi", "turn_idx": 0},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "name": "get_user", "arguments": {"user_id": "u1"}, "requestor": "assistant"},
            {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": {}}},
        ]},
        {"role": "tool", "id": "c1", "content": {"name": "Ann"}, "requestor": "assistant", "error": False},
        {"role": "tool", "tool_call_id": "c2", "content": None},
    ]
    (conversation,) = load(write_session(tmp_path, "simulation.json", {"messages": messages}))
    assert conversation.validate() == []
    calls = conversation[1].tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [("c1", "get_user", {"user_id": "u1"}), ("c2", "ls", {})]
    assert [conversation[i].tool_result.text for i in (2, 3)] == ['{"name": "Ann"}', ""]


def test_keys_a_recorder_adds_are_kept_out_of_the_wire(tmp_path: Path) -> None:
    """A turn index, a cost, a raw response copy: not the API's, so never written back into a request."""
    raw = {"choices": [{"message": {"content": "x" * 5000}}]}
    messages = [
        {"role": "user", "content": "hi", "turn_idx": 0},
        {"role": "assistant", "content": "hello", "cost": 0.25, "raw_data": raw, "name": "agent"},
    ]
    (conversation,) = load(write_session(tmp_path, "chat.json", {"messages": messages}))
    assert conversation[0].meta["recorded"] == {"turn_idx": 0} and "extra" not in conversation[0].meta
    assert conversation[1].meta["recorded"] == {"cost": 0.25}  # the raw copy is too long to keep
    assert conversation[1].meta["extra"] == {"name": "agent"}  # the API's own key rides to the writer


def test_a_tool_message_listed_before_the_call_it_answers_is_read_after_it(tmp_path: Path) -> None:
    """An export of a transcript written out of order lists a result before the assistant message making its call
    (with another call's result between): each result follows its own call, and the file is read."""
    read = {"id": "c2", "type": "function", "function": {"name": "read", "arguments": '{"path": "a.txt"}'}}
    messages = [*OPENAI_CHAT[:4], {"role": "tool", "tool_call_id": "c2", "content": "alpha"},
                {"role": "assistant", "content": None, "tool_calls": [read]}, OPENAI_CHAT[4]]
    (conversation,) = load(write_session(tmp_path, "chat.json", {"messages": messages}))
    roles = [(item.role, item.tool_result.call_id if item.tool_result else None) for item in conversation]
    assert roles == [("user", None), ("assistant", None), ("tool", "c1"), ("assistant", None), ("tool", "c2"),
                     ("assistant", None)]
    assert conversation.validate() == [] and conversation.header.meta["reordered"] == 1


def test_a_chat_export_that_keeps_everything_as_parts_is_read_as_the_api_had_it(tmp_path: Path) -> None:
    """Some exporters (a ``{messages, meta}`` file made from Codex, Claude Code or opencode sessions) copy each call
    into the content as a ``tool_call`` part beside ``tool_calls``, write each output as a ``tool_output`` part
    (its text a string or a list of text parts) and thinking as ``reasoning`` parts: the outputs are read as text
    the pipeline can see and cut, the reasoning as thinking, and each call once."""
    call = {"type": "tool_call", "tool_call_id": "c1", "name": "bash", "arguments": '{"command": "ls"}'}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "list the repo"}]},
        {"role": "assistant", "tool_calls": [LS],
         "content": [{"type": "reasoning", "text": "Start with ls."}, call]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "tool_output", "text": "a.txt\nb.txt"}]},
        {"role": "assistant", "tool_calls": [{**LS, "id": "c2"}], "content": [{**call, "tool_call_id": "c2"}]},
        {"role": "tool", "tool_call_id": "c2",
         "content": [{"type": "tool_output", "text": [{"type": "text", "text": "## Summary"},
                                                      {"type": "tool_reference", "tool_name": "Grep"},
                                                      {"type": "text", "text": "two files"}]}]},
    ]
    (conversation,) = load(write_session(tmp_path, "develop-1.json", {"messages": messages, "meta": {"skipped_events_count": 0}}))
    outputs = [item.text for item in conversation if item.role == "tool"]
    assert outputs[0] == "a.txt\nb.txt" and "## Summary" in outputs[1] and "two files" in outputs[1]
    second = [item for item in conversation if item.role == "tool"][1].tool_result
    assert second is not None and [type(block).__name__ for block in second.content] == ["Text", "Opaque", "Text"]
    first = conversation[1]
    assert [type(block) for block in first.blocks] == [Thinking, ToolCall]
    assert [block.id for item in conversation for block in item.tool_calls] == ["c1", "c2"]
    assert conversation.validate() == []
