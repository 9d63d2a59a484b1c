"""pydantic-ai's real Agent and OpenAI Chat model against the scripted server, through contextfold.

60 tool rounds in one run at an 8k window with ``ContextfoldHistory`` as a
``ProcessHistory`` capability; the run's messages afterwards are valid and
carry a second run. The mutation check runs the same loop with contextfold's
pairing turned off and expects the server to reject a request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from compact_server import FINAL as COMPACT_FINAL
from compact_server import CompactServer
from compact_server import summarizer as compact_summarizer
from lookback_server import FINAL as LOOKBACK_FINAL
from lookback_server import LookbackServer, lookback_chunk
from loop_threads import LoopWatchedSqlite
from scripted_server import FINAL, TASK, WINDOW_TOKENS, ToolLoopServer, chunk_text
from support import assert_told_with_receipts, naming_history_tools, pairing_disabled, require

from contextfold import Storage
from contextfold.adapters.pydantic_ai import from_pydantic_ai, to_pydantic_ai

pydantic_ai = require("pydantic_ai", "pydantic-ai")
require("pydantic_ai.models.openai", "pydantic-ai")
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from contextfold.integrations.pydantic_ai import ContextfoldHistory


@pytest.fixture
def server() -> Iterator[ToolLoopServer]:
    with ToolLoopServer() as model:
        yield model


def _agent(server: ToolLoopServer, history: ContextfoldHistory) -> Any:
    provider = OpenAIProvider(base_url=server.base_url("openai"), api_key="test")
    agent = pydantic_ai.Agent(
        OpenAIChatModel("gpt-4.1", provider=provider), instructions="You are a careful log auditor.",
        capabilities=[history.capability()], retries=0,
    )

    @agent.tool_plain
    def read_chunk(chunk: int) -> str:
        """Read one chunk of the service log."""
        return chunk_text(chunk)

    return agent


def _history() -> ContextfoldHistory:
    return ContextfoldHistory(window_tokens=WINDOW_TOKENS, max_output_tokens=1024)


def test_sixty_rounds_in_one_run(server: ToolLoopServer) -> None:
    history = _history()
    limits = pydantic_ai.UsageLimits(request_limit=100)
    result = _agent(server, history).run_sync(TASK, usage_limits=limits)

    assert result.output == FINAL
    assert server.failures() == [], server.figures()
    assert max(server.prompt_tokens) <= WINDOW_TOKENS
    stats = history.context.stats()
    assert stats["events"].get("summarize:summarized", 0) >= 2, stats
    assert naming_history_tools(server) == []  # the agent has no history tools: nothing tells it to call them

    messages = result.all_messages()
    conversation = from_pydantic_ai(messages)
    assert conversation.validate() == []
    assert to_pydantic_ai(conversation) == messages
    assert any(item.role == "user" and TASK in item.text for item in conversation.items[:2])
    assert len(messages) < 2 * server.rounds  # the run's history is the compacted view

    # The stored history carries the next run, through a fresh processor (a new process, say).
    before = len(server.valid)
    follow_up = _agent(server, _history()).run_sync("How many chunks did you read?", message_history=messages)
    assert follow_up.output == FINAL
    assert len(server.valid) == before + 1 and server.problems == []


def test_the_capability_keeps_its_store_off_the_run_loop(server: ToolLoopServer, tmp_path: Path) -> None:
    """pydantic-ai awaits the capability's processor on the run's loop: every write of the Context's store
    (SQLite, on disk) is made off that loop, by the async API's step threads."""
    store = LoopWatchedSqlite(tmp_path / "sessions.db")
    history = ContextfoldHistory(window_tokens=WINDOW_TOKENS, max_output_tokens=1024, storage=Storage(store=store))
    store.watch()  # the Context was made here, with no loop: what happens in the run is watched
    limits = pydantic_ai.UsageLimits(request_limit=100)
    try:
        result = asyncio.run(_agent(server, history).run(TASK, usage_limits=limits))
        assert result.output == FINAL and server.failures() == [], server.figures()
        assert store.calls > 100 and store.on_loop == 0
        # pydantic-ai would run a blocking processor in a thread of its own: these are the async API's (and, when
        # a summary outlasts a beat on a loaded machine, the summary lease's heartbeat)
        ours = ("contextfold-step", "contextfold-lease-heartbeat")
        assert store.threads and all(name.startswith(ours) for name in store.threads), store.threads
    finally:
        history.context.close()
        store.close()


def test_without_pairing_the_server_rejects_a_request(server: ToolLoopServer) -> None:
    limits = pydantic_ai.UsageLimits(request_limit=100)
    # pydantic-ai drops a tool return whose call is gone, so the server sees the latest result missing.
    with pairing_disabled(), pytest.raises(pydantic_ai.exceptions.ModelHTTPError, match="status_code: 400"):
        _agent(server, _history()).run_sync(TASK, usage_limits=limits)
    assert server.problems


@pytest.mark.parametrize("offered", ["capability", "toolsets"])
def test_after_compaction_the_agent_searches_and_reads_its_history(offered: str) -> None:
    """The capability carries the history tools (``history_tools=True``), or the user gives ``toolset()`` in
    ``toolsets``: either way the processor sees the agent has them, so summaries and the preview name them."""
    history = ContextfoldHistory(window_tokens=WINDOW_TOKENS, max_output_tokens=1024,
                                 history_tools=offered == "capability")
    toolsets = [history.toolset()] if offered == "toolsets" else []
    with LookbackServer() as server:
        provider = OpenAIProvider(base_url=server.base_url("openai"), api_key="test")
        agent = pydantic_ai.Agent(OpenAIChatModel("gpt-4.1", provider=provider), capabilities=[history.capability()],
                                  toolsets=toolsets, instructions="You are a careful log auditor.", retries=0)

        @agent.tool_plain
        def read_chunk(chunk: int) -> str:
            """Read one chunk of the service log."""
            return lookback_chunk(chunk)

        result = agent.run_sync(TASK, usage_limits=pydantic_ai.UsageLimits(request_limit=30))
    assert server.problems == [] and server.missed == []
    assert result.output == LOOKBACK_FINAL
    assert history.context.stats()["events"].get("summarize:summarized", 0) >= 1


def test_the_agent_asks_for_a_compaction_and_the_next_request_is_compacted_with_its_focus() -> None:
    with CompactServer() as server:
        history = ContextfoldHistory(window_tokens=WINDOW_TOKENS, max_output_tokens=1024, compact_tool=True,
                                     summarizer=compact_summarizer(server))
        result = _agent(server, history).run_sync(TASK, usage_limits=pydantic_ai.UsageLimits(request_limit=20))
    assert server.problems == [] and server.missed == [] and result.output == COMPACT_FINAL
    assert len(server.summary_requests) == 1  # compacted when asked, once, never by the trigger
    assert history.context.stats()["events"].get("compact_context:asked") == 1
def test_the_hook_is_told_of_each_compaction_with_a_receipt_that_reads_back(server: ToolLoopServer) -> None:
    told: list[Any] = []
    history = ContextfoldHistory(window_tokens=WINDOW_TOKENS, max_output_tokens=1024, on_compaction=told.append)
    result = _agent(server, history).run_sync(TASK, usage_limits=pydantic_ai.UsageLimits(request_limit=100))
    assert result.output == FINAL and server.failures() == [], server.figures()
    assert_told_with_receipts(history.context, told, history.receipts)
