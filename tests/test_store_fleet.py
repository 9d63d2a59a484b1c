"""A fleet that does not double-work: retried appends are no-ops, a summary is made once per session.

The stores are real (SQLite, and PostgreSQL and Redis started by the tests);
the timeout is simulated by a store that commits an append and then reports
a lost connection, as a network timeout after the commit would.
"""

from __future__ import annotations

import pytest

from contextfold.conversation import Item, Text
from contextfold.errors import StoreUnavailable
from contextfold.stores import StoredSession, open_store
from contextfold.stores import outbox as outbox_module


class TimesOutAfterCommit:
    """A real store whose every other append (the 1st, 3rd, ...) commits, then raises as a timeout would."""

    def __init__(self, store) -> None:
        self._store = store
        self.appends = 0
        self.url = store.url
        self.exclusive = store.exclusive

    def append(self, session_id, records):
        seqs = self._store.append(session_id, records)
        self.appends += 1
        if self.appends % 2 == 1:
            raise StoreUnavailable(f"{self.url}: timed out waiting for the reply")
        return seqs

    def __getattr__(self, name):
        return getattr(self._store, name)


def test_an_item_appended_again_is_stored_once(shared_store_url: str) -> None:
    from contextfold.conversation import Header
    from contextfold.stores.records import header_record, item_record

    store = open_store(shared_store_url)
    try:
        store.create("s1", header_record("s1", Header()))
        record = item_record(Item("user", (Text("once"),), id="it-1"))
        first = store.append("s1", [record])
        again = store.append("s1", [record, item_record(Item("user", (Text("new"),), id="it-2"))])
        assert again[0] == first[0] and again[1] == first[0] + 1
        assert [r["item"]["id"] for r in store.read("s1") if r["type"] == "item"] == ["it-1", "it-2"]
    finally:
        store.close()


def test_a_thousand_appends_retried_after_a_timeout_leave_no_duplicate(shared_store_url: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outbox_module, "RETRY_DELAYS_S", (0.0,))  # the pauses are not what is tested
    store = TimesOutAfterCommit(open_store(shared_store_url))
    StoredSession.create(store, "s1").close()
    session = StoredSession.resume(store, "s1")
    for n in range(1000):
        session.append(Item("user", (Text(f"item {n}"),), id=f"it-{n}"))
    ids = [r["item"]["id"] for r in store.read("s1") if r["type"] == "item"]
    assert store.appends == 2000  # every append was tried twice: once timed out after committing, once again
    assert ids == [f"it-{n}" for n in range(1000)]  # 0 duplicates, nothing lost, in order
    store.close()


def test_a_database_made_before_item_keys_gains_them_when_opened(tmp_path) -> None:
    import sqlite3

    from contextfold.stores.sql import SCHEMA

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as old:
        for statement in SCHEMA:  # the tables as they were made before: no item_key column
            old.execute(statement)
    session = StoredSession.create(f"sqlite:///{path}", "s1")
    item = Item("user", (Text("once"),), id="it-1")
    assert session.append(item) == session.store.append("s1", [{"type": "item", "item": {"id": "it-1"}}])[0]
    session.close()
