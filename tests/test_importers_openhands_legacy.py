"""OpenHands v0.x event streams (``openhands-legacy``): trajectory exports and evaluation ``history``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextfold.conversation import Text, ToolCall
from contextfold.errors import SessionFormatError
from contextfold.importers import detect, load

from session_files import write_session


def at(second: int) -> str:
    return f"2025-03-01T10:00:{second:02d}.123456"


def response(response_id: str, *calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """A litellm response as OpenHands keeps it in ``tool_call_metadata.model_response``."""
    tool_calls = [{"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                  for cid, name, args in calls]
    return {"id": response_id, "model": "claude-3-5-sonnet", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "tool_calls",
                         "message": {"role": "assistant", "content": "Let me look.", "tool_calls": tool_calls}}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940}}


PARALLEL = response("resp-1", ("toolu_1", "execute_bash", {"command": "ls"}),
                    ("toolu_2", "str_replace_editor", {"command": "view", "path": "/w/a.py"}))


def metadata(call_id: str, name: str) -> dict[str, Any]:
    return {"function_name": name, "tool_call_id": call_id, "model_response": PARALLEL, "total_calls_in_response": 2}


EVENTS: list[dict[str, Any]] = [
    {"id": 0, "timestamp": at(0), "source": "agent", "message": "You are OpenHands agent.", "action": "system",
     "args": {"content": "You are OpenHands agent.", "tools": [{"type": "function", "function": {
         "name": "execute_bash", "parameters": {"type": "object"}}}], "openhands_version": "0.39.0"}},
    {"id": 1, "timestamp": at(1), "source": "user", "message": "Fix the bug in a.py", "action": "message",
     "args": {"content": "Fix the bug in a.py", "image_urls": None, "wait_for_response": False}},
    {"id": 2, "timestamp": at(1), "source": "user", "message": "Retrieving content", "action": "recall",
     "args": {"recall_type": "workspace_context", "query": "Fix the bug in a.py"}},
    {"id": 3, "timestamp": at(2), "source": "environment", "message": "Added workspace context", "cause": 2,
     "observation": "recall", "content": "", "extras": {"repo_name": ""}},
    {"id": 4, "timestamp": at(3), "source": "agent", "message": "Running command: ls", "action": "run",
     "args": {"command": "ls", "is_input": False, "thought": "Let me look.", "blocking": False, "hidden": False,
              "confirmation_state": "confirmed"}, "tool_call_metadata": metadata("toolu_1", "execute_bash")},
    {"id": 5, "timestamp": at(4), "source": "agent", "message": "Command `ls` executed with exit code 0.",
     "cause": 4, "observation": "run", "content": "a.py", "tool_call_metadata": metadata("toolu_1", "execute_bash"),
     "extras": {"command": "ls", "metadata": {"exit_code": 0, "pid": -1}, "hidden": False}},
    {"id": 6, "timestamp": at(5), "source": "agent", "message": "Reading file: /w/a.py", "action": "read",
     "args": {"path": "/w/a.py", "start": 0, "end": -1, "thought": "", "impl_source": "oh_aci"},
     "tool_call_metadata": metadata("toolu_2", "str_replace_editor")},
    {"id": 7, "timestamp": at(6), "source": "agent", "message": "I read the file /w/a.py.", "cause": 6,
     "observation": "read", "content": "x = 1\n", "extras": {"path": "/w/a.py", "impl_source": "oh_aci"},
     "tool_call_metadata": metadata("toolu_2", "str_replace_editor")},
    {"id": 8, "timestamp": at(7), "source": "environment", "message": "", "observation": "agent_state_changed",
     "content": "", "extras": {"agent_state": "running"}},
    {"id": 9, "timestamp": at(8), "source": "agent", "message": "Running command: pytest", "action": "run",
     "args": {"command": "pytest", "thought": "Now the tests."}},
    {"id": 10, "timestamp": at(9), "source": "agent", "message": "Command failed", "cause": 9,
     "observation": "error", "content": "timed out", "extras": {"error_id": ""}},
    {"id": 11, "timestamp": at(10), "source": "agent", "message": "All done! What's next on the agenda?",
     "action": "finish", "args": {"final_thought": "Fixed.", "outputs": {}, "thought": ""}},
]


def test_an_exported_trajectory_pairs_each_call_with_its_observation(tmp_path: Path) -> None:
    path = write_session(tmp_path, "trajectory.json", EVENTS)
    assert detect(path) == "openhands-legacy"
    (conversation,) = load(path)
    assert conversation.header.system_text == "You are OpenHands agent."
    assert [spec.name for spec in conversation.header.tools] == ["execute_bash"]
    assert [item.kind for item in conversation] == [
        "user", "tool_call", "tool_result", "tool_result", "tool_call", "tool_result", "tool_call"
    ]
    parallel = conversation[1]
    assert parallel.blocks[0] == Text("Let me look.")
    assert [(c.id, c.name, c.arguments) for c in parallel.tool_calls] == [
        ("toolu_1", "execute_bash", {"command": "ls"}),
        ("toolu_2", "str_replace_editor", {"command": "view", "path": "/w/a.py"}),
    ]
    assert parallel.meta["usage"]["prompt_tokens"] == 900 and parallel.meta["model"] == "claude-3-5-sonnet"
    assert conversation[2].tool_result.text == "a.py" and conversation[2].meta["facts"]["exit_code"] == 0
    assert conversation[2].timestamp == pytest.approx(1740823204.123456)
    prompted = conversation[4].tool_calls[0]  # no tool_call_metadata: named by its event, args as the call's
    assert (prompted.id, prompted.name, prompted.arguments) == ("event9", "run", {"command": "pytest"})
    assert conversation[5].tool_result.is_error and conversation[5].tool_result.text == "timed out"
    assert conversation[6].tool_calls[0].name == "finish"  # never answered: stays open
    answered = {item.tool_result.call_id for item in conversation if item.tool_result is not None}
    assert answered == {"toolu_1", "toolu_2", "event9"}
    assert conversation.header.meta["skipped"] == {
        "action/recall": 1, "observation/agent_state_changed": 1, "observation/recall": 1
    }


def test_an_evaluation_output_is_one_conversation_per_instance_and_reads_pairs(tmp_path: Path) -> None:
    pairs = [
        [EVENTS[1], {"message": "No observation", "observation": "null", "content": "", "extras": {}}],
        [EVENTS[9], {"message": "ok", "observation": "run", "content": "1 passed", "extras": {"exit_code": 0}}],
    ]
    lines = [
        {"instance_id": "astropy-1", "history": EVENTS, "metadata": {"agent_class": "CodeActAgent",
                                                                     "llm_config": {"model": "gpt-4o"}}},
        {"instance_id": "django-2", "history": pairs, "error": None},
    ]
    path = write_session(tmp_path, "output.jsonl", lines)
    assert detect(path) == "openhands-legacy"
    first, second = load(path)
    assert first.header.meta["instance_id"] == "astropy-1" and first.header.meta["agent_class"] == "CodeActAgent"
    assert [item.kind for item in second] == ["user", "tool_call", "tool_result"]
    assert second[2].tool_result.text == "1 passed" and second[2].meta["facts"]["exit_code"] == 0
    assert second.validate() == []
    (one,) = load(write_session(tmp_path, "instance.json", lines[1]))
    assert one.header.meta["instance_id"] == "django-2" and len(one) == 3


def test_an_error_that_answers_no_call_is_said_to_the_model(tmp_path: Path) -> None:
    stuck = {"id": 12, "timestamp": at(11), "source": "agent", "message": "stuck", "observation": "error",
             "content": "Agent got stuck in a loop", "extras": {}}
    (conversation,) = load(write_session(tmp_path, "t.json", [*EVENTS[:2], stuck]))
    assert conversation[-1].role == "user" and conversation[-1].text == "Agent got stuck in a loop"


def test_an_event_that_is_neither_action_nor_observation_is_counted(tmp_path: Path) -> None:
    (conversation,) = load(write_session(tmp_path, "t.json", [*EVENTS[:2], {"id": 12, "source": "agent", "status": "x"}]))
    assert conversation.header.meta["unknown_records"] == {"(neither action nor observation)": 1}


@pytest.mark.parametrize(
    ("events", "location", "reason"),
    [
        ([EVENTS[1], {**EVENTS[5], "cause": 77}], "$[1].cause", "77"),
        ([EVENTS[1], {**EVENTS[9], "args": ["pytest"]}], "$[1].args", "object"),
        ([EVENTS[1], {**EVENTS[9], "action": 3}], "$[1].action", "string"),
        ([EVENTS[9], {**EVENTS[10], "content": {"text": "x"}}], "$[1].content", "string"),
        ([EVENTS[1], "run"], "$[1]", "object"),
        ([EVENTS[1], {**EVENTS[4], "id": {"n": 4}}], "$[1].id", "event id"),
        ([EVENTS[1], EVENTS[4], {**EVENTS[5], "cause": [4]}], "$[2].cause", "event id"),
    ],
)
def test_a_malformed_event_is_a_typed_error_naming_it(
    tmp_path: Path, events: list[Any], location: str, reason: str
) -> None:
    with pytest.raises(SessionFormatError) as caught:
        load(write_session(tmp_path, "t.json", events), format="openhands-legacy")
    assert caught.value.location == location and reason in caught.value.reason


def test_the_sdk_event_list_and_swe_agent_history_are_not_taken(tmp_path: Path) -> None:
    sdk = [{"kind": "MessageEvent", "source": "user", "action": "x", "args": {},
            "llm_message": {"role": "user", "content": []}}]
    assert detect(write_session(tmp_path, "sdk.json", sdk)) == "openhands"
    swe = {"trajectory": [], "history": [{"role": "user", "content": "hi"}]}
    assert detect(write_session(tmp_path, "x.traj", swe)) == "swe-agent"


def test_a_call_written_without_the_models_response_keeps_the_actions_args(tmp_path: Path) -> None:
    bare = {**EVENTS[4], "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "toolu_9",
                                                "model_response": {"id": "r9"}, "total_calls_in_response": 1}}
    (conversation,) = load(write_session(tmp_path, "t.json", [EVENTS[1], bare, {**EVENTS[5], "tool_call_metadata": None}]))
    assert conversation[1].tool_calls == (ToolCall("toolu_9", "execute_bash", {"command": "ls", "is_input": False}),)
    assert conversation[2].tool_result.call_id == "toolu_9"


def test_a_condensation_with_a_summary_is_a_summary_boundary(tmp_path: Path) -> None:
    condensed = {"id": 12, "timestamp": at(11), "source": "agent", "message": "Summary: ...", "action": "condensation",
                 "args": {"forgotten_events_start_id": 4, "forgotten_events_end_id": 7, "summary_offset": 1,
                          "summary": "Read a.py; ls shows one file."}}
    forgotten_only = {**condensed, "id": 13, "args": {"forgotten_event_ids": [9, 10], "summary": None}}
    (conversation,) = load(write_session(tmp_path, "t.json", [*EVENTS[:11], condensed, forgotten_only]))
    summaries = [item for item in conversation if item.meta.get("compact_summary")]
    assert [item.text for item in summaries] == ["Read a.py; ls shows one file."] and summaries[0].role == "user"
    assert conversation.header.meta["skipped"]["action/condensation"] == 1


def test_json_lines_of_events_without_causes_pair_by_kind_in_file_order(tmp_path: Path) -> None:
    events = [
        {"action": "message", "args": {"content": "Fix it"}, "source": "user"},
        {"action": "run", "args": {"command": "pytest", "thought": "Reproduce."}, "source": "agent"},
        {"observation": "agent_state_changed", "content": "", "extras": {"agent_state": "running"}},
        {"observation": "run", "content": "1 failed", "extras": {"exit_code": 1}, "source": "agent"},
        {"observation": "run", "content": "a stray second output", "extras": {}},
    ]
    path = write_session(tmp_path, "events.jsonl", events)
    assert detect(path) == "openhands-legacy"
    (conversation,) = load(path)
    assert [item.kind for item in conversation] == ["user", "tool_call", "tool_result"]
    assert conversation[2].tool_result.text == "1 failed" and conversation[2].meta["facts"]["exit_code"] == 1
    assert conversation.header.meta["skipped"] == {"observation/agent_state_changed": 1, "observation/run": 1}
