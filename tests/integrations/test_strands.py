"""Strands Agents' real Agent and OpenAI model (streaming Chat Completions) against the scripted server.

60 tool rounds in one invocation at an 8k window with
``ContextfoldConversationManager``; the agent's messages afterwards are
valid and carry a second invocation; a file session manager restores the
same history into a new agent. The mutation check runs the same loop with
contextfold's pairing turned off and expects the server to reject a request.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from compact_server import FINAL as COMPACT_FINAL
from compact_server import CompactServer
from compact_server import summarizer as compact_summarizer
from lookback_server import FINAL as LOOKBACK_FINAL
from lookback_server import LookbackServer, lookback_chunk
from scripted_server import FINAL, TASK, WINDOW_TOKENS, ToolLoopServer, chunk_text
from support import assert_told_with_receipts, naming_history_tools, pairing_disabled, require

from contextfold.adapters.strands import from_strands, to_strands

strands = require("strands", "strands")
require("strands.models.openai", "strands")
from strands.models.openai import OpenAIModel
from strands.session.file_session_manager import FileSessionManager

from contextfold.integrations.strands import ContextfoldConversationManager


@strands.tool
def read_chunk(chunk: int) -> str:
    """Read one chunk of the service log.

    Args:
        chunk: The number of the chunk to read.
    """
    return chunk_text(chunk)


@pytest.fixture
def server() -> Iterator[ToolLoopServer]:
    with ToolLoopServer() as model:
        yield model


def _agent(server: ToolLoopServer, sessions: Path | None = None, **options: Any) -> Any:
    model = OpenAIModel(
        client_args={"base_url": server.base_url("openai"), "api_key": "test", "max_retries": 0},
        model_id="gpt-4.1", params={"max_tokens": 1024},
    )
    manager = ContextfoldConversationManager(window_tokens=WINDOW_TOKENS, max_output_tokens=1024, **options)
    session = FileSessionManager(session_id="audit", storage_dir=str(sessions)) if sessions else None
    return strands.Agent(
        model=model, tools=[read_chunk], system_prompt="You are a careful log auditor.", conversation_manager=manager,
        callback_handler=None, session_manager=session,
    )


def test_sixty_rounds_in_one_invocation(server: ToolLoopServer, tmp_path: Path) -> None:
    agent = _agent(server, tmp_path)
    result = agent(TASK)

    assert str(result).strip() == FINAL
    assert server.failures() == [], server.figures()
    assert max(server.prompt_tokens) <= WINDOW_TOKENS
    stats = agent.conversation_manager.context.stats()
    assert stats["events"].get("summarize:summarized", 0) >= 2, stats
    assert naming_history_tools(server) == []  # the agent has no history tools: nothing tells it to call them

    conversation = from_strands(agent.messages)
    assert conversation.validate() == []
    assert to_strands(conversation) == agent.messages
    assert TASK in conversation.items[0].text
    assert len(agent.messages) < 2 * server.rounds  # the agent holds the compacted view, not 120 messages

    # A new agent on the same session gets exactly this history back, and a second invocation runs on it.
    restored = _agent(server, tmp_path)
    assert restored.messages == agent.messages
    before = len(server.valid)
    assert str(restored("How many chunks did you read?")).strip() == FINAL
    assert len(server.valid) == before + 1 and server.problems == []


def test_without_pairing_the_server_rejects_a_request(server: ToolLoopServer) -> None:
    with pairing_disabled(), pytest.raises(Exception, match="tool message answers no pending tool call"):
        _agent(server)(TASK)
    assert server.problems


def test_reduce_context_after_an_overflow_summarizes_or_reraises(server: ToolLoopServer) -> None:
    agent = _agent(server)
    calls = [{"role": "assistant", "content": [{"toolUse": {"toolUseId": f"t{n}", "name": "read_chunk", "input": {"chunk": n}}}]}
             for n in range(12)]
    results = [{"role": "user", "content": [{"toolResult": {"toolUseId": f"t{n}", "content": [{"text": chunk_text(n)}]}}]}
               for n in range(12)]
    agent.messages[:] = [{"role": "user", "content": [{"text": TASK}]}, *[m for pair in zip(calls, results) for m in pair]]
    overflow = RuntimeError("the context window overflowed")

    agent.conversation_manager.reduce_context(agent, e=overflow)
    assert len(agent.messages) < 10
    assert from_strands(agent.messages).validate() == []
    assert TASK in agent.messages[0]["content"][0]["text"]

    agent.messages[:] = [{"role": "user", "content": [{"text": TASK}]}]  # nothing left to cut
    with pytest.raises(RuntimeError, match="overflowed"):
        agent.conversation_manager.reduce_context(agent, e=overflow)


@strands.tool(name="read_chunk")
def read_lookback_chunk(chunk: int) -> str:
    """Read one chunk of the service log.

    Args:
        chunk: The number of the chunk to read.
    """
    return lookback_chunk(chunk)


@pytest.mark.parametrize("offered", ["registered", "given"])
def test_after_compaction_the_agent_searches_and_reads_its_history(offered: str) -> None:
    """The manager registers the history tools (``history_tools=True``), or the user gives them in ``tools``:
    either way the manager sees the agent has them, so summaries and the preview name them."""
    manager = ContextfoldConversationManager(window_tokens=WINDOW_TOKENS, max_output_tokens=1024,
                                             history_tools=offered == "registered")
    tools = [read_lookback_chunk, *(manager.history_tools() if offered == "given" else [])]
    with LookbackServer() as server:
        model = OpenAIModel(client_args={"base_url": server.base_url("openai"), "api_key": "test", "max_retries": 0},
                            model_id="gpt-4.1", params={"max_tokens": 1024})
        agent = strands.Agent(model=model, tools=tools, system_prompt="You are a careful log auditor.",
                              conversation_manager=manager, callback_handler=None)
        result = agent(TASK)
    assert server.problems == [] and server.missed == []
    assert str(result).strip() == LOOKBACK_FINAL
    assert manager.context.stats()["events"].get("summarize:summarized", 0) >= 1


def test_the_agent_asks_for_a_compaction_and_the_next_request_is_compacted_with_its_focus() -> None:
    with CompactServer() as server:
        model = OpenAIModel(client_args={"base_url": server.base_url("openai"), "api_key": "test", "max_retries": 0},
                            model_id="gpt-4.1", params={"max_tokens": 1024})
        manager = ContextfoldConversationManager(window_tokens=WINDOW_TOKENS, max_output_tokens=1024, compact_tool=True,
                                                 summarizer=compact_summarizer(server))
        agent = strands.Agent(model=model, tools=[read_chunk], system_prompt="You are a careful log auditor.",
                              conversation_manager=manager, callback_handler=None)
        result = agent(TASK)
    assert server.problems == [] and server.missed == [] and str(result).strip() == COMPACT_FINAL
    assert len(server.summary_requests) == 1  # compacted when asked, once, never by the trigger
    assert manager.context.stats()["events"].get("compact_context:asked") == 1
def test_the_hook_is_told_of_each_compaction_with_a_receipt_that_reads_back(server: ToolLoopServer) -> None:
    told: list[Any] = []
    agent = _agent(server, on_compaction=told.append)
    assert str(agent(TASK)).strip() == FINAL and server.failures() == [], server.figures()
    manager = agent.conversation_manager
    assert_told_with_receipts(manager.context, told, manager.receipts)
