"""Property tests: every realistic wire conversation round-trips exactly and reads as a valid conversation."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from strategies import anthropic_requests, conversations, openai_chat_requests, responses_requests

from contextfold import Conversation
from contextfold.adapters import (
    from_anthropic,
    from_openai,
    from_responses,
    to_anthropic,
    to_openai,
    to_responses,
    tools_to_openai,
    tools_to_responses,
)
from contextfold.codec import conversation_from_dict, conversation_to_dict

ROUND_TRIPS = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@ROUND_TRIPS
@given(anthropic_requests())
def test_anthropic_round_trip(request: dict[str, Any]) -> None:
    conversation = from_anthropic(request["messages"], system=request["system"], tools=request["tools"])
    assert to_anthropic(conversation) == request
    assert conversation.validate() == []


@ROUND_TRIPS
@given(openai_chat_requests())
def test_openai_chat_round_trip(request: dict[str, Any]) -> None:
    conversation = from_openai(request["messages"], tools=request["tools"])
    assert to_openai(conversation) == request["messages"]
    assert tools_to_openai(conversation) == request["tools"]
    assert conversation.validate() == []


@ROUND_TRIPS
@given(responses_requests())
def test_responses_round_trip(request: dict[str, Any]) -> None:
    conversation = from_responses(request["items"], tools=request["tools"])
    assert to_responses(conversation) == request["items"]
    assert tools_to_responses(conversation) == request["tools"]
    assert conversation.validate() == []


@settings(max_examples=200, deadline=None)
@given(anthropic_requests(), openai_chat_requests(), responses_requests())
def test_round_trips_survive_the_transcript_codec(
    anthropic: dict[str, Any], chat: dict[str, Any], responses: dict[str, Any]
) -> None:
    """What the adapters keep in meta and extra is plain JSON: a reloaded session sends the same request."""

    def reload(conversation: Conversation) -> Conversation:
        return conversation_from_dict(conversation_to_dict(conversation))

    assert (
        to_anthropic(
            reload(from_anthropic(anthropic["messages"], system=anthropic["system"], tools=anthropic["tools"]))
        )
        == anthropic
    )
    assert to_openai(reload(from_openai(chat["messages"]))) == chat["messages"]
    assert to_responses(reload(from_responses(responses["items"]))) == responses["items"]


@settings(max_examples=200, deadline=None)
@given(conversations())
def test_neutral_strategy_gives_valid_conversations_with_rounds(conversation: Conversation) -> None:
    assert conversation.validate() == []
    for round_ in conversation.rounds():
        answered = {conversation[i].tool_result.call_id for i in range(round_.start + 1, round_.end)}  # type: ignore[union-attr]
        assert answered == set(round_.call_ids)
