"""A worker killed while it summarizes does not hold the others up: its lease is taken over within seconds.

The lease is renewed by a heartbeat while its holder works (so a summary longer than the lease keeps it), and
expires :data:`~contextfold.context.single_flight.LEASE_S` after the last beat of a holder that died. The holder
is a real process (``tests/lease_holder_child.py``) killed with SIGKILL; the stores are real (SQLite, and
PostgreSQL and Redis started by the tests). The figure itself is ``benchmarks/fleet.py``'s.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from contextfold.context.single_flight import HEARTBEAT_S, LEASE_S, WAIT_S
from contextfold.stores import open_store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from fleet import killed_holder_delay


def test_a_killed_holder_is_taken_over_and_the_next_worker_summarizes(shared_store_url: str) -> None:
    held_past_its_lease: list[bool] = []

    def renewed_while_it_works() -> None:
        time.sleep(LEASE_S + 2 * HEARTBEAT_S)  # past the lease it took: only its heartbeats keep it
        store = open_store(shared_store_url)
        try:
            held_past_its_lease.append(store.lease("k1", "someone-else", LEASE_S) is False)
        finally:
            store.close()

    delay, summarized = killed_holder_delay(shared_store_url, "k1", before_kill=renewed_while_it_works)
    print(f"the next worker's compact() returned {delay:.1f} s after the kill")
    assert held_past_its_lease == [True]
    assert summarized  # taken over: before, it waited WAIT_S and went on unsummarized (the lease lasted 300 s)
    assert delay < WAIT_S  # a guard only: the figure is the benchmark's
