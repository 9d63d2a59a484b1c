"""The append-only transcript: durability, exact restore, torn tails, corruption, errors, and a kill test."""

from __future__ import annotations

import errno
import json
import math
import os
import random
import signal
import stat
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest
from transcript_writer_child import EVENT_EVERY, expected_header, expected_item

from contextfold.conversation import (
    Conversation,
    Document,
    Header,
    Image,
    Item,
    Opaque,
    RedactedThinking,
    Summary,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    ToolSpec,
    user,
)
from contextfold.errors import TranscriptCorrupt, TranscriptError
from contextfold.stores import transcript as transcript_module
from contextfold.stores.transcript import Transcript, transcript_path

SESSION = "sess-01"
UNICODE_TEXTS = ("日本語のテキスト", "emoji 🙂👍🏽", "עברית RTL", "e\u0301 combining", "line\u2028separator",
                 "nul \x00 and \n newline", "lone surrogate \ud83d")


def rich_conversation() -> Conversation:
    """Every block kind, ids, timestamps, meta and awkward unicode."""
    header = Header(
        system=(Item("system", (Text("Be terse.", {"cache_control": {"type": "ephemeral"}}),), id="sys_1"),),
        tools=(ToolSpec("grep", "search", {"type": "object", "properties": {"q": {"type": "string"}}}),
               Opaque({"type": "web_search_20250305", "name": "web_search"}, "anthropic")),
        pinned=(user("pinned fact: the answer is 42", id="pin_1"),),
        meta={"system_shape": "blocks"},
    )
    items = [
        Item("user", tuple(Text(t) for t in UNICODE_TEXTS), id="u1", timestamp=1.5, meta={"origin": "anthropic"}),
        Item("user", (Image(data="aGVsbG8=", media_type="image/png"), Document({"type": "text", "data": "doc"})),
             id="u2"),
        Item("assistant", (Thinking("hmm", "sig=="), RedactedThinking("enc"), Text("calling"),
                           ToolCall("c1", "grep", {"q": "x", "n": [1, 2.5, None, True]}, '{"q":"x"}')),
             id="a1", timestamp=2.0),
        Item("tool", (ToolResult("c1", (Text("found"), Image(url="https://e.x/i.png")), is_error=False),), id="t1"),
        Item("user", (Summary("earlier: grep found x", covers=3),), id="s1"),
        Item("assistant", (Opaque({"type": "server_tool_use", "id": "st1"}, "anthropic"),), id="a2"),
    ]
    return Conversation(items, header)


def write(directory: Path, conversation: Conversation, **options) -> Path:
    with Transcript.open(directory, SESSION, header=conversation.header, **options) as transcript:
        for item in conversation:
            transcript.append(item)
    return transcript.path


# --------------------------------------------------------------------------- files and names


def test_file_is_owner_only_even_with_a_permissive_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        path = write(tmp_path / "new" / "dir", Conversation([user("secret")]))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_file_name_comes_from_the_session_id_only(tmp_path: Path) -> None:
    path = write(tmp_path, Conversation([user("../../etc/passwd"), user("name: other")]))
    assert path == tmp_path / f"{SESSION}.jsonl" == transcript_path(tmp_path, SESSION)
    assert [p.name for p in tmp_path.iterdir()] == [f"{SESSION}.jsonl"]


@pytest.mark.parametrize("bad", ["", "../x", "a/b", ".hidden", "-flag", "x\n", "sp ace", "é", "a" * 129, None])
def test_invalid_session_ids_are_rejected_before_touching_the_disk(tmp_path: Path, bad) -> None:
    with pytest.raises(TranscriptError, match="invalid session id"):
        Transcript.open(tmp_path / "d", bad)
    assert not (tmp_path / "d").exists()


def test_a_second_writer_on_the_same_session_is_refused(tmp_path: Path) -> None:
    with Transcript.open(tmp_path, SESSION), pytest.raises(TranscriptError, match="another writer"):
        Transcript.open(tmp_path, SESSION)


def test_a_transcript_of_another_session_is_not_resumed(tmp_path: Path) -> None:
    path = write(tmp_path, Conversation([user("hi")]))
    path.rename(tmp_path / "other.jsonl")
    with pytest.raises(TranscriptCorrupt, match="belongs to session 'sess-01'") as caught:
        Transcript.open(tmp_path, "other")
    assert caught.value.line == 1


# --------------------------------------------------------------------------- exact restore


def test_conversation_round_trips_exactly_with_unicode(tmp_path: Path) -> None:
    original = rich_conversation()
    conversation, events, report = Transcript.load(write(tmp_path, original))
    assert conversation == original
    assert [(i.id, i.timestamp, dict(i.meta)) for i in conversation] == [(i.id, i.timestamp, dict(i.meta))
                                                                        for i in original]
    assert conversation[0].blocks == tuple(Text(t) for t in UNICODE_TEXTS)
    assert events == [] and report.torn_tail is None and report.records == 1 + len(original)
    assert report.session_id == SESSION


def test_resume_appends_after_the_restored_conversation(tmp_path: Path) -> None:
    original = rich_conversation()
    write(tmp_path, original)
    with Transcript.open(tmp_path, SESSION) as transcript:
        assert transcript.restored.conversation == original
        assert transcript.item_count == len(original)
        transcript.append(user("after resume", id="u9"))
    conversation, _, report = Transcript.load(transcript.path)
    assert conversation == original.with_items([*original, user("after resume", id="u9")])
    assert report.records == len(original) + 2


def test_events_round_trip_in_order_with_their_position(tmp_path: Path) -> None:
    with Transcript.open(tmp_path, SESSION) as transcript:
        transcript.append(user("one", id="u1"))
        first = transcript.append_event("compaction", {"replaced": ["u1"], "summary": "résumé ☃", "saved": 120})
        transcript.append(user("two", id="u2"))
        second = transcript.append_event("usage", {"input_tokens": 10})
    conversation, events, _ = Transcript.load(transcript.path)
    assert [(e.seq, e.kind, e.data, e.item_count) for e in events] == [
        (first, "compaction", {"replaced": ["u1"], "summary": "résumé ☃", "saved": 120}, 1),
        (second, "usage", {"input_tokens": 10}, 2),
    ]
    assert (first, second) == (2, 4) and [i.id for i in conversation] == ["u1", "u2"]
    assert all(abs(e.time - time.time()) < 60 for e in events)


def test_header_changes_are_recorded_and_the_latest_wins(tmp_path: Path) -> None:
    first = Header(tools=(ToolSpec("a"),))
    second = Header(tools=(ToolSpec("a"), ToolSpec("b")))
    third = Header(system=(Item("system", (Text("new prompt"),), id="s2"),))
    with Transcript.open(tmp_path, SESSION, header=first) as transcript:
        transcript.append(user("x", id="u1"))
        transcript.update_header(second)
    with Transcript.open(tmp_path, SESSION, header=third) as transcript:  # differs from the file: recorded
        assert transcript.restored.conversation.header == second and transcript.header == third
    with Transcript.open(tmp_path, SESSION, header=third):  # the same: nothing written
        pass
    conversation, _, report = Transcript.load(transcript.path)
    assert conversation.header == third and [i.id for i in conversation] == ["u1"]
    assert report.records == 4


# --------------------------------------------------------------------------- torn tails and corruption


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize("tail", [b'{"seq":4,"type":"item","item":{"id":"u4","ro', b"not json at all\n", b"\x00" * 64])
def test_a_torn_last_line_is_skipped_and_reported(tmp_path: Path, tail: bytes) -> None:
    original = Conversation([user("a", id="u1"), user("b", id="u2"), user("c", id="u3")])
    path = write(tmp_path, original)
    good = path.read_bytes()
    path.write_bytes(good + tail)
    conversation, _, report = Transcript.load(path)
    assert conversation == original
    assert report.torn_tail is not None and report.torn_tail.line == 5
    assert report.torn_tail.offset == len(good) and report.torn_tail.length == len(tail)
    assert report.skipped == (report.torn_tail,) and not report.truncated
    assert path.read_bytes() == good + tail  # load never writes


def test_resuming_cuts_the_torn_line_so_new_records_start_on_a_fresh_line(tmp_path: Path) -> None:
    path = write(tmp_path, Conversation([user("a", id="u1")]))
    with path.open("ab") as file:
        file.write(b'{"seq":2,"type":"item","item":{"id":"u2","role":"user","blo')
    with Transcript.open(tmp_path, SESSION) as transcript:
        assert transcript.restored.report.torn_tail.line == 3 and transcript.restored.report.truncated
        transcript.append(user("b", id="u3"))
    conversation, _, report = Transcript.load(path)
    assert [i.id for i in conversation] == ["u1", "u3"] and report.torn_tail is None
    assert all(json.loads(line)["seq"] == n for n, line in enumerate(lines_of(path)))


def test_a_crash_before_the_header_was_whole_starts_the_session_afresh(tmp_path: Path) -> None:
    path = transcript_path(tmp_path, SESSION)
    path.write_bytes(b'{"seq":0,"type":"hea')
    with pytest.raises(TranscriptCorrupt, match="no complete header record") as caught:
        Transcript.load(path)
    assert caught.value.line == 1
    with Transcript.open(tmp_path, SESSION) as transcript:
        assert transcript.restored.report.torn_tail.line == 1 and len(transcript.restored.conversation) == 0
        transcript.append(user("hi", id="u1"))
    assert [i.id for i in Transcript.load(path).conversation] == ["u1"]


def sealed(record: dict) -> bytes:
    """A record line with a valid checksum, computed here independently of the writer."""
    body = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()
    return body[:-1] + b',"crc":"%08x"}\n' % zlib.crc32(body)


def test_a_damaged_middle_line_keeps_the_records_before_it_and_names_it(tmp_path: Path) -> None:
    path = write(tmp_path, Conversation([user("a", id="u1"), user("b", id="u2"), user("c", id="u3")]))
    lines = lines_of(path)
    lines[2] = lines[2][:20] + b"\n"
    path.write_bytes(b"".join(lines))
    conversation, _, report = Transcript.load(path)
    assert [i.id for i in conversation] == ["u1"] and report.records == 2
    assert report.damaged.line == 3 and "no checksum" in report.damaged.reason
    assert "1 line(s) after it" in report.damaged.reason and report.skipped == (report.damaged,)
    assert report.damaged.offset + report.damaged.length == len(path.read_bytes())
    assert b"".join(lines) == path.read_bytes()  # load never writes


def test_a_flipped_byte_inside_a_string_is_found_by_the_checksum(tmp_path: Path) -> None:
    path = write(tmp_path, Conversation([user("alpha", id="u1"), user("bravo", id="u2"), user("charlie", id="u3")]))
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b"bravo", b"brav0"))
    conversation, _, report = Transcript.load(path)
    assert [i.id for i in conversation] == ["u1"] and "checksum mismatch" in report.damaged.reason


def test_resume_sets_the_damaged_part_aside_and_appends_after_the_last_good_record(tmp_path: Path) -> None:
    path = write(tmp_path, Conversation([user("a", id="u1"), user("b", id="u2"), user("c", id="u3")]))
    lines = lines_of(path)
    damaged = lines[2].replace(b'"b"', b'"B"')
    path.write_bytes(b"".join([*lines[:2], damaged, *lines[3:]]))
    with Transcript.open(tmp_path, SESSION) as transcript:
        report = transcript.restored.report
        assert report.truncated and report.damaged.line == 3 and report.damaged_saved_to is not None
        assert report.damaged_saved_to.read_bytes() == damaged + lines[3]  # nothing is deleted
        assert stat.S_IMODE(report.damaged_saved_to.stat().st_mode) == 0o600
        transcript.append(user("d", id="u4"))
    conversation, _, report = Transcript.load(path)
    assert [i.id for i in conversation] == ["u1", "u4"] and not report.skipped


def test_old_transcripts_without_checksums_still_load_and_resume(tmp_path: Path) -> None:
    path = transcript_path(tmp_path, SESSION)
    old = [{"seq": 0, "type": "header", "format": "contextfold-transcript", "version": 1, "session_id": SESSION,
            "created": 1.0, "header": {}},
           {"seq": 1, "type": "item", "item": {"role": "user", "blocks": [{"kind": "text", "text": "hi"}], "id": "u1"}}]
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in old))
    path.chmod(0o600)
    assert [i.id for i in Transcript.load(path).conversation] == ["u1"]
    with Transcript.open(tmp_path, SESSION, resume=True) as transcript:
        transcript.append(user("there", id="u2"))
    assert [i.id for i in Transcript.load(path).conversation] == ["u1", "u2"]


@pytest.mark.parametrize(
    "damage, line, message",
    [
        (lambda lines: lines[:2] + lines[3:], 3, "sequence number 3 where 2 was expected"),
        (lambda lines: lines[:3] + lines[2:], 4, "sequence number 2 where 3 was expected"),
        (lambda lines: [*lines[:2], sealed({"seq": 2, "type": "item", "item": {"role": "robot", "blocks": [],
                                                                               "id": "x"}}), lines[3]], 3,
         "unknown role"),
        (lambda lines: [*lines[:2], sealed({"seq": 2, "type": "mystery"}), lines[3]], 3, "unknown record type 'mystery'"),
        (lambda lines: [*lines[:2], b"[1, 2]\n", lines[3]], 3, "no checksum"),
        (lambda lines: [*lines[:2], sealed({"seq": 2, "type": "item", "item": []}), lines[3]], 3, "invalid item record"),
        (lambda lines: [*lines[:2], sealed({"seq": 2, "type": "event", "kind": "k", "data": 5}), lines[3]], 3,
         "invalid event record"),
    ],
)
def test_invalid_records_are_damage_naming_the_line(tmp_path: Path, damage, line: int, message: str) -> None:
    path = write(tmp_path, Conversation([user("a"), user("b"), user("c"), user("d")]))
    path.write_bytes(b"".join(damage(lines_of(path))))
    conversation, _, report = Transcript.load(path)
    assert report.damaged.line == line and message in report.damaged.reason
    assert len(conversation) == line - 2


@pytest.mark.parametrize("damage, message", [
    (lambda header: sealed({**header, "version": 99}), "newer than this reader"),
    (lambda header: sealed({**header, "header": []}), "invalid header record"),
    (lambda header: sealed({**header, "session_id": "../x"}), "invalid session id"),
])
def test_a_bad_header_with_records_after_it_is_corruption_naming_line_1(tmp_path: Path, damage, message) -> None:
    path = write(tmp_path, Conversation([user("a"), user("b")]))
    lines = lines_of(path)
    header = json.loads(lines[0])
    del header["crc"]
    path.write_bytes(b"".join([damage(header), *lines[1:]]))
    for attempt in (lambda: Transcript.load(path), lambda: Transcript.open(tmp_path, SESSION)):
        with pytest.raises(TranscriptCorrupt, match=message) as caught:
            attempt()
        assert caught.value.line == 1


# --------------------------------------------------------------------------- durability knob


@pytest.fixture
def fsync_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(transcript_module.os, "fsync", lambda fd: (calls.append(fd), real_fsync(fd))[1])
    return calls


@pytest.mark.parametrize("policy, after_appends, after_close", [("always", 10, 10), ("batch", 2, 3), ("never", 0, 0)])
def test_fsync_policy_decides_how_often_the_file_is_synced(
    tmp_path: Path, fsync_calls: list[int], policy: str, after_appends: int, after_close: int
) -> None:
    transcript = Transcript.open(tmp_path, SESSION, fsync=policy, batch_records=4)
    fsync_calls.clear()
    for n in range(10):
        transcript.append(user(f"m{n}"))
    assert len(fsync_calls) == after_appends
    transcript.close()
    assert len(fsync_calls) == after_close
    assert len(Transcript.load(transcript.path).conversation) == 10


def test_sync_forces_a_flush_even_when_the_policy_is_never(tmp_path: Path, fsync_calls: list[int]) -> None:
    with Transcript.open(tmp_path, SESSION, fsync="never") as transcript:
        transcript.append(user("x"))
        assert fsync_calls == []
        transcript.sync()
        transcript.sync()  # nothing new since: no second fsync
        assert len(fsync_calls) == 1


def test_unknown_fsync_policy_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="fsync must be one of"):
        Transcript.open(tmp_path, SESSION, fsync="sometimes")


# --------------------------------------------------------------------------- refusing and degrading


def test_too_large_or_unserializable_records_are_refused_by_name(tmp_path: Path) -> None:
    with Transcript.open(tmp_path, SESSION, max_record_bytes=10_000) as transcript:
        before = transcript.path.read_bytes()
        with pytest.raises(TranscriptError, match=r"item 'big' \(user\) is \d+ bytes as a record, over the limit"):
            transcript.append(user("x" * 20_000, id="big"))
        with pytest.raises(TranscriptError, match="item 'obj'.*not JSON serializable"):
            transcript.append(Item("user", (Text("x"),), id="obj", meta={"when": object()}))
        with pytest.raises(TranscriptError, match="item 'nan'"):
            transcript.append(Item("assistant", (ToolCall("c", "f", {"x": math.nan}),), id="nan"))
        with pytest.raises(TranscriptError, match="event 'compaction'"):
            transcript.append_event("compaction", {"ids": {1, 2}})
        assert transcript.path.read_bytes() == before
        assert transcript.append(user("fine", id="ok")) == 1  # no sequence number was used up
    assert [i.id for i in Transcript.load(transcript.path).conversation] == ["ok"]


def test_a_full_disk_mid_record_is_undone_and_appending_carries_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transcript = Transcript.open(tmp_path, SESSION)
    transcript.append(user("before", id="u1"))
    real_write = os.write

    def write_half_then_fill_up(fd: int, data: bytes) -> int:
        if len(data) > 100:
            real_write(fd, bytes(data[:100]))
            return 100
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(transcript_module.os, "write", write_half_then_fill_up)
    assert transcript.append(user("y" * 500, id="u2")) == 2  # the disk refused it: it waits in memory
    assert transcript.pending == 1 and b'"u2"' not in transcript.path.read_bytes()  # the half record was undone
    monkeypatch.setattr(transcript_module.os, "write", real_write)
    transcript.append(user("after", id="u3"))  # the disk has room again: the waiting record goes first
    transcript.close()
    conversation, _, report = Transcript.load(transcript.path)
    assert [i.id for i in conversation] == ["u1", "u2", "u3"] and report.torn_tail is None


def test_a_failed_fsync_stops_further_appends_until_reopened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    transcript = Transcript.open(tmp_path, SESSION)

    def failing_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(transcript_module.os, "fsync", failing_fsync)
    with pytest.raises(TranscriptError, match="fsync failed"):
        transcript.append(user("x", id="u1"))
    monkeypatch.undo()
    with pytest.raises(TranscriptError, match="reopen the transcript"):
        transcript.append(user("y", id="u2"))
    transcript.close()
    with Transcript.open(tmp_path, SESSION) as reopened:
        reopened.append(user("z", id="u3"))
    assert [i.id for i in Transcript.load(transcript.path).conversation] == ["u1", "u3"]


def test_os_errors_on_open_and_load_become_transcript_errors(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(TranscriptError, match="cannot open the transcript") as caught:
        Transcript.open(tmp_path / "file", SESSION)
    assert isinstance(caught.value.__cause__, OSError)
    with pytest.raises(TranscriptError, match="cannot read the transcript"):
        Transcript.load(tmp_path / "missing.jsonl")


def test_a_closed_transcript_refuses_appends(tmp_path: Path) -> None:
    transcript = Transcript.open(tmp_path, SESSION)
    transcript.close()
    transcript.close()
    with pytest.raises(TranscriptError, match="closed"):
        transcript.append(user("late"))


# --------------------------------------------------------------------------- the kill test

CHILD = Path(__file__).with_name("transcript_writer_child.py")
KILLS = 30
STALL_EVERY = 5  # every fifth run is killed while a record is half written, for certain


class Acks:
    """What the writers acknowledged: the highest item index and the events, read from their output."""

    def __init__(self) -> None:
        self.last_item = -1
        self.events: set[int] = set()

    def read(self, lines: list[str]) -> None:
        for line in lines:
            word, _, number = line.strip().partition(" ")
            if word == "item":
                assert int(number) == self.last_item + 1, f"writer acknowledged item {number} out of order"
                self.last_item = int(number)
            elif word == "event":
                self.events.add(int(number))


def run_writer_until_killed(directory: Path, rng: random.Random, stall: bool) -> tuple[list[str], int]:
    """Start a writer, kill it mid-flight with SIGKILL; returns its output lines and the item count it resumed at."""
    command = [sys.executable, str(CHILD), str(directory), SESSION] + (["--stall"] if stall else [])
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = [child.stdout.readline()]
    assert lines[0].startswith("ready "), f"writer failed to start: {lines[0]!r} {child.stderr.read()}"
    if stall:
        while lines[-1] not in ("stalled\n", ""):
            lines.append(child.stdout.readline())
    else:
        time.sleep(rng.uniform(0.002, 0.040))
    child.send_signal(signal.SIGKILL)
    # Read the rest through the same buffered streams that readline() used: communicate() reads the raw
    # pipes and would drop acknowledgements already sitting in their buffers. The child is dead, so both
    # reads end at EOF.
    rest, errors = child.stdout.read(), child.stderr.read()
    child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL, f"writer died on its own: {errors}"
    lines.extend(rest.splitlines(keepends=True))
    return [line for line in lines if line.endswith("\n")], int(lines[0].split()[1])


def assert_recovered(path: Path, acks: Acks) -> bool:
    """Every acknowledged record is back intact and in order; returns whether a torn tail was found."""
    raw = path.read_bytes()
    conversation, events, report = Transcript.load(path)
    torn_on_disk = not raw.endswith(b"\n")
    assert (report.torn_tail is not None) == torn_on_disk
    if torn_on_disk:
        assert report.torn_tail.line == raw.count(b"\n") + 1
    assert conversation.header == expected_header()
    assert list(conversation) == [expected_item(n) for n in range(len(conversation))]
    # At most the one record in flight when the kill came is there without an acknowledgement.
    assert acks.last_item < len(conversation) <= acks.last_item + 2
    assert acks.events <= {event.data["after"] for event in events}
    assert all(e.kind == "probe" and e.item_count == e.data["after"] + 1 and e.data["after"] % EVENT_EVERY == 0
               for e in events)
    return torn_on_disk


@pytest.mark.slow  # a long probe: CI runs it in its own step (-m slow)
def test_killed_writers_lose_no_acknowledged_record_and_resume(tmp_path: Path) -> None:
    rng = random.Random(20240601)
    acks = Acks()
    path = transcript_path(tmp_path, SESSION)
    torn_tails = 0
    for run in range(KILLS):
        lines, resumed_at = run_writer_until_killed(tmp_path, rng, stall=run % STALL_EVERY == STALL_EVERY - 1)
        assert resumed_at == acks.last_item + 1 or (run > 0 and resumed_at == acks.last_item + 2)
        acks.last_item = resumed_at - 1  # an unacknowledged record that survived the kill counts from here on
        acks.read(lines[1:])
        torn_tails += assert_recovered(path, acks)
    assert torn_tails >= KILLS // STALL_EVERY, "no kill landed mid-write, so torn tails went untested"

    with Transcript.open(tmp_path, SESSION, header=expected_header()) as transcript:
        assert transcript.restored.report.truncated == (transcript.restored.report.torn_tail is not None)
        first_new = transcript.item_count
        for n in range(first_new, first_new + 20):
            transcript.append(expected_item(n))
    conversation, events, report = Transcript.load(path)
    assert report.torn_tail is None and len(conversation) == first_new + 20 > acks.last_item
    assert list(conversation) == [expected_item(n) for n in range(first_new + 20)]
    assert report.records == 1 + len(conversation) + len(events)
