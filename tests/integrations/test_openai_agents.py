"""The OpenAI Agents SDK's real Runner and Responses model against the scripted server, through contextfold.

60 tool rounds at an 8k window with ``ContextfoldInputFilter`` (per call) and
``ContextfoldSession`` (the stored history, compacted after the run); then a
second run on the stored history. The mutation check runs the same loop with
contextfold's pairing turned off and expects the server to reject a request.
"""

from __future__ import annotations

import asyncio
import json
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
from contextfold.adapters import from_responses, to_responses

agents = require("agents", "openai-agents")
openai = require("openai", "openai-agents")
from contextfold.integrations.openai_agents import ContextfoldInputFilter, ContextfoldSession

agents.set_tracing_disabled(True)  # no trace export: tests never touch the network


@agents.function_tool
def read_chunk(chunk: int) -> str:
    """Read one chunk of the service log."""
    return chunk_text(chunk)


@pytest.fixture
def server() -> Iterator[ToolLoopServer]:
    with ToolLoopServer() as model:
        yield model


def _agent(server: ToolLoopServer) -> Any:
    client = openai.AsyncOpenAI(base_url=server.base_url("openai"), api_key="test", max_retries=0)
    model = agents.OpenAIResponsesModel(model="gpt-4.1", openai_client=client)
    return agents.Agent(name="auditor", instructions="You are a careful log auditor.", tools=[read_chunk], model=model)


async def _run(server: ToolLoopServer, session: Any, text: str = TASK) -> tuple[Any, ContextfoldInputFilter]:
    compactor = ContextfoldInputFilter(window_tokens=WINDOW_TOKENS, max_output_tokens=1024)
    result = await agents.Runner.run(
        _agent(server), text, session=session, max_turns=100,
        run_config=agents.RunConfig(call_model_input_filter=compactor), hooks=compactor.hooks,
    )
    return result, compactor


def test_sixty_rounds_compacted_per_call_and_in_the_session(server: ToolLoopServer) -> None:
    session = ContextfoldSession(agents.SQLiteSession("audit"), window_tokens=WINDOW_TOKENS, max_output_tokens=1024)
    result, compactor = asyncio.run(_run(server, session))

    assert result.final_output == FINAL
    assert server.failures() == [], server.figures()
    assert max(server.prompt_tokens) <= WINDOW_TOKENS
    stats = compactor.mirror("auditor").context.stats()
    assert stats["events"].get("summarize:summarized", 0) >= 2, stats
    # The runner kept every raw item: the filter changed only what was sent.
    assert sum(1 for item in result.to_input_list() if item.get("type") == "function_call") == server.rounds

    stored = asyncio.run(session.get_items())
    conversation = from_responses(stored)
    assert conversation.validate() == []
    assert to_responses(conversation) == stored
    assert TASK in conversation.items[0].text
    assert any(e.stage == "summarize" for e in session.events)
    assert len(stored) < len(result.to_input_list())  # compacted after the run

    # The stored history carries the next run: one more request, valid and under the window.
    before = len(server.valid)
    follow_up, _ = asyncio.run(_run(server, session, "How many chunks did you read?"))
    assert follow_up.final_output == FINAL
    assert len(server.valid) == before + 1 and server.problems == []
    assert naming_history_tools(server) == []  # the agent has no history tools: nothing tells it to call them


def test_the_filter_and_the_session_keep_their_store_off_the_sdk_loop(server: ToolLoopServer, tmp_path: Path) -> None:
    """The SDK awaits the filter and ``run_compaction`` on its loop: every write of the Contexts' store (SQLite,
    on disk) is made off that loop, through the async API."""
    store = LoopWatchedSqlite(tmp_path / "sessions.db")
    session = ContextfoldSession(agents.SQLiteSession("audit"), window_tokens=WINDOW_TOKENS, max_output_tokens=1024,
                                 storage=Storage(store=store))
    compactor = ContextfoldInputFilter(window_tokens=WINDOW_TOKENS, max_output_tokens=1024,
                                       storage=Storage(store=store))

    async def run() -> Any:
        result = await agents.Runner.run(_agent(server), TASK, session=session, max_turns=100,
                                         run_config=agents.RunConfig(call_model_input_filter=compactor),
                                         hooks=compactor.hooks)
        await session.run_compaction({"force": True})
        return result

    try:
        assert asyncio.run(run()).final_output == FINAL
        assert server.failures() == [], server.figures()
        assert store.calls > 100 and store.on_loop == 0
    finally:
        store.close()


def test_without_pairing_the_server_rejects_a_request(server: ToolLoopServer) -> None:
    with pairing_disabled(), pytest.raises(openai.BadRequestError):
        asyncio.run(_run(server, None))
    assert any("function call" in p or "tool output" in p for p in server.problems), server.problems


def test_items_contextfold_does_not_change_pass_through_as_they_came(server: ToolLoopServer) -> None:
    items = [
        {"role": "user", "content": TASK},
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque-blob-from-openai"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "plan"}],
         "encrypted_content": "enc"},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read_chunk", "arguments": '{"chunk": 0}',
         "status": "completed"},
        {"type": "function_call_output", "call_id": "call_1", "output": chunk_text(0)},
    ]
    data = agents.run_config.CallModelData(
        model_data=agents.run_config.ModelInputData(input=list(items), instructions="audit"), agent=_agent(server),
        context=None,
    )
    sent = asyncio.run(ContextfoldInputFilter(window_tokens=WINDOW_TOKENS)(data))  # the SDK awaits the filter
    assert (sent.input, sent.instructions) == (items, "audit")


@agents.function_tool(name_override="read_chunk")
def read_lookback_chunk(chunk: int) -> str:
    """Read one chunk of the service log."""
    return lookback_chunk(chunk)


def test_after_compaction_the_agent_searches_and_reads_its_history() -> None:
    with LookbackServer() as server:
        compactor = ContextfoldInputFilter(window_tokens=WINDOW_TOKENS, max_output_tokens=1024)
        client = openai.AsyncOpenAI(base_url=server.base_url("openai"), api_key="test", max_retries=0)
        agent = agents.Agent(name="auditor", instructions="You are a careful log auditor.",
                             tools=[read_lookback_chunk, *compactor.history_tools()],
                             model=agents.OpenAIResponsesModel(model="gpt-4.1", openai_client=client))
        result = asyncio.run(agents.Runner.run(agent, TASK, max_turns=30, hooks=compactor.hooks,
                                               run_config=agents.RunConfig(call_model_input_filter=compactor)))
    assert server.problems == [] and server.missed == []
    assert result.final_output == LOOKBACK_FINAL
    assert compactor.mirror("auditor").context.stats()["events"].get("summarize:summarized", 0) >= 1


@pytest.mark.parametrize("offered", [False, True])
def test_the_session_names_the_history_tools_in_what_it_stores_only_when_told_the_agent_has_them(offered: bool) -> None:
    """A Session sees items, never the agent's tools: ``history_tools=True`` says the agent has them."""
    session = ContextfoldSession(agents.SQLiteSession(f"told-{offered}"), window_tokens=WINDOW_TOKENS,
                                 max_output_tokens=1024, history_tools=offered)
    items: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    for n in range(20):
        items += [{"type": "function_call", "call_id": f"c{n}", "name": "read_chunk", "arguments": f'{{"chunk": {n}}}'},
                  {"type": "function_call_output", "call_id": f"c{n}", "output": chunk_text(n)}]
    asyncio.run(session.add_items(items))
    asyncio.run(session.run_compaction({"force": True}))
    stored = json.dumps(asyncio.run(session.get_items()))
    assert "summary" in stored.lower() and len(stored) < len(json.dumps(items))
    assert ("search_history(" in stored) is offered and ("read_history(" in stored) is offered


def test_the_agent_asks_for_a_compaction_and_the_next_request_is_compacted_with_its_focus() -> None:
    with CompactServer() as server:
        compactor = ContextfoldInputFilter(window_tokens=WINDOW_TOKENS, max_output_tokens=1024,
                                           summarizer=compact_summarizer(server))
        client = openai.AsyncOpenAI(base_url=server.base_url("openai"), api_key="test", max_retries=0)
        agent = agents.Agent(name="auditor", instructions="You are a careful log auditor.",
                             tools=[read_chunk, compactor.compact_tool()],
                             model=agents.OpenAIResponsesModel(model="gpt-4.1", openai_client=client))
        result = asyncio.run(agents.Runner.run(agent, TASK, max_turns=20, hooks=compactor.hooks,
                                               run_config=agents.RunConfig(call_model_input_filter=compactor)))
    assert server.problems == [] and server.missed == [] and result.final_output == COMPACT_FINAL
    assert len(server.summary_requests) == 1  # compacted when asked, once, never by the trigger
    assert compactor.mirror("auditor").context.stats()["events"].get("compact_context:asked") == 1
def test_the_hook_is_told_of_each_compaction_with_a_receipt_that_reads_back(server: ToolLoopServer) -> None:
    told: list[Any] = []
    compactor = ContextfoldInputFilter(window_tokens=WINDOW_TOKENS, max_output_tokens=1024, on_compaction=told.append)
    result = asyncio.run(agents.Runner.run(_agent(server), TASK, max_turns=100, hooks=compactor.hooks,
                                           run_config=agents.RunConfig(call_model_input_filter=compactor)))
    assert result.final_output == FINAL and server.failures() == [], server.figures()
    assert_told_with_receipts(compactor.mirror("auditor").context, told, compactor.receipts)
