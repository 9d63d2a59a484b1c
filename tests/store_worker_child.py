"""A worker of the store concurrency test: resumes one shared session and adds items to it, some compacting.

Usage: ``python store_worker_child.py STORE_URL SESSION_ID WORKER ITEMS COMPACT_EVERY``

It prints ``ack N`` once item N (id ``w<WORKER>-<N>``) has been added (so the
store acknowledged it), and with ``COMPACT_EVERY`` > 0 it compacts after every
that many items, printing ``committed SEQ DIGEST`` for a view change it
committed (DIGEST: the view it committed, as the codec writes it) and
``conflicts N`` for the view changes the store refused in between (``gave-up``
if it raised the conflict in the end). A store failure exits 1.
"""

from __future__ import annotations

import hashlib
import json
import sys

from contextfold import Context
from contextfold.codec import item_to_dict
from contextfold.conversation import Conversation, Item, Text
from contextfold.errors import ViewConflict


def digest(view: Conversation) -> str:
    """A fingerprint of a view: every item as the codec writes it, in order."""
    text = json.dumps([item_to_dict(item) for item in view.items], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def compact(context: Context) -> None:
    """Compact, and say what became of it: committed (against which view), refused, or given up."""
    refused = len([e for e in context.events if e.stage == "store"])
    try:
        events = context.compact()
    except ViewConflict:
        print("gave-up", flush=True)
        return
    finally:
        print(f"conflicts {len([e for e in context.events if e.stage == 'store']) - refused}", flush=True)
    if any(e.items for e in events):
        print(f"committed {context.transcript.revision} {digest(context.view())}", flush=True)


def main() -> None:
    url, session_id, worker, items, every = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    context = Context.resume(url, session_id, window_tokens=200_000)
    for n in range(items):
        context.add([Item("user", (Text(f"worker {worker} item {n} " + "lorem ipsum " * 8),), id=f"w{worker}-{n}")])
        if context.transcript is None:  # the context carried on in memory: that is not an acknowledgement
            print(f"error: the store failed: {context.events[-1].detail}", flush=True)
            sys.exit(1)
        print(f"ack {n}", flush=True)
        if every and n % every == every - 1:
            compact(context)
    context.close()
    print("done", flush=True)


if __name__ == "__main__":
    main()
