"""Reminders for one request, and a split system prompt, through the real SDK clients against the scripted servers.

A reminder (``Context.prepare(reminders=[...])``) is text the agent wants the
model to see on this request only: it must be in that request, in no later
one, in neither the history nor the transcript, and placed so that the
prefix the provider caches is the conversation's alone (the scripted server
reports what each request read from its prompt cache). A split system
prompt (``Context.set_system(static, dynamic)``) puts its static part first,
on a cache breakpoint of its own where the format has marks.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from contextfold import Context, Storage
from contextfold.adapters import adapter_for
from contextfold.adapters.reminders import TAG
from contextfold.conversation import Header, Item, Text, ToolSpec, tool
from contextfold.errors import InvalidContent
from contextfold.sdk import ClientOptions
from contextfold.testing.prompt_cache import PromptCache
from contextfold.testing.scripted import Call, ScriptedModel, Seen, Turn
from contextfold.usage import Usage

PROVIDERS = ("anthropic", "openai", "responses", "gemini")
MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-4.1", "responses": "gpt-4.1", "gemini": "gemini-2.5-flash"}
TURNS = 50
SYSTEM = "You are a coding agent. Read the files you are asked about, one per turn."
TASK = "Read every module of src/, one by one."
TOOLS = (ToolSpec("read_file", "Read a file of the repository.",
                  {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),)


def file_text(path: str) -> str:
    """What reading ``path`` gives: about 700 characters, naming the file."""
    return f"# {path}\n" + "".join(f"def f{k}(x):\n    return x * {k}\n" for k in range(25))


def script(seen: Seen) -> Turn:
    """One file per request for ``TURNS`` requests, then the answer (the step is read off the request itself)."""
    step = json.dumps(seen.body).count("Reading module")
    if step < TURNS - 1:
        return Turn(text=f"Reading module {step}.", calls=(Call("read_file", {"path": f"src/m{step}.py"}),))
    return Turn(text="All modules read.")


def reminders_for(turn: int) -> list[str]:
    return [f"Todo: step {turn} of {TURNS}; open: src/m{turn}.py", f"The time is 12:{turn:02d}."]


def started(provider: str, transcript: Path | None) -> Context:
    context = Context(window_tokens=400_000, provider=provider, storage=Storage(transcript=transcript, session_id="s"))
    context.set_header(Header(tools=TOOLS))
    context.set_system(SYSTEM)
    context.add([Item("user", (Text(TASK),))])
    return context


def client(provider: str, server: ScriptedModel, asynchronous: bool) -> Any:
    options = ClientOptions(api_key="test-key", base_url=server.base_url(provider), max_retries=0)
    return adapter_for(provider).client.make_client(options, asynchronous=asynchronous)


def session(provider: str, *, reminders: bool, asynchronous: bool, transcript: Path | None = None
            ) -> tuple[ScriptedModel, Context, list[Usage]]:
    """A whole 50-turn session through the provider's SDK and Context's sync API, or the async client and
    ``aprepare``; the usage each reply reported."""
    adapter = adapter_for(provider)
    context = started(provider, transcript)
    usages: list[Usage] = []
    with ScriptedModel(script) as server:
        sdk = client(provider, server, asynchronous)

        def step(turn: int, response: Any) -> bool:
            usage = adapter.reported_usage(response)
            assert usage is not None
            usages.append(usage)
            calls = [call for item in context.add_response(response) for call in item.tool_calls]
            context.add([tool(call.id, file_text(call.arguments["path"])) for call in calls])
            return bool(calls)

        async def run_async() -> None:
            try:
                for turn in range(TURNS):
                    request = await context.aprepare(reminders=reminders_for(turn) if reminders else ())
                    if not step(turn, await adapter.client.acreate(sdk, request, model=MODELS[provider], max_tokens=512)):
                        break
            finally:
                await adapter.client.aclose(sdk)

        if asynchronous:
            asyncio.run(run_async())
        else:
            for turn in range(TURNS):
                request = context.prepare(reminders=reminders_for(turn) if reminders else ())
                if not step(turn, adapter.client.create(sdk, request, model=MODELS[provider], max_tokens=512)):
                    break
    context.close()
    return server, context, usages


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
# Responses under -m slow: the OpenAI SDK's request transform takes most of a minute over 2 x 50 turns of its
# input items; its reminders are placed and checked in the main run by the shorter tests below.
@pytest.mark.parametrize("provider", [p if p != "responses" else pytest.param(p, marks=pytest.mark.slow) for p in PROVIDERS])
def test_a_reminder_on_each_of_50_turns_is_in_its_request_only_in_no_record_and_costs_no_cache(
    provider: str, asynchronous: bool, tmp_path: Path
) -> None:
    server, context, _ = session(provider, reminders=True, asynchronous=asynchronous, transcript=tmp_path)
    assert server.problems == []
    bodies = [json.dumps(exchange.body) for exchange in server.exchanges]
    assert len(bodies) == TURNS
    for turn, body in enumerate(bodies):
        assert body.count("Todo: step") == 1 and f"Todo: step {turn} of" in body, f"request {turn}"
        assert body.count(f"<{TAG}>") == 2 and f"The time is 12:{turn:02d}." in body
    records = (tmp_path / "s.jsonl").read_text()
    assert "Todo: step" not in records and TAG not in records and "The time is" not in records
    assert all(TAG not in item.text for item in context.history) and len(context.history) == 2 * TURNS

    plain_server, plain_context, _ = session(provider, reminders=False, asynchronous=asynchronous)
    reads = [exchange.cache.read for exchange in server.exchanges if exchange.cache is not None]
    plain_reads = [exchange.cache.read for exchange in plain_server.exchanges if exchange.cache is not None]
    assert len(reads) == len(plain_reads) == TURNS
    assert reads == plain_reads, "the reminders changed what the server read from its prompt cache"
    assert sum(1 for read in reads if read > 0) >= TURNS - 5, f"the server reported almost no cache reads: {reads}"
    assert all(exchange.cache is not None and plain.cache is not None and exchange.cache.prompt > plain.cache.prompt
               for exchange, plain in zip(server.exchanges, plain_server.exchanges))  # they were sent, outside the cache
    # the count is of the conversation: what the reminders added to the reported prompt is not taken for history
    assert abs(context.stats()["tokens"] - plain_context.stats()["tokens"]) <= 20


@pytest.mark.parametrize("provider", PROVIDERS)
def test_reminders_come_after_the_last_message_and_the_next_request_is_written_without_them(provider: str) -> None:
    context = started(provider, None)
    context.add([Item("assistant", (Text("Reading."),)), Item("user", (Text("Go on."),))])
    plain = context.prepare()
    reminded = context.prepare(reminders=["Mode: plan"])
    key = adapter_for(provider).messages_key
    after = json.dumps(reminded[key])
    assert after.rindex("Mode: plan") > after.rindex("Go on.")
    assert context.prepare() == plain
    if provider == "anthropic":  # blocks at the end of the last user message, after its cache breakpoint
        last = reminded["messages"][-1]["content"]
        assert last[:-1] == plain["messages"][-1]["content"] and "cache_control" in last[-2]
        assert last[-1] == {"type": "text", "text": f"<{TAG}>\nMode: plan\n</{TAG}>"}
    else:  # a message of their own: every message before it is written as without them
        assert reminded[key][:-1] == plain[key] and "Mode: plan" in json.dumps(reminded[key][-1])


@pytest.mark.parametrize("reminders, field", [
    ("a string", "reminders"), (["ok", 3], "reminders[1]"), (["ok", "  "], "reminders[1]")])
def test_a_reminder_that_is_not_text_is_a_typed_error_naming_it(reminders: Any, field: str) -> None:
    context = started("anthropic", None)
    with pytest.raises(InvalidContent, match=field.replace("[", r"\[")):
        context.prepare(reminders=reminders)
    assert context.stats()["requests"] == 0  # refused before anything was decided or counted


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_split_system_prompt_sends_the_static_part_first(provider: str) -> None:
    context = started(provider, None)
    context.set_system("STATIC rules of the agent.", "DYNAMIC: MCP tools a, b; answer in French.")
    text = json.dumps(context.prepare())
    assert text.index("STATIC rules") < text.index("DYNAMIC: MCP")
    assert text.count("STATIC rules") == text.count("DYNAMIC: MCP") == 1


STATIC = "Rules of the agent, the same in every session. " + " ".join(f"Rule {k}: check the file before editing it."
                                                                        for k in range(120))


def first_request_read(provider: str, server: ScriptedModel, dynamic: str, *, split: bool, asynchronous: bool) -> int:
    """What the first request of a new session (the same static rules, its own dynamic part) read from cache."""
    adapter = adapter_for(provider)
    context = started(provider, None)
    if split:
        context.set_system(STATIC, dynamic)
    else:
        context.set_header(Header(system=(Item("system", (Text(f"{STATIC}\n\n{dynamic}"),)),), tools=TOOLS))
    sdk = client(provider, server, asynchronous)

    async def send_async() -> Any:
        try:
            return await adapter.client.acreate(sdk, await context.aprepare(), model=MODELS[provider], max_tokens=512)
        finally:
            await adapter.client.aclose(sdk)

    response = asyncio.run(send_async()) if asynchronous else adapter.client.create(
        sdk, context.prepare(), model=MODELS[provider], max_tokens=512)
    usage = adapter.reported_usage(response)
    assert usage is not None and server.exchanges[-1].cache is not None
    assert usage.cache_read_tokens == server.exchanges[-1].cache.read  # as the SDK read it
    return usage.cache_read_tokens


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_split_system_prompt_is_read_from_cache_by_the_next_session(asynchronous: bool) -> None:
    with ScriptedModel(script) as server:
        first = first_request_read("anthropic", server, "MCP tools: github, jira. Answer in French.", split=True,
                                   asynchronous=asynchronous)
        second = first_request_read("anthropic", server, "MCP tools: linear. Answer in German.", split=True,
                                    asynchronous=asynchronous)
        system = server.exchanges[-1].body["system"]
    assert first == 0 and second > 0
    assert "cache_control" in system[0], "no breakpoint right after the static part"
    assert system[0]["text"] == STATIC and system[1]["text"] == "MCP tools: linear. Answer in German."
    static_tokens = PromptCache().prompt_tokens("anthropic", {"tools": server.exchanges[-1].body["tools"],
                                                              "system": system[:1], "messages": []})
    assert second == static_tokens, "the next session reads the tools and the static part, no more, no less"
    with ScriptedModel(script) as server:  # the same two sessions with the system prompt in one piece
        first_request_read("anthropic", server, "MCP tools: github, jira. Answer in French.", split=False,
                           asynchronous=asynchronous)
        assert first_request_read("anthropic", server, "MCP tools: linear. Answer in German.", split=False,
                                  asynchronous=asynchronous) == 0
