"""How long ``Context()`` and ``add()`` take to raise ``StoreUnavailable`` when the database stops answering.

Usage: ``python3 benchmarks/store_hangs.py [--backends postgresql,redis]``

With the default :class:`~contextfold.stores.timeouts.StoreTimeouts` (the bound: 10 s), for each backend:
a listener that takes connections and never answers (a black hole) when the store is opened; the real
server stopped with SIGSTOP after the store connected, for ``add()`` and for opening; and Redis killed.
Each line: the case, the seconds until ``StoreUnavailable`` (``HANG`` past 60 s), and the write's retries
(its "trying again" log lines). Throwaway servers as in the tests (``tests/store_servers.py``).
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from store_servers import black_hole, frozen, postgres_server, redis_server, server_pids

from contextfold import Context, StoreUnavailable, Storage
from contextfold.stores.timeouts import DEFAULT_TIMEOUTS

GIVE_UP_WATCHING_S = 60.0


class Retries(logging.Handler):
    """Counts the store's "trying again" log lines."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += "trying again" in record.getMessage()


def timed(case: str, call: Callable[[], object]) -> None:
    """Run ``call`` in a thread (so a hang is reported, not waited out) and print how it ended."""
    retries = Retries()
    logging.getLogger("contextfold").addHandler(retries)
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as error:  # noqa: BLE001 - reported
            outcome.append(error)

    started = time.monotonic()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(GIVE_UP_WATCHING_S)
    elapsed = time.monotonic() - started
    logging.getLogger("contextfold").removeHandler(retries)
    if not outcome:
        print(f"{case:<42} HANG (still blocked after {elapsed:.0f} s)")
        return
    error = outcome.pop()
    what = "StoreUnavailable" if isinstance(error, StoreUnavailable) else repr(error)
    print(f"{case:<42} {elapsed:5.1f} s  {what}  retries {retries.count}", flush=True)
    del error
    gc.collect()  # the error's traceback holds the timed-out connection open: a server cannot stop while it waits


def opened(url: str, session_id: str) -> Context:
    return Context(window_tokens=10_000, storage=Storage(store=url, session_id=session_id))


def add(context: Context, n: int) -> Callable[[], object]:
    return lambda: context.add([{"role": "user", "content": f"turn {n}"}])


@contextmanager
def server(backend: str) -> Iterator[str]:
    with (postgres_server() if backend == "postgresql" else redis_server()) as url:
        yield url


def measure(backend: str) -> None:
    path = "postgres" if backend == "postgresql" else "0"
    with black_hole() as port:
        timed(f"{backend}: black hole, Context()", lambda: opened(f"{backend}://127.0.0.1:{port}/{path}", "s"))
    with server(backend) as url:
        context = opened(url, "stopped")
        context.add([{"role": "user", "content": "turn 0"}])
        with frozen(url):
            timed(f"{backend}: stopped after connecting, add()", add(context, 1))
            timed(f"{backend}: stopped, Context()", lambda: opened(url, "other"))
    if backend == "redis":
        with server(backend) as url:
            context = opened(url, "killed")
            context.add([{"role": "user", "content": "turn 0"}])
            for pid in server_pids(url):
                os.kill(pid, signal.SIGKILL)
            timed(f"{backend}: killed, add()", add(context, 1))
            timed(f"{backend}: killed, Context()", lambda: opened(url, "after"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="postgresql,redis")
    args = parser.parse_args()
    logger = logging.getLogger("contextfold")
    logger.setLevel(logging.WARNING)  # counted by Retries, not printed
    logger.propagate = False
    print(f"default bound: {DEFAULT_TIMEOUTS}")
    for backend in args.backends.split(","):
        measure(backend)


if __name__ == "__main__":
    main()
