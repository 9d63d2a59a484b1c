"""A writer in another process for the SQLite two-stores-one-file test.

Usage: ``python sqlite_writer_child.py DB_URL SESSION_ID ROUNDS``

Each round opens the store, appends one record and closes it again, so this
process is often the last connection to close: SQLite then checkpoints the
write-ahead log into the database and deletes it, which is what corrupts the
file if another process's connections lost their locks.
"""

from __future__ import annotations

import sys

from contextfold.conversation import Item, Text
from contextfold.stores import StoredSession


def main() -> None:
    url, session_id, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for n in range(rounds):
        session = StoredSession.open(url, session_id)
        session.append(Item("user", (Text(f"child {n} " + "x" * 2000),)))
        session.close()
    print("done", flush=True)


if __name__ == "__main__":
    main()
