"""Every built-in provider passes the reusable conformance suite a new provider runs
(``contextfold.adapters.conformance``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from contextfold import Usage
from contextfold.adapters import AnthropicMessages
from contextfold.adapters.conformance import AdapterConformance
from contextfold.adapters.registry import adapter_for
from contextfold.conversation import Conversation


class TestAnthropic(AdapterConformance):
    adapter = adapter_for("anthropic")
    reply = {"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "done"}],
             "stop_reason": "end_turn",
             "usage": {"input_tokens": 30, "cache_read_input_tokens": 10, "output_tokens": 2}}
    reply_text, reply_prompt_tokens = "done", 40


class TestOpenAIChat(AdapterConformance):
    adapter = adapter_for("openai")
    reply = {"id": "chatcmpl-1", "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 10}}}
    reply_text, reply_prompt_tokens = "done", 40


class TestOpenAIResponses(AdapterConformance):
    adapter = adapter_for("responses")
    reply = {"id": "resp_1", "object": "response", "status": "completed", "output": [
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "done", "annotations": []}]}],
        "usage": {"input_tokens": 40, "output_tokens": 2}}
    reply_text, reply_prompt_tokens = "done", 40


class TestGemini(AdapterConformance):
    adapter = adapter_for("gemini")
    reply = {"candidates": [{"content": {"role": "model", "parts": [{"text": "done"}]}, "finish_reason": "STOP"}],
             "usage_metadata": {"prompt_token_count": 40, "candidates_token_count": 2}}
    reply_text, reply_prompt_tokens = "done", 40

    def read_body(self, body: Mapping[str, Any]) -> Conversation:
        return self.adapter.read(body["contents"], system=body.get("system_instruction"), tools=body.get("tools"))


class MisreadsUsage(AnthropicMessages):
    """Anthropic's format reading only the uncached input: the misread that leaves the count short."""

    def read_usage(self, usage: Any) -> Usage:
        return Usage(prompt_tokens=usage["input_tokens"])


class RoundTripBreaks(AnthropicMessages):
    """Anthropic's format dropping the last message it writes."""

    def write(self, conversation: Conversation) -> dict[str, Any]:
        body = super().write(conversation)
        return {**body, "messages": body["messages"][:-1]}


def test_the_suite_fails_an_adapter_that_misreads_its_usage_or_its_round_trip() -> None:
    misreads = type("MisreadsCheck", (TestAnthropic,), {"adapter": MisreadsUsage()})()
    with pytest.raises(AssertionError, match="whole prompt"):
        misreads.test_its_reply_is_read_with_the_usage_that_anchors_the_count()
    breaks = type("BreaksCheck", (TestAnthropic,), {"adapter": RoundTripBreaks()})()
    with pytest.raises(AssertionError, match="round trip"):
        breaks.test_what_it_writes_it_reads_back_unchanged()
