"""The transcript against a hostile folder and a second writer: links, loose modes, locks, forks, full disks."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from contextfold import Context, Storage
from contextfold.conversation import user
from contextfold.errors import (
    ContextfoldError,
    SessionExists,
    SessionNotFound,
    StoreUnavailable,
    TranscriptError,
    TranscriptForked,
    TranscriptLocked,
    TranscriptUnsafe,
)
from contextfold.stores import transcript as transcript_module
from contextfold.stores.transcript import Transcript, transcript_path

SESSION = "sess-01"


def messages(*texts: str) -> list[dict]:
    return [{"role": "user", "content": text} for text in texts]


# --------------------------------------------------------------------------- links, FIFOs, hard links, modes


def test_a_link_planted_at_the_transcript_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "victim.txt"
    target.write_bytes(b"precious, no final newline")
    target.chmod(0o644)
    folder = tmp_path / "sessions"
    folder.mkdir(mode=0o700)
    transcript_path(folder, SESSION).symlink_to(target)
    for attempt in (lambda: Transcript.open(folder, SESSION),
                    lambda: Context(window_tokens=10_000, storage=Storage(transcript=folder, session_id=SESSION)),
                    lambda: Context.resume(folder, SESSION, window_tokens=10_000),
                    lambda: Transcript.load(transcript_path(folder, SESSION))):
        with pytest.raises(TranscriptUnsafe, match="symbolic link"):
            attempt()
    assert target.read_bytes() == b"precious, no final newline" and stat.S_IMODE(target.stat().st_mode) == 0o644


def test_a_transcript_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "sessions").symlink_to(elsewhere)
    with pytest.raises(TranscriptUnsafe, match="folder is a symbolic link"):
        Transcript.open(tmp_path / "sessions", SESSION)
    assert list(elsewhere.iterdir()) == []


def test_a_transcript_path_holding_a_nul_byte_is_refused_typed(tmp_path: Path) -> None:
    """Found by fuzzing paths: Transcript.load and Transcript.open raised ValueError ('embedded null byte')."""
    with pytest.raises(TranscriptUnsafe, match="NUL byte"):
        Transcript.load(tmp_path / "a\0b.jsonl")
    with pytest.raises(TranscriptUnsafe, match="NUL byte"):
        Transcript.open(tmp_path / "in\0side", SESSION)
    assert list(tmp_path.iterdir()) == []


def test_a_fifo_or_a_hard_link_at_the_transcript_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(transcript_path(tmp_path, SESSION), 0o600)
    with pytest.raises(TranscriptUnsafe, match="not a regular file"):
        Transcript.open(tmp_path, SESSION)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep me")
    os.link(outside, transcript_path(tmp_path, "sess-02"))
    with pytest.raises(TranscriptUnsafe, match="2 hard links"):
        Transcript.open(tmp_path, "sess-02")
    assert outside.read_bytes() == b"keep me"


def test_loose_modes_are_tightened_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "sessions"
    with Transcript.open(folder, SESSION) as transcript:
        transcript.append(user("hi", id="u1"))
    folder.chmod(0o777)
    transcript_path(folder, SESSION).chmod(0o644)
    with Transcript.open(folder, SESSION) as transcript:
        assert [i.id for i in transcript.restored.conversation] == ["u1"]
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(transcript_path(folder, SESSION).stat().st_mode) == 0o600
    assert "made it owner-only" in caplog.text


# --------------------------------------------------------------------------- one writer per session


def test_a_shared_sticky_folder_is_refused_never_made_owner_only(tmp_path: Path) -> None:
    """Found by fuzzing paths: Transcript.load of a file in /tmp, run as root (/tmp is then its own), made /tmp
    mode 700, locking every other user out of it. A folder with the sticky bit is shared by design: refused."""
    folder = tmp_path / "shared"
    with Transcript.open(folder, SESSION) as transcript:
        transcript.append(user("hi", id="u1"))
    folder.chmod(0o1777)
    with pytest.raises(TranscriptUnsafe, match="shared by all"):
        Transcript.load(transcript_path(folder, SESSION))
    assert stat.S_IMODE(folder.stat().st_mode) == 0o1777


def test_a_second_context_on_the_same_session_is_an_error_not_a_silent_run(tmp_path: Path) -> None:
    with Context(window_tokens=10_000, storage=Storage(transcript=tmp_path, session_id=SESSION)) as first:
        first.add(messages("one"))
        with pytest.raises(TranscriptLocked, match="another writer"):
            Context.resume(tmp_path, SESSION, window_tokens=10_000)
        code = ("import sys; from contextfold import Context; from contextfold.errors import TranscriptLocked\n"
                "try:\n    Context.resume(sys.argv[1], 'sess-01', window_tokens=10_000)\n"
                "except TranscriptLocked as e:\n    print('locked:', e)\n")
        other = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60,
                               check=False)
        assert other.stdout.startswith("locked:"), other.stderr
        first.add(messages("two"))
    assert [i.text for i in Transcript.load(transcript_path(tmp_path, SESSION)).conversation] == ["one", "two"]


def test_a_new_context_with_a_recorded_session_id_is_an_error_unless_resuming(tmp_path: Path) -> None:
    with Context(window_tokens=10_000, storage=Storage(transcript=tmp_path, session_id=SESSION)) as first:
        first.add(messages("one"))
    before = transcript_path(tmp_path, SESSION).read_bytes()
    with pytest.raises(SessionExists, match="already exists"):
        Context(window_tokens=10_000, storage=Storage(transcript=tmp_path, session_id=SESSION))
    assert transcript_path(tmp_path, SESSION).read_bytes() == before
    with Context.resume(tmp_path, SESSION, window_tokens=10_000) as resumed:
        assert [i.text for i in resumed.history] == ["one"] and resumed.stats()["session_id"] == SESSION


def test_resuming_an_unknown_session_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    with Context(window_tokens=10_000, storage=Storage(transcript=tmp_path, session_id=SESSION)):
        pass
    with pytest.raises(SessionNotFound, match="no session 'tpyo'"):
        Context.resume(tmp_path, "tpyo", window_tokens=10_000)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{SESSION}.jsonl"]
    with pytest.raises(SessionNotFound):
        Context.resume(tmp_path / "no-such-folder", SESSION, window_tokens=10_000)
    assert not (tmp_path / "no-such-folder").exists()


def test_a_forked_child_cannot_write_and_the_parent_carries_on(tmp_path: Path) -> None:
    transcript = Transcript.open(tmp_path, SESSION)
    transcript.append(user("before", id="u1"))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: try to write, report what happened, and leave without cleanup
        os.close(read)
        try:
            transcript.append(user("from the child", id="c1"))
            outcome = b"wrote"
        except TranscriptForked:
            outcome = b"refused"
        except BaseException:  # noqa: BLE001 - anything else is a failure the parent reports
            outcome = b"other"
        transcript.close()  # must not release the parent's lock or sync anything
        os.write(write, outcome)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        outcome = pipe.read()
    os.waitpid(pid, 0)
    assert outcome == b"refused"
    with pytest.raises(TranscriptLocked):  # the child's close left the parent's lock in place
        Transcript.open(tmp_path, SESSION)
    transcript.append(user("after", id="u2"))
    transcript.close()
    assert [i.id for i in Transcript.load(transcript.path).conversation] == ["u1", "u2"]


# --------------------------------------------------------------------------- a full disk, then room again


class FullDisk:
    """``os.write`` in the transcript module refuses with ENOSPC while ``full`` is set."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.full = False
        real_write = os.write

        def write(fd: int, data: bytes) -> int:
            if self.full:
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_write(fd, data)

        monkeypatch.setattr(transcript_module.os, "write", write)


def test_a_full_disk_raises_at_the_first_refused_add_and_writes_everything_once_freed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    disk = FullDisk(monkeypatch)
    context = Context(window_tokens=100_000, storage=Storage(transcript=tmp_path, session_id=SESSION))
    context.add(messages("m0"))
    disk.full = True
    with pytest.raises(StoreUnavailable, match="No space left") as refused:
        context.add(messages("m1"))
    assert refused.value.waiting == 1 and [i.text for i in context.history] == ["m0", "m1"]  # kept, not added again
    with pytest.raises(StoreUnavailable):
        context.add(messages("m2"))
    disk.full = False
    context.add(messages("m3"))  # the waiting records go first, in order
    context.close()
    assert [i.text for i in Transcript.load(transcript_path(tmp_path, SESSION)).conversation] == ["m0", "m1", "m2", "m3"]


def test_in_memory_mode_a_full_disk_then_freed_loses_nothing_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    disk = FullDisk(monkeypatch)
    context = Context(window_tokens=100_000,
                      storage=Storage(transcript=tmp_path, session_id=SESSION, on_store_failure="memory"))
    context.add(messages("m0"))
    disk.full = True
    for n in range(1, 40):
        context.add(messages(f"m{n}"))
    assert context.transcript is not None and context.transcript.waiting == 39
    disk.full = False
    context.add(messages("m40"))
    assert context.transcript.waiting == 0
    actions = [e.action for e in context.events if e.stage == "transcript"]
    assert actions == ["waiting"] * 39 + ["recovered"]  # an event for every refused write, one when it is over
    assert "wait in memory" in caplog.text and "accepts again" in caplog.text
    context.close()
    assert [i.text for i in Transcript.load(transcript_path(tmp_path, SESSION)).conversation] == [
        f"m{n}" for n in range(41)]


def test_close_on_a_full_disk_raises_and_can_be_called_again_once_freed(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    disk = FullDisk(monkeypatch)
    context = Context(window_tokens=100_000,
                      storage=Storage(transcript=tmp_path, session_id=SESSION, on_store_failure="memory"))
    context.add(messages("kept"))
    disk.full = True
    context.add(messages("waiting"))
    with pytest.raises(StoreUnavailable, match="1 record"):
        context.close()
    assert context.transcript is not None and context.events[-1].action == "unwritten"
    disk.full = False
    context.close()
    assert context.transcript is None
    with Context.resume(tmp_path, SESSION, window_tokens=100_000) as resumed:  # the lock was released
        assert [i.text for i in resumed.history] == ["kept", "waiting"]


def test_a_failed_resume_releases_the_lock(tmp_path: Path) -> None:
    with Context(window_tokens=10_000, storage=Storage(transcript=tmp_path, session_id=SESSION)) as first:
        first.add(messages("one"))
    with pytest.raises(ContextfoldError, match="unknown provider"):
        Context.resume(tmp_path, SESSION, window_tokens=10_000, provider="bogus")
    with Context.resume(tmp_path, SESSION, window_tokens=10_000) as resumed:
        assert len(resumed.history) == 1


def test_a_header_the_disk_refuses_leaves_no_empty_transcript(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    FullDisk(monkeypatch).full = True
    with pytest.raises(TranscriptError, match="the disk refused"):
        Transcript.open(tmp_path, SESSION)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- damage


def test_resume_after_a_damaged_middle_line_keeps_what_came_before_with_an_event(tmp_path: Path) -> None:
    with Context(window_tokens=100_000, storage=Storage(transcript=tmp_path, session_id=SESSION)) as first:
        first.add(messages(*(f"message {n}" for n in range(10))))
    path = transcript_path(tmp_path, SESSION)
    path.write_bytes(path.read_bytes().replace(b"message 6", b"messagE 6"))
    with Context.resume(tmp_path, SESSION, window_tokens=100_000) as resumed:
        assert [i.text for i in resumed.history] == [f"message {n}" for n in range(6)]
        skipped = [e for e in resumed.events if e.action == "skipped"]
        assert len(skipped) == 1 and "line 8" in skipped[0].detail and "checksum mismatch" in skipped[0].detail
        assert "set aside in" in skipped[0].detail
        resumed.add(messages("after"))
    assert [i.text for i in Transcript.load(path).conversation][-1] == "after"
