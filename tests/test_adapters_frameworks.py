"""Property tests: the histories agent frameworks keep round-trip exactly through their adapters and read as valid."""

from __future__ import annotations

from typing import Any

import pytest
from framework_strategies import genai_contents, langchain_messages
from hypothesis import HealthCheck, given, settings

from contextfold import Conversation
from contextfold.adapters.genai import from_genai, to_genai
from contextfold.codec import conversation_from_dict, conversation_to_dict

ROUND_TRIPS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _reload(conversation: Conversation) -> Conversation:
    return conversation_from_dict(conversation_to_dict(conversation))


@ROUND_TRIPS
@given(genai_contents())
def test_genai_round_trip(drawn: list[dict[str, Any]]) -> None:
    """Dicts in the SDK's dump shape come back equal; so do the SDK objects built from them."""
    types = pytest.importorskip("google.genai.types", reason="google-genai is not installed (pip install 'contextfold[adk]')")
    objects = [types.Content.model_validate(content) for content in drawn]
    dumped = [content.model_dump(mode="json", exclude_none=True) for content in objects]
    conversation = from_genai(dumped)
    assert to_genai(conversation) == dumped
    assert [types.Content.model_validate(c) for c in to_genai(from_genai(objects))] == objects
    assert to_genai(_reload(conversation)) == dumped
    assert conversation.validate() == []


@ROUND_TRIPS
@given(langchain_messages())
def test_langchain_round_trip(messages: list[Any]) -> None:
    from contextfold.adapters.langchain import from_langchain, to_langchain

    conversation = from_langchain(messages)
    assert to_langchain(conversation) == messages
    assert to_langchain(_reload(conversation)) == messages
    assert conversation.validate() == []
