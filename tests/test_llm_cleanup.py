"""A summary cut off at its deadline leaves nothing behind: no thread still waiting on the hostile server,
no socket still open to it.

The trickling server runs in a child process, so every thread and socket of
this process is the client's: after each compaction there are 0 threads and
0 sockets that were not there before the first (counts, not times: the
machine is shared; what other tests left running is not counted).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
from test_llm_summarizers import session

from contextfold.context import Context
from contextfold.summarizers.llm import ModelSummarizer

TRICKLE_SERVER = r"""
import socket, sys, threading, time

def serve(connection):
    with connection:
        data = b""
        while b"\r\n\r\n" not in data:  # the request's headers; its body is never read
            chunk = connection.recv(65536)
            if not chunk:
                return
            data += chunk
        try:
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n")
            while True:  # one byte at a time: every socket timeout is reset, the body never ends
                connection.sendall(b" ")
                time.sleep(0.2)
        except OSError:
            return

listener = socket.create_server(("127.0.0.1", 0))
print(listener.getsockname()[1], flush=True)
while True:
    connection, _ = listener.accept()
    threading.Thread(target=serve, args=(connection,), daemon=True).start()
"""


@pytest.fixture
def trickling_url() -> Iterator[str]:
    server = subprocess.Popen([sys.executable, "-c", TRICKLE_SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        yield f"http://127.0.0.1:{int(server.stdout.readline())}"
    finally:
        server.kill()
        server.wait()


def open_sockets() -> set[str]:
    """Sockets this process holds open (Linux: the descriptors in /proc/self/fd that are sockets, by inode)."""
    found = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the descriptor listdir itself used, closed since
            continue
        if target.startswith("socket:"):
            found.add(target)
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts sockets through /proc/self/fd (Linux)")
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("compactions", [2, pytest.param(6, marks=pytest.mark.slow)])  # each waits out its 1 s deadline
def test_a_summary_cut_at_its_deadline_closes_its_socket_and_ends_its_thread(
    trickling_url: str, provider: str, stream: bool, compactions: int
) -> None:
    options = {"api_key": "test-key", "deadline_s": 1.0, "timeout_s": 60.0, "stream": stream, "max_retries": 0}
    base_url = trickling_url if provider == "anthropic" else f"{trickling_url}/v1"
    summarizer = ModelSummarizer(provider=provider, base_url=base_url, **options)
    Context(window_tokens=200_000, summarizer=summarizer)  # warms the pool background summaries run in (its idle
    # thread lives as long as the process; it is not the summary call's)
    threads, sockets = set(threading.enumerate()), open_sockets()  # what other tests left is not counted
    for compaction in range(compactions):
        context = Context(window_tokens=200_000, summarizer=summarizer)
        context.add(session())
        events = context.compact()
        assert any(e.action == "fallback" and "no answer within the deadline" in e.detail for e in events)
        new_threads = [t.name for t in set(threading.enumerate()) - threads]
        new_sockets = open_sockets() - sockets
        assert (len(new_threads), len(new_sockets)) == (0, 0), (
            f"after compaction {compaction + 1}: threads {new_threads}, sockets {sorted(new_sockets)} left")
