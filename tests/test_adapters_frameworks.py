"""Property tests: the histories agent frameworks keep round-trip exactly through their adapters and read as valid."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from framework_strategies import genai_contents, langchain_messages
from hypothesis import HealthCheck
from sweeps import Sweep

from contextfold import Conversation
from contextfold.adapters import from_openai
from contextfold.adapters.gemini import from_genai, system_instruction_to_genai, to_genai
from contextfold.codec import conversation_from_dict, conversation_to_dict
from contextfold.errors import InvalidContent, UnknownRole

ROUND_TRIPS = Sweep(main=25, full=100, suppress_health_check=[HealthCheck.too_slow])


def _reload(conversation: Conversation) -> Conversation:
    return conversation_from_dict(conversation_to_dict(conversation))


def genai_round_trip(drawn: list[dict[str, Any]]) -> None:
    """Dicts in the SDK's dump shape come back equal; so do the SDK objects built from them."""
    types = pytest.importorskip("google.genai.types", reason="google-genai is missing: python3 -m pip install -e '.[adk]'")
    objects = [types.Content.model_validate(content) for content in drawn]
    dumped = [content.model_dump(mode="json", exclude_none=True) for content in objects]
    conversation = from_genai(dumped)
    assert to_genai(conversation) == dumped
    assert [types.Content.model_validate(c) for c in to_genai(from_genai(objects))] == objects
    assert to_genai(_reload(conversation)) == dumped
    assert conversation.validate() == []


test_genai_round_trip, test_genai_round_trip_sweep = ROUND_TRIPS.tests(genai_round_trip, genai_contents())


def langchain_round_trip(messages: list[Any]) -> None:
    from contextfold.adapters.langchain import from_langchain, to_langchain

    conversation = from_langchain(messages)
    assert to_langchain(conversation) == messages
    assert to_langchain(_reload(conversation)) == messages
    assert conversation.validate() == []


test_langchain_round_trip, test_langchain_round_trip_sweep = ROUND_TRIPS.tests(langchain_round_trip, langchain_messages())


# --------------------------------------------------------------------------- what the pipeline does to them


def test_genai_edits_and_repairs_reach_the_wire_in_gemini_shapes() -> None:
    """A shortened JSON output is sent as ``{"result": text}``; a repair's error result joins the turn's responses."""
    contents = [
        {"role": "user", "parts": [{"text": "task"}]},
        {"role": "model", "parts": [{"function_call": {"name": "ls", "args": {}}},
                                    {"function_call": {"name": "cat", "args": {"path": "a"}}}]},
        {"role": "user", "parts": [{"function_response": {"name": "ls", "response": {"files": ["a", "b"]}}}]},
    ]
    conversation = from_genai(contents)
    result = conversation[2].tool_result
    assert result is not None and json.loads(result.text) == {"files": ["a", "b"]}
    shortened = conversation[2].with_blocks([replace(result, content='{"files": ["a", … 1 more')])
    repaired, repairs = conversation.with_items([*conversation.items[:2], shortened]).repair()
    assert [r.action for r in repairs] == ["answered_call"]
    [turn] = to_genai(repaired)[2:]
    assert [p["function_response"]["name"] for p in turn["parts"]] == ["ls", "cat"]
    assert turn["parts"][0]["function_response"]["response"] == {"result": '{"files": ["a", … 1 more'}
    assert "error" in turn["parts"][1]["function_response"]["response"]


def test_genai_contents_without_parts_or_with_a_null_role_come_back_as_they_came() -> None:
    """A content dumped without parts (a reply cut off before any) and an explicit null role are written back
    so, not as ``"parts": []`` or with the role left out (fuzzing found both: the write-back differed)."""
    contents = [{"role": "user", "parts": [{"text": "task"}]}, {"role": "model"}, {},
                {"role": None, "parts": [{"text": "x"}]}]
    system = {"role": None, "parts": [{"text": "be brief"}]}
    conversation = from_genai(contents, system_instruction=system)
    assert to_genai(conversation) == contents
    assert to_genai(_reload(conversation)) == contents
    assert system_instruction_to_genai(conversation) == system
    assert to_genai(from_genai([{"role": "model", "parts": []}])) == [{"role": "model", "parts": []}]


def test_a_genai_function_response_without_a_name_is_written_back_without_one() -> None:
    """Not with its call's name filled in (fuzzing found the write-back differed)."""
    contents = [{"role": "user", "parts": [{"text": "task"}]},
                {"role": "model", "parts": [{"function_call": {"id": "c1", "name": "ls", "args": {}}}]},
                {"role": "user", "parts": [{"function_response": {"id": "c1", "response": {"result": "a.py"}}}]}]
    conversation = from_genai(contents)
    assert to_genai(conversation) == contents
    assert to_genai(_reload(conversation)) == contents


def test_genai_errors_name_the_content_and_field() -> None:
    with pytest.raises(UnknownRole) as role:
        from_genai([{"role": "user", "parts": [{"text": "a"}]}, {"role": "tool", "parts": []}])
    assert role.value.index == 1
    with pytest.raises(InvalidContent) as orphan:
        from_genai([{"role": "user", "parts": [{"function_response": {"name": "ls", "response": {}}}]}])
    assert (orphan.value.index, orphan.value.field) == (0, "parts[0].function_response")


def test_langchain_reads_what_it_can_pair_and_writes_other_formats() -> None:
    from langchain_core.messages import AIMessage, ChatMessage, HumanMessage, ToolMessage

    from contextfold.adapters.langchain import from_langchain, to_langchain

    with pytest.raises(UnknownRole) as role:
        from_langchain([HumanMessage("a"), ChatMessage(content="b", role="critic")])
    assert role.value.index == 1
    with pytest.raises(InvalidContent):
        from_langchain([HumanMessage("a"), ToolMessage("r", tool_call_id="nowhere")])
    chat = from_openai([
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a b"},
    ])
    assert to_langchain(chat) == [
        HumanMessage("task"),
        AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "c1", "type": "tool_call"}]),
        ToolMessage("a b", tool_call_id="c1"),
    ]
