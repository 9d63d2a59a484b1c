"""Goose sessions (``goose``): a metadata line then messages of ``text`` / ``toolRequest`` / ``toolResponse``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contextfold.conversation import Image, Text, Thinking, ToolCall
from contextfold.errors import SessionFormatError
from contextfold.importers import detect, load

from session_files import write_session


SEEN = {"userVisible": True, "agentVisible": True}
META = {"working_dir": "/w", "description": "fix tests", "schedule_id": None, "message_count": 5,
        "total_tokens": 5000, "input_tokens": 4800, "output_tokens": 200}


def request(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "toolRequest", "id": call_id, "toolCall": {"status": "success",
                                                               "value": {"name": name, "arguments": arguments}}}


def response(call_id: str, value: Any) -> dict[str, Any]:
    return {"type": "toolResponse", "id": call_id, "toolResult": {"status": "success", "value": value}}


MESSAGES: list[dict[str, Any]] = [
    {"id": "m1", "role": "user", "created": 1740171566, "metadata": SEEN,
     "content": [{"type": "text", "text": "Why do the tests fail?"}]},
    {"id": "m2", "role": "assistant", "created": 1740171570, "metadata": SEEN, "content": [
        {"type": "thinking", "thinking": "Run them first.", "signature": "sig"},
        {"type": "text", "text": "Running the tests."},
        request("toolu_1", "developer__shell", {"command": "pytest"}),
        request("toolu_2", "developer__text_editor", {"command": "view", "path": "/w/a.py"}),
    ]},
    {"id": "m3", "role": "user", "created": 1740171580, "metadata": SEEN, "content": [
        response("toolu_1", {"content": [{"type": "text", "text": "1 failed",
                                          "annotations": {"audience": ["assistant"]}}], "isError": True}),
        response("toolu_2", [{"type": "text", "text": "x = 1"},
                             {"type": "image", "data": "iVBOR", "mimeType": "image/png"}]),
    ]},
    {"id": "m4", "role": "assistant", "created": 1740171590, "metadata": SEEN, "content": [
        {"type": "toolConfirmationRequest", "id": "toolu_3", "toolName": "developer__shell",
         "arguments": {"command": "rm -rf build"}, "prompt": None},
        {"type": "toolRequest", "id": "toolu_3", "toolCall": {"status": "error", "error": "-32602: bad arguments"}},
    ]},
    {"id": "m5", "role": "user", "created": 1740171591, "metadata": {"userVisible": False, "agentVisible": True},
     "content": [{"type": "toolResponse", "id": "toolu_3", "toolResult": {"status": "error", "error": "denied"}},
                 {"type": "text", "text": "Summary of the work so far."}]},
]


def test_a_session_pairs_each_request_with_its_response(tmp_path: Path) -> None:
    path = write_session(tmp_path, "20250221_fix.jsonl", [META, *MESSAGES])
    assert detect(path) == "goose"
    (conversation,) = load(path)
    assert [item.kind for item in conversation] == [
        "user", "tool_call", "tool_result", "tool_result", "tool_call", "tool_result", "user"
    ]
    first = conversation[1]
    assert first.blocks[:2] == (Thinking("Run them first.", "sig"), Text("Running the tests."))
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("toolu_1", "developer__shell", {"command": "pytest"}),
        ("toolu_2", "developer__text_editor", {"command": "view", "path": "/w/a.py"}),
    ]
    assert first.timestamp == 1740171570.0
    shell, view = conversation[2].tool_result, conversation[3].tool_result
    assert shell.content == "1 failed" and shell.is_error is True
    assert view.content == (Text("x = 1"), Image(data="iVBOR", media_type="image/png"))
    assert conversation[4].tool_calls == (ToolCall("toolu_3", "(invalid call)", {}, "-32602: bad arguments"),)
    assert conversation[5].tool_result.is_error and conversation[5].tool_result.text == "denied"
    assert conversation[6].text == "Summary of the work so far."
    assert conversation[6].meta["visible"] == {"userVisible": False}
    assert conversation.header.meta["working_dir"] == "/w" and conversation.header.meta["description"] == "fix tests"
    assert conversation.header.meta["skipped"] == {"content/toolConfirmationRequest": 1}
    assert conversation.validate() == []


def test_an_export_and_a_file_without_its_metadata_line_are_read(tmp_path: Path) -> None:
    export = {"id": "20250221_1", "working_dir": "/w", "name": "fix", "conversation": MESSAGES[:3]}
    path = write_session(tmp_path, "export.json", export)
    assert detect(path) == "goose"
    (conversation,) = load(path)
    assert len(conversation) == 4 and conversation.header.meta["name"] == "fix"
    bare = write_session(tmp_path, "bare.jsonl", MESSAGES[:3])
    assert detect(bare) == "goose" and len(load(bare)[0]) == 4


def test_a_content_type_not_known_yet_is_counted(tmp_path: Path) -> None:
    future = {**MESSAGES[0], "content": [{"type": "hologram", "data": "..."}, {"type": "text", "text": "hi"}]}
    (conversation,) = load(write_session(tmp_path, "s.jsonl", [META, future]))
    assert conversation.header.meta["unknown_records"] == {"content/hologram": 1} and conversation[0].text == "hi"


@pytest.mark.parametrize(
    ("messages", "location", "reason"),
    [
        ([MESSAGES[0], "hi"], "line 3", "object"),
        ([{**MESSAGES[0], "content": "hi"}], "line 2.content", "list"),
        ([{**MESSAGES[1], "content": [{"type": "toolRequest", "id": "t", "toolCall": {"status": "success"}}]}],
         "line 2.content[0].toolCall.value", "Mapping"),
        ([MESSAGES[0], MESSAGES[2]], "line 3.content[0]", "toolu_1"),
        ([{**MESSAGES[0], "content": [{"type": "text", "text": 5}]}], "line 2.content[0].text", "str"),
    ],
)
def test_a_malformed_message_is_a_typed_error_naming_it(
    tmp_path: Path, messages: list[Any], location: str, reason: str
) -> None:
    with pytest.raises(SessionFormatError) as caught:
        load(write_session(tmp_path, "s.jsonl", [META, *messages]), format="goose")
    assert caught.value.location == location and reason in caught.value.reason


def test_plain_chat_messages_stay_chat_messages(tmp_path: Path) -> None:
    anthropic = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert detect(write_session(tmp_path, "log.jsonl", anthropic)) == "chat-messages"
