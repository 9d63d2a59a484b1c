"""Where a session is kept, in one value: its transcript or store, its id, where outputs go, what a failure does.

``Context(storage=Storage(store="sqlite:///sessions.db", session_id="s1"))``;
the Context holds it as ``context.storage``, a subagent's
(:meth:`~contextfold.context.Context.fork`) is :meth:`Storage.forked`, and a
session :meth:`~contextfold.context.Context.resume` opened is
:meth:`Storage.resumed`. The settings were once five keywords of ``Context``;
one given that way is :class:`~contextfold.errors.InvalidOption`, naming this
spelling (:func:`storage_of`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path

from ..conversation import new_id
from ..errors import InvalidOption
from ..stores import AsyncStore, Store, StoredSession
from ..stores.transcript import Transcript, validate_session_id
from .journal import Emit, Journal, OnStoreFailure


@dataclass(frozen=True)
class Storage:
    """Where one session is kept.

    ``transcript`` is a folder (a transcript named after ``session_id`` is
    created or resumed there), a :class:`~contextfold.stores.transcript.Transcript`,
    or ``None`` to keep nothing on disk. ``store`` is a session store or its URL
    (``sqlite:///sessions.db``, ``postgresql://...``, ``redis://...``, a folder;
    see :mod:`contextfold.stores`): a new session ``session_id`` is created there
    (``Context.resume`` continues one), and any number of processes may then add
    to it. An oversized output is kept as a blob of the session's store (the
    JSONL folder: a file next to the transcript), so any worker that resumes the
    session reads it back (``saved_output(item, context.transcript)``) and
    retention removes it with the session; ``results_dir`` puts such outputs in
    that folder instead. With no store, and no ``results_dir``, they are only cut.
    ``on_store_failure`` says what a write the store cannot make durable (a
    full disk, a database out of reach) does once retried: ``"raise"``
    (default) raises :class:`~contextfold.errors.StoreUnavailable` from the call
    that wrote, ``"memory"`` goes on in memory with an event; either way the
    records wait in memory, are written first once the store accepts, and
    ``close()`` raises while some still wait (see :mod:`.journal`).
    """

    transcript: Transcript | StoredSession | str | Path | None = None
    store: Store | AsyncStore | str | Path | None = None
    session_id: str | None = None
    results_dir: str | Path | None = None
    on_store_failure: OnStoreFailure = "raise"

    def open(self, emit: Emit) -> tuple[str, Journal]:
        """The session's id (a new one if none was given; it names files, so it is checked) and its journal."""
        session_id = validate_session_id(self.session_id) if self.session_id else new_id("session")
        return session_id, Journal.open(self.transcript, self.store, session_id, emit, self.on_store_failure)

    def results_folder(self, journal: Journal, session_id: str) -> Path | None:
        """Where oversized outputs are saved as files: ``results_dir``, else a folder beside a JSONL transcript."""
        if self.results_dir is not None:
            return Path(self.results_dir)
        folder = journal.folder
        return folder / f"{session_id}-results" if folder is not None else None

    def blobs(self, journal: Journal) -> StoredSession | None:
        """The stored session oversized outputs are kept in as blobs (none when ``results_dir`` is given)."""
        return journal.session if self.results_dir is None else None

    def forked(self, session: StoredSession | None, child_id: str) -> Storage:
        """A subagent's storage: its own session ``child_id`` beside ``session``, failures handled the same."""
        transcript = session.sibling(child_id) if session is not None else None
        return Storage(transcript=transcript, session_id=child_id, on_store_failure=self.on_store_failure)

    def resumed(self, session: StoredSession) -> Storage:
        """The storage of ``session``, opened already (``Context.resume``/``open``, whose arguments name the store
        and the id): where outputs go and what a failure does as given; a store or id given here too is refused."""
        given = [name for name in ("transcript", "store", "session_id") if getattr(self, name) is not None]
        if given:
            raise InvalidOption(f"storage.{given[0]}", "Context.resume and Context.open take the store and the "
                                "session id as their own arguments; storage= gives results_dir and on_store_failure")
        return replace(self, transcript=session, session_id=session.session_id)


def storage_of(storage: Storage | None, removed: Mapping[str, object]) -> Storage:
    """``Context(storage=...)``, or keep nothing. A keyword ``Context`` does not take is
    :class:`~contextfold.errors.InvalidOption`: one of :class:`Storage`'s fields says how to write it now."""
    for name in removed:
        moved = name in {field.name for field in fields(Storage)}
        raise InvalidOption(name, f"Context takes the session's storage as one value: Context(storage=Storage({name}="
                            "...)), with Storage from contextfold" if moved else "Context takes no such keyword")
    if storage is not None and not isinstance(storage, Storage):
        raise InvalidOption("storage", f"Context(storage=...) takes a Storage, not {type(storage).__name__}")
    return storage if storage is not None else Storage()
