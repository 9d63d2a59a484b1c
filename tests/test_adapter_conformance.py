"""Every built-in provider passes the reusable conformance suite a new provider runs (``contextfold.adapters.conformance``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextfold.adapters.conformance import AdapterConformance
from contextfold.adapters.registry import adapter_for
from contextfold.conversation import Conversation


class TestAnthropic(AdapterConformance):
    adapter = adapter_for("anthropic")
    reply = {"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "done"}],
             "stop_reason": "end_turn", "usage": {"input_tokens": 30, "cache_read_input_tokens": 10, "output_tokens": 2}}
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
