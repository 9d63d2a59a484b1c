"""Where the async API runs a step: a few worker threads of contextfold's own, beside the event loop.

``Context.aadd``, ``aprepare``, ``acompact``... run the very code of the
blocking API (one implementation of every decision), in a worker thread, so
the loop never waits for a store's write, fsync or round trip, nor for the
stages' work. The threads are contextfold's own (:data:`STEP_THREADS`), not
the loop's default executor: the application's own ``to_thread`` calls and
contextfold's steps do not queue behind each other, and few threads leave
the interpreter's lock to the loop most of the time (every thread running
Python code takes turns with the loop for it, so more threads than cores
only make the loop wait longer for its turn; ``benchmarks/async_load.py``
measures the loop's lateness).
"""

from __future__ import annotations

import asyncio
import contextvars
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

STEP_THREADS = min(8, max(2, os.cpu_count() or 2))
"""How many steps of the async API run at once, across every Context of the process (more wait their turn)."""

_STEPS = ThreadPoolExecutor(max_workers=STEP_THREADS, thread_name_prefix="contextfold-step")


async def off_loop(call: Callable[[], T]) -> T:
    """``call()`` run in a step thread while the loop goes on (with the caller's context variables).

    A call cancelled while it runs finishes in its thread (a step is never left
    half done); the caller just stops waiting for it.
    """
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(_STEPS, context.run, call)
