"""The session's record as a Context writes and follows it, and what happens when the disk says no.

Every read and write of the transcript or store goes through
:meth:`Journal.write`. When the disk or database fails, writes stop and the
session goes on in memory (nothing is dropped from the view), with an event
that says so; when the disk only refuses for a while, the records wait in
the transcript and go first once it accepts, with one event when that starts
and one when it is over. A view conflict is no failure: it is raised for the
step to resolve. :meth:`Journal.follow` folds in what other writers appended
to the same session, in the session's one order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..codec import header_from_dict, item_from_dict
from ..conversation import Item
from ..errors import (
    ContextfoldError,
    SessionExists,
    SessionNotFound,
    TranscriptCorrupt,
    TranscriptError,
    TranscriptLocked,
    TranscriptUnsafe,
    ViewConflict,
)
from ..events import Event
from ..stores import Store, StoredSession
from ..stores.base import VIEW_EVENT
from ..stores.transcript import Transcript
from .timeline import Timeline

logger = logging.getLogger("contextfold.context")
T = TypeVar("T")
Emit = Callable[[Iterable[Event]], None]


class Journal:
    """One Context's link to its stored session (``session``; ``None`` when nothing is kept, or the disk failed)."""

    def __init__(self, session: StoredSession | None, session_id: str, emit: Emit) -> None:
        self.session = session
        self.session_id = session_id
        self._emit = emit
        self._down = False  # the disk refused a write; the records wait in the transcript for it

    @classmethod
    def open(cls, transcript: Transcript | StoredSession | str | Path | None, store: Store | str | Path | None,
             session_id: str, emit: Emit) -> Journal:
        """The session to write to. A fault of the disk or database is survived (an event, in memory
        from then on); asking for a session that is, or is not, there is the caller's error."""
        if transcript is not None and store is not None:
            raise ContextfoldError("give a transcript or a store, not both")
        session = None
        try:
            if isinstance(transcript, StoredSession):
                session = transcript
            elif isinstance(transcript, Transcript):
                session = StoredSession.adopt(transcript)
            elif transcript is not None:  # a folder: a new session, never one already recorded there
                session = StoredSession.create(transcript, session_id)
            elif store is not None:
                session = StoredSession.create(store, session_id)
        except (SessionExists, SessionNotFound, TranscriptLocked, TranscriptUnsafe, TranscriptCorrupt):
            raise
        except TranscriptError as error:
            logger.warning("session %s: could not open the transcript: %s", session_id, error)
            emit([Event("transcript", "failed", detail=f"could not open the transcript: {error}")])
        return cls(session, session_id, emit)

    @property
    def folder(self) -> Path | None:
        return self.session.folder if self.session is not None else None

    def write(self, write: Callable[[StoredSession], T]) -> T | None:
        """``write`` done on the session, or ``None`` when there is none (any more)."""
        if self.session is None:
            return None
        try:
            result = write(self.session)
        except ViewConflict:
            raise
        except TranscriptError as error:
            self.session = None
            logger.warning("transcript writes stopped for session %s: %s", self.session_id, error)
            self._emit([Event("transcript", "failed", detail=f"transcript writes stopped: {error}")])
            return None
        self._watch_disk()
        return result

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
        pulled = self.write(lambda session: session.pull()) or []
        if self.session is None:  # the store failed: what was appended here still goes on in memory
            return [timeline.take(item) for item in own.values()]
        taken = []
        for entry in pulled:
            record = entry.record
            if record["type"] == "item":
                mine = record["seq"] in own
                item = timeline.take(own[record["seq"]] if mine else item_from_dict(record["item"]))
                if mine:
                    taken.append(item)
            elif entry.mine:
                continue
            elif record["type"] == "header_update":
                timeline.set_header(header_from_dict(record["header"]))
            elif record["type"] == "event" and record["kind"] == VIEW_EVENT:
                timeline.adopt(record["data"], record["item_count"])
        return taken

    def append(self, timeline: Timeline, items: Sequence[Item]) -> list[Item]:
        """Record ``items`` first, then put them in the history and the view (after others' if they wrote first)."""
        seqs = self.write(lambda session: session.append_items(items)) if items else None
        if seqs and self.session is not None and self.session.behind:  # others wrote first: fold in order
            return self.follow(timeline, dict(zip(seqs, items)))
        return [timeline.take(item) for item in items]

    def commit_view(self, entries: list[dict[str, Any]]) -> None:
        """Checkpoint a changed view against the one it replaces (:class:`ViewConflict` if that is no longer current)."""
        self.write(lambda session: session.commit_view({"items": entries, "base": session.revision}))

    def close(self) -> None:
        """Flush and release the session (another process may then resume it).

        The file is released even when the disk still refuses waiting records;
        their loss is logged and recorded as an event.
        """
        session, self.session = self.session, None
        if session is None:
            return
        try:
            session.close()
        except TranscriptError as error:
            self._emit([Event("transcript", "lost", detail=str(error))])

    def _watch_disk(self) -> None:
        """Say once when the disk starts refusing records (they wait in the transcript, written first
        once it accepts again), and once when every waiting record is on disk."""
        waiting = self.session.waiting if self.session is not None else 0
        if waiting and not self._down:
            self._down = True
            logger.warning("session %s: the disk refuses transcript writes; %d record(s) wait in memory and are "
                           "retried on the next write", self.session_id, waiting)
            self._emit([Event("transcript", "waiting", detail=f"the disk refused {waiting} record(s); "
                                                               "they are written first once it accepts")])
        elif not waiting and self._down:
            self._down = False
            logger.warning("session %s: transcript writes resumed; every waiting record is on disk", self.session_id)
            self._emit([Event("transcript", "recovered", detail="the disk accepted the waiting records")])
