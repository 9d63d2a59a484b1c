"""The fake LLM server itself, through the real SDK clients: answers, streams, errors, and the request checks."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import anthropic
import openai
import pytest

from contextfold.testing.fake_llm import FakeLLMServer, Fault, Reply
from contextfold.testing.wire_checks import check_chat, check_messages, check_responses

HEADERS = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
TOOL = {"name": "bash", "input_schema": {"type": "object"}}
USE = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]}
RESULT = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}


def test_anthropic_answers_streamed_or_not_and_its_errors(fake_llm: FakeLLMServer) -> None:
    client = anthropic.Anthropic(base_url=fake_llm.url, api_key="k", max_retries=0)
    fake_llm.script("messages", Reply("hello there", input_tokens=11, output_tokens=3), Reply("streamed", stop="max_tokens"),
                    Fault.prompt_too_long(210_000, 200_000), Fault.rate_limited(4), Fault.server_error(), Fault.overloaded())
    ask = {"model": "claude-haiku-4-5", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}
    message = client.messages.create(**ask)
    assert (message.content[0].text, message.stop_reason, message.usage.input_tokens) == ("hello there", "end_turn", 11)
    with client.messages.stream(**ask) as stream:
        assert "".join(stream.text_stream) == "streamed"
        assert stream.get_final_message().stop_reason == "max_tokens"
    expected = [(anthropic.BadRequestError, 400, "prompt is too long: 210000 tokens > 200000 maximum"),
                (anthropic.RateLimitError, 429, "rate_limit_error"), (anthropic.InternalServerError, 500, "api_error"),
                (anthropic.APIStatusError, 529, "overloaded_error")]
    for kind, status, text in expected:
        with pytest.raises(kind) as caught:
            client.messages.create(**ask)
        assert caught.value.status_code == status and text in str(caught.value)
        if status == 429:
            assert caught.value.response.headers["retry-after"] == "4"
    with pytest.raises(anthropic.BadRequestError, match="nothing scripted is left for messages"):
        client.messages.create(**ask)
    assert fake_llm.problems == []


def test_openai_chat_responses_and_compact(fake_llm: FakeLLMServer) -> None:
    client = openai.OpenAI(base_url=fake_llm.openai_url, api_key="k", max_retries=0)
    fake_llm.script("chat", Reply("one"), Reply("two", stop="max_tokens"), Fault.prompt_too_long(130_000, 128_000))
    ask = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    assert client.chat.completions.create(**ask).choices[0].message.content == "one"
    chunks = list(client.chat.completions.create(**ask, stream=True, stream_options={"include_usage": True}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "two"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length" and chunks[-1].usage.prompt_tokens
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(**ask)
    assert caught.value.code == "context_length_exceeded"
    fake_llm.script("responses", Reply("plain"), Reply("streamed"))
    assert client.responses.create(model="gpt-4o", input="hi").output_text == "plain"
    with client.responses.stream(model="gpt-4o", input="hi") as stream:
        assert stream.get_final_response().output_text == "streamed"
    fake_llm.script("compact", Reply("BLOB"))
    compacted = client.responses.compact(model="gpt-5", input=[{"role": "user", "content": "hi"}])
    assert compacted.output[-1].type == "compaction" and compacted.output[-1].encrypted_content == "BLOB"
    assert fake_llm.problems == []


def test_invalid_requests_are_answered_400_and_recorded(fake_llm: FakeLLMServer) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "go"}, USE, {"role": "user", "content": "next"}]}
    request = urllib.request.Request(f"{fake_llm.url}/v1/messages", json.dumps(body).encode(),
                                     {**HEADERS, "content-type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    assert caught.value.code == 400 and "invalid_request_error" in caught.value.read().decode()
    problems = fake_llm.requests[0].problems
    assert any("max_tokens" in p for p in problems) and any("['t1'] were not answered" in p for p in problems)
    assert any("must define tools" in p for p in problems)


@pytest.mark.parametrize("messages, problem", [
    ([{"role": "user", "content": "hi"}], None),
    ([{"role": "user", "content": "go"}, USE, RESULT], None),
    ([{"role": "user", "content": [{"type": "text", "text": ""}]}], "non-empty"),
    ([{"role": "system", "content": "x"}], "user or assistant"),
    ([{"role": "user", "content": "go"}, USE, {"role": "user", "content": [{"type": "text", "text": "a"}, RESULT["content"][0]]}],
     "must come first"),
    ([RESULT], "no tool_use just before"),
])
def test_messages_rules(messages: list, problem: str | None) -> None:
    found = check_messages(HEADERS, {"model": "m", "max_tokens": 5, "messages": messages, "tools": [TOOL]})
    assert (found == []) if problem is None else any(problem in p for p in found), found


def test_chat_and_responses_rules() -> None:
    auth = {"authorization": "Bearer k"}
    call = {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    assert check_chat(auth, {"model": "m", "messages": [{"role": "user", "content": "x"}, call,
                                                        {"role": "tool", "tool_call_id": "c1", "content": "ok"}]}) == []
    assert any("never answered" in p for p in check_chat(auth, {"model": "m", "messages": [call]}))
    assert any("Bearer" in p for p in check_chat({}, {"model": "m", "messages": [{"role": "user", "content": "x"}]}))
    items = [{"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}]
    assert any("no tool output" in p for p in check_responses(auth, {"model": "m", "input": items}))
    items.append({"type": "function_call_output", "call_id": "c1", "output": "ok"})
    assert check_responses(auth, {"model": "m", "input": items}) == []


def test_context_management_needs_its_beta_header() -> None:
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}],
            "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}, {"type": "compact_20260112"}]}}
    found = check_messages(HEADERS, body)
    assert any("context-management-2025-06-27" in p for p in found) and any("compact-2026-01-12" in p for p in found)
    beta = {**HEADERS, "anthropic-beta": "context-management-2025-06-27,compact-2026-01-12"}
    assert check_messages(beta, body) == []
