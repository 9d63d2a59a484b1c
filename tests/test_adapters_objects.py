"""The adapter objects: chosen by name, owning requests, replies, usage, cache marks and "too long" errors."""

from __future__ import annotations

import pytest

from contextfold import Context, ContextfoldError, Conversation, InvalidContent, Item, Summary, Text, Usage
from contextfold.conversation import user
from contextfold.adapters import (
    PROVIDERS,
    AnthropicMessages,
    OpenAIChat,
    OpenAIResponses,
    PromptTooLong,
    adapter_for,
    from_anthropic,
    prompt_too_long,
    to_anthropic,
    to_openai,
    to_responses,
    tools_to_openai,
)
from contextfold.adapters.gemini import Gemini

EPHEMERAL = {"type": "ephemeral"}
TOOLS = [{"name": "bash", "description": "run a command", "input_schema": {"type": "object", "properties": {}}}]


def test_one_adapter_per_provider_chosen_by_name() -> None:
    assert PROVIDERS == ("anthropic", "openai", "responses", "gemini")
    assert isinstance(adapter_for("anthropic"), AnthropicMessages)
    assert isinstance(adapter_for("openai"), OpenAIChat)
    assert isinstance(adapter_for("responses"), OpenAIResponses)
    assert adapter_for("openai") is adapter_for("openai")
    assert isinstance(adapter_for("gemini"), Gemini)
    with pytest.raises(ContextfoldError, match="unknown provider 'bedrock'"):
        adapter_for("bedrock")


def test_write_is_the_request_body_of_each_format() -> None:
    messages = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "hi"}]
    chat = adapter_for("openai").read(messages)
    assert adapter_for("openai").write(chat) == {"messages": to_openai(chat), "tools": tools_to_openai(chat)}
    assert adapter_for("responses").write(chat)["input"] == to_responses(chat)
    assert adapter_for("anthropic").write(chat) == to_anthropic(chat)


def test_openai_formats_refuse_a_system_field_instead_of_dropping_it() -> None:
    with pytest.raises(InvalidContent, match="leading system message"):
        adapter_for("openai").read([{"role": "user", "content": "hi"}], system="Be terse.")


def test_an_anthropic_reply_with_an_empty_text_block_is_added_and_sent_back_without_it() -> None:
    """The API returns an empty text block before a tool call at times and refuses it in the next request
    (anthropic-sdk-python#461): the reply is read without it, so the agent's next request is valid."""
    reply = adapter_for("anthropic").read_response({
        "content": [{"type": "text", "text": ""}, {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    })
    (item,) = reply.conversation
    assert [type(block).__name__ for block in item.blocks] == ["ToolCall"]
    assert to_anthropic(Conversation([user("ls"), item]))["messages"][1]["content"] == [
        {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]


def test_replies_are_read_with_their_usage_and_how_they_ended() -> None:
    anthropic = adapter_for("anthropic").read_response({
        "content": [{"type": "text", "text": "Done."}],
        "stop_reason": "max_tokens",
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 5},
    })
    assert anthropic.text == "Done." and anthropic.incomplete == "truncated (stop reason max_tokens)"
    assert anthropic.usage == Usage(prompt_tokens=100, output_tokens=5, cache_read_tokens=90)
    chat = adapter_for("openai").read_response({
        "choices": [{"message": {"role": "assistant", "content": "Done.", "refusal": None}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 90}},
    })
    assert chat.text == "Done." and chat.incomplete is None
    assert chat.usage == Usage(prompt_tokens=100, output_tokens=5, cache_read_tokens=90)
    assert "refusal" not in chat.conversation[0].meta.get("extra", {})  # null fields are absent on the wire
    responses = adapter_for("responses").read_response({
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Do"}]}],
    })
    assert responses.text == "Do" and responses.incomplete == "truncated (max_output_tokens)"
    assert responses.usage is None


def test_prompt_too_long_says_how_much_would_fit() -> None:
    anthropic = prompt_too_long("prompt is too long: 250000 tokens > 200000 maximum")
    assert anthropic is not None and anthropic.fits_share == pytest.approx(0.8)
    openai = adapter_for("openai").prompt_too_long(
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 160000 tokens"
    )
    assert openai is not None and openai.fits_share == pytest.approx(0.8)
    assert prompt_too_long("overloaded_error") is None


class _ServerError(Exception):
    def __init__(self, message: str, body: object = None) -> None:
        super().__init__(message)
        self.body = body


def test_a_hostile_servers_prompt_too_long_is_read_without_a_count() -> None:
    """Found by fuzzing provider errors: a count of 5,000 digits raised ValueError (int takes at most 4,300), a
    body nested 3,000 deep RecursionError and one holding a 5,000-digit number ValueError, while printed."""
    deep: object = "bottom"
    for _ in range(3_000):
        deep = [deep]
    for error in (_ServerError(f"prompt is too long: {'9' * 5_000} tokens > 200000 maximum"),
                  _ServerError(f"maximum context length is 128000 tokens, resulted in {'1' * 5_000} tokens"),
                  _ServerError("prompt is too long", body=deep), _ServerError("prompt is too long", body=10**5_000)):
        assert prompt_too_long(error) == PromptTooLong(None)


def _session(arguments: dict) -> Context:
    context = Context(window_tokens=50_000, provider="anthropic")
    context.add([{"role": "user", "content": "Fix f1.py"}], system="You are a coding agent.", tools=TOOLS)
    context.add([
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": arguments}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
    ])
    return context


def _marks(request: dict) -> list[str]:
    found = ["tools"] if "cache_control" in request["tools"][-1] else []
    system = request["system"]
    if isinstance(system, list) and "cache_control" in system[-1]:
        found.append("system")
    found += [f"messages[{k}]" for k, m in enumerate(request["messages"])
              if isinstance(m["content"], list) and "cache_control" in m["content"][-1]]
    return found


def test_a_tool_argument_named_cache_control_leaves_the_automatic_breakpoints_in_place() -> None:
    plain = _marks(_session({"command": "ls"}).prepare())
    request = _session({"command": "ls", "cache_control": {"type": "ephemeral"}}).prepare()
    assert plain == ["tools", "system", "messages[0]", "messages[2]"]  # messages[0]: the task, kept by every compaction
    assert _marks(request) == plain
    assert request["messages"][1]["content"][0]["input"]["cache_control"] == EPHEMERAL  # the argument is untouched


def test_marks_the_caller_placed_turn_the_automatic_ones_off() -> None:
    context = _session({"command": "ls"})
    context.add([{"role": "user", "content": [{"type": "text", "text": "next", "cache_control": EPHEMERAL}]}])
    request = context.prepare()
    assert _marks(request) == ["messages[3]"]
    assert request["system"] == "You are a coding agent."


def test_the_latest_summary_is_a_breakpoint_found_from_the_model_not_its_text() -> None:
    context = _session({"command": "ls"})
    context.add([Item("user", (Summary("Earlier: f1.py was read.", covers=3),)), Item("user", (Text("go on"),))])
    context.add(from_anthropic([{"role": "assistant", "content": "Reading f2.py."}]).items)
    context.add([Item("user", (Text("and then?"),))])
    request = context.prepare()
    assert request["messages"][3]["content"][-1]["text"] == "Earlier: f1.py was read."
    # four at most: the system prompt (it caches the tools before it), the task (what no compaction rewrites),
    # the latest summary and the last message; the tools' own mark is the one left out
    assert _marks(request) == ["system", "messages[0]", "messages[3]", "messages[6]"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_request_leaves_out_the_system_and_tools_the_agent_does_not_have(provider: str) -> None:
    """Real APIs reject ``"tools": []`` and some a ``null`` system: absent fields are not sent at all."""
    context = Context(window_tokens=10_000, provider=provider)
    context.add([Item("user", (Text("hello"),))])
    request = context.prepare()
    assert "tools" not in request and "system" not in request
    assert list(request) == [adapter_for(provider).messages_key]
