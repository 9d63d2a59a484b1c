"""Gemini CLI saved chats (``gemini-cli``): the JSON session file and the newer JSON Lines one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextfold.adapters.recorded import genai_parts
from contextfold.conversation import Thinking, ToolCall
from contextfold.errors import SessionFormatError
from contextfold.importers import detect, load


def write(tmp_path: Path, name: str, content: Any) -> Path:
    path = tmp_path / name
    if name.endswith(".jsonl"):
        path.write_text("".join(json.dumps(record) + "\n" for record in content), encoding="utf-8")
    else:
        path.write_text(json.dumps(content, indent=2), encoding="utf-8")
    return path


def at(second: int) -> str:
    return f"2025-09-01T08:00:{second:02d}.000Z"


def answered(call_id: str, name: str, output: str) -> list[dict[str, Any]]:
    return [{"functionResponse": {"id": call_id, "name": name, "response": {"output": output}}}]


READ = {"id": "read_file-1", "name": "read_file", "args": {"absolute_path": "/w/a.py"}, "status": "success",
        "timestamp": at(3), "result": answered("read_file-1", "read_file", "x = 1"), "resultDisplay": "",
        "displayName": "ReadFile", "description": "Reads a file"}
SHELL = {"id": "run_shell_command-2", "name": "run_shell_command", "args": {"command": "pytest"}, "status": "error",
         "timestamp": at(4), "result": answered("run_shell_command-2", "run_shell_command", "1 failed")}
CANCELLED = {"id": "replace-3", "name": "replace", "args": {"file_path": "/w/a.py"}, "status": "cancelled",
             "timestamp": at(5), "result": None}
MESSAGES: list[dict[str, Any]] = [
    {"id": "m1", "timestamp": at(0), "type": "user", "content": "Why do the tests fail?"},
    {"id": "m2", "timestamp": at(1), "type": "info", "content": "Switched to gemini-2.5-flash"},
    {"id": "m3", "timestamp": at(2), "type": "gemini", "content": "Let me read it.",
     "thoughts": [{"subject": "Reading", "description": "Look at a.py first.", "timestamp": at(2)}],
     "tokens": {"input": 1200, "output": 30, "cached": 800, "thoughts": 12, "tool": 0, "total": 1242},
     "model": "gemini-2.5-pro", "toolCalls": [READ, SHELL]},
    {"id": "m4", "timestamp": at(6), "type": "gemini", "content": "", "toolCalls": [CANCELLED]},
    {"id": "m5", "timestamp": at(7), "type": "user", "content": [{"text": "Stop."}, "Now."]},
    {"id": "m6", "timestamp": at(8), "type": "error", "content": "[API Error: quota]"},
]
SESSION = {"sessionId": "6f1e-77", "projectHash": "ab12", "startTime": at(0), "lastUpdated": at(8),
           "messages": MESSAGES}


def test_a_saved_chat_pairs_each_call_with_the_result_it_carries(tmp_path: Path) -> None:
    path = write(tmp_path, "session-2025-09-01T08-00-6f1e.json", SESSION)
    assert detect(path) == "gemini-cli"
    (conversation,) = load(path)
    assert [item.kind for item in conversation] == ["user", "tool_call", "tool_result", "tool_result", "tool_call",
                                                    "user"]
    response = conversation[1]
    assert response.blocks[0] == Thinking("Reading\nLook at a.py first.")
    assert response.text == "Let me read it."
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("read_file-1", "read_file", {"absolute_path": "/w/a.py"}),
        ("run_shell_command-2", "run_shell_command", {"command": "pytest"}),
    ]
    assert response.meta["usage"] == {"prompt_tokens": 1200, "output_tokens": 42, "cache_read_tokens": 800,
                                      "cache_write_tokens": 0}
    assert response.meta["model"] == "gemini-2.5-pro" and response.timestamp == 1756713602.0
    read, shell = conversation[2].tool_result, conversation[3].tool_result
    assert "x = 1" in read.text and not read.is_error and shell.is_error and "1 failed" in shell.text
    assert conversation[3].meta["facts"] == {"status": "error"}
    assert conversation[4].tool_calls == (ToolCall("replace-3", "replace", {"file_path": "/w/a.py"}),)  # stays open
    assert [block.text for block in conversation[5].blocks] == ["Stop.", "Now."]
    meta = conversation.header.meta
    assert meta["session_id"] == "6f1e-77" and meta["project_hash"] == "ab12"
    assert meta["skipped"] == {"message/error": 1, "message/info": 1}


def test_json_lines_merge_each_update_into_its_message(tmp_path: Path) -> None:
    response = {key: value for key, value in MESSAGES[2].items() if key not in ("tokens", "toolCalls")}
    records = [
        {"type": "session_metadata", "sessionId": "6f1e-77", "projectHash": "ab12", "startTime": at(0)},
        MESSAGES[0],
        response,
        {"type": "message_update", "id": "m3", "toolCalls": [READ], "timestamp": at(3)},
        {"type": "message_update", "id": "m3", "toolCalls": [READ, SHELL], "timestamp": at(4)},
        {"type": "message_update", "id": "m3", "tokens": MESSAGES[2]["tokens"], "timestamp": at(4)},
        {"type": "session_metadata", "summary": "Fixing the failing tests"},
        {"type": "checkpoint", "id": "c1"},
    ]
    path = write(tmp_path, "session-2025-09-01T08-00-6f1e.jsonl", records)
    assert detect(path) == "gemini-cli"
    (conversation,) = load(path)
    assert [item.kind for item in conversation] == ["user", "tool_call", "tool_result", "tool_result"]
    assert conversation[1].meta["usage"]["prompt_tokens"] == 1200 and conversation[1].text == "Let me read it."
    assert conversation[1].timestamp == 1756713602.0  # the message's own time, not its last update's
    assert conversation.header.meta["summary"] == "Fixing the failing tests"
    assert conversation.header.meta["unknown_records"] == {"checkpoint": 1}
    assert conversation.validate() == []


def test_a_message_type_not_known_yet_is_counted(tmp_path: Path) -> None:
    (conversation,) = load(write(tmp_path, "s.json", {**SESSION, "messages": [MESSAGES[0], {
        "id": "m9", "timestamp": at(9), "type": "compression", "content": "..."}]}))
    assert conversation.header.meta["unknown_records"] == {"message/compression": 1}


@pytest.mark.parametrize(
    ("messages", "location", "reason"),
    [
        ([MESSAGES[0], "hi"], "$.messages[1]", "object"),
        ([MESSAGES[0], {**MESSAGES[3], "toolCalls": {"id": "x"}}], "$.messages[1].toolCalls", "list"),
        ([MESSAGES[0], {**MESSAGES[3], "toolCalls": [{"name": "ls"}]}], "$.messages[1].toolCalls[0].id", "str"),
        ([MESSAGES[0], {**MESSAGES[3], "toolCalls": [{**CANCELLED, "args": "ls"}]}],
         "$.messages[1].toolCalls[0].args", "object"),
        ([MESSAGES[0], {**MESSAGES[3], "toolCalls": [{**CANCELLED, "result": answered("other", "x", "y")}]}],
         "$.messages[1].toolCalls[0].result", "other"),
        ([MESSAGES[0], {**MESSAGES[0], "type": 3}], "$.messages[1].type", "string"),
    ],
)
def test_a_malformed_message_is_a_typed_error_naming_it(
    tmp_path: Path, messages: list[Any], location: str, reason: str
) -> None:
    with pytest.raises(SessionFormatError) as caught:
        load(write(tmp_path, "s.json", {**SESSION, "messages": messages}))
    assert caught.value.location.startswith(location) and reason in caught.value.reason


def test_other_formats_keep_their_files(tmp_path: Path) -> None:
    chat = {"messages": [{"role": "user", "content": "hi"}]}
    assert detect(write(tmp_path, "chat.json", chat)) == "chat-messages"
    claude = [{"type": "user", "uuid": "u1", "timestamp": at(0), "sessionId": "s",
               "message": {"role": "user", "content": "hi"}}]
    assert detect(write(tmp_path, "claude.jsonl", claude)) == "claude-code"


def test_only_geminis_own_names_are_put_in_snake_case() -> None:
    recorded = [{"functionResponse": {"id": "c1", "name": "read", "response": {"fileText": "x", "isBinary": False}},
                 "thoughtSignature": "sig"}, {"inlineData": {"mimeType": "image/png", "data": "iVBOR"}}, "plain"]
    assert genai_parts(recorded) == [
        {"function_response": {"id": "c1", "name": "read", "response": {"fileText": "x", "isBinary": False}},
         "thought_signature": "sig"},
        {"inline_data": {"mime_type": "image/png", "data": "iVBOR"}},
        {"text": "plain"},
    ]
