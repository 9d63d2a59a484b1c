"""SQLite never corrupts when one file is shared: two stores in one process, a writer in another.

A process that keeps a store open and opens a second one on the same file
(a new Context per request, ``fork()``, ``sibling()``) must not drop the
first one's POSIX locks (closing any descriptor of a file drops them all),
or another process's connection, closing last, checkpoints and deletes the
write-ahead log under it: "database disk image is malformed" or
"disk I/O error". Each round ends with ``PRAGMA integrity_check``.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from contextfold.conversation import Item, Text
from contextfold.stores import StoredSession

CHILD = Path(__file__).with_name("sqlite_writer_child.py")
CHILD_WRITES = 40


def _round(folder: Path) -> list[str]:
    """One round; every fault seen (errors of either process, a failed integrity check)."""
    url = f"sqlite:///{folder / 'sessions.db'}"
    faults: list[str] = []
    long_lived = StoredSession.open(url, "long")
    child = subprocess.Popen([sys.executable, str(CHILD), url, "child", str(CHILD_WRITES)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while child.poll() is None:
            try:
                long_lived.append(Item("user", (Text("long-lived " + "y" * 2000),)))
                second = StoredSession.open(url, "long")
                second.append(Item("user", (Text("second " + "z" * 2000),)))
                second.close()
            except Exception as err:  # noqa: BLE001 - every fault is counted, and the round goes on
                faults.append(f"parent: {err}")
    finally:
        _, stderr = child.communicate(timeout=300)
        long_lived.close()
    if child.returncode != 0:
        faults.append(f"child: {stderr.strip().splitlines()[-1] if stderr.strip() else child.returncode}")
    check = sqlite3.connect(folder / "sessions.db")
    try:
        result = check.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.DatabaseError as err:  # "database disk image is malformed" before the check can start
        result = [(str(err),)]
    finally:
        check.close()
    if result != [("ok",)]:
        faults.append(f"integrity_check: {result[:3]}")
    return faults


def _rounds(tmp_path: Path, rounds: int) -> None:
    faults = {n: _round(tmp_path / f"round-{n}") for n in range(rounds)}
    faults = {n: found for n, found in faults.items() if found}
    assert not faults, f"{len(faults)} of {rounds} rounds had faults: {faults}"


def test_a_second_store_on_a_held_file_keeps_the_first_ones_locks(tmp_path: Path) -> None:
    _rounds(tmp_path, 3)


@pytest.mark.slow
def test_twenty_rounds_of_two_stores_one_file_and_another_process(tmp_path: Path) -> None:
    _rounds(tmp_path, 20)


def test_an_existing_database_is_never_opened_outside_sqlite(tmp_path: Path, monkeypatch) -> None:
    """The store opens an existing database file only through SQLite (whose connections share its locks)."""
    import os

    path = tmp_path / "sessions.db"
    StoredSession.open(f"sqlite:///{path}", "a").close()
    opened: list[str] = []
    real_open = os.open

    def watched_open(name, *args, **kwargs):  # a descriptor that was opened (O_EXCL on an existing file opens none)
        fd = real_open(name, *args, **kwargs)
        opened.append(os.fspath(name))
        return fd

    monkeypatch.setattr(os, "open", watched_open)
    StoredSession.open(f"sqlite:///{path}", "a").close()
    assert str(path) not in opened
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)


def test_a_symbolic_link_in_place_of_the_database_is_refused(tmp_path: Path) -> None:
    from contextfold.errors import StoreError

    target = tmp_path / "elsewhere.db"
    StoredSession.open(f"sqlite:///{target}", "a").close()
    (tmp_path / "link.db").symlink_to(target)
    with pytest.raises(StoreError, match="symbolic link"):
        StoredSession.open(f"sqlite:///{tmp_path / 'link.db'}", "a")
