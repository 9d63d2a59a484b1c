"""Throwaway PostgreSQL and Redis servers on 127.0.0.1, for the store tests and ``benchmarks/stores.py``.

Each server lives in its own temporary folder and is stopped (and the folder
removed) when its context manager exits. PostgreSQL refuses to run as root,
so under root the cluster is owned by, and run as, an unprivileged system
user (``postgres`` when the package created it, else ``nobody``) through
``runuser``. :func:`missing` says why a server cannot be started here, or ``None``.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

START_TIMEOUT_S = 60.0


def postgres_bin() -> Path | None:
    """The folder of ``initdb``/``pg_ctl``: Debian keeps them under /usr/lib/postgresql/<version>/bin."""
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]), reverse=True):
        if os.access(os.path.join(folder, "initdb"), os.X_OK):
            return Path(folder)
    found = shutil.which("initdb")
    return Path(found).resolve().parent if found else None


def missing(server: str) -> str | None:
    """Why ``server`` ("postgresql" or "redis") cannot run here, or None if it can."""
    if server == "postgresql":
        if postgres_bin() is None:
            return "PostgreSQL server binaries (initdb, pg_ctl) not found: apt-get install postgresql"
        try:
            import psycopg  # noqa: F401
        except ImportError:
            return "psycopg 3 is not installed: pip install -e '.[postgres]'"
        return None
    if shutil.which("redis-server") is None:
        return "redis-server not found: apt-get install redis-server"
    try:
        import redis  # noqa: F401
    except ImportError:
        return "redis-py is not installed: pip install -e '.[redis]'"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _server_user() -> str | None:
    """Who runs PostgreSQL: nobody special unless we are root, which initdb refuses."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise RuntimeError("running as root and no unprivileged user (postgres, nobody) to run PostgreSQL as")


def _run(command: list[str], user: str | None) -> None:
    full = ["runuser", "-u", user, "--", *command] if user else command
    subprocess.run(full, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=START_TIMEOUT_S)


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A fresh cluster; yields ``postgresql://cf@127.0.0.1:<port>/postgres`` (trust auth, loopback only)."""
    binaries, user = postgres_bin(), _server_user()
    assert binaries is not None
    root = Path(tempfile.mkdtemp(prefix="contextfold-pg-"))
    data, port = root / "data", free_port()
    if user:
        entry = pwd.getpwnam(user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    try:
        _run([str(binaries / "initdb"), "-D", str(data), "-U", "cf", "--auth=trust", "-E", "UTF8", "--no-sync"], user)
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c max_connections=60"
        _run([str(binaries / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-o", options, "-w",
              "-t", str(int(START_TIMEOUT_S)), "start"], user)
        try:
            yield f"postgresql://cf@127.0.0.1:{port}/postgres"
        finally:
            _run([str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], user)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A fresh redis-server without persistence; yields ``redis://127.0.0.1:<port>/0``."""
    import redis

    root = Path(tempfile.mkdtemp(prefix="contextfold-redis-"))
    port = free_port()
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(root), "--save", "",
         "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        client = redis.Redis(host="127.0.0.1", port=port)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server on port {port} did not start") from None
                time.sleep(0.05)
        client.close()
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)


def server_pids(url: str) -> list[int]:
    """The server process (postgres or redis-server) listening on the port of ``url``, and its children
    (PostgreSQL's backends): found by the port on its command line (Redis puts ``host:port`` in its title)."""
    from urllib.parse import urlsplit

    port = re.compile(rf"(?<![0-9]){urlsplit(url).port}(?![0-9])")
    parents: dict[int, int] = {}
    servers = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if re.search(r"\b(postgres|redis-server)\b", command) and port.search(command):
                servers.append(int(entry.name))
    return servers + [pid for pid, parent in parents.items() if parent in servers and pid not in servers]


@contextlib.contextmanager
def frozen(url: str) -> Iterator[None]:
    """The server of ``url`` stopped (SIGSTOP) inside: its sockets stay open, the kernel still accepts
    connections for it, nothing answers. Continued (SIGCONT) on exit, so it can be shut down."""
    pids = server_pids(url)
    assert pids, f"no server process found for {url}"
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


@contextlib.contextmanager
def black_hole() -> Iterator[int]:
    """A port on 127.0.0.1 that takes connections and never answers (the kernel completes them; nobody
    reads); yields the port."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield listener.getsockname()[1]


def empty_store(backend: str, request, tmp_path: Path) -> str:
    """An empty store of ``backend`` as a URL, for a test: its own folder, schema or flushed database.

    The servers are the session-wide fixtures of ``conftest.py``; the data is the test's own.
    """
    if backend == "jsonl":
        return f"jsonl:///{tmp_path / 'sessions'}"
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'sessions.db'}"
    if backend == "postgresql":
        import uuid

        import psycopg

        url = request.getfixturevalue("postgres_server_url")
        schema = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(f"CREATE SCHEMA {schema}")
        return f"{url}?options=-csearch_path%3D{schema}"
    import redis

    url = request.getfixturevalue("redis_server_url")
    with redis.Redis.from_url(url) as client:
        client.flushdb()
    return url


@contextlib.contextmanager
def any_store(backend: str) -> Iterator[str]:
    """A fresh store of ``backend`` (jsonl, sqlite, postgresql, redis) as a URL, for the benchmarks: its own
    temporary folder or throwaway server, removed after."""
    if backend == "postgresql":
        with postgres_server() as url:
            yield url
    elif backend == "redis":
        with redis_server() as url:
            yield url
    else:
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite:///{folder}/sessions.db" if backend == "sqlite" else f"{folder}/sessions"
