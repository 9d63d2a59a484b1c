"""A real SQLite store that notes whether each of its operations ran on a thread running an asyncio loop.

What the async API promises is that no store I/O happens on the loop: a test
runs an agent with this store and asserts ``on_loop == 0`` (and ``calls > 0``,
so the store was used at all), or that ``threads`` are the async API's own
(``contextfold-step``: :mod:`contextfold.context.off_loop`). Nothing is mocked: every operation is the
store's own, on its own database file.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from contextfold.stores.sqlite import SqliteStore


class LoopWatchedSqlite(SqliteStore):
    def __init__(self, path: Path) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.on_loop = 0
        self.threads: set[str] = set()  # the names of the threads that used the store
        super().__init__(path)
        self.watch()  # opening the store is not what is watched

    def watch(self) -> None:
        """Count from now on."""
        with self._lock:
            self.calls, self.on_loop, self.threads = 0, 0, set()

    def _run(self, plan: Any, *, block: bool = True) -> Any:
        try:
            asyncio.get_running_loop()
            running = True
        except RuntimeError:
            running = False
        with self._lock:
            self.calls += 1
            self.on_loop += running
            self.threads.add(threading.current_thread().name)
        return super()._run(plan, block=block)
