"""A worker that dies while summarizing: it resumes a shared session and compacts with a summarizer that
never returns, so it holds the session's summary lease until it is killed.

Usage: ``python lease_holder_child.py STORE_URL SESSION_ID``

It prints ``summarizing`` once its summarizer runs (the lease taken), then waits to be killed.
"""

from __future__ import annotations

import sys
import time

from contextfold import Context
from contextfold.summarizers.base import SummaryRequest, SummaryResult


class Stuck:
    """A summarizer that says it started, then never ends (a model call the worker is killed in)."""

    name = "stuck"
    offline = True

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        print("summarizing", flush=True)
        while True:
            time.sleep(60)


def main() -> None:
    url, session_id = sys.argv[1], sys.argv[2]
    context = Context.resume(url, session_id, window_tokens=32_000, summarizer=Stuck())
    context.compact()


if __name__ == "__main__":
    main()
