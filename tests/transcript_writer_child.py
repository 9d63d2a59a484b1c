"""A transcript writer that the kill test in ``test_transcript.py`` runs as a child process and kills.

Usage: ``python transcript_writer_child.py DIRECTORY SESSION_ID [--stall]``

It opens (resumes) the transcript, prints ``ready N`` (``N``: items already
there), then appends ``expected_item(n)`` for ``n = N, N+1, ...`` as fast as it
can, printing ``item n`` once each append has returned and ``event n`` after
the event that follows every ``EVENT_EVERY``-th item, until it is killed.

The disk it writes to is made slow and grudging: ``os.write`` takes at most
``CHUNK_BYTES`` per call (a short write, which POSIX allows) and pauses after
each, so a kill often lands in the middle of a large record. With ``--stall``
the first short write stops for good after printing ``stalled``, so the parent
can kill it mid-record for certain.
"""

from __future__ import annotations

import os
import sys
import time

from contextfold.conversation import Header, Item, Text, ToolCall, ToolResult, ToolSpec
from contextfold.stores.transcript import Transcript

LARGE_EVERY = 4
"""Every fourth item is large (about 100 KB), so kills land inside writes."""
EVENT_EVERY = 7
CHUNK_BYTES = 16 * 1024
CHUNK_PAUSE_S = 0.0002


def expected_header() -> Header:
    return Header(system=(Item("system", (Text("You are a careful agent."),), id="it_system"),),
                  tools=(ToolSpec("read", "Read a file", {"type": "object"}),))


def expected_item(n: int) -> Item:
    """Item ``n`` of the session: a deterministic function of ``n`` so the parent can check it byte for byte."""
    common = {"id": f"it_{n:08d}", "timestamp": 1_700_000_000.0 + n}
    if n % LARGE_EVERY == 0:
        text = "".join(f"record {n} ☃ ligne {i} — 日本語 🙂\n" for i in range(2200))
        return Item("user", (Text(text),), **common)
    if n % LARGE_EVERY == 1:
        return Item("assistant", (Text(f"reading {n}"), ToolCall(f"call_{n}", "read", {"path": f"/f{n}"})), **common)
    if n % LARGE_EVERY == 2:
        return Item("tool", (ToolResult(f"call_{n - 1}", f"contents of /f{n - 1}", False, "read",
                                        {"path": f"/f{n - 1}"}),), **common)
    return Item("assistant", (Text(f"done with {n}"),), meta={"n": n}, **common)


def _make_disk_slow(stall: bool) -> None:
    real_write = os.write

    def slow_write(fd: int, data: bytes) -> int:
        if fd <= 2:
            return real_write(fd, data)
        written = real_write(fd, bytes(data[:CHUNK_BYTES]))
        if stall and written < len(data):
            print("stalled", flush=True)
            time.sleep(60)
        time.sleep(CHUNK_PAUSE_S)
        return written

    os.write = slow_write  # type: ignore[assignment]


def main(argv: list[str]) -> None:
    directory, session_id = argv[:2]
    _make_disk_slow(stall="--stall" in argv)
    with Transcript.open(directory, session_id, header=expected_header()) as transcript:
        n = transcript.item_count
        print(f"ready {n}", flush=True)
        while True:
            transcript.append(expected_item(n))
            print(f"item {n}", flush=True)
            if n % EVENT_EVERY == 0:
                transcript.append_event("probe", {"after": n})
                print(f"event {n}", flush=True)
            n += 1


if __name__ == "__main__":
    main(sys.argv[1:])
