"""The session's record as a Context writes and follows it, and what happens when the store says no.

Every read and write of the transcript or store goes through
:meth:`Journal.write`. A write the store cannot make durable (a full disk, a
database out of reach) is retried a few times (:mod:`contextfold.stores.outbox`),
then its records wait in memory, in order, and every later write sends them
first; each failure is an event and a log line. What the caller hears of it
depends on ``on_store_failure``:

* ``"raise"`` (the default): the call that wrote (``add()``, ``compact()``,
  ``prepare()`` when it changed the view, ``set_header()``) raises
  :class:`~contextfold.errors.StoreUnavailable` at its end; what it added is
  in the context and waits to be written, so it is not to be added again;
* ``"memory"``: the session goes on in memory and the records are written
  once the store accepts again (an event says when).

Either way :meth:`close` raises while records still wait. A view conflict is
no failure: it is raised for the step to resolve. :meth:`Journal.follow`
folds in what other writers appended to the same session, in the session's one order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal, TypeVar

from ..codec import header_from_dict, item_from_dict
from ..conversation import Item, JSONObject
from ..errors import (
    ContextfoldError,
    SessionExists,
    SessionNotFound,
    StorageError,
    StoreUnavailable,
    TranscriptCorrupt,
    TranscriptLocked,
    TranscriptUnsafe,
)
from ..events import Event
from ..stores import Store, StoredSession
from ..stores.asynchronous import AsyncStore
from ..stores.base import VIEW_EVENT, is_store_url
from ..stores.transcript import Transcript, validate_session_id
from .timeline import Timeline

logger = logging.getLogger("contextfold.context")
T = TypeVar("T")
Emit = Callable[[Iterable[Event]], None]
OnStoreFailure = Literal["raise", "memory"]
ON_STORE_FAILURE: tuple[str, ...] = ("raise", "memory")


class Journal:
    """One Context's link to its stored session (``session``; ``None`` when nothing is kept)."""

    def __init__(self, session: StoredSession | None, session_id: str, emit: Emit,
                 on_store_failure: OnStoreFailure = "raise") -> None:
        if on_store_failure not in ON_STORE_FAILURE:
            raise ContextfoldError(f"on_store_failure must be one of {ON_STORE_FAILURE}, not {on_store_failure!r}")
        self.session = session
        self.session_id = session_id
        self.on_store_failure = on_store_failure
        self._emit = emit
        self._refused: StoreUnavailable | None = None  # the last write of the current call the store refused
        self.opening: list[Event] = []  # what happened while opening, for the context to emit once it has a journal

    @classmethod
    def open(cls, transcript: Transcript | StoredSession | str | Path | None,
             store: Store | AsyncStore | str | Path | None,
             session_id: str, emit: Emit, on_store_failure: OnStoreFailure = "raise") -> Journal:
        """The session to write to. A store that cannot be opened (out of reach, a full disk) is
        :class:`StoreUnavailable`, or with ``on_store_failure="memory"`` an event and no store (the
        session is then kept in memory only); asking for a session that is, or is not, there, or under an
        id a folder cannot hold, is the caller's error, raised as it is."""
        if transcript is not None and store is not None:
            raise ContextfoldError("give a transcript or a store, not both")
        journal = cls(None, session_id, emit, on_store_failure)
        location = transcript if transcript is not None else store
        if isinstance(location, (str, Path)) and not is_store_url(str(location)):
            validate_session_id(session_id)  # a folder names the file after the id
        try:
            if isinstance(transcript, StoredSession):
                journal.session = transcript
            elif isinstance(transcript, Transcript):
                journal.session = StoredSession.adopt(transcript)
            elif transcript is not None:  # a folder: a new session, never one already recorded there
                journal.session = StoredSession.create(transcript, session_id)
            elif store is not None:
                journal.session = StoredSession.create(store, session_id)
        except StorageError as error:  # the transcript's or the store's
            if not _unavailable(error):
                raise
            if on_store_failure == "raise":
                raise StoreUnavailable(f"session {session_id}: the store cannot be opened: {error}") from error
            logger.warning("session %s: the store cannot be opened; the session is kept in memory only: %s",
                           session_id, error)
            journal.opening.append(Event("transcript", "failed", detail=f"the store cannot be opened: {error}"))
        return journal

    @property
    def folder(self) -> Path | None:
        return self.session.folder if self.session is not None else None

    def write(self, write: Callable[[StoredSession], T], *, reading: bool = False) -> T | None:
        """``write`` done on the session; ``None`` when there is none, or the store refused it (its records
        then wait in memory, and :meth:`acknowledge` raises in ``"raise"`` mode; a read that failed is
        only reported: nothing of the caller's is at stake)."""
        if self.session is None:
            return None
        waited = self.session.waiting
        try:
            result = write(self.session)
        except StoreUnavailable as error:
            if reading:
                logger.warning("session %s: the store cannot be read now; going on with what was read: %s",
                               self.session_id, error)
                self._emit([Event("transcript", "unreadable", detail=f"other writers' records not read: {error}")])
                return None
            self._refused = error
            logger.warning("session %s: the store refused a write; %d record(s) wait in memory: %s",
                           self.session_id, self.session.waiting, error)
            self._emit([Event("transcript", "waiting", detail=f"{self.session.waiting} record(s) wait in memory, "
                                                               f"written first once the store accepts: {error}")])
            return None
        if waited and not self.session.waiting:
            logger.warning("session %s: the store accepts again; the %d waiting record(s) are written",
                           self.session_id, waited)
            self._emit([Event("transcript", "recovered", detail=f"the store accepted the {waited} waiting record(s)")])
        return result

    def acknowledge(self) -> None:
        """End of a call that wrote: in ``"raise"`` mode, :class:`StoreUnavailable` if the store refused a write."""
        refused, self._refused = self._refused, None
        if refused is not None and self.on_store_failure == "raise":
            raise refused

    def record(self, event: Event) -> None:
        """Write an event (the journal's own, about the disk, are not written: the disk is what failed)."""
        if event.stage != "transcript":
            self.write(lambda session: session.append_event(event.stage, event.to_dict()))

    def follow(self, timeline: Timeline, own: Mapping[int, Item] | None = None) -> list[Item]:
        """Fold in what other processes wrote to the session since it was last read, in the session's order.

        ``own`` are the items this context just appended, by sequence number:
        they are taken as they are, and returned as stored. Another writer's
        items join the history and the view; its view change replaces the view.
        """
        own = own or {}
        pulled = self.write(lambda session: session.pull(), reading=True)
        if pulled is None:  # no store, or it cannot be read now: what was appended here goes on in memory
            return [timeline.take(item) for item in own.values()]
        taken = []
        for entry in pulled:
            record = entry.record
            if record["type"] == "item" and record["seq"] in own:
                taken.append(timeline.take(own[record["seq"]]))
            elif entry.mine:  # written earlier by this context (after waiting, say): it is in the timeline already
                continue
            elif record["type"] == "item":
                timeline.take(item_from_dict(record["item"]))
            elif record["type"] == "header_update":
                timeline.set_header(header_from_dict(record["header"]))
            elif record["type"] == "event" and record["kind"] == VIEW_EVENT:
                timeline.adopt(record["data"], record["item_count"])
        return taken

    def append(self, timeline: Timeline, items: Sequence[Item]) -> list[Item]:
        """Record ``items`` first, then put them in the history and the view (after others' if they wrote first).

        Items the store refused go in too: they wait in memory to be written (see :meth:`acknowledge`)."""
        seqs = self.write(lambda session: session.append_items(items)) if items else None
        if seqs and self.session is not None and self.session.behind:  # others wrote first: fold in order
            return self.follow(timeline, dict(zip(seqs, items)))
        return [timeline.take(item) for item in items]

    def commit_view(self, entries: Sequence[JSONObject]) -> None:
        """Checkpoint a changed view against the one it replaces (:class:`ViewConflict` if that is no longer current)."""
        self.write(lambda session: session.commit_view({"items": entries, "base": session.revision}))

    def close(self) -> None:
        """Write what waits and release the session (another process may then resume it).

        :class:`StoreUnavailable` if records still wait (whatever ``on_store_failure``): the session is
        then kept, so that ``close()`` can be called again once the store accepts.
        """
        if self.session is None:
            return
        try:
            self.session.close()
        except StoreUnavailable as error:
            logger.error("session %s: closing with %d record(s) the store refused: %s", self.session_id,
                         self.session.waiting, error)
            self._emit([Event("transcript", "unwritten", detail=str(error))])
            raise
        self.session = None


def _unavailable(error: StorageError) -> bool:
    """Whether opening failed for want of the store (out of reach, out of space), not for a wrong request
    (a session that is or is not there, held by another writer, unsafe or damaged)."""
    if isinstance(error, (SessionExists, SessionNotFound, TranscriptLocked, TranscriptUnsafe, TranscriptCorrupt)):
        return False
    return isinstance(error, StoreUnavailable) or isinstance(error.__cause__, OSError)
