"""Importers read provider-shaped messages through the adapters: the same messages make the same items.

Each recording format that embeds a provider's messages (mini-swe-agent,
tau-bench and SWE-agent embed OpenAI Chat; Claude Code embeds Anthropic
Messages) is fed messages with the shapes the two readers used to disagree
on, and its items are compared with what the adapter makes of the same list.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextfold import Conversation, Document, Image, Item, ToolCall
from contextfold.adapters import from_anthropic, from_openai, to_anthropic, to_openai
from contextfold.importers import load

WIRE_META = ("origin", "shape", "extra", "invalid_arguments", "position", "positions", "result_content")
"""Item meta the adapters write; an importer adds its own keys (usage, facts, response ids) beside them."""
EPHEMERAL = {"type": "ephemeral"}

CHAT = [
    {"role": "system", "content": "You fix bugs."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Look at this."},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "high"}},
            {"type": "file", "file": {"file_id": "file-abc", "filename": "spec.pdf"}},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls'}},
            {"id": "c2", "type": "custom", "custom": {"name": "apply_patch", "input": "*** Begin Patch"}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
    {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "patched"}]},
    {"role": "assistant", "content": "Done."},
]

ANTHROPIC = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Look at this.", "cache_control": EPHEMERAL},
            {"type": "image", "source": {"type": "file", "file_id": "file_011"}},
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "spec"}},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "ls first", "signature": "sig"},
            {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}, "cache_control": EPHEMERAL},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "a.py", "cache_control": EPHEMERAL},
            {"type": "text", "text": "and now?"},
        ],
    },
]


def wire_view(conversation: Conversation) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    """What the adapter decides about each item (system items first): role, blocks and the adapter's meta."""
    items: list[Item] = [*conversation.header.system, *conversation.items]
    return [(i.role, i.blocks, {k: i.meta[k] for k in WIRE_META if k in i.meta}) for i in items]


def write(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_the_disagreements_are_gone_in_the_adapter_reading() -> None:
    conversation = from_openai(CHAT)
    user, call, *_ = conversation
    assert isinstance(user.blocks[2], Document) and user.blocks[1].extra == {"image_url": {"detail": "high"}}
    assert [c.name for c in call.tool_calls] == ["bash", "apply_patch"]
    assert call.meta["invalid_arguments"] == ["c1", "c2"]  # broken JSON, and free text: neither is an object


def test_mini_swe_agent_and_tau_bench_read_chat_messages_as_the_adapter_does(tmp_path: Path) -> None:
    expected = wire_view(from_openai(CHAT))
    mini = {"info": {"mini_version": "1.0"}, "trajectory_format": "mini-swe-agent-1",
            "messages": [{**m, "extra": {"timestamp": 100.0 + k}} for k, m in enumerate(CHAT)]}
    tau = [{"task_id": 0, "trial": 0, "reward": 1.0, "info": {}, "traj": CHAT}]
    for conversation in (*load(write(tmp_path, "run.traj.json", mini)), *load(write(tmp_path, "tau.json", tau))):
        assert wire_view(conversation) == expected
        assert to_openai(conversation) == CHAT  # what the agent sent, exactly


def test_swe_agent_reads_its_function_calling_history_as_the_adapter_does(tmp_path: Path) -> None:
    history = [{**m, "agent": "main", "message_type": "action"} for m in CHAT]
    doc = {"environment": "x", "trajectory": [], "history": history, "info": {}}
    (conversation,) = load(write(tmp_path, "run.traj", doc))
    assert wire_view(conversation) == wire_view(from_openai(CHAT))


def _claude_code_lines(messages: list[dict[str, Any]]) -> str:
    records = []
    for k, message in enumerate(messages):
        if message["role"] == "assistant":
            message = {"id": f"msg_{k}", "type": "message", "model": "claude-x", "stop_reason": "tool_use",
                       "usage": {"input_tokens": 5, "output_tokens": 2}, **message}
        records.append({"type": message["role"], "uuid": f"u{k}", "parentUuid": f"u{k - 1}" if k else None,
                        "sessionId": "s1", "timestamp": f"2026-01-01T00:00:0{k}Z", "message": message})
    return "\n".join(json.dumps(r) for r in records)


def test_claude_code_reads_anthropic_messages_as_the_adapter_does(tmp_path: Path) -> None:
    (conversation,) = load(write(tmp_path, "session.jsonl", _claude_code_lines(ANTHROPIC)))
    assert wire_view(conversation) == wire_view(from_anthropic(ANTHROPIC))
    image = conversation[0].blocks[1]
    assert isinstance(image, Image) and image.extra == {"source": {"type": "file", "file_id": "file_011"}}
    assert isinstance(conversation[1].blocks[1], ToolCall)
    written = to_anthropic(conversation)["messages"]
    assert written[0]["content"][1] == ANTHROPIC[0]["content"][1]  # the file id goes back out
    assert written[2] == ANTHROPIC[2]  # the result and the text share one message again, marks kept
