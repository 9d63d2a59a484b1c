"""A Context on each store works the same: create, add, compact, resume exactly; typed errors; no secrets shown.

Part of the store contract suite (parametrized over JSONL, SQLite, PostgreSQL
and Redis by the ``store_url`` fixture), plus what only some backends have:
today's transcript files, owner-only SQLite files, credentials in server URLs.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from contextfold import Context, Storage
from contextfold.codec import item_to_dict
from contextfold.conversation import Header, Item, Summary, Text
from contextfold.errors import SessionExists, SessionNotFound, StoreError
from contextfold.pipeline.base import Policy
from contextfold.stores import open_store
from contextfold.stores.transcript import Transcript

SYSTEM = "You are a coding agent."
TOOLS = [{"name": "bash", "description": "run a command", "input_schema": {"type": "object", "properties": {}}}]
POLICY = Policy(trigger_tokens=2_000)


def turn(k: int, output: str) -> list[dict]:
    return [
        {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": "bash",
                                           "input": {"command": f"cat f{k}.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": output}]},
    ]


def test_a_session_compacted_in_one_process_resumes_exactly_in_another(store_url: str) -> None:
    context = Context(window_tokens=20_000, policy=POLICY, storage=Storage(store=store_url, session_id="s9"))
    context.add([{"role": "user", "content": "Fix the bug in f1.py"}], system=SYSTEM, tools=TOOLS)
    for k in range(1, 10):
        context.add(turn(k, f"line {k}\n" * 120))
        context.prepare()
    assert any(e.action == "summarized" for e in context.events)
    context.add(turn(10, "after the last request"))  # added, not yet sent: resumes too
    context.close()
    resumed = Context.resume(store_url, "s9", window_tokens=20_000, policy=POLICY)
    try:
        assert resumed.history == context.history
        assert list(resumed.view().items) == list(context.view().items)
        assert resumed.prepare() == context.prepare()
    finally:
        resumed.close()


def test_resuming_a_missing_session_is_a_typed_error_and_creates_nothing(store_url: str) -> None:
    with pytest.raises(SessionNotFound) as missing:
        Context.resume(store_url, "nobody", window_tokens=20_000)
    assert missing.value.session_id == "nobody"
    store = open_store(store_url)
    try:
        assert store.sessions() == []
    finally:
        store.close()


def test_creating_a_session_that_exists_is_a_typed_error(store_url: str) -> None:
    Context(window_tokens=20_000, storage=Storage(store=store_url, session_id="taken")).close()
    with pytest.raises(SessionExists):
        Context(window_tokens=20_000, storage=Storage(store=store_url, session_id="taken"))


def test_a_session_written_by_todays_transcript_resumes_unchanged(tmp_path: Path) -> None:
    """A file the Transcript class writes (the JSONL layout as it is) needs no migration."""
    header = Header(system=(Item("system", (Text(SYSTEM),)),))
    items = [Item("user", (Text(f"message {n}"),), id=f"m{n}") for n in range(6)]
    summary = Item("user", (Summary("what happened in m0..m3"),), id="summary-1")
    with Transcript.open(tmp_path / "sessions", "old", header=header) as transcript:
        for item in items[:4]:
            transcript.append(item)
        transcript.append_event("view", {"items": [{"item": item_to_dict(summary)}, {"ref": "m3"}]})
        for item in items[4:]:
            transcript.append(item)
    before = (tmp_path / "sessions" / "old.jsonl").read_bytes()
    for location in (tmp_path / "sessions", f"jsonl:///{tmp_path / 'sessions'}"):
        resumed = Context.resume(location, "old", window_tokens=20_000)
        assert list(resumed.history.items) == items
        assert resumed.history.header == header
        assert [item.id for item in resumed.view().items] == ["summary-1", "m3", "m4", "m5"]
        assert resumed.view().items[0].blocks == summary.blocks
        resumed.close()
    assert (tmp_path / "sessions" / "old.jsonl").read_bytes() == before  # resuming wrote nothing


def test_the_sqlite_file_is_owner_only_and_never_a_link(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'db' / 'sessions.db'}")
    store.close()
    assert stat.S_IMODE((tmp_path / "db" / "sessions.db").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "db").stat().st_mode) == 0o700
    (tmp_path / "elsewhere.db").write_bytes(b"")
    os.symlink(tmp_path / "elsewhere.db", tmp_path / "link.db")
    with pytest.raises(StoreError):
        open_store(f"sqlite:///{tmp_path / 'link.db'}")


@pytest.mark.parametrize("url", ["redis://127.0.0.1:99999/0", "redis://127.0.0.1:6379/0?socket_timeout=soon",
                                 "redis://[::1/0", "postgresql://\udcff/postgres"])
def test_a_url_the_driver_cannot_parse_is_a_store_error(url: str) -> None:
    """Found by fuzzing store URLs: redis-py raised ValueError for a port out of range, a query value of the wrong
    type or an unclosed IPv6 bracket, psycopg UnicodeEncodeError for a host holding a lone surrogate (what a
    byte that is not UTF-8 on the command line becomes). No server is reached: the URL is refused first."""
    with pytest.raises(StoreError, match="not a URL the driver takes"):
        open_store(url)


def test_a_password_in_a_url_urlsplit_refuses_is_masked_where_the_driver_quotes_it() -> None:
    """Found by fuzzing store URLs: psycopg's error for an unclosed IPv6 bracket quotes the whole URL, and the
    password was masked only in a URL that urlsplit takes apart. No server is reached."""
    with pytest.raises(StoreError) as refused:
        open_store("postgresql://cf:s3cret-Pa55@[::1/postgres")
    assert "s3cret-Pa55" not in str(refused.value) and "cf:***@" in str(refused.value)


@pytest.mark.parametrize("location", ["sqlite:///{}/a\0b.db", "{}/sess\0ions"])
def test_a_store_location_holding_a_nul_byte_is_a_store_error(tmp_path: Path, location: str) -> None:
    """Found by fuzzing paths: a SQLite URL raised ValueError ('embedded null byte') when opened, a folder at
    its first read."""
    with pytest.raises(StoreError, match="NUL byte"):
        open_store(location.format(tmp_path)).read("s1")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("backend", ["postgresql", "redis"])
def test_credentials_are_never_logged_nor_shown(backend: str, request, caplog) -> None:
    secret = "s3cret-Pa55"
    if backend == "postgresql":
        server = request.getfixturevalue("postgres_server_url")
        url = server.replace("postgresql://cf@", f"postgresql://cf:{secret}@")  # trust auth: any password goes in
        unreachable = f"postgresql://cf:{secret}@127.0.0.1:1/postgres"
    else:
        import redis

        server = request.getfixturevalue("redis_server_url")
        with redis.Redis.from_url(server) as admin:
            admin.execute_command("ACL", "SETUSER", "cf", "on", f">{secret}", "~*", "+@all")
        url = server.replace("redis://", f"redis://cf:{secret}@")
        unreachable = f"redis://cf:{secret}@127.0.0.1:1/0"
    caplog.set_level(logging.DEBUG)
    shown = []
    store = open_store(url)
    try:
        shown += [repr(store), store.url]
        for error in (SessionNotFound, StoreError):
            with pytest.raises(error) as raised:
                store.read("nobody") if error is SessionNotFound else store.append("nobody", [{"type": "x", "v": float("nan")}])
            shown.append(str(raised.value))
        context = Context(window_tokens=20_000, storage=Storage(store=store, session_id="logged"))
        context.add([{"role": "user", "content": "hello"}])
        context.close()
    finally:
        store.close()
    with pytest.raises(StoreError) as refused:
        open_store(unreachable)
    shown.append(str(refused.value))
    assert "***" in store.url and "***" in str(refused.value)
    assert caplog.records, "nothing was logged, so the test proves nothing"
    assert secret not in caplog.text
    assert not [text for text in shown if secret in text]


def test_a_context_answers_a_call_another_process_made(shared_store_url: str) -> None:
    """Worker A asks for a tool; worker B, holding the same session since before, adds the result."""
    first = Context(window_tokens=20_000, storage=Storage(store=shared_store_url, session_id="shared"))
    first.add([{"role": "user", "content": "list the files"}])
    second = Context.resume(shared_store_url, "shared", window_tokens=20_000)
    try:
        first.add(turn(1, "")[:1])  # the call
        second.add(turn(1, "a.py b.py")[1:])  # its result, in Anthropic's format: the call must be known
        second.prepare()
        first.prepare()
        assert [item.role for item in second.history] == ["user", "assistant", "tool"]
        assert first.history == second.history and list(first.view().items) == list(second.view().items)
    finally:
        first.close()
        second.close()
