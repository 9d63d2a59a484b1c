"""LangChain v1: ``create_agent`` with a real ``ChatOpenAI`` on the scripted server, contextfold as middleware.

60 tool rounds at an 8,000-token window: every request the server gets is
valid, holds the task and fits; the history was compacted several times on
the way; the task finishes; the checkpointed state (raw, since the
middleware's compaction is transient) is valid and serves the next run.
With ``persist=True`` the state itself is compacted, and is as valid. With
contextfold's pairing turned off the server rejects a request.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from compact_server import FINAL as COMPACT_FINAL
from compact_server import CompactServer
from compact_server import summarizer as compact_summarizer
from lookback_server import FINAL as LOOKBACK_FINAL
from lookback_server import LookbackServer, lookback_chunk
from scripted_server import FINAL, TASK, TOOL_DESCRIPTION, WINDOW_TOKENS, ToolLoopServer, chunk_text
from support import assert_told_with_receipts, naming_history_tools, pairing_disabled, require
from test_receipts import assert_refs_read_back

from contextfold import Event
from contextfold.pipeline.receipts import receipts_in
from contextfold.summarizers.base import SUMMARY_PREAMBLE
from contextfold.testing.scripted import Call, ScriptedModel, Seen, Turn

require("langchain.agents", "langchain")
require("langchain_openai", "langchain")

from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from openai import BadRequestError

from contextfold.adapters.langchain import from_langchain
from contextfold.integrations.langchain import ContextfoldMiddleware, ContextfoldSummary

SYSTEM = "You are a careful log auditor."


@pytest.fixture
def server() -> Iterator[ToolLoopServer]:
    with ToolLoopServer() as model:
        yield model


@tool(description=TOOL_DESCRIPTION)
def read_chunk(chunk: int) -> str:
    return chunk_text(chunk)


def run(server: ToolLoopServer, **options: Any) -> tuple[Any, list[Event], dict[str, Any]]:
    """The agent on one thread until it answers; its state's messages, contextfold's events, the thread config."""
    events: list[Event] = []
    model = ChatOpenAI(model="gpt-4.1", base_url=server.base_url("openai"), api_key="test", max_retries=0)
    middleware = ContextfoldMiddleware(window_tokens=WINDOW_TOKENS, max_output_tokens=1024, on_event=events.append,
                                       **options)
    agent = create_agent(model, tools=[read_chunk], system_prompt=SYSTEM, middleware=[middleware],
                         checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "audit"}, "recursion_limit": 1_000}
    agent.invoke({"messages": [{"role": "user", "content": TASK}]}, config)
    return agent, events, config


def summaries(events: list[Event]) -> int:
    return sum(1 for e in events if e.stage == "summarize" and e.action == "summarized")


@pytest.mark.parametrize("persist", [False, True], ids=["transient", "persisted"])
def test_sixty_rounds_at_8k_every_request_valid(server: ToolLoopServer, persist: bool) -> None:
    agent, events, config = run(server, persist=persist)
    assert server.failures() == [], server.figures()
    assert summaries(events) >= 2
    assert naming_history_tools(server) == []  # the agent has no history tools: nothing tells it to call them
    messages = agent.get_state(config).values["messages"]
    assert from_langchain(messages).validate() == []
    raw = sum(1 for m in messages if m.type == "tool")
    assert raw == 60 if not persist else raw < 60  # transient: the state keeps every result; persisted: it shrank
    # The stored history serves the next run: one more request, as valid as the others.
    before = len(server.exchanges)
    agent.invoke({"messages": [{"role": "user", "content": "How many ERROR lines?"}]}, config)
    assert len(server.exchanges) == before + 1 and server.problems == []
    assert agent.get_state(config).values["messages"][-1].content == FINAL


def test_the_server_rejects_the_run_without_pairing(server: ToolLoopServer) -> None:
    with pairing_disabled(), pytest.raises(BadRequestError, match="tool"):
        run(server)
    assert server.problems


def _interrupted(agent: Any, thread: str) -> dict[str, Any]:
    """A run stopped before its tools ran, then a new user message: the state holds a call without result."""
    config: Any = {"configurable": {"thread_id": thread}}
    agent.invoke({"messages": [{"role": "user", "content": TASK}]}, config)
    agent.update_state(config, {"messages": [{"role": "user", "content": "Stop and report."}]}, as_node="tools")
    state = agent.get_state(config).values["messages"]
    assert [v.kind for v in from_langchain(state).validate()] == ["unanswered_call"]
    return config


def test_a_dangling_call_from_an_interrupted_run_is_answered_in_the_request() -> None:
    """The request after an interrupted run would be rejected; contextfold answers the call with an error
    result, in the request only. Without its repair the server rejects the request."""

    def script(seen: Seen) -> Turn:
        first = seen.body["messages"][-1]["content"] == TASK
        return Turn("Reading.", (Call("read_chunk", {"chunk": 0}),)) if first else Turn("Stopped.")

    with ScriptedModel(script) as server:
        model = ChatOpenAI(model="gpt-4.1", base_url=server.base_url("openai"), api_key="test", max_retries=0)
        agent = create_agent(model, tools=[read_chunk], system_prompt=SYSTEM,
                             middleware=[ContextfoldMiddleware(window_tokens=WINDOW_TOKENS)],
                             checkpointer=InMemorySaver(), interrupt_before=["tools"])
        config = _interrupted(agent, "repaired")
        agent.invoke(None, config)
        assert server.problems == [] and agent.get_state(config).values["messages"][-1].content == "Stopped."
        sent = server.exchanges[-1].body["messages"]
        assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
        with pairing_disabled():
            config = _interrupted(agent, "not repaired")
            with pytest.raises(BadRequestError, match="tool"):
                agent.invoke(None, config)


def test_a_fold_over_restored_files_it_stored_gives_them_no_reference_and_every_other_reads_back() -> None:
    """The restored-files message a fold stored in the state is contextfold's, not the conversation's: the next
    fold's receipt lists it without a ``read_history`` reference, and each reference it gives returns its item."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    def bash(k: int, command: str, output: str, text: str = "") -> list[Any]:
        call = {"name": "bash", "args": {"command": command}, "id": f"c{k}"}
        return [AIMessage(text, tool_calls=[call], id=f"a{k}"), ToolMessage(output, tool_call_id=f"c{k}", id=f"t{k}")]

    def steps(first: int, last: int) -> list[Any]:
        return [m for k in range(first, last) for m in bash(k, f"echo {k}", "noise " * 300, f"Still on src/app.py, {k}.")]

    heard: list[Event] = []
    middleware = ContextfoldMiddleware(window_tokens=16_000, max_output_tokens=1_024, persist=True, on_event=heard.append)
    code = "\n".join(f"def handler_{k}(request):\n    return route(request, {k})" for k in range(40))
    messages = [HumanMessage("Fix src/app.py", id="h"), *bash(0, "cat src/app.py", code),
                *bash(1, "sed -i 's/1/2/' src/app.py", ""), *bash(2, "pytest", "E   AssertionError: 2 != 3\n1 failed"),
                *steps(3, 60)]
    first = middleware.before_model({"messages": messages}, None)
    assert first is not None
    state = [*first["messages"][1:], *steps(60, 120)]
    assert state[2].content.startswith("[contextfold: files and state restored")  # the first fold restored the file
    assert middleware.before_model({"messages": state}, None) is not None
    _, receipt = receipts_in(heard)
    context = middleware.context(state)
    assert context is not None
    held = {item.id for item in context.history.items}
    unheld = [(taken.how, taken.read_history) for taken in receipt.taken if taken.ref not in held]
    assert sorted(unheld, key=lambda pair: pair[0]) == [
        ("removed", None), ("summarized", None)]  # the restored files (superseded) and the first summary
    assert assert_refs_read_back(context, receipt) > 20


def test_summarization_middleware_takes_the_summary_callable() -> None:
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    summarize = ContextfoldSummary(target_tokens=500)
    middleware = SummarizationMiddleware(model=ChatOpenAI(model="gpt-4.1", api_key="test"), trigger=("messages", 4),
                                         keep=("messages", 2), summarizer=summarize, trim_tokens_to_summarize=None)
    messages = [HumanMessage(TASK, id="h")]
    for n in range(4):
        call = {"name": "read_chunk", "args": {"chunk": n}, "id": f"c{n}"}
        messages += [AIMessage("", tool_calls=[call], id=f"a{n}"),
                     ToolMessage(chunk_text(n), tool_call_id=f"c{n}", id=f"t{n}")]
    update = middleware.before_model({"messages": messages}, None)
    summary = update["messages"][1].content
    assert "## 1. Primary Request and Intent" in summary and "`read_chunk(chunk=2)`" in summary


@tool("read_chunk", description=TOOL_DESCRIPTION)
def read_lookback_chunk(chunk: int) -> str:
    return lookback_chunk(chunk)


@pytest.mark.parametrize("offered", ["registered", "given"])
@pytest.mark.parametrize("persist", [False, True], ids=["transient", "persisted"])
def test_after_compaction_the_agent_searches_and_reads_its_history(persist: bool, offered: str) -> None:
    """The middleware registers the history tools (``history_tools=True``) or the user gives them in ``tools``:
    either way the summaries (persisted ones too) and the preview name them."""
    events: list[Event] = []
    middleware = ContextfoldMiddleware(window_tokens=WINDOW_TOKENS, max_output_tokens=1024, on_event=events.append,
                                       persist=persist, history_tools=offered == "registered")
    tools = [read_lookback_chunk, *(middleware.history_tools() if offered == "given" else [])]
    with LookbackServer() as server:
        model = ChatOpenAI(model="gpt-4.1", base_url=server.base_url("openai"), api_key="test", max_retries=0)
        agent = create_agent(model, tools=tools, system_prompt=SYSTEM, middleware=[middleware],
                             checkpointer=InMemorySaver())
        state = agent.invoke({"messages": [{"role": "user", "content": TASK}]},
                             {"configurable": {"thread_id": "look"}, "recursion_limit": 200})
    assert server.problems == [] and server.missed == []
    assert state["messages"][-1].content == LOOKBACK_FINAL
    assert summaries(events) >= 1
    stored = [m.content for m in state["messages"] if str(m.content).startswith(SUMMARY_PREAMBLE)]
    assert all("search_history(" in text for text in stored) and (len(stored) >= 1) is persist


def test_the_agent_asks_for_a_compaction_and_the_next_request_is_compacted_with_its_focus() -> None:
    with CompactServer() as server:
        agent, events, config = run(server, compact_tool=True, summarizer=compact_summarizer(server))
    assert server.problems == [] and server.missed == []
    assert agent.get_state(config).values["messages"][-1].content == COMPACT_FINAL
    assert len(server.summary_requests) == 1  # compacted when asked, once, never by the trigger
    assert sum(1 for e in events if e.stage == "compact_context" and e.action == "asked") == 1
@pytest.mark.parametrize("persist", [False, True], ids=["transient", "persisted"])
def test_the_hook_is_told_of_each_compaction_with_a_receipt_that_reads_back(server: ToolLoopServer,
                                                                          persist: bool) -> None:
    told: list[Any] = []
    heard: list[Event] = []
    model = ChatOpenAI(model="gpt-4.1", base_url=server.base_url("openai"), api_key="test", max_retries=0)
    middleware = ContextfoldMiddleware(window_tokens=WINDOW_TOKENS, max_output_tokens=1024, persist=persist,
                                       on_event=heard.append, on_compaction=told.append)
    agent = create_agent(model, tools=[read_chunk], system_prompt=SYSTEM, middleware=[middleware],
                         checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "audit"}, "recursion_limit": 1_000}
    agent.invoke({"messages": [{"role": "user", "content": TASK}]}, config)
    assert server.failures() == [], server.figures()
    assert any(e.stage == "receipt" for e in heard), "on_event hears the receipts too"
    context = middleware.context(agent.get_state(config).values["messages"])
    assert context is not None
    if not persist:
        assert_told_with_receipts(context, told, receipts_in(context.events))
    else:  # the state itself was compacted, a fold each time, announced like an automatic compaction (warn mode)
        folds = [notice for notice in told if notice.receipt.occasion == "manual"]
        assert folds and all(notice.can_decline is False and notice.receipt.of_kind("summarized") for notice in folds)
        assert all(notice.receipt.checks[0].present for notice in folds), "the task is still there"
        # what a fold took out of the state, the conversation's read_history returns: the receipt's refs are its
        assert sum(assert_refs_read_back(context, notice.receipt) for notice in folds) > 0


def test_a_fold_the_app_declines_is_not_stored_until_the_window_is_at_stake(server: ToolLoopServer) -> None:
    from contextfold.pipeline.consent import OnCompaction

    asked: list[Any] = []

    def decline(notice: Any) -> str:
        asked.append(notice)
        return "decline"

    agent, events, config = run(server, persist=True, on_compaction=OnCompaction(decline, "ask"))
    assert server.failures() == [], server.figures()  # never sent over the window
    folds = [n for n in asked if n.receipt.occasion == "manual"]
    declined = [n for n in folds if n.can_decline]
    assert declined and any(e.stage == "receipt" and e.action == "declined" for e in events)
    sizes = [len(state.values.get("messages", ())) for state in reversed(list(agent.get_state_history(config)))]
    shrunk = sum(1 for before, after in zip(sizes, sizes[1:]) if after < before)  # a fold stored in the state
    assert shrunk == len(folds) - len(declined) > 0, (shrunk, len(folds), len(declined))
