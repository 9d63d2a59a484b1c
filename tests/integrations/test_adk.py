"""Google ADK: the real ``Runner`` and ``Gemini`` model class on the scripted server, contextfold writing the summaries.

60 tool rounds at an 8,000-token window in one invocation: ADK checks its
token threshold before every model call and hands the events to
:class:`~contextfold.integrations.adk.ContextfoldSummarizer`, whose
compaction events (appended to the session, which keeps every raw event)
replace a pair-safe span after the task. Every request the server gets is
valid by Gemini's rules, holds the task and fits; the task finishes; the
stored session serves the next invocation. The lookback script (see
``lookback_server``) runs with the history tools, and with
:class:`~contextfold.integrations.adk.ContextfoldOffload` for the half that
reads an offloaded output back; without the history tools, the offloaded
output's preview names none.
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
from lookback_server import ROUNDS, LookbackServer, lookback_chunk
from loop_threads import LoopWatchedSqlite
from scripted_server import FINAL, TASK, WINDOW_TOKENS, ToolLoopServer, chunk_text
from support import naming_history_tools, pairing_disabled, require

from contextfold import Event

require("google.adk", "adk")

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.google_llm import Gemini
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import errors, types

from contextfold.adapters.gemini import from_adk_events
from contextfold.integrations import adk
from contextfold.integrations.adk import (
    ContextfoldOffload,
    ContextfoldSummarizer,
    compact_tool,
    compaction_config,
    history_tools,
    session_history,
)
from contextfold.stores import StoredSession

SYSTEM = "You are a careful log auditor."


def read_chunk(chunk: int) -> str:
    """Read one chunk of the service log (about 700 tokens)."""
    return chunk_text(chunk)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ToolLoopServer]:
    monkeypatch.setenv("GOOGLE_API_KEY", "test")
    with ToolLoopServer() as model:
        yield model


async def _ask(runner: Runner, session_id: str, text: str) -> str:
    message = types.Content(role="user", parts=[types.Part(text=text)])
    answer = ""
    async for event in runner.run_async(user_id="auditor", session_id=session_id, new_message=message):
        if event.content and event.content.parts and event.content.parts[0].text:
            answer = event.content.parts[0].text
    return answer


def run(server: ToolLoopServer, **options: Any) -> tuple[ContextfoldSummarizer, list[Event], list[Any], str]:
    """One invocation on the task, then one more question on the stored session."""
    events: list[Event] = []
    summarizer = ContextfoldSummarizer(window_tokens=WINDOW_TOKENS, max_output_tokens=1024, on_event=events.append,
                                       **options)
    model = Gemini(model="gemini-2.5-flash", base_url=server.base_url("gemini"))
    agent = LlmAgent(name="auditor", model=model, instruction=SYSTEM, tools=[read_chunk])
    app = App(name="audit", root_agent=agent, events_compaction_config=compaction_config(summarizer))
    service = InMemorySessionService()
    runner = Runner(app=app, session_service=service)

    async def go() -> tuple[list[Any], str]:
        session = await service.create_session(app_name="audit", user_id="auditor")
        await _ask(runner, session.id, TASK)
        stored = (await service.get_session(app_name="audit", user_id="auditor", session_id=session.id)).events
        return stored, await _ask(runner, session.id, "How many ERROR lines?")

    stored, follow_up = asyncio.run(go())
    return summarizer, events, stored, follow_up


def test_sixty_rounds_at_8k_every_request_valid(server: ToolLoopServer) -> None:
    summarizer, events, stored, follow_up = run(server)
    assert server.failures() == [], server.figures()
    assert summarizer.compactions >= 2
    assert sum(1 for e in events if e.stage == "summarize" and e.action == "summarized") == summarizer.compactions
    compactions = [e for e in stored if e.actions and e.actions.compaction]
    assert len(compactions) == summarizer.compactions
    raw = from_adk_events(stored)  # append-only: every raw event is still in the session
    assert raw.validate() == [] and sum(1 for item in raw if item.role == "tool") == 60
    assert follow_up == FINAL and server.problems == []
    assert naming_history_tools(server) == []  # the agent has no history tools: nothing tells it to call them


def test_the_server_rejects_a_summary_in_a_model_turn(server: ToolLoopServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutation check: written as a model turn (as ADK's own summarizer does), the summary puts the tail's
    first function call right after a model turn, which Gemini rejects."""
    monkeypatch.setattr(adk, "SUMMARY_ROLE", "model")
    with pytest.raises(errors.ClientError, match="function call turn comes immediately after a user turn"):
        run(server)
    assert server.problems


def test_a_split_round_is_re_paired_by_adk_itself(server: ToolLoopServer) -> None:
    """With contextfold's pairing off, a summary can swallow a call whose response stays: ADK puts the call back
    when it builds the request (``_recover_compacted_function_calls``), so no request breaks; and the next range,
    which opens with that response, is still summarized."""
    with pairing_disabled():
        summarizer, _, _, follow_up = run(server)
    assert server.failures() == [], server.figures()
    assert summarizer.compactions >= 2 and follow_up == FINAL


def _look_back(server: LookbackServer, offload: ContextfoldOffload | None = None) -> tuple[str, int, Any]:
    """The lookback script through ADK's Runner (the history tools read with ``offload``'s store, and the App runs
    the plugin, when given): the final answer, the compactions made, and the stored session."""

    def read_chunk(chunk: int) -> str:
        """Read one chunk of the service log."""
        return lookback_chunk(chunk, offloaded=server.offloaded)

    summarizer = ContextfoldSummarizer(window_tokens=WINDOW_TOKENS, max_output_tokens=1024, history_tools=True)
    model = Gemini(model="gemini-2.5-flash", base_url=server.base_url("gemini"))
    agent = LlmAgent(name="auditor", model=model, instruction=SYSTEM, tools=[read_chunk, *history_tools(offload)])
    app = App(name="audit", root_agent=agent, events_compaction_config=compaction_config(summarizer),
              plugins=[offload] if offload is not None else [])
    service = InMemorySessionService()
    runner = Runner(app=app, session_service=service)

    async def go() -> tuple[str, Any]:
        session = await service.create_session(app_name="audit", user_id="auditor")
        answer = await _ask(runner, session.id, TASK)
        await runner.close()  # the plugin closes its store session
        return answer, await service.get_session(app_name="audit", user_id="auditor", session_id=session.id)

    answer, stored = asyncio.run(go())
    return answer, summarizer.compactions, stored


def test_after_compaction_the_agent_searches_and_reads_its_history(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the offload plugin ADK sends every output whole until a compaction hides it: read_history reads the
    compacted-away output by the ref the search gave."""
    monkeypatch.setenv("GOOGLE_API_KEY", "test")
    with LookbackServer(offloaded=False) as server:
        answer, compactions, _ = _look_back(server)
    assert server.problems == [] and server.missed == []
    assert answer == LOOKBACK_FINAL and compactions >= 1


@pytest.mark.parametrize("kind", ["folder", "sqlite"])
def test_an_offloaded_output_is_read_back_by_the_ref_its_preview_names(
        kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ContextfoldOffload, the oversized last chunk reaches the model only as a preview naming its ref (the
    session records the preview, the store the blob); after compaction the model searches for the needle, then
    reads rows 2001-2002 of the offloaded output with read_history and gets them verbatim in the next request."""
    monkeypatch.setenv("GOOGLE_API_KEY", "test")
    store = str(tmp_path) if kind == "folder" else f"sqlite:///{tmp_path / 'sessions.db'}"
    offload = ContextfoldOffload(store)
    with LookbackServer() as server:
        answer, compactions, stored = _look_back(server, offload)
    assert server.problems == [] and server.missed == []
    assert answer == LOOKBACK_FINAL and compactions >= 1 and server.big_ref

    history, _ = adk.session_history(stored.events)
    preview = next(item for item in history if item.id == server.big_ref)
    assert "offloaded row 2000 " not in preview.text and f'read_history("{server.big_ref}"' in preview.text
    kept = StoredSession.resume(store, stored.id)  # the blob is the contextfold session's, in the store
    try:
        assert kept.get_blob(preview.provenance.offloaded.blob).decode() == lookback_chunk(ROUNDS - 1)
    finally:
        kept.close()


def test_the_offload_plugin_and_the_history_tools_keep_their_store_off_the_runner_loop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ADK awaits the plugin's callbacks and the history tools on the runner's loop: the blob written, the session
    opened and the blob read back (SQLite, on disk) are all made off that loop, through the async API."""
    monkeypatch.setenv("GOOGLE_API_KEY", "test")
    store = LoopWatchedSqlite(tmp_path / "sessions.db")
    try:
        with LookbackServer() as server:
            answer, _, stored = _look_back(server, ContextfoldOffload(store))
        assert answer == LOOKBACK_FINAL and server.problems == [] and server.missed == []
        assert any(item.provenance.offloaded and item.provenance.offloaded.blob for item in adk.session_history(stored.events)[0])  # the blob was written
        assert store.calls > 0 and store.on_loop == 0
    finally:
        store.close()


def test_without_the_offload_plugin_the_big_output_is_sent_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutation check of the test above: the same run without ContextfoldOffload sends the big output whole,
    over the window, and the server rejects the request."""
    monkeypatch.setenv("GOOGLE_API_KEY", "test")
    with LookbackServer() as server, pytest.raises(errors.ClientError, match="prompt is too long"):
        _look_back(server)
    assert server.problems


def test_an_agent_without_the_history_tools_gets_a_preview_that_does_not_name_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ContextfoldOffload sees each request's tools: the agent here has only ``read_chunk``, so the preview of its
    oversized last chunk (and any summary) tells it to call nothing it lacks (ADK would fail that call)."""
    monkeypatch.setenv("GOOGLE_API_KEY", "test")
    events: list[Event] = []
    offload = ContextfoldOffload(f"sqlite:///{tmp_path / 'sessions.db'}", on_event=events.append)

    def read_chunk(chunk: int) -> str:
        """Read one chunk of the service log."""
        return lookback_chunk(chunk)  # the last one is too large to send whole

    with ToolLoopServer(rounds=ROUNDS) as server:
        summarizer = ContextfoldSummarizer(window_tokens=WINDOW_TOKENS, max_output_tokens=1024)
        model = Gemini(model="gemini-2.5-flash", base_url=server.base_url("gemini"))
        agent = LlmAgent(name="auditor", model=model, instruction=SYSTEM, tools=[read_chunk])
        app = App(name="audit", root_agent=agent, events_compaction_config=compaction_config(summarizer),
                  plugins=[offload])
        service = InMemorySessionService()
        runner = Runner(app=app, session_service=service)

        async def go() -> str:
            session = await service.create_session(app_name="audit", user_id="auditor")
            answer = await _ask(runner, session.id, TASK)
            await runner.close()
            return answer

        answer = asyncio.run(go())
    assert answer == FINAL and server.problems == []
    assert [e.action for e in events] == ["persisted"]  # the last chunk reached the model as a preview
    assert not any("offloaded row 2000 " in str(exchange.body) for exchange in server.exchanges)
    assert naming_history_tools(server) == []


def test_the_agent_asks_for_a_compaction_and_the_next_request_is_compacted_with_its_focus(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "test")
    with CompactServer() as server:
        summarizer = ContextfoldSummarizer(window_tokens=WINDOW_TOKENS, max_output_tokens=1024,
                                           summarizer=compact_summarizer(server))
        model = Gemini(model="gemini-2.5-flash", base_url=server.base_url("gemini"))
        agent = LlmAgent(name="auditor", model=model, instruction=SYSTEM, tools=[read_chunk, compact_tool(summarizer)])
        app = App(name="audit", root_agent=agent, events_compaction_config=compaction_config(summarizer))
        service = InMemorySessionService()
        runner = Runner(app=app, session_service=service)

        async def go() -> str:
            session = await service.create_session(app_name="audit", user_id="auditor")
            return await _ask(runner, session.id, TASK)

        answer = asyncio.run(go())
    assert server.problems == [] and server.missed == [] and answer == COMPACT_FINAL
    assert len(server.summary_requests) == 1 and summarizer.compactions == 1  # when asked, never by the trigger
def test_the_hook_is_told_of_each_compaction_with_the_span_adk_stores(server: ToolLoopServer) -> None:
    told: list[Any] = []
    summarizer, events, stored, follow_up = run(server, on_compaction=told.append)
    assert server.failures() == [] and follow_up == FINAL, server.figures()
    compactions = [e.actions.compaction for e in stored if e.actions and e.actions.compaction]
    assert len(told) == len(compactions) == summarizer.compactions >= 2
    assert sum(1 for e in events if e.stage == "receipt" and e.action == "compaction") == len(told)  # on_event too
    history, _ = session_history(stored)  # what the history tools read: every ref of every receipt names an item
    ids = {item.id for item in history.items}
    for notice, compaction in zip(told, compactions):
        receipt = notice.receipt
        assert receipt.of_kind("summarized") and receipt.tokens_after < receipt.tokens_before
        assert (receipt.first_time, receipt.last_time) == (compaction.start_timestamp, compaction.end_timestamp)
        refs = [taken.ref for taken in receipt.taken if taken.read_history is not None]
        assert refs and set(refs) <= ids, set(refs) - ids
