"""Property tests: every realistic wire conversation round-trips exactly and reads as a valid conversation."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck
from strategies import anthropic_requests, conversations, openai_chat_requests, responses_requests
from sweeps import Sweep

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

ROUND_TRIPS = Sweep(main=50, full=200, suppress_health_check=[HealthCheck.too_slow])
CODEC = Sweep(main=25, full=100)


def anthropic_round_trip(request: dict[str, Any]) -> None:
    conversation = from_anthropic(request["messages"], system=request["system"], tools=request["tools"])
    assert to_anthropic(conversation) == request
    assert conversation.validate() == []


test_anthropic_round_trip, test_anthropic_round_trip_sweep = ROUND_TRIPS.tests(anthropic_round_trip, anthropic_requests())


def openai_chat_round_trip(request: dict[str, Any]) -> None:
    conversation = from_openai(request["messages"], tools=request["tools"])
    assert to_openai(conversation) == request["messages"]
    assert tools_to_openai(conversation) == request["tools"]
    assert conversation.validate() == []


test_openai_chat_round_trip, test_openai_chat_round_trip_sweep = ROUND_TRIPS.tests(
    openai_chat_round_trip, openai_chat_requests())


def responses_round_trip(request: dict[str, Any]) -> None:
    conversation = from_responses(request["items"], tools=request["tools"])
    assert to_responses(conversation) == request["items"]
    assert tools_to_responses(conversation) == request["tools"]
    assert conversation.validate() == []


test_responses_round_trip, test_responses_round_trip_sweep = ROUND_TRIPS.tests(responses_round_trip, responses_requests())


def round_trips_survive_the_transcript_codec(
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


test_round_trips_survive_the_transcript_codec, test_round_trips_survive_the_transcript_codec_sweep = CODEC.tests(
    round_trips_survive_the_transcript_codec, anthropic_requests(), openai_chat_requests(), responses_requests())


def neutral_strategy_gives_valid_conversations_with_rounds(conversation: Conversation) -> None:
    assert conversation.validate() == []
    for round_ in conversation.rounds():
        answered = {conversation[i].tool_result.call_id for i in range(round_.start + 1, round_.end)}  # type: ignore[union-attr]
        assert answered == set(round_.call_ids)


test_neutral_strategy_gives_valid_conversations_with_rounds, test_neutral_strategy_gives_valid_conversations_with_rounds_sweep = (
    CODEC.tests(neutral_strategy_gives_valid_conversations_with_rounds, conversations()))
