"""Blobs beside a session: offloaded outputs kept by content in every store, read back by name, removed with
their session. Real stores: a JSONL folder, SQLite, and PostgreSQL and Redis started by the tests."""

from __future__ import annotations

import hashlib
import stat

import pytest

from contextfold.errors import BlobNotFound, SessionNotFound
from contextfold.stores import StoredSession, open_store
from contextfold.stores.retention import prune

OUTPUT = ("line of a long build log\n" * 20_000).encode() + "ü \udcff".encode("utf-8", "surrogatepass")


def test_a_blob_is_read_back_by_its_digest_in_a_new_session_object(store_url: str) -> None:
    session = StoredSession.create(store_url, "s1")
    digest = session.put_blob(OUTPUT)
    assert digest == hashlib.sha256(OUTPUT).hexdigest()
    assert session.put_blob(OUTPUT) == digest  # the same bytes again: the same name, nothing new
    session.close()
    resumed = StoredSession.resume(store_url, "s1")
    try:
        assert resumed.get_blob(digest) == OUTPUT
    finally:
        resumed.close()


def test_a_blob_is_confined_to_its_session_and_to_names_that_are_digests(store_url: str) -> None:
    first, second = StoredSession.create(store_url, "s1"), StoredSession.create(store_url, "s2")
    try:
        digest = first.put_blob(b"only for s1")
        with pytest.raises(BlobNotFound):
            second.get_blob(digest)
        for hostile in ("../s1.jsonl", "", digest.upper(), digest + "/..", "0" * 63, "../" + digest, None):
            with pytest.raises(BlobNotFound):
                first.get_blob(hostile)  # type: ignore[arg-type]
        with pytest.raises(BlobNotFound):
            first.get_blob("0" * 64)  # a digest, but of nothing put here
    finally:
        first.close()
        second.close()


def test_a_blob_needs_its_session(store_url: str) -> None:
    store = open_store(store_url)
    try:
        with pytest.raises(SessionNotFound):
            store.put_blob("nobody", b"data")
    finally:
        store.close()


def test_pruning_a_session_removes_its_blobs_and_leaves_the_others(store_url: str) -> None:
    old, kept = StoredSession.create(store_url, "old"), StoredSession.create(store_url, "kept")
    old_digest, kept_digest = old.put_blob(b"old output"), kept.put_blob(b"kept output")
    old.close()
    kept.close()
    store = open_store(store_url)
    try:
        store.delete("old")  # what prune does to a session past its age
        with pytest.raises(BlobNotFound):
            store.get_blob("old", old_digest)
        assert store.get_blob("kept", kept_digest) == b"kept output"
        assert prune(store, older_than_days=0, now=2**40).deleted_sessions == ["kept"]
        with pytest.raises(BlobNotFound):
            store.get_blob("kept", kept_digest)
    finally:
        store.close()


def test_a_folder_keeps_blobs_as_owner_only_files(tmp_path) -> None:
    session = StoredSession.create(tmp_path / "sessions", "s1")
    try:
        path = session.blob_path(session.put_blob(OUTPUT))
        assert path is not None and path.read_bytes() == OUTPUT
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert not list(path.parent.glob(".*.tmp"))  # written under a temporary name, renamed whole
    finally:
        session.close()
