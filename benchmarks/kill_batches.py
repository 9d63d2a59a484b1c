"""SIGKILL during ``add([call, result])``: resume and prepare() succeed, nothing acknowledged is lost.

Usage: ``python3 benchmarks/kill_batches.py [--kills 50] [--backends jsonl,sqlite,postgresql,redis]``

For each backend, a child process resumes one session and adds tool rounds
(a call and its result in one ``add``), printing ``ack N`` after each; the
parent kills it with SIGKILL after a random number of acknowledgements (the
child is usually in the middle of the next add), then resumes the session,
calls ``prepare()`` and checks every acknowledged round is there whole.
Throwaway servers as in the tests (``tests/store_servers.py``).
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from store_servers import any_store

from contextfold import Context, Storage

CHILD = """
import sys
from contextfold import Context
from contextfold.conversation import Item, Text, ToolCall, ToolResult
context = Context.resume(sys.argv[1], "s1", window_tokens=1_000_000)
start = int(sys.argv[2])
for n in range(start, start + 100_000):
    context.add([Item("assistant", (ToolCall(f"c{n}", "bash", {"command": f"cat f{n}"}),), id=f"call-{n}"),
                 Item("tool", (ToolResult(f"c{n}", (Text("line\\n" * 400),)),), id=f"result-{n}")])
    print(f"ack {n}", flush=True)
"""


def one_kill(url: str, start: int, rng: random.Random) -> tuple[list[int], str | None]:
    """Run a child, kill it after some acknowledgements; the rounds it acknowledged, and a fault if any."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, url, str(start)], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert child.stdout is not None
    wanted, acked = rng.randint(1, 20), []
    for line in child.stdout:
        acked.append(int(line.split()[1]))
        if len(acked) >= wanted:
            break
    child.send_signal(signal.SIGKILL)
    child.wait()
    try:
        with Context.resume(url, "s1", window_tokens=1_000_000) as resumed:
            resumed.prepare()
            ids = {item.id for item in resumed.history}
    except Exception as error:  # noqa: BLE001 - counted and shown
        return acked, f"{type(error).__name__}: {error}"
    lost = [n for n in acked if f"call-{n}" not in ids or f"result-{n}" not in ids]
    return acked, f"lost rounds {lost}" if lost else None


def probe(url: str, kills: int, seed: int) -> tuple[int, list[str]]:
    """``kills`` children killed on a new session ``s1`` of ``url``: rounds acknowledged, and every fault."""
    rng = random.Random(seed)
    Context(window_tokens=1_000_000, storage=Storage(store=url, session_id="s1")).close()
    faults, acknowledged = [], 0
    for kill in range(kills):
        acked, fault = one_kill(url, kill * 100_000, rng)
        acknowledged += len(acked)
        if fault:
            faults.append(fault)
    return acknowledged, faults


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--backends", default="jsonl,sqlite,postgresql,redis")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    for backend in args.backends.split(","):
        print(backend, flush=True)
        with any_store(backend) as url:
            acknowledged, faults = probe(url, args.kills, args.seed)
            print(f"  {args.kills} kills, {acknowledged} rounds acknowledged, {len(faults)} failed resume/prepare or "
                  "lost rounds" + (f": {faults[:3]}" if faults else ""), flush=True)


if __name__ == "__main__":
    main()
