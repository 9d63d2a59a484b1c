"""Each importer on tiny hand-written files: conversion rules, detection and malformed input."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from contextfold.conversation import Image, Text, Thinking, ToolCall
from contextfold.errors import SessionFormatError, UnknownSessionFormat
from contextfold.importers import FORMATS, detect, load
from contextfold.reading.speaker import is_person


def write(tmp_path: Path, name: str, content: Any) -> Path:
    """``content`` as a file: a str verbatim, a list of dicts as JSON Lines when ``name`` ends in .jsonl, else JSON."""
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    elif name.endswith(".jsonl"):
        path.write_text("".join(json.dumps(r) + "\n" for r in content), encoding="utf-8")
    else:
        path.write_text(json.dumps(content, indent=1), encoding="utf-8")
    return path


def call(call_id: str, command: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": command})},
    }


def test_formats_lists_every_name() -> None:
    assert set(FORMATS) == {
        "contextfold-session-1",
        "mini-swe-agent",
        "swe-agent",
        "moatless",
        "openhands",
        "openhands-legacy",
        "tau-bench",
        "gemini-cli",
        "goose",
        "chat-messages",
        "claude-code",
        "claude-stream-json",
        "codex-exec",
        "codex-rollout",
        "codex-tui",
        "specstory",
        "aider",
    }


# --------------------------------------------------------------------------- mini-swe-agent

MINI = {
    "info": {"mini_version": "2.2.7", "exit_status": "Submitted", "config": {"model": {"model_name": "m"}}},
    "trajectory_format": "mini-swe-agent-1.1",
    "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Fix the bug."},
        {
            "role": "assistant",
            "content": "Looking.",
            "reasoning_content": "hmm",
            "tool_calls": [call("c1", "ls")],
            "extra": {
                "timestamp": 100.5,
                "response": {
                    "model": "deepseek-chat",
                    "usage": {
                        "prompt_tokens": 50,
                        "completion_tokens": 7,
                        "prompt_tokens_details": {"cached_tokens": 20},
                    },
                },
            },
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": "<returncode>2</returncode>",
            "extra": {"returncode": 2, "raw_output": "copy", "timestamp": 101.0},
        },
        {"role": "user", "content": "No tool calls found.", "extra": {"interrupt_type": "FormatError"}},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [call("c2", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")],
            "extra": {"timestamp": 102.0, "response": {"usage": {"prompt_tokens": 80, "completion_tokens": 3}}},
        },
        {"role": "exit", "content": "diff --git a/x b/x", "extra": {"exit_status": "Submitted"}},
    ],
}


def test_mini_swe_agent(tmp_path: Path) -> None:
    path = write(tmp_path, "run.traj.json", MINI)
    assert detect(path) == "mini-swe-agent"
    (conversation,) = load(path)
    assert conversation.validate() == []
    assert conversation.header.system_text == "You are a helpful assistant."
    assert [item.kind for item in conversation] == [
        "user",
        "tool_call",
        "tool_result",
        "user",
        "tool_call",
        "tool_result",
    ]
    first = conversation[1]
    assert isinstance(first.blocks[0], Thinking) and first.blocks[1] == Text("Looking.")
    assert first.tool_calls[0].arguments == {"command": "ls"} and first.timestamp == 100.5
    assert first.meta["usage"] == {
        "prompt_tokens": 50,
        "output_tokens": 7,
        "cache_read_tokens": 20,
        "cache_write_tokens": 0,
    }
    assert first.meta["model"] == "deepseek-chat"
    result = conversation[2].tool_result
    assert conversation[2].meta["facts"] == {"returncode": 2} and result.extra == {}  # the recording's, not the wire's
    assert result.tool_name == "bash" and conversation[2].timestamp == 101.0
    assert conversation[3].meta["interrupt_type"] == "FormatError"
    exit_result = conversation[5].tool_result
    assert (exit_result.call_id, exit_result.text, conversation[5].meta["facts"]) == (
        "c2",
        "diff --git a/x b/x",
        {"exit_status": "Submitted"},
    )
    assert conversation.header.meta["exit_status"] == "Submitted"


def test_mini_swe_agent_exit_without_open_call_is_skipped_and_counted(tmp_path: Path) -> None:
    messages = MINI["messages"][:4] + [{"role": "exit", "content": "boom", "extra": {"exit_status": "LimitsExceeded"}}]
    (conversation,) = load(write(tmp_path, "run.traj.json", {**MINI, "messages": messages}))
    assert len(conversation) == 3 and conversation.header.meta["skipped"] == {"exit": 1}


def test_mini_swe_agent_role_not_known_yet_is_skipped_and_counted(tmp_path: Path) -> None:
    """A newer version's bookkeeping message (a role no chat has) is counted, not a refusal of the run."""
    note = {"role": "checkpoint", "content": "step 2", "extra": {"timestamp": 1.0}}
    messages = [*MINI["messages"][:2], note, *MINI["messages"][2:4]]
    (conversation,) = load(write(tmp_path, "run.traj.json", {**MINI, "messages": messages}))
    assert [item.kind for item in conversation] == ["user", "tool_call", "tool_result"]
    assert conversation.header.meta["unknown_records"] == {"role checkpoint": 1}


def test_mini_swe_agent_result_without_call_names_the_message(tmp_path: Path) -> None:
    messages = MINI["messages"][:2] + [{"role": "tool", "tool_call_id": "ghost", "content": "?"}]
    with pytest.raises(SessionFormatError) as caught:
        load(write(tmp_path, "run.traj.json", {**MINI, "messages": messages}))
    assert caught.value.location == "$.messages[2].tool_call_id" and "ghost" in caught.value.reason


def test_truncated_json_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "run.traj.json", json.dumps(MINI, indent=1)[:300])
    with pytest.raises(UnknownSessionFormat) as detected:
        load(path)
    assert detected.value.location.startswith("line ") and "not valid JSON" in detected.value.reason
    with pytest.raises(SessionFormatError) as forced:
        load(path, format="mini-swe-agent")
    assert forced.value.location == detected.value.location


def test_invalid_tool_arguments_are_kept_raw(tmp_path: Path) -> None:
    broken = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls'}}
    messages = [MINI["messages"][1], {"role": "assistant", "content": None, "tool_calls": [broken]}]
    (conversation,) = load(write(tmp_path, "run.traj.json", {**MINI, "messages": messages}))
    (bad,) = conversation[1].tool_calls
    assert (bad.arguments, bad.raw_arguments) == ({}, '{"command": "ls')
    assert conversation[1].meta["invalid_arguments"] == ["c1"]  # recorded the one way the adapters do


# --------------------------------------------------------------------------- tau-bench and SWE-agent


def test_tau_bench_one_conversation_per_result_and_reused_ids(tmp_path: Path) -> None:
    traj = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call("a", "x")]},
        {"role": "tool", "tool_call_id": "a", "name": "bash", "content": "1"},
        {"role": "assistant", "content": None, "tool_calls": [call("a", "y")]},  # id reused after its result
        {"role": "tool", "tool_call_id": "a", "name": "bash", "content": "2"},
    ]
    results = [{"task_id": n, "trial": 0, "reward": 1.0, "info": {}, "traj": traj} for n in range(2)]
    path = write(tmp_path, "airline.json", results)
    assert detect(path) == "tau-bench"
    first, second = load(path)
    assert first.header.meta == {"format": "tau-bench", "task_id": 0, "trial": 0, "reward": 1.0}
    assert second.header.meta["task_id"] == 1 and first.validate() == []
    renamed = first[3].tool_calls[0]
    assert (renamed.id, first[3].meta["original_ids"]) == ("a#2", {"a#2": "a"})
    assert first[4].tool_result.call_id == "a#2" and first[4].tool_result.arguments == {"command": "y"}
    assert first[0].id != second[0].id  # ids are distinct across conversations of one file


def test_tau_bench_results_without_task_ids_are_read(tmp_path: Path) -> None:
    """A run's results saved with only their chats (no ``task_id``) are still tau-bench's."""
    traj = [{"role": "system", "content": "policy"}, {"role": "user", "content": "hi"}]
    path = write(tmp_path, "results.json", [{"traj": traj, "reward": 1.0}, {"traj": traj}])
    assert detect(path) == "tau-bench"
    assert [c.header.meta.get("reward") for c in load(path)] == [1.0, None]


def test_tau_bench_id_reused_while_open_is_an_error(tmp_path: Path) -> None:
    traj = [
        {"role": "assistant", "content": None, "tool_calls": [call("a", "x")]},
        {"role": "assistant", "content": None, "tool_calls": [call("a", "y")]},
    ]
    with pytest.raises(SessionFormatError) as caught:
        load(write(tmp_path, "t.json", [{"task_id": 0, "traj": traj}]))
    assert caught.value.location == "$[0].traj[1]"


def test_swe_agent_thought_action_history(tmp_path: Path) -> None:
    doc = {
        "environment": "swe_main",
        "history": [
            {"role": "system", "content": "SETTING"},
            {"role": "user", "content": "ISSUE"},
            {"role": "assistant", "content": "look\n```\nls\n```", "thought": "look", "action": "ls\n"},
            {"role": "user", "content": "a.py"},
            {"role": "assistant", "content": "done\n```\nsubmit\n```", "thought": "done", "action": "submit\n"},
        ],
        "trajectory": [
            {"action": "ls\n", "observation": "a.py", "execution_time": 0.5},
            {"action": "submit\n", "observation": "diff --git"},
        ],
        "info": {"exit_status": "submitted"},
    }
    path = write(tmp_path, "x.traj", doc)
    assert detect(path) == "swe-agent"
    (conversation,) = load(path)
    assert conversation.validate() == [] and conversation.header.system_text == "SETTING"
    assert conversation[1].tool_calls == (ToolCall("swe-step-0", "bash", {"command": "ls\n"}),)
    assert conversation[2].meta["facts"] == {"execution_time_s": 0.5}
    assert conversation[4].tool_result.text == "diff --git"  # the last observation is only in the trajectory


def test_swe_agent_function_calling_history(tmp_path: Path) -> None:
    history = [
        {"role": "user", "content": "ISSUE"},
        {"role": "assistant", "content": "t", "tool_calls": [call("f1", "ls")], "action": "ls"},
        {"role": "tool", "content": "out", "tool_call_ids": ["f1"]},
    ]
    (conversation,) = load(
        write(tmp_path, "y.traj", {"history": history, "trajectory": [{"action": "ls"}], "info": {}})
    )
    assert [item.kind for item in conversation] == ["user", "tool_call", "tool_result"]
    assert conversation[1].tool_calls[0].id == "f1"



def test_swe_agent_observations_and_thoughts_given_as_lists_of_parts_are_read(tmp_path: Path) -> None:
    """A 1.x history can hold content as a list of parts (text with cache marks, as sent to Claude): the observation
    and the thought are read from the parts, as the referee reads them, never left empty for not being a string."""
    def parts(text: str) -> list[dict[str, Any]]:
        return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]

    history = [
        {"role": "user", "content": parts("ISSUE")},
        {"role": "assistant", "content": "t", "tool_calls": [call("f1", "ls")], "action": "ls"},
        {"role": "tool", "content": parts("OBSERVATION:\nsetup.py"), "tool_call_ids": ["f1"]},
        {"role": "assistant", "content": parts("look at it"), "thought": "look at it", "action": "cat setup.py"},
        {"role": "user", "content": parts("name = 'marshmallow'")},
    ]
    (conversation,) = load(write(tmp_path, "p.traj", {"history": history, "info": {}}))
    assert conversation.validate() == []
    assert conversation[2].tool_result.text == "OBSERVATION:\nsetup.py"
    assert conversation[3].text == "look at it" and conversation[4].tool_result.text == "name = 'marshmallow'"
    with pytest.raises(SessionFormatError, match=r"history\[2\]\.content"):
        load(write(tmp_path, "bad.traj", {"history": [*history[:2], {**history[2], "content": 7}], "info": {}}))


@pytest.mark.parametrize("trajectory", ["absent", None, []])
def test_swe_agent_history_alone_is_read(tmp_path: Path, trajectory: Any) -> None:
    """A .traj saved without its steps (or a history exported alone): the history is the chat; old
    thought-action histories pair an action with the next user message, as the referee reads them."""
    history = [
        {"role": "system", "content": "SETTING", "agent": "primary"},
        {"role": "user", "content": "DEMO", "agent": "primary", "is_demo": True},
        {"role": "user", "content": "ISSUE", "agent": "primary"},
        {"role": "assistant", "content": "look\n```\nls\n```", "thought": "look", "action": "ls\n"},
        {"role": "user", "content": "a.py"},
    ]
    doc = {"history": history} if trajectory == "absent" else {"history": history, "trajectory": trajectory}
    path = write(tmp_path, "h.traj", doc)
    assert detect(path) == "swe-agent"
    (conversation,) = load(path)
    assert conversation.validate() == []
    assert [item.kind for item in conversation] == ["user", "user", "tool_call", "tool_result"]
    assert conversation[0].meta["is_demo"] is True and "extra" not in conversation[0].meta
    assert conversation[2].tool_calls == (ToolCall("swe-step-0", "bash", {"command": "ls\n"}),)
    assert conversation[3].tool_result.text == "a.py"

# --------------------------------------------------------------------------- moatless and OpenHands


def test_moatless_actions_become_calls(tmp_path: Path) -> None:
    doc = {
        "name": "x",
        "initial_message": "Unicode bug",
        "current_transition_id": 2,
        "transitions": [
            {"id": 0, "name": "Pending", "timestamp": "2024-08-15T20:34:25.859767"},
            {
                "id": 1,
                "name": "EditCode",
                "timestamp": "2024-08-15T20:34:26",
                "properties": {"model": "m1"},
                "actions": [
                    {
                        "request": {"content": "<replace>a</replace>"},
                        "response": {"trigger": "retry", "retry_message": "same"},
                        "completion": {"model": "m2", "usage": {"prompt_tokens": 9, "completion_tokens": 2}},
                    },
                    {
                        "request": {"content": "<replace>b</replace>"},
                        "response": {"trigger": "finish", "output": {"message": "Applied", "diff": "-a\n+b"}},
                    },
                ],
            },
        ],
        "info": {"instance_id": "psf__requests-1", "status": "finished"},
    }
    path = write(tmp_path, "trajectory.json", doc)
    assert detect(path) == "moatless"
    (conversation,) = load(path)
    assert conversation.validate() == [] and conversation[0].text == "Unicode bug"
    assert conversation[0].timestamp == pytest.approx(1723754065.859767)
    retry_call, retry_item = conversation[1], conversation[2]
    retry = retry_item.tool_result
    assert retry_call.tool_calls == (ToolCall("moatless-1-0", "EditCode", {"content": "<replace>a</replace>"}),)
    assert retry_call.meta == {
        "model": "m2",
        "usage": {"prompt_tokens": 9, "output_tokens": 2, "cache_read_tokens": 0, "cache_write_tokens": 0},
    }
    assert (retry.text, retry.is_error, retry_item.meta["facts"]) == ("same", True, {"trigger": "retry"})
    assert json.loads(conversation[4].tool_result.text) == {"message": "Applied", "diff": "-a\n+b"}
    assert conversation[3].meta == {"model": "m1"}


def openhands_action(event_id: str, call_id: str, response: str, name: str = "browser_click") -> dict[str, Any]:
    return {
        "kind": "ActionEvent",
        "id": event_id,
        "timestamp": "2025-10-30T13:30:02.5",
        "source": "agent",
        "thought": [{"type": "text", "text": "clicking"}],
        "reasoning_content": None,
        "action": {"kind": "BrowserClickAction", "index": 1},
        "tool_name": name,
        "tool_call_id": call_id,
        "tool_call": {"id": call_id, "name": name, "arguments": '{"index": 1}', "origin": "completion"},
        "llm_response_id": response,
    }


def openhands_observation(call_id: str, output: str, error: str | None = None) -> dict[str, Any]:
    return {
        "kind": "ObservationEvent",
        "id": "o" + call_id,
        "timestamp": "2025-10-30T13:30:03",
        "source": "environment",
        "tool_name": "browser_click",
        "tool_call_id": call_id,
        "action_id": "x",
        "observation": {"kind": "BrowserObservation", "output": output, "error": error, "screenshot_data": None},
    }


def test_openhands_groups_parallel_actions(tmp_path: Path) -> None:
    events = [
        {
            "kind": "MessageEvent",
            "id": "m",
            "timestamp": "2025-10-30T13:30:00",
            "source": "user",
            "llm_message": {"role": "user", "content": [{"type": "text", "text": "Order a chair."}]},
            "extended_content": [],
        },
        openhands_action("e1", "c1", "r1"),
        openhands_action("e2", "c2", "r1"),
        openhands_observation("c1", "clicked"),
        openhands_observation("c2", "", error="element gone"),
        openhands_action("e3", "c3", "r2"),
    ]
    path = write(tmp_path, "traj.json", events)
    assert detect(path) == "openhands"
    (conversation,) = load(path)
    assert [item.kind for item in conversation] == ["user", "tool_call", "tool_result", "tool_result", "tool_call"]
    assert [c.id for c in conversation[1].tool_calls] == ["c1", "c2"] and conversation[1].meta["response_id"] == "r1"
    assert conversation[1].timestamp == pytest.approx(1761831002.5)
    failed = conversation[3].tool_result
    assert (failed.is_error, failed.text) == (True, "element gone")
    (dangling,) = conversation.validate()
    assert (dangling.kind, dangling.call_id) == ("unanswered_call", "c3")


def test_openhands_event_kind_not_known_yet_is_skipped_and_counted(tmp_path: Path) -> None:
    """A newer SDK's event kind, even first in the file, neither hides the format nor refuses the file."""
    new = {"kind": "NextSdkEvent", "id": "z", "timestamp": "2025-10-30T13:30:01", "source": "agent", "tokens": [1]}
    events = [new, openhands_action("e1", "c1", "r1"), openhands_observation("c1", "ok"), new]
    path = write(tmp_path, "traj.json", events)
    assert detect(path) == "openhands"
    (conversation,) = load(path)
    assert [item.kind for item in conversation] == ["tool_call", "tool_result"]
    assert conversation.header.meta["unknown_records"] == {"NextSdkEvent": 2}
    with pytest.raises(SessionFormatError) as caught:  # a known event that is malformed still raises
        load(write(tmp_path, "bad.json", [*events, {**openhands_observation("c2", "x"), "tool_call_id": 5}]))
    assert caught.value.location.startswith("$[4]")


def test_openhands_newer_sdk_shapes_are_read_as_the_referee_reads_them(tmp_path: Path) -> None:
    """Newer SDKs: an observation's text in ``content`` parts beside an empty ``output`` and failure as
    ``is_error``, a thought given as a string, and an outcome event of a kind not known yet that names its call."""
    observation = openhands_observation("c1", "")
    observation["observation"] = {"kind": "ExecuteBashObservation", "output": "", "is_error": True,
                                  "content": [{"type": "text", "text": "bash: pnpm: command not found"}]}
    thought_as_text = {**openhands_action("e2", "c2", "r2"), "thought": "retry with npm"}
    outcome = {"kind": "ToolTimeoutEvent", "id": "t", "timestamp": "2025-10-30T13:30:09", "source": "environment",
               "tool_call_id": "c2", "error": "timed out after 120 s"}
    (conversation,) = load(write(tmp_path, "traj.json", [openhands_action("e1", "c1", "r1"), observation,
                                                          thought_as_text, outcome]))
    failed = conversation[1].tool_result
    assert (failed.text, failed.is_error) == ("bash: pnpm: command not found", True)
    assert conversation[2].text == "retry with npm" and conversation.validate() == []
    assert (conversation[3].tool_result.text, conversation[3].tool_result.is_error) == ("timed out after 120 s", True)
    assert conversation.header.meta["unknown_records"] == {"ToolTimeoutEvent": 1}


# --------------------------------------------------------------------------- Claude Code


def cc_assistant(message_id: str, blocks: list[dict[str, Any]], cache_read: int) -> dict[str, Any]:
    usage = {
        "input_tokens": 3,
        "cache_creation_input_tokens": 10,
        "cache_read_input_tokens": cache_read,
        "output_tokens": 5,
    }
    return {
        "type": "assistant",
        "uuid": message_id + str(len(blocks)),
        "parentUuid": None,
        "sessionId": "s",
        "timestamp": "2026-01-21T06:20:46.065Z",
        "message": {
            "model": "claude-opus-4-5",
            "id": message_id,
            "role": "assistant",
            "content": blocks,
            "usage": usage,
        },
    }


def cc_result(call_id: str, text: str, **record: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": "u" + call_id,
        "sessionId": "s",
        "timestamp": "2026-01-21T06:20:47Z",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": False}],
        },
        **record,
    }


def tool_use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Read", "input": {"file_path": "/a"}}


CLAUDE_RECORDS = [
    {"type": "queue-operation", "operation": "dequeue", "timestamp": "2026-01-21T06:20:46.058Z", "sessionId": "s"},
    {
        "type": "user",
        "uuid": "u0",
        "parentUuid": None,
        "sessionId": "s",
        "timestamp": "2026-01-21T06:20:46Z",
        "message": {"role": "user", "content": "Port it."},
    },
    cc_assistant("msg_1", [{"type": "thinking", "thinking": "plan", "signature": "sig"}], 100),
    cc_assistant("msg_1", [{"type": "text", "text": "Reading."}], 100),
    cc_assistant("msg_1", [tool_use("t1")], 100),
    cc_assistant("msg_1", [tool_use("t2")], 100),
    cc_result(
        "t1", "one", toolUseResult={"type": "text", "file": {"filePath": "/a", "content": "x" * 500, "numLines": 3}}
    ),
    {
        **cc_result("t2", "two"),
        "message": {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "is_error": True,
                    "content": [
                        {"type": "text", "text": "two"},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
                    ],
                }
            ],
        },
    },
    {
        "type": "user",
        "uuid": "u9",
        "sessionId": "s",
        "isMeta": True,
        "message": {"role": "user", "content": "Stop hook"},
    },
]


def test_claude_code_joins_records_of_one_response(tmp_path: Path) -> None:
    path = write(tmp_path, "session.jsonl", CLAUDE_RECORDS)
    assert detect(path) == "claude-code"
    (conversation,) = load(path)
    assert conversation.validate() == []
    assert [item.kind for item in conversation] == ["user", "tool_call", "tool_result", "tool_result", "user"]
    response = conversation[1]
    assert [type(b).__name__ for b in response.blocks] == ["Thinking", "Text", "ToolCall", "ToolCall"]
    assert response.blocks[0] == Thinking("plan", "sig")
    assert response.meta["usage"] == {
        "prompt_tokens": 113,
        "output_tokens": 5,
        "cache_read_tokens": 100,
        "cache_write_tokens": 10,
    }
    assert response.meta["response_id"] == "msg_1" and response.timestamp == pytest.approx(1768976446.065)
    assert conversation[2].meta["facts"] == {"type": "text", "filePath": "/a", "numLines": 3}
    image_result = conversation[3].tool_result
    assert image_result.is_error is True and image_result.content[1] == Image(data="iVBO", media_type="image/png")
    assert conversation[4].meta["is_meta"] is True
    assert conversation.header.meta == {"format": "claude-code", "session_id": "s", "skipped": {"queue-operation": 1}}


def test_claude_code_sidechains_are_separate_conversations(tmp_path: Path) -> None:
    side_call = {**cc_assistant("msg_s", [tool_use("s1")], 0), "isSidechain": True, "uuid": "a", "parentUuid": None}
    side_result = {**cc_result("s1", "found"), "isSidechain": True, "uuid": "b", "parentUuid": "a"}
    main, side = load(write(tmp_path, "s.jsonl", [CLAUDE_RECORDS[1], side_call, side_result]))
    assert [item.kind for item in main] == ["user"]
    assert side.header.meta["sidechain"] is True and [item.kind for item in side] == ["tool_call", "tool_result"]


def test_claude_code_bad_line_is_refused_where_it_is(tmp_path: Path) -> None:
    lines = "".join(json.dumps(r) + "\n" for r in CLAUDE_RECORDS[:3]) + "{not json\n"
    with pytest.raises(SessionFormatError) as bad:
        load(write(tmp_path, "a.jsonl", lines))
    assert bad.value.location == "line 4"


def test_claude_code_result_whose_call_record_was_lost_is_kept_as_an_observation(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    """A transcript can lose a call's record (an interrupted write; a checkout that rewrote the file): its result
    answers nothing the file holds. What the model saw stays, as an observation the reader does not take for the
    person, no result is sent without its call, and the loss is counted and logged instead of refusing the
    session."""
    with caplog.at_level(logging.WARNING, logger="contextfold.importers.claude_code"):
        (conversation,) = load(write(tmp_path, "b.jsonl", [CLAUDE_RECORDS[1], cc_result("nobody", "pushed 3 commits")]))
    assert conversation.validate() == []
    observation = conversation[-1]
    assert observation.role == "user" and observation.tool_result is None and not is_person(observation)
    assert observation.text.startswith("[Output of a tool call whose record this recording lost]")
    assert "pushed 3 commits" in observation.text
    assert conversation.header.meta["unmatched_results"] == 1
    assert "line 2" in caplog.text and "answers no call" in caplog.text


# --------------------------------------------------------------------------- stream-json, raw and in a hive-mind log

INIT = {
    "type": "system",
    "subtype": "init",
    "session_id": "s1",
    "model": "claude-sonnet-4-5",
    "tools": ["Bash", "Task"],
    "cwd": "/tmp/w",
    "claude_code_version": "2.0.27",
}


def stream_assistant(message_id: str, blocks: list[dict[str, Any]], parent: str | None = None) -> dict[str, Any]:
    return {
        "type": "assistant",
        "session_id": "s1",
        "parent_tool_use_id": parent,
        "message": {
            "id": message_id,
            "role": "assistant",
            "model": "claude-haiku" if parent else "claude-sonnet",
            "content": blocks,
            "usage": {"input_tokens": 5, "cache_read_input_tokens": 0, "output_tokens": 1},
        },
    }


def stream_result(call_id: str, text: str, parent: str | None = None) -> dict[str, Any]:
    return {
        "type": "user",
        "session_id": "s1",
        "parent_tool_use_id": parent,
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": text}]},
    }


def session_with_a_subagent() -> list[dict[str, Any]]:
    """Session s1's events: a Task call, the subagent's own call and result under it, then the Task's result."""
    task = {"type": "tool_use", "id": "task1", "name": "Task", "input": {"prompt": "Find the code."}}
    return [
        INIT,
        stream_assistant("m1", [task]),
        stream_assistant("m2", [tool_use("r1")], parent="task1"),
        stream_result("r1", "src", parent="task1"),
        stream_result("task1", "found it"),
    ]


def test_stream_json_subagents_are_conversations_of_their_own(tmp_path: Path) -> None:
    events = [
        *session_with_a_subagent(),
        {"type": "result", "subtype": "success", "is_error": False, "num_turns": 3, "session_id": "s1", "result": "ok"},
    ]
    path = write(tmp_path, "stream.jsonl", events)
    assert detect(path) == "claude-stream-json"
    main, subagent = load(path)
    assert main.validate() == [] and subagent.validate() == []
    assert [spec.name for spec in main.header.tools] == ["Bash", "Task"]
    assert main.header.meta["result"] == {"subtype": "success", "is_error": False, "num_turns": 3}
    assert [item.kind for item in main] == ["tool_call", "tool_result"]
    assert subagent.header.meta["parent_tool_use_id"] == "task1"
    assert [item.text for item in subagent if item.role == "user"] == ["Find the code."]
    assert subagent[1].meta["model"] == "claude-haiku"


def test_stream_json_sessions_come_before_subagents_so_an_index_names_the_same_session(tmp_path: Path) -> None:
    """A log of two sessions, the first of which ran a subagent: conversation 1 is the second session (the N-th
    session is conversation N to every reader), the subagent after both."""
    second = {**INIT, "session_id": "s2"}
    events = [
        *session_with_a_subagent(),
        second,
        {**stream_assistant("m3", [{"type": "text", "text": "Second session."}]), "session_id": "s2"},
    ]
    conversations = load(write(tmp_path, "stream.jsonl", events))
    assert [c.header.meta.get("session_id") for c in conversations] == ["s1", "s2", "s1"]
    assert [c.header.meta.get("subagent", False) for c in conversations] == [False, False, True]
    assert conversations[1][0].text == "Second session."
    ids = {item.id for c in conversations for item in c}
    assert len(ids) == sum(len(c) for c in conversations)


def log_line(payload: str, second: int = 0) -> str:
    return f"[2025-11-05T05:28:{second:02d}.000Z] [INFO] {payload}"


def test_hive_mind_log_recovers_every_event_shape(tmp_path: Path) -> None:
    chunked = json.dumps(stream_result("t2", "long output"))
    mangled = json.dumps(stream_result("t3", "ESC")).replace("ESC", "\\^[[0m")  # an invalid escape, as in pr-52
    cut = json.dumps(stream_result("t4", "never finished"))
    lines = [
        "Solution draft log for https://github.com/o/r/pull/1",
        "",
        log_line("🚀 solve v0.29.4"),
        log_line("---BEGIN USER PROMPT---"),
        log_line("Issue to solve: #1"),
        "",
        "Proceed.",
        log_line("---END USER PROMPT---"),
        log_line("---BEGIN SYSTEM PROMPT---"),
        log_line("Be careful."),
        log_line("---END SYSTEM PROMPT---"),
        log_line(json.dumps(INIT, indent=2), 1),  # pretty-printed over un-prefixed lines
        log_line(json.dumps(stream_assistant("m1", [tool_use("t1"), tool_use("t2")]))),
        json.dumps(stream_result("t1", "a line\n}\nwith a brace")),  # a second event on an un-prefixed line
        log_line(chunked[:40], 2),
        log_line(chunked[40:], 3),
        log_line(json.dumps(stream_assistant("m2", [tool_use("t3")])), 4),
        log_line(mangled, 4),
        log_line("✅ Checking git status"),
        "M file.py",
        log_line(json.dumps(stream_assistant("m3", [tool_use("t4")])), 5),
        "un-prefixed output after an event",
        log_line(cut[:30], 6),
    ]
    path = write(tmp_path, "solve-log.txt", "\n".join(lines) + "\n")
    assert detect(path) == "claude-stream-json"
    (conversation,) = load(path)
    assert conversation.header.system_text == "Be careful."
    assert conversation[0].text == "Issue to solve: #1\n\nProceed." and conversation[0].timestamp == pytest.approx(
        1762320480
    )
    assert [r.tool_result.text for r in conversation if r.role == "tool"] == [
        "a line\n}\nwith a brace",
        "long output",
        "\\^[[0m",
    ]
    assert conversation.header.meta["unparsed_lines"] == ["\n".join(lines).split("\n").index(log_line(cut[:30], 6)) + 1]
    (dangling,) = conversation.validate()
    assert dangling.call_id == "t4"


# --------------------------------------------------------------------------- Codex


def test_codex_exec_events(tmp_path: Path) -> None:
    def item(phase: str, **fields: Any) -> dict[str, Any]:
        return {"type": f"item.{phase}", "item": fields}

    events = [
        {"type": "thread.started", "thread_id": "th1"},
        {"type": "turn.started"},
        item("completed", id="item_0", type="reasoning", text="**Plan**"),
        item("started", id="item_1", type="todo_list", items=[{"text": "read", "completed": False}]),
        item(
            "started",
            id="item_2",
            type="command_execution",
            command="bash -lc ls",
            aggregated_output="",
            exit_code=None,
            status="in_progress",
        ),
        item(
            "completed",
            id="item_2",
            type="command_execution",
            command="bash -lc ls",
            aggregated_output="a.py\n",
            exit_code=1,
            status="failed",
        ),
        item(
            "completed",
            id="item_3",
            type="file_change",
            changes=[{"path": "/w/a.py", "kind": "add"}],
            status="completed",
        ),
        item("updated", id="item_1", type="todo_list", items=[{"text": "read", "completed": True}]),
        item("completed", id="item_1", type="todo_list", items=[{"text": "read", "completed": True}]),
        {"type": "turn.completed", "usage": {"input_tokens": 900, "cached_input_tokens": 800, "output_tokens": 40}},
        {"type": "thread.started", "thread_id": "th2"},
        item("started", id="item_0", type="command_execution", command="sleep 99", status="in_progress"),
    ]
    path = write(tmp_path, "exec.jsonl", events)
    assert detect(path) == "codex-exec"
    first, second = load(path)
    assert first.validate() == []
    response = first[0]
    assert isinstance(response.blocks[0], Thinking) and response.blocks[1] == Text("[ ] read", extra={"plan": True})
    assert response.tool_calls == (ToolCall("item_2", "shell", {"command": "bash -lc ls"}),)
    failed = first[1].tool_result
    assert (failed.text, failed.is_error, first[1].meta["facts"]) == ("a.py\n", True, {"exit_code": 1, "status": "failed"})
    assert first[2].tool_calls[0].arguments == {"changes": [{"path": "/w/a.py", "kind": "add"}]}
    assert first[3].tool_result.text == "add /w/a.py"
    assert first[4].text == "[x] read"  # the plan again once it changed; the identical final state is not repeated
    assert first.header.meta["turn_usage"] == [
        {"prompt_tokens": 900, "output_tokens": 40, "cache_read_tokens": 800, "cache_write_tokens": 0}
    ]
    assert second.header.meta["thread_id"] == "th2"
    assert [v.kind for v in second.validate()] == ["unanswered_call"]


def test_codex_exec_item_type_not_known_yet_is_skipped_and_counted(tmp_path: Path) -> None:
    """A newer Codex's item type (here ``image_view``) is counted, not a refusal of the whole log."""
    events = [
        {"type": "thread.started", "thread_id": "th1"},
        {"type": "item.completed", "item": {"id": "item_0", "type": "image_view", "path": "/w/a.png"}},
        {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": "Seen."}},
    ]
    (conversation,) = load(write(tmp_path, "exec.jsonl", events))
    assert [item.text for item in conversation] == ["Seen."]
    assert conversation.header.meta["unknown_records"] == {"item/image_view": 1}


def test_codex_exec_todo_items_or_changes_that_are_not_a_list_are_a_typed_error(tmp_path: Path) -> None:
    """Found by fuzzing (seed 7): a todo_list whose ``items`` was a number raised a raw TypeError."""
    events = [{"type": "thread.started", "thread_id": "th1"},
              {"type": "item.started", "item": {"id": "item_1", "type": "todo_list", "items": 2.5}}]
    path = write(tmp_path, "exec.jsonl", events)
    with pytest.raises(SessionFormatError) as caught:
        load(path, "codex-exec")
    assert "line 2" in str(caught.value) and "item.items" in str(caught.value) and "found a float" in str(caught.value)
    events[1] = {"type": "item.completed", "item": {"id": "item_2", "type": "file_change", "changes": 7}}
    with pytest.raises(SessionFormatError, match=r"item\.changes"):
        load(write(tmp_path, "exec2.jsonl", events), "codex-exec")


def key(char: str, kind: str = "Press", modifiers: str = "0x0") -> dict[str, Any]:
    code = f"Char('{char}')" if len(char) == 1 or char.startswith("\\") else char
    return {
        "ts": "2025-08-09T15:51:04.827Z",
        "dir": "to_tui",
        "kind": "key_event",
        "event": f"KeyEvent {{ code: {code}, modifiers: KeyModifiers({modifiers}), kind: {kind}, state: KeyEventState(0x0) }}",
    }


def codex(msg: dict[str, Any], ts: str = "2025-08-09T15:51:05.000Z") -> dict[str, Any]:
    return {"ts": ts, "dir": "to_tui", "kind": "codex_event", "payload": {"id": "1", "msg": msg}}


def test_codex_tui_recording(tmp_path: Path) -> None:
    typed = [
        key("h"),
        key("h", "Release"),
        key("x"),
        key("Backspace"),
        key("i"),
        key("\\'"),
        key("c", modifiers="CONTROL"),
        key("Enter"),
    ]
    records = [
        {"ts": "2025-08-09T15:51:04.827Z", "dir": "meta", "kind": "session_start", "cwd": "/w", "model": "gpt-5-codex"},
        *typed,
        codex({"type": "session_configured", "session_id": "sess", "model": "gpt-5-codex"}),
        {"ts": "2025-08-09T15:51:05.1Z", "dir": "to_tui", "kind": "app_event", "variant": "Redraw"},
        codex({"type": "agent_reasoning_delta", "delta": "Plan"}),
        codex({"type": "agent_reasoning", "text": "Plan"}),
        codex(
            {
                "type": "exec_command_begin",
                "call_id": "c1",
                "command": ["bash", "-lc", "ls"],
                "cwd": "/w",
                "parsed_cmd": [],
            }
        ),
        codex({"type": "exec_command_output_delta", "call_id": "c1", "stream": "stdout", "chunk": "YQ=="}),
        codex(
            {
                "type": "exec_command_end",
                "call_id": "c1",
                "stdout": "a",
                "stderr": "warn",
                "exit_code": 0,
                "duration": {"secs": 1, "nanos": 500000000},
            }
        ),
        codex({"type": "token_count", "input_tokens": 6034, "cached_input_tokens": 5537, "output_tokens": 272}),
        codex({"type": "agent_message", "message": "Done."}),
    ]
    path = write(tmp_path, "session.jsonl", records)
    assert detect(path) == "codex-tui"
    (conversation,) = load(path)
    assert conversation.validate() == []
    assert conversation[0].text == "hi'"  # presses only, backspace applied, control chord ignored
    assert conversation[1].tool_calls[0].arguments == {"command": ["bash", "-lc", "ls"], "cwd": "/w"}
    assert conversation[1].meta["usage"]["cache_read_tokens"] == 5537
    result = conversation[2].tool_result
    assert (result.text, conversation[2].meta["facts"]) == ("a\nwarn", {"exit_code": 0, "duration_s": 1.5})
    assert conversation[3].text == "Done."
    assert conversation.header.meta["skipped"] == {
        "agent_reasoning_delta": 1,
        "app_event": 1,
        "exec_command_output_delta": 1,
    }


def test_codex_tui_record_kinds_and_events_not_known_yet_are_skipped_and_counted(tmp_path: Path) -> None:
    """A newer Codex's records (here a ``paste_event`` kind, a ``plan_update`` event) are counted, not refused."""
    records = [
        codex({"type": "session_configured", "session_id": "sess", "model": "gpt-5-codex"}),
        {"ts": "2025-08-09T15:51:05.1Z", "dir": "from_tui", "kind": "paste_event", "text": "x"},
        codex({"type": "plan_update", "explanation": None, "plan": [{"step": "look", "status": "in_progress"}]}),
        codex({"type": "exec_command_begin", "call_id": "c1", "command": ["ls"], "cwd": "/w"}),
        codex({"type": "exec_command_end", "call_id": "c1", "stdout": "a", "exit_code": 0}),
    ]
    (conversation,) = load(write(tmp_path, "newer.jsonl", records))
    assert [item.kind for item in conversation] == ["tool_call", "tool_result"]
    assert conversation.header.meta["unknown_records"] == {"event/plan_update": 1, "kind/paste_event": 1}
    with pytest.raises(SessionFormatError) as caught:  # a known event that is malformed still raises
        load(write(tmp_path, "bad.jsonl", [*records, codex({"type": "exec_command_end", "stdout": "b"})]))
    assert caught.value.location.startswith(f"line {len(records) + 1}")


# --------------------------------------------------------------------------- aider

AIDER = """
# aider chat started at 2025-07-15 11:38:37

> Aider v0.85.1  
> Main model: gpt-4o with diff edit format  

#### sync-afi  
#### aider-afi  

<thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b>
Let me think.
</thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b>

Here are the edits:

sync-afi.sh
```bash
<<<<<<< SEARCH
=======
echo sync
>>>>>>> REPLACE
```

> Tokens: 3.4k sent, 184 received.  
> Applied edit to sync-afi.sh  
> Applied edit to aider-afi.sh  

#### /run ls  
> Added 3 lines of output to the chat.  

# aider chat started at 2025-07-15 14:53:34

#### hi  
"""


def test_aider_history(tmp_path: Path) -> None:
    path = write(tmp_path, ".aider.chat.history.md", AIDER)
    assert detect(path) == "aider"
    first, second = load(path)
    assert first.validate() == [] and first.header.meta["model"] == "gpt-4o"
    assert first.header.meta["started_at_local"] == "2025-07-15 11:38:37"
    assert first.header.meta["console"] == ["Aider v0.85.1", "Main model: gpt-4o with diff edit format"]
    assert [item.kind for item in first] == ["user", "tool_call", "tool_result", "tool_result", "user"]
    assert first[0].text == "sync-afi\naider-afi"
    reply = first[1]
    assert reply.blocks[0] == Thinking("Let me think.") and "<<<<<<< SEARCH" in reply.blocks[1].text
    assert [c.arguments["path"] for c in reply.tool_calls] == ["sync-afi.sh", "aider-afi.sh"]
    assert reply.meta["console"][0] == "Tokens: 3.4k sent, 184 received."
    assert first[4].text == "/run ls" and first[4].meta["console"] == ["Added 3 lines of output to the chat."]
    assert [item.text for item in second] == ["hi"]


def test_an_aider_header_of_a_megabyte_is_read_in_one_pass(tmp_path: Path) -> None:
    """Found by probing the importers' patterns: the header's ``(.+?)\\s*$`` backtracked quadratically over blanks
    with a character after them (30,000 took 12 s); a line of a megabyte would not return in the lifetime of the
    test. What the header says is kept as before, trailing blanks left out."""
    started = "2025-07-15 11:38:37" + " " * 1_000_000 + "x"
    path = write(tmp_path, ".aider.chat.history.md", f"# aider chat started at {started}  \n\n#### hi\n\nok\n")
    (conversation,) = load(path)
    assert conversation.header.meta["started_at_local"] == started and [item.text for item in conversation] == ["hi", "ok"]



def test_a_bare_angle_bracket_in_an_aider_reply_is_the_replys_code_not_console(tmp_path: Path) -> None:
    """A whole-file edit of a page whose tag spans lines closes it with ``>`` alone on a line (an excerpt written
    for this test in the shape of one). Read as aider's console, it cut the reply into two replies and lost the
    line; aider's own empty console line (``">  "``, with its markdown break) stays console."""
    history = ("# aider chat started at 2026-04-06 11:25:24\n\n#### make the page\n\nsrc/pages/a.astro\n```astro\n"
               '<Layout\n  title="A"\n>\n  <main>hi</main>\n</Layout>\n```\n\n'
               "> Tokens: 1k sent, 1k received.  \n>  \n> Applied edit to src/pages/a.astro  \n")
    (conversation,) = load(write(tmp_path, ".aider.chat.history.md", history))
    assert [item.kind for item in conversation] == ["user", "tool_call", "tool_result"]
    reply = conversation[1]
    assert '  title="A"\n>\n  <main>hi</main>' in reply.blocks[0].text
    assert reply.meta["console"] == ["Tokens: 1k sent, 1k received.", "", "Applied edit to src/pages/a.astro"]

# --------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("empty.txt", "", "empty"),
        ("obj.json", {"hello": 1}, "keys ['hello']"),
        ("arr.json", [1, 2], "JSON array of 2"),
        ("rec.jsonl", [{"a": 1}, {"b": 2}], "JSON Lines"),
        ("notes.md", "# Notes\n\nnothing here\n", "no known session format"),
        # found by mutating real records: a ``type`` that is no string crashed detection (unhashable)
        ("typed.jsonl", [{"type": {"kind": "user"}, "id": 1, "timestamp": 0, "content": "x"}, {"a": 1}], "JSON Lines"),
    ],
)
def test_unknown_files_say_what_they_are(tmp_path: Path, name: str, content: Any, reason: str) -> None:
    path = write(tmp_path, name, content)
    with pytest.raises(UnknownSessionFormat) as caught:
        detect(path)
    assert reason in caught.value.reason and caught.value.path == str(path)


def test_a_content_part_type_that_is_no_string_is_a_typed_error_not_a_crash_of_detection(tmp_path: Path) -> None:
    """Found by mutating real records: Goose's detection hashed a part's ``type`` (a list: TypeError)."""
    path = write(tmp_path, "parts.jsonl", [{"role": "user", "created": 1, "content": [{"type": ["text"]}]}])
    with pytest.raises(SessionFormatError, match=r"line 1\.content\[0\]\.type"):
        load(path)


def test_format_override_and_unknown_name(tmp_path: Path) -> None:
    path = write(tmp_path, "named-wrong.txt", MINI)  # content decides, not the name
    assert detect(path) == "mini-swe-agent"
    assert len(load(path, format="mini-swe-agent")) == 1
    with pytest.raises(ValueError, match="unknown session format"):
        load(path, format="gemini")
    with pytest.raises(SessionFormatError):
        load(path, format="tau-bench")  # the override is obeyed, and the mismatch reported


def test_a_path_holding_a_nul_byte_is_a_session_format_error(tmp_path: Path) -> None:
    """Found by fuzzing paths: load raised ValueError ('embedded null byte') reading the file."""
    with pytest.raises(SessionFormatError, match="cannot be read"):
        load(tmp_path / "a\0b.jsonl")
