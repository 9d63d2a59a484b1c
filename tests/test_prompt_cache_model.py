"""The scripted servers' prompt caches, read back through the real SDK clients' usage types.

Each test sends a sequence of requests the way an agent would and checks
what the server reports against the provider's rule: Anthropic reads only up
to a breakpoint written earlier (within the lookback), OpenAI reads the
common prefix of the same ``prompt_cache_key`` in 128-token steps above 1,024.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from contextfold.testing.fake_llm import FakeLLMServer, Reply
from contextfold.testing.prompt_cache import CacheUse, PromptCache
from contextfold.testing.scripted import ScriptedModel, Seen, Turn

MARK = {"type": "ephemeral"}
TOOLS = [{"name": "read_file", "description": "Read a file. " * 40,
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]


def answer(seen: Seen) -> Turn:
    return Turn("ok")


@pytest.fixture
def server() -> Iterator[ScriptedModel]:
    with ScriptedModel(answer) as model:
        yield model


def turns(count: int, size: int = 2_000) -> list[dict[str, Any]]:
    """``count`` user/assistant exchanges of about ``size`` characters each message."""
    messages: list[dict[str, Any]] = []
    for n in range(count):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"question {n} " + "x" * size}]})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {n} " + "y" * size}]})
    return messages


def marked_last(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    last = messages[-1]
    return [*messages[:-1], {**last, "content": [*last["content"][:-1], {**last["content"][-1], "cache_control": MARK}]}]


def claude(server: ScriptedModel, messages: list[dict[str, Any]], **extra: Any) -> Any:
    client = anthropic.Anthropic(base_url=server.base_url("anthropic"), api_key="test", max_retries=0)
    system = [{"type": "text", "text": "You are a careful engineer. " * 200, "cache_control": MARK}]
    return client.messages.create(model="claude-sonnet-4-6", max_tokens=100, system=system, tools=TOOLS,
                                  messages=messages, **extra).usage


def test_anthropic_reads_up_to_the_breakpoint_written_before(server: ScriptedModel) -> None:
    history = turns(4)
    first = claude(server, marked_last([*history, {"role": "user", "content": [{"type": "text", "text": "go on"}]}]))
    assert first.cache_read_input_tokens == 0 and first.cache_creation_input_tokens > 4_000
    grown = [*history, {"role": "user", "content": [{"type": "text", "text": "go on"}]},
             {"role": "assistant", "content": [{"type": "text", "text": "done " * 50}]},
             {"role": "user", "content": [{"type": "text", "text": "and now?"}]}]
    second = claude(server, marked_last(grown))
    prompt = second.input_tokens + second.cache_read_input_tokens + second.cache_creation_input_tokens
    assert second.cache_read_input_tokens == first.cache_read_input_tokens + first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens == prompt - second.cache_read_input_tokens > 0
    assert second.input_tokens == 0


def test_anthropic_without_a_breakpoint_on_the_messages_reads_only_the_system_prompt(server: ScriptedModel) -> None:
    history = turns(4)
    claude(server, marked_last(history))
    again = claude(server, history)  # the same prompt, no mark on the messages
    assert 1_024 < again.cache_read_input_tokens < 2_000  # the tools and the system prompt, at its breakpoint
    assert again.input_tokens > 4_000 and again.cache_creation_input_tokens == 0


def test_anthropic_tool_choice_change_keeps_tools_and_system_only(server: ScriptedModel) -> None:
    history = marked_last(turns(4))
    first = claude(server, history)
    same = claude(server, history)
    assert same.cache_read_input_tokens == first.cache_creation_input_tokens
    other = claude(server, history, tool_choice={"type": "none"})
    assert 1_024 < other.cache_read_input_tokens < 2_000  # the tools and the system prompt
    assert other.cache_creation_input_tokens == same.cache_read_input_tokens - other.cache_read_input_tokens


def test_anthropic_lookback_is_twenty_blocks(server: ScriptedModel) -> None:
    history = turns(3)
    first = claude(server, marked_last(history))
    near = claude(server, marked_last([*history, *turns(9, size=100)]))  # 18 blocks later: found
    assert near.cache_read_input_tokens >= first.cache_creation_input_tokens
    far_server = ScriptedModel(answer)
    with far_server:
        claude(far_server, marked_last(history))
        far = claude(far_server, marked_last([*history, *turns(11, size=100)]))  # 22 blocks later: missed
    assert far.cache_read_input_tokens < 2_000  # the tools and the system prompt only


def test_anthropic_below_the_minimum_caches_nothing(server: ScriptedModel) -> None:
    short = marked_last([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    client = anthropic.Anthropic(base_url=server.base_url("anthropic"), api_key="test", max_retries=0)
    for _ in range(2):
        usage = client.messages.create(model="claude-haiku-4-5", max_tokens=10, messages=short).usage
        assert (usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (0, 0)


def chat(server: ScriptedModel, messages: list[dict[str, Any]], key: str | None) -> Any:
    client = openai.OpenAI(base_url=server.base_url("openai"), api_key="test", max_retries=0)
    extra = {"prompt_cache_key": key} if key else {}
    return client.chat.completions.create(model="gpt-4.1", messages=messages, **extra).usage


def chat_turns(count: int, size: int = 2_000) -> list[dict[str, Any]]:
    return [{"role": m["role"], "content": m["content"][0]["text"]} for m in turns(count, size)]


def test_openai_chat_reads_the_common_prefix_of_the_same_key_in_128_token_steps(server: ScriptedModel) -> None:
    history = chat_turns(4)
    first = chat(server, [*history, {"role": "user", "content": "one"}], "session-1")
    assert first.prompt_tokens_details.cached_tokens == 0
    assert first.prompt_tokens_details.cache_write_tokens == first.prompt_tokens
    second = chat(server, [*history, {"role": "user", "content": "two"}], "session-1")
    cached = second.prompt_tokens_details.cached_tokens
    shared = PromptCache().prompt_tokens("openai", {"messages": history})
    assert cached >= 1_024 and (cached - 1_024) % 128 == 0 and shared - 128 < cached <= shared
    other_key = chat(server, [*history, {"role": "user", "content": "three"}], "session-2")
    assert other_key.prompt_tokens_details.cached_tokens == 0


def test_openai_below_1024_tokens_reads_nothing(server: ScriptedModel) -> None:
    small = chat_turns(1, size=100)
    for _ in range(2):
        assert chat(server, small, "k").prompt_tokens_details.cached_tokens == 0


def test_responses_reports_cached_and_written_input_tokens(server: ScriptedModel) -> None:
    client = openai.OpenAI(base_url=server.base_url("responses"), api_key="test", max_retries=0)
    history = chat_turns(4)
    first = client.responses.create(model="gpt-4.1", input=history, prompt_cache_key="s").usage
    second = client.responses.create(model="gpt-4.1", input=[*history, {"role": "user", "content": "more"}],
                                     prompt_cache_key="s").usage
    assert first.input_tokens_details.cached_tokens == 0
    assert second.input_tokens_details.cached_tokens >= first.input_tokens - 128
    assert second.input_tokens_details.cache_write_tokens == second.input_tokens - second.input_tokens_details.cached_tokens


def test_fake_llm_server_reports_its_cache_unless_a_size_is_scripted() -> None:
    with FakeLLMServer() as server:
        server.script("chat", Reply("a", input_tokens=None), Reply("b", input_tokens=None), Reply("c"))
        client = openai.OpenAI(base_url=server.openai_url, api_key="test", max_retries=0)
        messages = chat_turns(4)
        first, second, third = (client.chat.completions.create(model="gpt-4.1", messages=messages).usage
                                for _ in range(3))
    assert first.prompt_tokens_details.cached_tokens == 0 and first.prompt_tokens > 4_000
    assert second.prompt_tokens_details.cached_tokens > 0.9 * second.prompt_tokens
    assert third.prompt_tokens == 120 and third.prompt_tokens_details.cached_tokens == 0  


def test_capped_use_fits_another_count() -> None:
    assert CacheUse(1_000, 700, 300).capped(800) == CacheUse(800, 700, 100)
