"""A session on a nearly full disk, for the SIGKILL probe of ``test_store_failures.py``.

Usage: ``python disk_full_child.py STORE SESSION_ID``

It adds one user item at a time (id ``i<N>``), printing ``ack N`` once ``add``
returned (the item is durable) and ``refused N`` when it raised
:class:`~contextfold.errors.StoreUnavailable`; then it keeps adding (each
refused, each kept waiting in memory) until it is killed.
"""

from __future__ import annotations

import sys

from contextfold import Context, StoreUnavailable
from contextfold.conversation import Item, Text


def main() -> None:
    store, session_id = sys.argv[1], sys.argv[2]
    context = Context.resume(store, session_id, window_tokens=1_000_000)
    for n in range(100_000):
        try:
            context.add([Item("user", (Text(f"item {n} " + "x" * 3000),), id=f"i{n}")])
            print(f"ack {n}", flush=True)
        except StoreUnavailable:
            print(f"refused {n}", flush=True)


if __name__ == "__main__":
    main()
