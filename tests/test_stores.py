"""The store contract: JSONL folder, SQLite, PostgreSQL and Redis pass the same tests.

PostgreSQL and Redis run as throwaway servers on 127.0.0.1 (see ``store_servers.py``);
without their binaries the tests say why they skip, and under ``CI=true`` they fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from contextfold import Context
from contextfold.codec import item_to_dict
from contextfold.conversation import Conversation, Header, Item, Text, ToolCall, ToolResult
from contextfold.errors import (
    InvalidSessionId,
    SessionExists,
    SessionNotFound,
    StoreError,
    TranscriptLocked,
    ViewConflict,
)
from contextfold.stores import StoredSession, open_store, prune
from contextfold.stores.records import event_record, header_record, item_record


def user(text: str) -> Item:
    return Item("user", (Text(text),))


def view(item_count: int, refs: list[str]) -> dict:
    return event_record("view", {"items": [{"ref": r} for r in refs]}, item_count)


@pytest.fixture
def store(store_url: str):
    opened = open_store(store_url)
    yield opened
    opened.close()


def test_a_new_session_holds_its_header_and_cannot_be_created_twice(store) -> None:
    header = Header(system=(Item("system", (Text("be brief"),)),), meta={"k": "v"})
    store.create("s1", header_record("s1", header, created=1700000000.5))
    (record,) = store.read("s1")
    assert record["seq"] == 0 and record["type"] == "header" and record["session_id"] == "s1"
    assert StoredSession.resume(store, "s1").header == header
    with pytest.raises(SessionExists):
        store.create("s1", header_record("s1", Header()))


def test_appends_get_gap_free_numbers_and_read_back_exactly(store) -> None:
    store.create("s1", header_record("s1", Header()))
    items = [user("é ✓ \U0001f600"), Item("assistant", (ToolCall("c1", "bash", {"cmd": "ls"}),)),
             Item("tool", (ToolResult("c1", "a\nb", is_error=True),), meta={"n": 1}), user("lone \ud800 surrogate")]
    assert store.append("s1", [item_record(items[0])]) == [1]
    assert store.append("s1", [item_record(i) for i in items[1:]]) == [2, 3, 4]
    records = store.read("s1")
    assert [r["seq"] for r in records] == [0, 1, 2, 3, 4]
    assert [r["item"] for r in records[1:]] == [item_to_dict(i) for i in items]
    assert [r["seq"] for r in store.read("s1", after=2)] == [3, 4]
    assert store.read("s1", after=4) == []
    assert StoredSession.resume(store, "s1").restored.conversation == Conversation(items)


def test_sessions_are_kept_apart_and_listed(store) -> None:
    for sid, n in (("a", 2), ("b", 5)):
        store.create(sid, header_record(sid, Header()))
        store.append(sid, [item_record(user(f"{sid}{i}")) for i in range(n)])
    assert [r["item"]["blocks"][0]["text"] for r in store.read("a")[1:]] == ["a0", "a1"]
    listed = {info.session_id: info for info in store.sessions()}
    assert sorted(listed) == ["a", "b"]
    assert (listed["a"].records, listed["b"].records) == (3, 6)
    assert listed["a"].updated >= listed["a"].created > 0


def test_a_missing_session_is_a_typed_error_never_an_empty_one(store) -> None:
    with pytest.raises(SessionNotFound):
        store.read("nobody")
    with pytest.raises(SessionNotFound):
        store.append("nobody", [item_record(user("x"))])
    with pytest.raises(SessionNotFound):
        store.commit_view("nobody", 0, view(0, []))
    with pytest.raises(SessionNotFound):
        StoredSession.resume(store, "nobody")
    assert store.sessions() == []


def test_a_view_change_commits_only_against_the_current_view(store) -> None:
    store.create("s1", header_record("s1", Header()))
    store.append("s1", [item_record(user("x"))])
    first = store.commit_view("s1", 0, view(1, []))
    assert first == 2
    with pytest.raises(ViewConflict) as conflict:
        store.commit_view("s1", 0, view(1, []))  # based on the view before ``first``
    assert (conflict.value.expected, conflict.value.current) == (0, first)
    assert [r["seq"] for r in store.read("s1")] == [0, 1, 2]  # the refused change wrote nothing
    store.append("s1", [item_record(user("y"))])  # items do not change the view: no conflict for them
    assert store.commit_view("s1", first, view(2, [])) == 4


def test_a_stored_session_follows_other_writers(shared_store_url: str) -> None:
    first = StoredSession.open(shared_store_url, "s1")
    second = StoredSession.resume(shared_store_url, "s1")
    try:
        mine = first.append_items([user("a")])
        theirs = second.append_items([user("b"), user("c")])
        again = first.append_items([user("d")])
        assert (mine, theirs, again) == ([1], [2, 3], [4])
        assert first.behind
        pulled = first.pull()
        assert [(p.record["seq"], p.mine) for p in pulled] == [(2, False), (3, False), (4, True)]
        assert (first.seen, first.item_count, first.behind) == (4, 4, False)
        first.commit_view({"items": []})
        with pytest.raises(ViewConflict):
            second.commit_view({"items": []})
        assert [(p.record["seq"], p.mine) for p in second.pull()] == [(1, False), (2, True), (3, True), (4, False),
                                                                      (5, False)]
        assert second.revision == 5
        assert second.commit_view({"items": []}) == 6
    finally:
        first.close()
        second.close()


def test_retention_deletes_old_sessions_and_empties_old_checkpoints_only_when_asked(store) -> None:
    for sid in ("old", "kept"):
        store.create(sid, header_record(sid, Header()))
        store.append(sid, [item_record(user("x"))])
    base = 0
    for n in range(3):
        base = store.commit_view("kept", base, view(1, [f"id{n}"]))
    before = StoredSession.resume(store, "kept").restored
    assert len(store.sessions()) == 2  # nothing goes by itself
    report = prune(store, keep_checkpoints=1)
    assert report.pruned_checkpoints == {"kept": 2}
    records = store.read("kept")
    assert [r["seq"] for r in records] == list(range(len(records)))  # still gap-free
    assert [r.get("kind") for r in records if r["type"] == "event"] == ["view_pruned", "view_pruned", "view"]
    after = StoredSession.resume(store, "kept").restored
    assert after.conversation == before.conversation and after.events[-1] == before.events[-1]
    latest = max(info.updated for info in store.sessions())
    report = prune(store, older_than_days=1, now=latest + 86_400 + 1)
    assert sorted(report.deleted_sessions) == ["kept", "old"]
    assert store.sessions() == []
    with pytest.raises(SessionNotFound):
        store.read("old")
    with pytest.raises(StoreError):
        prune(store, keep_checkpoints=0)


def test_a_record_that_cannot_be_stored_is_refused_and_nothing_of_its_batch_is_written(store) -> None:
    store.create("s1", header_record("s1", Header()))
    with pytest.raises(StoreError):
        store.append("s1", [item_record(user("x")), {"type": "event", "kind": "bad", "data": {"x": float("nan")}}])
    assert [r["seq"] for r in store.read("s1")] == [0]


def test_the_jsonl_folder_has_one_writer_a_session(tmp_path) -> None:
    """Its file lock refuses a second writer, so nobody's records can land between one's own."""
    first = StoredSession.open(tmp_path / "sessions", "s1")
    try:
        assert first.store.exclusive
        first.append_items([user("a")])
        with pytest.raises(TranscriptLocked):  # refused when it takes the session, before it could write
            StoredSession.resume(tmp_path / "sessions", "s1")
        first.append_items([user("b")])
        assert first.pull() == [] and not first.behind
    finally:
        first.close()
    again = StoredSession.resume(tmp_path / "sessions", "s1")  # the lock went with the close
    try:
        assert [r["item"]["blocks"][0]["text"] for r in again.store.read("s1")[1:]] == ["a", "b"]
    finally:
        again.close()


@pytest.mark.parametrize("session_id", ["../escape", "a/b", ".hidden", "", "x" * 129])
def test_every_store_refuses_a_session_id_a_folder_could_not_name_and_commits_nothing(store_url: str,
                                                                                       session_id: str) -> None:
    for opening in (StoredSession.open, StoredSession.create, StoredSession.resume):
        with pytest.raises(InvalidSessionId, match="invalid session id"):
            opening(store_url, session_id)
    with pytest.raises(InvalidSessionId):
        Context.open(store_url, session_id, "claude-sonnet-4-5")
    store = open_store(store_url)
    try:
        assert store.sessions() == []
    finally:
        store.close()


def test_context_open_starts_a_session_then_resumes_it(store_url: str) -> None:
    with Context.open(store_url, "user-42", "claude-sonnet-4-5") as first:
        assert len(first.history) == 0
        first.add([{"role": "user", "content": "hello"}])
    with Context.open(store_url, "user-42", "claude-sonnet-4-5") as again:
        assert [item.role for item in again.history] == ["user"]
        again.add([{"role": "assistant", "content": "hi"}])
    with Context.resume(store_url, "user-42", "claude-sonnet-4-5") as resumed:
        assert [item.role for item in resumed.history] == ["user", "assistant"]


def test_a_jsonl_url_names_its_folder_as_a_file_url_does(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    absolute = tmp_path / "abs"
    for url, folder in ((f"jsonl://{absolute}", absolute), (f"file://{absolute}", absolute),
                        (f"file://localhost{absolute}", absolute), ("jsonl://rel/x", tmp_path / "rel" / "x"),
                        ("jsonl://", tmp_path)):
        store = open_store(url)
        try:
            assert Path(store.directory).resolve() == folder.resolve(), url
        finally:
            store.close()
    assert not (tmp_path / absolute.relative_to("/")).exists()  # never the absolute path under the current folder
    with pytest.raises(StoreError, match="file:///"):
        open_store("file://elsewhere/srv/x")
