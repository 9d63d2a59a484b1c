"""Many processes, one session: nothing acknowledged is lost or repeated, and view changes never overwrite.

Eight worker processes (``store_worker_child.py``) resume one session and add
250 items each; two of them also compact it every 25 items. Then, from the
records alone: sequence numbers are gap-free, every acknowledged item is
there exactly once and each writer's items are in its order, every committed
view change was based on the checkpoint before it (the others were refused
and re-decided, or raised), and ``Context.resume`` rebuilds the view the last
committer had. Once more with a worker killed (SIGKILL) while it writes.
Nothing depends on timing: whatever the interleaving, these must hold.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from store_worker_child import digest

from contextfold import Context
from contextfold.conversation import Conversation
from contextfold.stores import StoredSession, open_store

CHILD = Path(__file__).with_name("store_worker_child.py")
WORKERS, ITEMS, COMPACTORS, COMPACT_EVERY = 8, 250, 2, 25
KILLED, KILL_AFTER, ENDLESS = WORKERS - 1, 60, 10**9
TIMEOUT_S = 600


@pytest.fixture
def shared_session(shared_store_url: str) -> str:
    StoredSession.create(shared_store_url, "shared").close()
    return shared_store_url


def run_workers(url: str, kill: bool) -> dict[int, list[str]]:
    """Run the workers to the end (killing one mid-write if ``kill``); each one's output lines."""
    def items(w: int) -> int:
        return ENDLESS if kill and w == KILLED else ITEMS  # the victim writes until it is killed

    workers = {
        w: subprocess.Popen(
            [sys.executable, str(CHILD), url, "shared", str(w), str(items(w)), str(COMPACT_EVERY if w < COMPACTORS else 0)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for w in range(WORKERS)
    }
    outputs: dict[int, list[str]] = {}
    if kill:
        victim = workers[KILLED]
        lines = []
        while not lines or lines[-1] != f"ack {KILL_AFTER}":
            line = victim.stdout.readline()
            assert line, f"worker {KILLED} ended before it was killed: {victim.stderr.read()}"
            lines.append(line.strip())
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=TIMEOUT_S)
        outputs[KILLED] = lines + victim.stdout.read().split()  # the same buffered stream readline() used
        assert victim.returncode == -signal.SIGKILL
    for w, process in workers.items():
        if w in outputs:
            continue
        out, err = process.communicate(timeout=TIMEOUT_S)
        assert process.returncode == 0, f"worker {w} failed:\n{out[-2000:]}\n{err[-4000:]}"
        outputs[w] = out.splitlines()
    return outputs


def acknowledged(lines: list[str]) -> list[int]:
    return [int(line.split()[1]) for line in lines if line.startswith("ack ")]


def check_session(url: str, outputs: dict[int, list[str]], killed: int | None) -> None:
    store = open_store(url)
    try:
        records = store.read("shared")
    finally:
        store.close()
    assert [r["seq"] for r in records] == list(range(len(records))), "sequence numbers have a gap"
    ids = [r["item"]["id"] for r in records if r["type"] == "item"]
    assert len(ids) == len(set(ids)), "an item is in the session twice"
    for w, lines in outputs.items():
        acked = acknowledged(lines)
        assert acked == list(range(len(acked)))
        stored = [int(i.split("-")[1]) for i in ids if i.startswith(f"w{w}-")]
        assert stored == list(range(len(stored))), f"worker {w}'s items are out of its order"
        assert len(stored) >= len(acked), f"worker {w}: {len(acked) - len(stored)} acknowledged items lost"
        if w != killed:
            assert len(acked) == len(stored) == ITEMS

    checkpoints = [r for r in records if r["type"] == "event" and r["kind"] == "view"]
    assert checkpoints, "no compaction committed"
    bases = [c["data"]["base"] for c in checkpoints]
    assert bases == [0] + [c["seq"] for c in checkpoints[:-1]], "a view change was not based on the view before it"
    committed = {int(line.split()[1]): line.split()[2]
                 for w in range(COMPACTORS) for line in outputs[w] if line.startswith("committed ")}
    assert sorted(committed) == [c["seq"] for c in checkpoints]
    refused = sum(int(line.split()[1]) for w in range(COMPACTORS) for line in outputs[w] if line.startswith("conflicts "))
    raised = sum(line == "gave-up" for w in range(COMPACTORS) for line in outputs[w])
    print(f"{len(records)} records; {len(checkpoints)} view changes committed, {refused} refused and re-decided, "
          f"{raised} raised")

    resumed = Context.resume(url, "shared", window_tokens=200_000)
    try:
        last = checkpoints[-1]
        kept = len(last["data"]["items"])
        assert [item.id for item in resumed.history] == ids
        assert digest(Conversation(resumed.view().items[:kept])) == committed[last["seq"]]
        assert resumed.view().items[kept:] == resumed.history.items[last["item_count"]:]
    finally:
        resumed.close()


@pytest.mark.slow  # a long probe: CI runs it in its own step (-m slow)
def test_many_writers_and_two_compactors_lose_nothing_and_overwrite_no_view(shared_session: str) -> None:
    check_session(shared_session, run_workers(shared_session, kill=False), killed=None)


@pytest.mark.slow  # a long probe: CI runs it in its own step (-m slow)
def test_a_writer_killed_mid_write_loses_nothing_it_acknowledged(shared_session: str) -> None:
    outputs = run_workers(shared_session, kill=True)
    assert len(acknowledged(outputs[KILLED])) > KILL_AFTER
    check_session(shared_session, outputs, killed=KILLED)
