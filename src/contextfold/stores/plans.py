"""A store operation written once, run by a blocking client or awaited on an async one.

The SQL and Redis stores have a synchronous class (for an agent loop in a
thread) and an asynchronous one (for an asyncio loop: psycopg's
``AsyncConnection``, ``redis.asyncio``). What an operation does (which
statements or commands, in which order, what their answers mean, which
typed error a refusal is) is a *plan*: a generator that yields each step of
I/O and is sent its answer. :func:`drive` runs a plan with a blocking client,
:func:`adrive` awaits each step; only the client at the edge differs, so the
two classes can never disagree on what an operation means.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

T = TypeVar("T")
Step = TypeVar("Step")

Plan = Generator[Step, Any, T]
"""A store operation: yields steps of I/O, is sent each one's answer, returns the operation's result."""


def drive(plan: Plan[Step, T], execute: Callable[[Step], Any]) -> T:
    """``plan`` run to its end, each step done by ``execute`` (blocking); its result."""
    try:
        step = next(plan)
        while True:
            step = plan.send(execute(step))
    except StopIteration as finished:
        result: T = finished.value
        return result


async def adrive(plan: Plan[Step, T], execute: Callable[[Step], Awaitable[Any]]) -> T:
    """``plan`` run to its end, each step awaited on ``execute``; its result."""
    try:
        step = next(plan)
        while True:
            step = plan.send(await execute(step))
    except StopIteration as finished:
        result: T = finished.value
        return result
