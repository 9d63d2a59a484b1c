"""Async all the way: ``Context.aadd``/``aprepare``/``acompact`` and the async stores never block the loop.

Every backend runs against the real thing (PostgreSQL and Redis started by the
fixtures of ``store_servers.py``). What the tests hold: the async stores keep the
very records the blocking ones do (one set of statements, keys and codecs,
read back by the other side), a Context on an async store keeps and resumes
its session like one on a blocking store, and no blocking store call is ever
made on the loop's thread.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
from loop_threads import LoopWatchedSqlite

from contextfold.context import Context, Storage
from contextfold.conversation import Header, Item, Text
from contextfold.errors import SessionExists, SessionNotFound, StoreError, StoreUnavailable, ViewConflict
from contextfold.pipeline.base import Policy
from contextfold.stores import OffLoopStore, open_async_store, open_store
from contextfold.stores.records import event_record, header_record, item_record

SYSTEM = "You are a coding agent."


def user(text: str) -> Item:
    return Item("user", (Text(text),))


def turn(k: int) -> list[dict]:
    """One tool call and its (long) result, in Anthropic's format."""
    output = "\n".join(f"line {i} of f{k}.py: value = {i * k}" for i in range(60))
    return [
        {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": "bash",
                                           "input": {"command": f"cat f{k}.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": output}]},
    ]


def test_an_async_store_keeps_the_records_a_blocking_one_reads_back(store_url: str) -> None:
    async def write() -> None:
        store = await open_async_store(store_url)
        try:
            await store.create("s1", header_record("s1", Header()))
            with pytest.raises(SessionExists):
                await store.create("s1", header_record("s1", Header()))
            assert await store.append("s1", [item_record(user("one"))]) == [1]
            assert await store.append("s1", [item_record(user("two")), item_record(user("three"))]) == [2, 3]
            assert await store.commit_view("s1", 0, event_record("view", {"items": []}, 3)) == 4
            with pytest.raises(ViewConflict):
                await store.commit_view("s1", 0, event_record("view", {"items": []}, 3))
            digest = await store.put_blob("s1", b"a large output")
            assert await store.get_blob("s1", digest) == b"a large output"
            assert [r["seq"] for r in await store.read("s1", after=1)] == [2, 3, 4]
            assert [info.session_id for info in await store.sessions()] == ["s1"]
            with pytest.raises(SessionNotFound):
                await store.read("nobody")
        finally:
            await store.close()

    asyncio.run(write())
    blocking = open_store(store_url)
    try:
        records = blocking.read("s1")
        assert [r["item"]["blocks"][0]["text"] for r in records if r["type"] == "item"] == ["one", "two", "three"]
        assert records[-1]["kind"] == "view" and records[-1]["seq"] == 4
    finally:
        blocking.close()


def test_the_summary_lease_is_one_holder_at_a_time_on_an_async_store(shared_store_url: str) -> None:
    async def leases() -> tuple[bool, bool, bool]:
        store = await open_async_store(shared_store_url)
        try:
            await store.create("s1", header_record("s1", Header()))
            first = await store.lease("s1", "worker-a", 30)
            second = await store.lease("s1", "worker-b", 30)
            await store.release("s1", "worker-a")
            return first, second, await store.lease("s1", "worker-b", 30)
        finally:
            await store.close()

    assert asyncio.run(leases()) == (True, False, True)


def test_a_context_on_an_async_store_appends_compacts_and_resumes_exactly(store_url: str) -> None:
    async def session() -> tuple[list[Item], list[str]]:
        store = await open_async_store(store_url)
        try:
            context = await Context.acreate(window_tokens=8_000, storage=Storage(store=store, session_id="s1"),
                                            policy=Policy(trigger_tokens=2_000))
            await context.aadd([{"role": "user", "content": "Fix the bug in f1.py"}], system=SYSTEM)
            for k in range(1, 9):
                await context.aadd(turn(k))
                await context.aprepare()
            events = await context.acompact()
            assert any(e.stage == "summarize" and e.action == "summarized" for e in events)
            view = await context.aprepare_view()
            history = list(context.history.items)
            await context.aclose()
            return history, [item.id for item in view.items]
        finally:
            await store.close()

    history, view_ids = asyncio.run(session())
    resumed = Context.resume(store_url, "s1", window_tokens=8_000)
    try:
        assert list(resumed.history.items) == history
        assert [item.id for item in resumed.view().items] == view_ids
        assert any(item.provenance.summary for item in resumed.view().items)
    finally:
        resumed.close()


def test_the_async_api_never_touches_a_file_store_on_the_loop_thread(tmp_path: Path) -> None:
    store = LoopWatchedSqlite(tmp_path / "sessions.db")

    async def session() -> None:
        context = await Context.acreate(window_tokens=8_000,
                                        storage=Storage(store=OffLoopStore(store), session_id="s1"),
                                        policy=Policy(trigger_tokens=2_000))
        await context.aadd([{"role": "user", "content": "Fix the bug in f1.py"}], system=SYSTEM)
        for k in range(1, 6):
            await context.aadd(turn(k))
            await context.aprepare()
        await context.acompact()
        await context.aclose()

    asyncio.run(session())
    try:
        assert store.calls > 10 and store.on_loop == 0
        assert len(store.read("s1")) > 10
    finally:
        store.close()


def test_a_blocking_call_on_the_loop_of_an_async_server_store_says_to_use_the_async_api(
        shared_store_url: str) -> None:
    """A server store's async client lives on the loop: a blocking Context call made on that very loop would wait
    for itself, so it is a StoreError saying what to use instead. A file store has no loop to wait for: the
    blocking call works (and blocks, as the blocking API does)."""
    async def blocking_on_the_loop() -> str:
        store = await open_async_store(shared_store_url)
        try:
            try:
                Context(window_tokens=8_000, storage=Storage(store=store, session_id="s1")).close()
            except StoreError as refused:
                return str(refused)
            return "opened"
        finally:
            await store.close()

    said = asyncio.run(blocking_on_the_loop())
    if shared_store_url.startswith("sqlite"):
        assert said == "opened"
    else:
        assert "use the async API" in said


@pytest.mark.parametrize("scheme", ["postgresql", "redis"])
def test_an_async_server_store_whose_server_never_answers_is_unavailable_not_a_hang(scheme: str) -> None:
    """A port that takes the connection and never says a word (a frozen server): opening the async store is
    StoreUnavailable once the URL's timeouts run out, never a loop waiting for good."""
    with socket.socket() as hole:
        hole.bind(("127.0.0.1", 0))
        hole.listen()
        port = hole.getsockname()[1]
        url = (f"postgresql://cf@127.0.0.1:{port}/postgres" if scheme == "postgresql" else f"redis://127.0.0.1:{port}/0")
        with pytest.raises(StoreUnavailable):
            asyncio.run(open_async_store(f"{url}?connect_timeout=2&operation_timeout=1"))


def test_the_history_tools_read_an_offloaded_output_back_from_an_async_store(shared_store_url: str) -> None:
    """An output too large to keep whole is a blob of the async store; ``aread_history`` reads it back whole,
    off the loop (the blocking ``read_history`` would block the loop on a file store, and could not reach a
    server store's async client from its own loop)."""
    rows = "\n".join(f"row {n}: needle-{n}" for n in range(6_000))

    async def session() -> tuple[str, str]:
        store = await open_async_store(shared_store_url)
        try:
            context = await Context.acreate(window_tokens=200_000, storage=Storage(store=store, session_id="s1"),
                                            policy=Policy(persist_whole_tail_fraction=0))  # to the store on arrival
            await context.aadd([{"role": "user", "content": "Read the log"}], system=SYSTEM)
            added = await context.aadd([
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash",
                                                   "input": {"command": "cat log"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": rows}]}])
            result = added[-1]
            assert result.provenance.offloaded.blob, result.provenance  # offloaded: the item holds a preview
            read = await context.aread_history(result.id, "5990-5991")
            found = await context.asearch_history("needle-4242")
            await context.aclose()
            return read, found
        finally:
            await store.close()

    read, found = asyncio.run(session())
    assert "row 5989: needle-5989" in read and "row 5990: needle-5990" in read
    assert "needle-4242" in found
