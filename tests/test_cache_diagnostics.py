"""Cache diagnostics: the provider's reported misses, beside contextfold's predicted ones, through the real SDKs.

The scripted server diagnoses as the providers do (Anthropic's
``diagnostics.cache_miss_reason``, OpenAI's ``prompt_cache_diagnostics``):
appending messages misses nothing, a compaction that rewrites the history
misses what followed its first change, a new system prompt misses it all.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import openai
import pytest

from contextfold.context import Context
from contextfold.testing.fake_llm import FakeLLMServer, Reply

MODEL = {"anthropic": "claude-sonnet-4-6", "responses": "gpt-5.1"}


def rounds(provider: str, k: int) -> list[dict[str, Any]]:
    output = "\n".join(f"src/m{k}.py:{n}: value_{n} = compute({n})" for n in range(60))
    if provider == "anthropic":
        return [{"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": "bash",
                                                   "input": {"command": f"grep -n value src/m{k}.py"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": output}]}]
    return [{"type": "function_call", "call_id": f"call_{k}", "name": "bash",
             "arguments": json.dumps({"command": f"grep -n value src/m{k}.py"})},
            {"type": "function_call_output", "call_id": f"call_{k}", "output": output}]


def step(provider: str, context: Context, client: Any, asynchronous: bool) -> dict[str, Any]:
    """One request as the agent sends it; the body the server received."""
    if asynchronous:
        request = asyncio.run(context.aprepare())
    else:
        request = context.prepare()
    if provider == "anthropic":
        call = client.messages.create(model=MODEL[provider], max_tokens=256, **request)
    else:
        call = client.responses.create(model=MODEL[provider], max_output_tokens=256, **request)
    context.add_response(asyncio.run(call) if asynchronous else call)
    return request


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("provider", ["anthropic", "responses"])
def test_reported_misses_are_events_beside_the_predicted_ones(
    fake_llm: FakeLLMServer, provider: str, asynchronous: bool
) -> None:
    route = "messages" if provider == "anthropic" else "responses"
    fake_llm.script(route, *(Reply(f"Answer {n}.") for n in range(5)))
    if provider == "anthropic":
        client: Any = (anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic)(
            base_url=fake_llm.url, api_key="k", max_retries=0)
    else:
        client = (openai.AsyncOpenAI if asynchronous else openai.OpenAI)(
            base_url=fake_llm.openai_url, api_key="k", max_retries=0)
    tools = ([{"name": "bash", "description": "run", "input_schema": {"type": "object", "properties": {}}}]
             if provider == "anthropic" else
             [{"type": "function", "name": "bash", "parameters": {"type": "object", "properties": {}}, "strict": False}])
    context = Context(window_tokens=200_000, provider=provider, cache_diagnostics=True)
    context.add([{"role": "user", "content": "Find where value_7 is computed."}], tools=tools,
                **({"system": "You are a coding agent."} if provider == "anthropic" else {}))
    for k in range(6):
        context.add(rounds(provider, k))

    first = step(provider, context, client, asynchronous)
    context.add([{"role": "user", "content": "And value_8?"}])
    second = step(provider, context, client, asynchronous)  # only appended: no miss
    context.compact()  # rewrites the history: the next request misses what followed the task
    context.add([{"role": "user", "content": "And value_9?"}])
    third = step(provider, context, client, asynchronous)

    assert fake_llm.problems == []
    sent = fake_llm.received(route)
    if provider == "anthropic":
        assert first["diagnostics"] == {"previous_message_id": None}
        named = [r.body["diagnostics"]["previous_message_id"] for r in sent]
    else:
        assert "prompt_cache_options" not in first
        named = [None, *(r.body["prompt_cache_options"]["comparison_response_id"] for r in sent[1:])]
    assert named[0] is None and len(set(named[1:])) == 2 and all(n.startswith(("msg_", "resp_")) for n in named[1:])
    assert second is not third

    misses = [e for e in context.events if (e.stage, e.action) == ("cache", "miss_reported")]
    (miss,) = misses  # the appended request missed nothing; the compacted one did
    assert miss.data["reason"] == ("messages_changed" if provider == "anthropic" else "input_changed")
    reported, predicted = miss.data["reported_missed_tokens"], miss.data["predicted_missed_tokens"]
    assert reported > 1_000 and predicted > 1_000  # the six outputs after the task, by either count
    # The same items by two counts: the server's quarter of the JSON characters, contextfold's estimator.
    assert 1 / 3 < predicted / reported < 3, (predicted, reported)
    stats = context.stats()["cache_misses"]
    assert stats == {"reported": 1, "reported_missed_tokens": reported, "predicted_missed_tokens": predicted}


def test_a_changed_system_prompt_is_reported_and_predicted_whole(fake_llm: FakeLLMServer) -> None:
    fake_llm.script("messages", Reply("One."), Reply("Two."))
    client = anthropic.Anthropic(base_url=fake_llm.url, api_key="k", max_retries=0)
    context = Context(window_tokens=200_000, cache_diagnostics=True)
    context.add([{"role": "user", "content": "Hi."}], system="You are a coding agent.")
    step("anthropic", context, client, False)
    context.add([{"role": "user", "content": "Again."}], system="You are a careful coding agent.")
    step("anthropic", context, client, False)
    (miss,) = [e for e in context.events if e.stage == "cache"]
    assert miss.data["reason"] == "system_changed"
    assert miss.data["predicted_missed_tokens"] == context.counter.count(context._step.sent_before)  # all of it
    assert miss.data["reported_missed_tokens"] > 0


def test_without_the_option_nothing_is_asked(fake_llm: FakeLLMServer) -> None:
    fake_llm.script("messages", Reply("One."))
    client = anthropic.Anthropic(base_url=fake_llm.url, api_key="k", max_retries=0)
    context = Context(window_tokens=200_000)
    context.add([{"role": "user", "content": "Hi."}])
    request = step("anthropic", context, client, False)
    assert "diagnostics" not in request and context.stats()["cache_misses"]["reported"] == 0
