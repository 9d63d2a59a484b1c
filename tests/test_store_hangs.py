"""A database server that stops answering: ``Context()`` and ``add()`` raise ``StoreUnavailable``, never hang.

Real servers (``tests/store_servers.py``): a listener that takes connections
and never answers (a black hole), a server stopped with SIGSTOP after the
store connected (its sockets open, nothing answering), a Redis killed. The
timeouts are short (set on the URL) to keep the tests fast; the elapsed time
is checked only as a guard against a hang (the figures with the default
bound: ``benchmarks/store_hangs.py``). Passwords never reach the error.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from store_servers import black_hole, frozen, missing, postgres_server, redis_server

from contextfold import Context, StoreUnavailable, Storage
from contextfold.errors import StoreError
from contextfold.stores import open_store
from contextfold.stores.timeouts import DEFAULT_TIMEOUTS, StoreTimeouts

HANG_GUARD_S = 30.0
"""Far above any bound configured here: only a store that hangs takes this long."""
SHORT = "connect_timeout=1&operation_timeout=1&give_up_after=10"
"""Short tries for the tests (PostgreSQL connects within 2 s at least: libpq's floor), and room for the
write's retry after ``add()`` read the session again (its read is tried twice)."""
PASSWORD = "pw-never-shown-4921"


def with_password(url: str) -> str:
    """``url`` logging in with :data:`PASSWORD` (as ``cf`` on PostgreSQL, whose test servers trust it anyway)."""
    scheme, _, rest = url.partition("://")
    user = "cf" if scheme == "postgresql" else ""
    return f"{scheme}://{user}:{PASSWORD}@{rest.removeprefix('cf@')}"


def short(url: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{SHORT}"


def item(n: int) -> dict[str, str]:
    return {"role": "user", "content": f"turn {n}"}


def texts(context: Context) -> list[str]:
    return [item.text for item in context.history.items]


def raises_in_time(call: Callable[[], object]) -> StoreUnavailable:
    """``call()``'s StoreUnavailable, the time it took printed. It runs in a thread, so a call that hangs
    fails the test after :data:`HANG_GUARD_S` rather than blocking the run."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
        except BaseException as error:  # noqa: BLE001 - handed to the test
            outcome.append(error)
        else:
            outcome.append(None)

    started = time.monotonic()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(HANG_GUARD_S)
    assert outcome, f"still blocked after {HANG_GUARD_S:.0f} s: the store hangs"
    print(f"{type(outcome[0]).__name__} after {time.monotonic() - started:.1f} s: {outcome[0]}")
    error = outcome[0]
    assert isinstance(error, StoreUnavailable), repr(error)
    assert PASSWORD not in str(error)
    return error


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[str]:
    """A PostgreSQL of this module's own: stopping it must not stall the other tests' server."""
    if reason := missing("postgresql"):
        pytest.skip(reason)
    with postgres_server() as url:
        yield url
        gc.collect()  # a timed-out connection still held by an error's traceback would delay the server's stop


@pytest.fixture
def own_redis() -> Iterator[str]:
    """A Redis of this test's own, to stop or kill."""
    if reason := missing("redis"):
        pytest.skip(reason)
    with redis_server() as url:
        yield url


@pytest.mark.parametrize("scheme", ["postgresql", "redis"])
def test_a_server_that_never_answers_is_unavailable_when_opened(scheme: str) -> None:
    if reason := missing(scheme):
        pytest.skip(reason)
    with black_hole() as port:
        url = with_password(short(f"{scheme}://127.0.0.1:{port}/{'postgres' if scheme == 'postgresql' else '0'}"))
        error = raises_in_time(lambda: Context(window_tokens=10_000, storage=Storage(store=url, session_id="s1")))
    assert "cannot be opened" in str(error)


def test_a_stopped_postgresql_makes_add_unavailable_after_the_retry(own_postgres: str, caplog) -> None:
    url = with_password(short(own_postgres))
    context = Context(window_tokens=10_000, storage=Storage(store=url, session_id="stopped-add"))
    context.add([item(0)])
    with frozen(own_postgres), caplog.at_level(logging.WARNING, "contextfold"):
        raises_in_time(lambda: context.add([item(1)]))
        assert "trying again" in caplog.text  # the write's retry fired, and gave up in time
        assert PASSWORD not in caplog.text
        raises_in_time(lambda: Context(window_tokens=10_000, storage=Storage(store=url, session_id="stopped-open")))
    context.close()  # the server is back: what waited is written
    again = Context.resume(own_postgres, "stopped-add", window_tokens=10_000)
    assert texts(again) == ["turn 0", "turn 1"]
    again.close()


def test_a_statement_a_stopped_postgresql_never_answers_ends_at_the_operation_timeout(own_postgres: str) -> None:
    store = open_store(short(own_postgres))
    try:
        store.create("listed", {"type": "header", "session_id": "listed"})
        with frozen(own_postgres):
            error = raises_in_time(store.sessions)
        assert "no answer within 1 s" in str(error)
        assert "listed" in [info.session_id for info in store.sessions()]  # connected again once it answers
    finally:
        store.close()


def test_a_stopped_redis_makes_opening_and_add_unavailable(own_redis: str, caplog) -> None:
    url = short(own_redis)
    context = Context(window_tokens=10_000, storage=Storage(store=url, session_id="stopped-add"))
    context.add([item(0)])
    with frozen(own_redis), caplog.at_level(logging.WARNING, "contextfold"):
        raises_in_time(lambda: context.add([item(1)]))
        assert "trying again" in caplog.text
        raises_in_time(lambda: Context(window_tokens=10_000, storage=Storage(store=url, session_id="stopped-open")))
    context.close()
    again = Context.resume(own_redis, "stopped-add", window_tokens=10_000)
    assert texts(again) == ["turn 0", "turn 1"]
    again.close()


def test_a_killed_redis_makes_add_and_opening_unavailable(own_redis: str) -> None:
    from store_servers import server_pids

    url = short(own_redis)
    context = Context(window_tokens=10_000, storage=Storage(store=url, session_id="killed"))
    context.add([item(0)])
    for pid in server_pids(own_redis):
        os.kill(pid, signal.SIGKILL)
    raises_in_time(lambda: context.add([item(1)]))
    raises_in_time(lambda: Context(window_tokens=10_000, storage=Storage(store=with_password(url), session_id="after")))


# --------------------------------------------------------------------------- the setting itself


@pytest.mark.parametrize("scheme", ["postgresql", "redis"])
def test_timeouts_given_to_the_constructor_bound_the_store(scheme: str) -> None:
    if reason := missing(scheme):
        pytest.skip(reason)
    from contextfold.stores.postgres import PostgresStore
    from contextfold.stores.redis import RedisStore

    given = StoreTimeouts(connect_s=1, operation_s=0.5, give_up_s=3)
    with black_hole() as port:
        opening = {"postgresql": lambda: PostgresStore(f"postgresql://cf@127.0.0.1:{port}/postgres", timeouts=given),
                   "redis": lambda: RedisStore(f"redis://127.0.0.1:{port}/0", timeouts=given)}[scheme]
        raises_in_time(opening)



def test_the_default_bound_leaves_room_for_a_retry() -> None:
    """The documented retry fires within the default bound: a first attempt, a pause, another whole attempt."""
    from contextfold.stores.outbox import RETRY_DELAYS_S

    assert DEFAULT_TIMEOUTS.give_up_s <= 10
    assert DEFAULT_TIMEOUTS.operation_s + RETRY_DELAYS_S[0] + DEFAULT_TIMEOUTS.attempt_s <= DEFAULT_TIMEOUTS.give_up_s


def test_timeouts_on_the_url_override_the_given_ones_and_leave_the_url() -> None:
    url, timeouts = StoreTimeouts(idle_s=5).from_url("redis://h:1/0?operation_timeout=0.5&db=2&give_up_after=4")
    assert url == "redis://h:1/0?db=2"
    assert timeouts == StoreTimeouts(connect_s=2.0, operation_s=0.5, idle_s=5, give_up_s=4)


def test_a_long_connect_timeout_alone_widens_the_bound() -> None:
    """libpq's own ``connect_timeout=10``, as URLs carried it before, still opens the store."""
    assert DEFAULT_TIMEOUTS.from_url("postgresql://h/db?connect_timeout=10")[1].give_up_s == 12.5


@pytest.mark.parametrize("query", ["operation_timeout=soon", "connect_timeout=0", "give_up_after=inf",
                                   "give_up_after=3", "connect_timeout=9&give_up_after=10"])
def test_a_bad_timeout_is_a_typed_error(query: str) -> None:
    with pytest.raises(StoreError, match="store (URL|timeouts)"):
        DEFAULT_TIMEOUTS.from_url(f"postgresql://h/db?{query}")
