"""What survives compactions is ordered by how often it changes, so a second compaction reads the first part from cache.

The system prompt and tools, the pinned items and the task are the same
before and after every compaction; a summary, the files it restores and the
survival note are rewritten by each one; the tail moves every turn. The
request after a compaction keeps that order, and on Anthropic a breakpoint
closes the stable part (the task), so the request after a second compaction
reads the whole stable prefix from the cache written by the first. Measured
through the real SDK clients on the scripted servers' prompt cache.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from contextfold import Context
from contextfold.adapters import adapter_for
from contextfold.conversation import Conversation, Header, Item, Provenance, Summary, Text, ToolSpec, assistant, tool
from contextfold.pipeline.task import task_index
from contextfold.sdk import ClientOptions
from contextfold.testing.prompt_cache import OPENAI_INCREMENT, PromptCache
from contextfold.testing.scripted import Call, ScriptedModel, Seen, Turn

MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-4.1", "responses": "gpt-4.1"}
SYSTEM = "You are a coding agent. Read the files you are asked about, one per turn."
PINNED = "Project conventions: " + " ".join(f"convention {k}: keep functions short." for k in range(40))
TASK = "Fix the failing tests of src/. The issue, as reported:\n" + "\n".join(
    f"test_m{k} fails with AssertionError: expected {k}, got {k + 1}" for k in range(60))
TOOLS = (ToolSpec("read_file", "Read a file of the repository.",
                  {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),)
TURNS = (10, 6, 2)  # requests before the first compaction, between the two, after the second


def script(seen: Seen) -> Turn:
    return Turn(text="Reading on.", calls=(Call("read_file", {"path": f"src/m{len(str(seen.body)) % 97}.py"}),))


def file_text(path: str) -> str:
    return f"# {path}\n" + "".join(f"def f{k}(x):\n    return x * {k}\n" for k in range(25))


def stable_tokens(provider: str, body: dict[str, Any]) -> int:
    """The prompt tokens of ``body`` up to and including the task's message (what no compaction rewrites)."""
    key = adapter_for(provider).messages_key
    messages = body[key]
    end = next(k for k, m in enumerate(messages) if "Fix the failing tests" in str(m)) + 1
    return PromptCache().prompt_tokens(provider, {**body, key: messages[:end]})


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("provider", list(MODELS))
def test_the_request_after_a_second_compaction_reads_the_stable_prefix_from_cache(provider: str,
                                                                                  asynchronous: bool) -> None:
    adapter = adapter_for(provider)
    context = Context(window_tokens=100_000, provider=provider)
    context.set_header(Header(tools=TOOLS))
    context.set_system(SYSTEM)
    context.pin(PINNED)
    context.add([Item("user", (Text(TASK),))])
    after_compaction: list[int] = []  # the index of each compaction's first request among the exchanges
    with ScriptedModel(script) as server:
        options = ClientOptions(api_key="test-key", base_url=server.base_url(provider), max_retries=0)
        sdk = adapter.client.make_client(options, asynchronous=asynchronous)

        async def turn_async() -> Any:
            return await adapter.client.acreate(sdk, await context.aprepare(), model=MODELS[provider], max_tokens=512)

        def turn() -> None:
            response = (asyncio.get_event_loop().run_until_complete(turn_async()) if asynchronous else
                        adapter.client.create(sdk, context.prepare(), model=MODELS[provider], max_tokens=512))
            calls = [call for item in context.add_response(response) for call in item.tool_calls]
            context.add([tool(call.id, file_text(call.arguments["path"])) for call in calls])

        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            for phase, requests in enumerate(TURNS):
                if phase:
                    assert any(e.action == "summarized" for e in context.compact())
                    after_compaction.append(len(server.exchanges))
                for _ in range(requests):
                    turn()
            if asynchronous:
                loop.run_until_complete(adapter.client.aclose(sdk))
        finally:
            asyncio.set_event_loop(None)
            loop.close()
    assert server.problems == []
    first, second = (server.exchanges[k] for k in after_compaction)
    key = adapter.messages_key
    assert str(first.body[key]) != str(server.exchanges[after_compaction[0] - 1].body[key])  # it was compacted
    stable = stable_tokens(provider, second.body)
    assert stable == stable_tokens(provider, first.body) and stable > 1_024  # the same stable part, before the summary
    assert second.cache is not None and first.cache is not None
    if provider == "anthropic":  # a breakpoint closes the stable part: exactly that is read
        assert second.cache.read == stable, (second.cache, stable)
    else:  # the common prefix, in the provider's steps
        assert stable - OPENAI_INCREMENT < second.cache.read <= stable, (second.cache, stable)
    view = context.view()
    kinds = [item.kind for item in view.items[:3]]
    assert view.items[0].text == TASK and kinds[1] == "summary", kinds  # the task first, then what compactions rewrite


def test_a_view_that_starts_with_a_summary_has_no_task() -> None:
    """A view that starts with a summary had no task when it was compacted: the first user message after
    the summary is not taken for one (else the next compaction would keep the earlier summary and that
    message in front of the new summary instead of summarizing them)."""
    summary = Item("user", (Summary("Earlier: m1.py was read.", covers=4),), provenance=Provenance(summary=True))
    conversation = Conversation([summary, Item("user", (Text("Go on with m2.py."),)), assistant("Reading m2.py.")])
    assert task_index(conversation) is None
    assert task_index(Conversation([Item("user", (Text(TASK),)), summary])) == 0
