"""Where sessions live past one process: a JSONL folder, SQLite, PostgreSQL or Redis, chosen by URL.

>>> from contextfold import Context, Storage
>>> context = Context("claude-sonnet-4-5", storage=Storage(store="sqlite:///sessions.db", session_id="user-42"))
>>> later = Context.resume("sqlite:///sessions.db", "user-42", "claude-sonnet-4-5")   # any process
>>> either = Context.open("sqlite:///sessions.db", "user-43", "claude-sonnet-4-5")    # started, or resumed

Every backend keeps the transcript's records (:mod:`contextfold.stores.transcript`)
with gap-free per-session sequence numbers, appends only, and commits a view
change only against the view it started from (:class:`~contextfold.errors.ViewConflict`
otherwise). Retention is explicit: :func:`prune`. On an asyncio loop,
:func:`open_async_store` opens the same stores as :class:`AsyncStore` s, whose
calls never block the loop (:mod:`.asynchronous`).
"""

from __future__ import annotations

from .asynchronous import AsyncStore, OffLoopStore
from .base import Record, SessionInfo, Store, is_store_url, split_session_ref
from .opening import open_async_store, open_store
from .retention import PruneReport, prune
from .session import StoredSession
from .timeouts import DEFAULT_TIMEOUTS, StoreTimeouts

__all__ = ["DEFAULT_TIMEOUTS", "AsyncStore", "OffLoopStore", "PruneReport", "Record", "SessionInfo", "Store",
           "StoreTimeouts", "StoredSession", "is_store_url", "open_async_store", "open_store", "prune",
           "split_session_ref"]
