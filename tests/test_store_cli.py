"""``contextfold sessions list|show|export|prune`` and ``STORE#session-id`` in place of a file, on every store."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from click.testing import CliRunner
from test_store_sessions import POLICY, turn

from contextfold import Context, Item, Text, Storage
from contextfold.cli import cli
from contextfold.stores import open_store
from contextfold.stores.records import to_line

NOBODY = 65534


def recorded(url: str, session_id: str, rounds: int = 8) -> Context:
    """A session with compactions in it, written to ``url`` and closed."""
    context = Context(window_tokens=20_000, policy=POLICY, storage=Storage(store=url, session_id=session_id))
    context.add([{"role": "user", "content": "Fix the bug in f1.py"}], system="You are a coding agent.")
    for k in range(1, rounds + 1):
        context.add(turn(k, f"line {k}\n" * 120))
        context.prepare()
    context.close()
    return context


@contextmanager
def another_user() -> Iterator[None]:
    """As a user the file permissions apply to: ``nobody`` (its effective id only, restored after) when the tests
    run as root, else the user itself. The modules a command loads are loaded first: nobody may not read them."""
    import sqlite3  # noqa: F401
    import contextfold.stores.sqlite  # noqa: F401

    if os.geteuid() != 0:
        yield
        return
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_list_show_and_export_a_session_that_resumes_from_the_export(store_url: str, tmp_path: Path) -> None:
    original = recorded(store_url, "s1")
    recorded(store_url, "s2", rounds=1)
    listed = [json.loads(line) for line in run("sessions", "list", "--store", store_url, "--json").splitlines()]
    assert sorted(entry["session_id"] for entry in listed) == ["s1", "s2"]
    shown = json.loads(run("sessions", "show", "--store", store_url, "s1", "--json"))
    assert shown["items"] == len(original.history) and shown["items_in_view"] == len(original.view())
    assert shown["view_checkpoints"] >= 1
    exported = tmp_path / "exported" / "s1.jsonl"
    exported.parent.mkdir()
    run("sessions", "export", "--store", store_url, "s1", "-o", str(exported))
    assert stat.S_IMODE(exported.stat().st_mode) == 0o600
    resumed = Context.resume(exported.parent, "s1", window_tokens=20_000, policy=POLICY)
    assert resumed.history == original.history
    assert list(resumed.view().items) == list(original.view().items)
    resumed.close()


def test_show_counts_the_view_a_resume_takes_when_the_last_checkpoint_is_unusable(tmp_path: Path) -> None:
    """Found by fuzzing (seed 31): a view checkpoint without its items raised KeyError in ``show``. The view
    shown is the one a resume rebuilds, from the last checkpoint that can be read."""
    folder = tmp_path / "sessions"
    recorded(str(folder), "s1")
    file = folder / "s1.jsonl"
    lines = file.read_bytes().splitlines(keepends=True)
    records = [json.loads(line) for line in lines]
    last = max(n for n, record in enumerate(records) if record.get("kind") == "view")
    del records[last]["data"]["items"], records[last]["crc"]
    lines[last] = to_line(records[last])  # checksummed again: a record that reads, holding no view
    file.write_bytes(b"".join(lines))
    result = CliRunner().invoke(cli, ["sessions", "show", "--store", str(folder), "s1", "--json"])
    assert result.exit_code == 0 and "view checkpoint" in result.stderr  # the damaged one is named
    shown = json.loads(result.stdout)
    resumed = Context.resume(folder, "s1", window_tokens=20_000, policy=POLICY)
    assert shown["view_checkpoints"] >= 2 and shown["items_in_view"] == len(resumed.view())
    resumed.close()


def test_prune_is_explicit_and_keeps_the_view_exact(store_url: str) -> None:
    original = recorded(store_url, "s1")
    result = CliRunner().invoke(cli, ["sessions", "prune", "--store", store_url])
    assert result.exit_code == 2 and "--older-than-days" in result.output  # nothing is pruned by default
    report = json.loads(run("sessions", "prune", "--store", store_url, "--keep-checkpoints", "1", "--json"))
    assert report["deleted_sessions"] == [] and report["pruned_checkpoints"].get("s1", 0) >= 0
    resumed = Context.resume(store_url, "s1", window_tokens=20_000, policy=POLICY)
    assert list(resumed.view().items) == list(original.view().items)
    resumed.close()
    report = json.loads(run("sessions", "prune", "--store", store_url, "--older-than-days", "0", "--json", "--yes"))
    assert report["deleted_sessions"] == ["s1"]
    store = open_store(store_url)
    assert store.sessions() == []
    store.close()


def _sessions(url: str) -> list[str]:
    store = open_store(url)
    try:
        return [info.session_id for info in store.sessions()]
    finally:
        store.close()


def test_prune_lists_with_dry_run_and_asks_before_deleting(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    for session_id in ("s1", "s2"):
        recorded(url, session_id, rounds=1)
    dry = run("sessions", "prune", "--store", url, "--older-than-days", "0", "--dry-run")
    assert "would delete 2 session(s): s1, s2" in dry and _sessions(url) == ["s1", "s2"]
    prune = ["sessions", "prune", "--store", url, "--older-than-days", "0"]
    for answer in ("", "n\n"):  # no answer (a script without --yes), or no: nothing is deleted
        refused = CliRunner().invoke(cli, prune, input=answer)
        assert refused.exit_code == 1 and "delete 2 session(s) (every session of the store): s1, s2?" in refused.output
        assert _sessions(url) == ["s1", "s2"]
    agreed = CliRunner().invoke(cli, prune, input="y\n")
    assert agreed.exit_code == 0 and "deleted 2 session(s): s1, s2" in agreed.output and _sessions(url) == []


def test_a_read_only_sqlite_store_is_listed_shown_and_exported() -> None:
    """As a user who may read the database but not write it or its folder (no -shm file can be made)."""
    with tempfile.TemporaryDirectory() as scratch:  # pytest's own folder is closed to other users
        _read_only_store_is_read(Path(scratch))


def _read_only_store_is_read(top: Path) -> None:
    folder = top / "shared"
    url = f"sqlite:///{folder / 'sessions.db'}"
    recorded(url, "s1", rounds=1)
    (folder / "sessions.db").chmod(0o644)
    for readable in (folder, top):
        readable.chmod(0o755)
    exported = top / "out" / "s1.jsonl"
    exported.parent.mkdir()
    exported.parent.chmod(0o777)
    with another_user():
        listed = run("sessions", "list", "--store", url, "--json")
        shown = run("sessions", "show", "--store", url, "s1", "--json")
        run("sessions", "export", "--store", url, "s1", "-o", str(exported))
    assert [json.loads(line)["session_id"] for line in listed.splitlines()] == ["s1"]
    assert json.loads(shown)["items"] == 3 and exported.read_bytes().count(b"\n") == json.loads(listed)["records"]


def test_inspect_replay_and_compact_take_a_stored_session(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    original = recorded(url, "s1")
    inspected = json.loads(run("inspect", f"{url}#s1", "--json", "--tokenizer", "estimate"))
    assert inspected["items"] == len(original.history)
    totals = json.loads(run("replay", f"{url}#s1", "--window", "20000", "--tokenizer", "estimate", "--json"))
    assert totals["requests"] >= 1
    run("compact", f"{url}#s1", "--window", "20000", "-o", str(tmp_path / "compacted.json"))
    compacted = json.loads((tmp_path / "compacted.json").read_text())
    assert compacted["format"] == "contextfold-session-1" and len(compacted["items"]) < len(original.history)


def test_a_lone_surrogate_a_session_holds_is_printed_and_written_as_its_escape(tmp_path: Path) -> None:
    """Found by fuzzing (seed 31): ``inspect --json`` (and ``sessions show``) on a stored session holding a lone
    surrogate (the library takes one, a transcript keeps it exactly) raised UnicodeEncodeError at the first print.
    Printed or written, it is its JSON escape: the output reads back as the same text."""
    folder = tmp_path / "sessions"
    context = Context(window_tokens=20_000, storage=Storage(store=str(folder), session_id="s1"))
    context.add([Item("user", (Text("read the log \udcff of the build"),))])
    context.close()
    inspected = json.loads(run("inspect", f"{folder}#s1", "--json", "--tokenizer", "estimate"))
    assert inspected["largest"][0]["preview"] == "read the log \udcff of the build"
    run("compact", f"{folder}#s1", "--window", "20000", "-o", str(tmp_path / "compacted.json"))
    compacted = json.loads((tmp_path / "compacted.json").read_text())
    assert compacted["items"][0]["blocks"][0]["text"] == "read the log \udcff of the build"


def test_a_missing_session_or_store_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    result = CliRunner().invoke(cli, ["sessions", "show", "--store", url, "nobody"])
    assert result.exit_code == 2 and "the store does not exist" in result.output
    open_store(url).close()
    result = CliRunner().invoke(cli, ["sessions", "show", "--store", url, "nobody"])
    assert result.exit_code == 2 and "no session 'nobody'" in result.output
    result = CliRunner().invoke(cli, ["inspect", f"{url}#nobody"])
    assert result.exit_code == 2 and "no session 'nobody'" in result.output
    result = CliRunner().invoke(cli, ["inspect", "nowhere.jsonl"])
    assert result.exit_code == 2 and "STORE#session-id" in result.output


def test_a_driver_error_of_several_lines_is_one_line() -> None:
    """Found by fuzzing store URLs: psycopg's refused connection is two lines ('Connection refused', then a tab
    and 'Is the server running...'), and the command printed both. Port 1 on this machine refuses at once."""
    result = CliRunner().invoke(cli, ["sessions", "list", "--store", "postgresql://cf@127.0.0.1:1/postgres"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "; Is the server running" in result.stderr


def test_inspect_reads_a_session_a_writer_holds_and_writes_nothing(tmp_path: Path) -> None:
    """``inspect STORE#ID`` only reads: it used to resume the session as a writer, so a session another
    process was writing was refused as locked (and a store it could not write was "cannot open the transcript
    for appending")."""
    folder = tmp_path / "sessions"
    writer = Context(window_tokens=20_000,
                     storage=Storage(transcript=folder, session_id="s1"))  # holds the session's lock
    try:
        writer.add([{"role": "user", "content": "Fix the bug in f1.py"}])
        before = (folder / "s1.jsonl").read_bytes()
        inspected = json.loads(run("inspect", f"{folder}#s1", "--json", "--tokenizer", "estimate"))
        assert inspected["items"] == 1
        assert (folder / "s1.jsonl").read_bytes() == before
    finally:
        writer.close()
