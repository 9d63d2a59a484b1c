"""A store that cannot be opened or written: a typed error or the documented path in memory, nothing lost.

The full disk is real: a 2 MiB tmpfs mounted for the test (root on Linux
only; elsewhere the tests say why they skip). Databases that cannot be
reached are addresses nothing listens on.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from contextfold import Context, StoreUnavailable, Storage
from contextfold.conversation import Item, Text
from contextfold.errors import TranscriptError

CHILD = Path(__file__).with_name("disk_full_child.py")


def item(n: int, size: int = 3000) -> Item:
    return Item("user", (Text(f"item {n} " + "x" * size),), id=f"i{n}")


# --------------------------------------------------------------------------- a store that cannot be opened


def unreachable(scheme: str) -> str:
    from store_servers import free_port

    return {"postgresql": f"postgresql://cf@127.0.0.1:{free_port()}/postgres?connect_timeout=2",
            "redis": f"redis://127.0.0.1:{free_port()}/0"}[scheme]


@pytest.mark.parametrize("scheme", ["postgresql", "redis"])
def test_an_unreachable_database_is_a_typed_error(scheme: str) -> None:
    pytest.importorskip("psycopg" if scheme == "postgresql" else "redis")
    with pytest.raises(StoreUnavailable, match="cannot be opened"):
        Context(window_tokens=10_000, storage=Storage(store=unreachable(scheme), session_id="s1"))


@pytest.mark.parametrize("scheme", ["postgresql", "redis"])
def test_an_unreachable_database_in_memory_mode_is_an_event_and_the_session_goes_on(scheme: str) -> None:
    pytest.importorskip("psycopg" if scheme == "postgresql" else "redis")
    context = Context(window_tokens=10_000,
                      storage=Storage(store=unreachable(scheme), session_id="s1", on_store_failure="memory"))
    assert context.transcript is None
    assert [(e.stage, e.action) for e in context.events] == [("transcript", "failed")]
    context.add([{"role": "user", "content": "hello"}])
    assert context.prepare()["messages"][0]["content"][0]["text"] == "hello"
    context.close()


@pytest.mark.parametrize("where", ["transcript", "store"])
def test_a_session_id_a_folder_cannot_hold_is_a_typed_error(tmp_path: Path, where: str) -> None:
    with pytest.raises(TranscriptError, match="invalid session id"):
        Context(window_tokens=10_000, storage=Storage(session_id="../escape", **{where: tmp_path}))


def test_an_unknown_on_store_failure_is_refused(tmp_path: Path) -> None:
    from contextfold.errors import ContextfoldError

    with pytest.raises(ContextfoldError, match="on_store_failure"):
        Context(window_tokens=10_000, storage=Storage(transcript=tmp_path, session_id="s1", on_store_failure="ignore"))


# --------------------------------------------------------------------------- a full disk (a real 2 MiB tmpfs)


@pytest.fixture
def tiny_disk() -> Iterator[Path]:
    """A 2 MiB tmpfs, unmounted after the test."""
    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("mounting a 2 MiB tmpfs needs root on Linux")
    folder = Path(tempfile.mkdtemp(prefix="contextfold-full-"))
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(folder)],
                             check=False, capture_output=True, text=True)
    if mounted.returncode != 0:
        folder.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
        shutil.rmtree(folder, ignore_errors=True)


def fill(disk: Path, leave_bytes: int) -> Path:
    """A file taking all of ``disk`` but about ``leave_bytes``, to be removed to free the space."""
    filler = disk / "filler"
    free = shutil.disk_usage(disk).free
    filler.write_bytes(b"\0" * max(free - leave_bytes, 0))
    return filler


def store_on(disk: Path, backend: str) -> str:
    return f"sqlite:///{disk / 'sessions.db'}" if backend == "sqlite" else str(disk / "sessions")


def texts(store: str, session_id: str) -> list[str]:
    with Context.resume(store, session_id, window_tokens=1_000_000) as resumed:
        return [i.id for i in resumed.history]


@pytest.mark.parametrize("backend", ["jsonl", "sqlite"])
def test_a_full_disk_raises_at_the_first_refused_write_and_resumes_whole_once_freed(
        tiny_disk: Path, backend: str) -> None:
    store = store_on(tiny_disk, backend)
    context = Context(window_tokens=1_000_000, storage=Storage(store=store, session_id="s1"))
    context.add([item(0)])
    filler = fill(tiny_disk, 64 * 1024)
    acknowledged, refused = [], None
    for n in range(1, 200):
        try:
            context.add([item(n)])
        except StoreUnavailable:
            refused = n
            break
        acknowledged.append(f"i{n}")
    assert refused is not None, "the disk never filled"
    assert context.transcript is not None and context.transcript.waiting >= 1
    with pytest.raises(StoreUnavailable):
        context.close()  # records still wait: closing says so and keeps the session
    filler.unlink()
    context.add([item(1000)])  # the store accepts again: the waiting record goes first
    context.close()
    assert texts(store, "s1") == ["i0", *acknowledged, f"i{refused}", "i1000"]


@pytest.mark.parametrize("backend", ["jsonl", "sqlite"])
def test_a_process_killed_on_a_full_disk_loses_nothing_it_acknowledged(tiny_disk: Path, backend: str) -> None:
    store = store_on(tiny_disk, backend)
    Context(window_tokens=1_000_000, storage=Storage(store=store, session_id="s1")).close()
    filler = fill(tiny_disk, 96 * 1024)
    child = subprocess.Popen([sys.executable, str(CHILD), store, "s1"], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    acknowledged, refusals = [], 0
    assert child.stdout is not None
    for line in child.stdout:
        word, n = line.split()
        if word == "ack":
            acknowledged.append(f"i{n}")
        else:
            refusals += 1
            if refusals == 3:
                break
    child.send_signal(signal.SIGKILL)
    child.wait()
    with contextlib.suppress(FileNotFoundError):
        filler.unlink()
    assert acknowledged, "nothing was acknowledged before the disk filled"
    stored = texts(store, "s1")
    assert stored[: len(acknowledged)] == acknowledged  # every acknowledged item, in order, nothing before them lost


# --------------------------------------------------------------------------- a call left open by a crash


def test_a_resumed_session_with_a_call_never_answered_is_repaired_with_an_event(tmp_path: Path) -> None:
    """An older transcript (or a crash between the model's call and its result) holds a call without a
    result: resume says so, and prepare() answers it with an error result instead of refusing."""
    from contextfold.conversation import ToolCall

    with Context(window_tokens=100_000, storage=Storage(transcript=tmp_path, session_id="s1")) as first:
        first.add([Item("user", (Text("list the files"),))])
        first.add([Item("assistant", (ToolCall("call-1", "ls", {}),))])
    resumed = Context.resume(tmp_path, "s1", window_tokens=100_000)
    assert any(e.action == "interrupted" and "call-1" in e.detail for e in resumed.events)
    request = resumed.prepare()
    assert any(e.stage == "invariants" and e.action == "repaired" for e in resumed.events)
    answered = [block for message in request["messages"] for block in message["content"]
                if isinstance(block, dict) and block.get("type") == "tool_result"]
    assert [block["tool_use_id"] for block in answered] == ["call-1"]
    resumed.close()


def test_a_call_open_at_resume_whose_result_is_then_added_is_left_alone(tmp_path: Path) -> None:
    """A worker that resumes between a call and its result (a new Context per request) adds the result."""
    from contextfold.conversation import ToolCall, ToolResult

    with Context(window_tokens=100_000, storage=Storage(transcript=tmp_path, session_id="s1")) as first:
        first.add([Item("user", (Text("list the files"),))])
        first.add([Item("assistant", (ToolCall("call-1", "ls", {}),))])
    with Context.resume(tmp_path, "s1", window_tokens=100_000) as resumed:
        resumed.add([Item("tool", (ToolResult("call-1", (Text("a.py"),)),))])
        resumed.prepare()
        assert not any(e.stage == "invariants" for e in resumed.events)


@pytest.mark.parametrize("cut", ["after_the_call", "inside_the_result"])
def test_a_batch_cut_short_by_a_crash_is_left_out_whole(tmp_path: Path, cut: str) -> None:
    """JSONL: ``add([call, result])`` is one batch; a file that ends part way through it (a kill during
    the write) resumes without either, so no call is left without its result."""
    from contextfold.conversation import ToolCall, ToolResult
    from contextfold.stores.transcript import transcript_path

    with Context(window_tokens=100_000, storage=Storage(transcript=tmp_path, session_id="s1")) as first:
        first.add([Item("user", (Text("list the files"),), id="task")])
        first.add([Item("assistant", (ToolCall("call-1", "ls", {}),), id="call"),
                   Item("tool", (ToolResult("call-1", (Text("a.py"),)),), id="result")])
    path = transcript_path(tmp_path, "s1")
    lines = path.read_bytes().splitlines(keepends=True)
    assert b'"more":1' in lines[-2]  # the call says one record of its batch follows
    path.write_bytes(b"".join(lines[:-1]) + (lines[-1][:20] if cut == "inside_the_result" else b""))
    with Context.resume(tmp_path, "s1", window_tokens=100_000) as resumed:
        assert [i.id for i in resumed.history] == ["task"]
        assert any(e.action == "skipped" and "batch cut short" in e.detail for e in resumed.events)
        resumed.prepare()
        resumed.add([Item("user", (Text("again"),), id="again")])
    with Context.resume(tmp_path, "s1", window_tokens=100_000) as again:
        assert [i.id for i in again.history] == ["task", "again"]


@pytest.mark.slow
def test_kills_during_add_of_a_call_and_its_result_lose_nothing_acknowledged(store_url: str) -> None:
    """The probe of ``benchmarks/kill_batches.py``, 10 kills a backend: resume and prepare() succeed each time."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from kill_batches import probe

    acknowledged, faults = probe(store_url, 10, seed=7)
    assert acknowledged >= 10 and faults == []


# --------------------------------------------------------------------------- a dropped connection


def drop_connections(url: str) -> None:
    """Cut every other client's connection to the server, as a restart or a network fault would."""
    if url.startswith("redis"):
        import redis

        with redis.Redis.from_url(url) as admin:
            admin.client_kill_filter(_type="normal", skipme=True)
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                      "WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'")


@pytest.mark.parametrize("backend", ["postgresql", "redis"])
def test_a_dropped_database_connection_is_made_again_and_nothing_is_lost(backend: str, request, tmp_path) -> None:
    from store_servers import empty_store

    url = empty_store(backend, request, tmp_path)
    context = Context(window_tokens=100_000, storage=Storage(store=url, session_id="s1"))
    context.add([item(0, 100)])
    drop_connections(url)
    context.add([item(1, 100)])  # connects again (retried with backoff); never an in-memory-only session
    assert not [e for e in context.events if e.stage == "transcript"]
    context.close()
    assert texts(url, "s1") == ["i0", "i1"]
