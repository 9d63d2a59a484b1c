"""A fleet that does not double-work: retried appends are no-ops, a summary is made once per session.

The stores are real (SQLite, and PostgreSQL and Redis started by the tests);
the timeout is simulated by a store that commits an append and then reports
a lost connection, as a network timeout after the commit would.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from contextfold.conversation import Item, Text
from contextfold.stores import StoredSession, open_store
from contextfold.stores import outbox as outbox_module

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from fleet import append_retried, double_work, run_two_workers, summaries_committed


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
    tries, ids = append_retried(shared_store_url, "s1")
    assert tries == 2000  # every append was tried twice: once timed out after committing, once again
    assert ids == [f"it-{n}" for n in range(1000)]  # 0 duplicates, nothing lost, in order


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


def test_the_summary_lease_is_held_by_one_worker_at_a_time(shared_store_url: str) -> None:
    from contextfold.conversation import Header
    from contextfold.stores.records import header_record

    store = open_store(shared_store_url)
    try:
        store.create("s1", header_record("s1", Header()))
        assert store.lease("s1", "a", 60) and not store.lease("s1", "b", 60)
        assert store.lease("s1", "a", 60)  # renewed by its holder
        store.release("s1", "b")  # not b's to release
        assert not store.lease("s1", "b", 60)
        store.release("s1", "a")
        assert store.lease("s1", "b", 60)
        if not shared_store_url.startswith("redis"):  # a SQL lease expired by its own clock (Redis expires keys itself)
            store.release("s1", "b")
            assert store.lease("s1", "a", -1) and store.lease("s1", "b", 60)
    finally:
        store.close()


@pytest.mark.parametrize("overshoot", [0.0, 0.99], ids=["on-target", "overshooting"])
def test_two_workers_on_one_session_summarize_each_span_once(shared_store_url: str, overshoot: float) -> None:
    """Each worker its own Context on the shared session, adding turns and compacting at each boundary: every
    summarizer call is a compaction committed, and no item is summarized twice. Overshooting, every summary
    leaves the request over the trigger whatever the tail; escalation used to summarize the same span again
    with a shorter tail, a call whose summary was thrown away (9 calls for 3 compactions)."""
    summarizer, compactions, errors = run_two_workers(shared_store_url, 8, overshoot)
    assert not errors
    assert len(summarizer.spans) >= 8
    assert len(summarizer.spans) == len(compactions) == summaries_committed(shared_store_url)
    assert double_work(summarizer) == (0, 0)  # no item summarized twice, by one worker or by both
