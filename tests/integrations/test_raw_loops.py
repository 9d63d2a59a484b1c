"""The raw SDK loops of the README against the scripted server: 60 tool rounds at an 8k window, three wire formats.

These are the loops of ``examples/anthropic_loop.py`` and
``examples/openai_loop.py`` with the real ``anthropic`` and ``openai``
clients; they also check the scripted server itself: its answers drive a
real client through a whole session, and the pairing mutation makes it reject.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from scripted_server import TASK, TOOL, TOOL_DESCRIPTION, WINDOW_TOKENS, ToolLoopServer, chunk_text
from support import naming_history_tools, pairing_disabled

from contextfold import Context

SYSTEM = "You are a careful log auditor."
SCHEMA = {"type": "object", "properties": {"chunk": {"type": "integer"}}, "required": ["chunk"]}
TOOLS = {
    "anthropic": [{"name": TOOL, "description": TOOL_DESCRIPTION, "input_schema": SCHEMA}],
    "openai": [{"type": "function", "function": {"name": TOOL, "description": TOOL_DESCRIPTION, "parameters": SCHEMA}}],
    "responses": [{"type": "function", "name": TOOL, "description": TOOL_DESCRIPTION, "parameters": SCHEMA}],
}


def _anthropic_step(client: anthropic.Anthropic, context: Context) -> list[dict[str, Any]] | None:
    response = client.messages.create(model="claude-sonnet-4-6", max_tokens=1024, **context.prepare())
    context.add_response(response)
    calls = [b for b in response.content if b.type == "tool_use"]
    if not calls:
        return None
    results = [{"type": "tool_result", "tool_use_id": c.id, "content": chunk_text(c.input["chunk"])} for c in calls]
    return [{"role": "user", "content": results}]


def _openai_step(client: openai.OpenAI, context: Context) -> list[dict[str, Any]] | None:
    response = client.chat.completions.create(model="gpt-4.1", **context.prepare())
    context.add_response(response)
    calls = response.choices[0].message.tool_calls or []
    return [
        {"role": "tool", "tool_call_id": c.id, "content": chunk_text(json.loads(c.function.arguments)["chunk"])}
        for c in calls
    ] or None


def _responses_step(client: openai.OpenAI, context: Context) -> list[dict[str, Any]] | None:
    response = client.responses.create(model="gpt-4.1", **context.prepare())
    context.add_response(response)
    calls = [item for item in response.output if item.type == "function_call"]
    return [
        {"type": "function_call_output", "call_id": c.call_id, "output": chunk_text(json.loads(c.arguments)["chunk"])}
        for c in calls
    ] or None


@pytest.fixture
def server() -> Iterator[ToolLoopServer]:
    with ToolLoopServer() as model:
        yield model


def run_loop(server: ToolLoopServer, provider: str) -> Context:
    """The README's agent loop for ``provider``, until the model stops calling tools."""
    context = Context(window_tokens=WINDOW_TOKENS, max_output_tokens=1024, provider=provider)
    if provider == "anthropic":
        client: Any = anthropic.Anthropic(base_url=server.base_url("anthropic"), api_key="test", max_retries=0)
        context.add([{"role": "user", "content": TASK}], system=SYSTEM, tools=TOOLS[provider])
        step = _anthropic_step
    else:
        client = openai.OpenAI(base_url=server.base_url("openai"), api_key="test", max_retries=0)
        context.add([{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}], tools=TOOLS[provider])
        step = _openai_step if provider == "openai" else _responses_step
    while (results := step(client, context)) is not None:
        context.add(results)
    return context


@pytest.mark.parametrize("provider", ["anthropic", "openai", "responses"])
def test_sixty_rounds_at_8k_every_request_valid(server: ToolLoopServer, provider: str) -> None:
    context = run_loop(server, provider)
    assert server.failures() == [], server.figures()
    assert max(server.prompt_tokens) <= WINDOW_TOKENS
    assert context.stats()["events"].get("summarize:summarized", 0) >= 2
    assert naming_history_tools(server) == []  # the loop offers no history tools: nothing tells it to call them


@pytest.mark.parametrize("provider", ["anthropic", "openai", "responses"])
def test_the_server_rejects_a_split_round(server: ToolLoopServer, provider: str) -> None:
    errors = (anthropic.BadRequestError, openai.BadRequestError)
    with pairing_disabled(), pytest.raises(errors, match="tool|function call"):
        run_loop(server, provider)
    assert server.problems


def test_streamed_answers_carry_the_same_calls(server: ToolLoopServer) -> None:
    """What the streaming clients of the frameworks rebuild from the events is the call the script made."""
    claude = anthropic.Anthropic(base_url=server.base_url("anthropic"), api_key="test", max_retries=0)
    gpt = openai.OpenAI(base_url=server.base_url("openai"), api_key="test", max_retries=0)
    user = [{"role": "user", "content": TASK}]
    # Three sessions (the server counts steps per system prompt and task), each at its first step.
    with claude.messages.stream(model="claude-sonnet-4-6", max_tokens=64, system="a", messages=user,
                                tools=TOOLS["anthropic"]) as s:
        message = s.get_final_message()
    chat = [{"role": "system", "content": "b"}, *user]
    with gpt.chat.completions.stream(model="gpt-4.1", messages=chat, tools=TOOLS["openai"]) as s:
        completion = s.get_final_completion()
    with gpt.responses.stream(model="gpt-4.1", instructions="c", input=user, tools=TOOLS["responses"]) as s:
        response = s.get_final_response()
    assert [(b.name, b.input) for b in message.content if b.type == "tool_use"] == [(TOOL, {"chunk": 0})]
    call = completion.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == (TOOL, {"chunk": 0})
    [item] = [i for i in response.output if i.type == "function_call"]
    assert (item.name, json.loads(item.arguments), response.usage.input_tokens > 0) == (TOOL, {"chunk": 0}, True)
    assert server.problems == []
