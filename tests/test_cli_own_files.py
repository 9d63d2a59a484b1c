"""The CLI reads the files contextfold itself writes, and reading a store never creates one.

``inspect`` takes a JSONL store's transcript and the file ``sessions export``
writes (both contextfold's transcript format, which no importer reads); a
``sessions`` command on a store that is not there says so with a non-zero
exit, and leaves no file or folder behind, instead of creating an empty store
and listing 0 sessions.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from contextfold import Context, Storage
from contextfold.cli import cli

TASK = "Fix the failing test in parser.py"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def recorded(store: str) -> Context:
    context = Context("claude-sonnet-4-6", storage=Storage(store=store, session_id="s1"))
    context.add([{"role": "user", "content": TASK}], system="You are a coding agent.")
    context.add([{"role": "assistant", "content": "I will read parser.py first."}])
    context.close()
    return context


def inspected(path: Path) -> dict:
    result = invoke("inspect", str(path), "--json", "--tokenizer", "estimate")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_inspect_reads_a_jsonl_store_transcript(tmp_path: Path) -> None:
    recorded(str(tmp_path / "sessions"))
    row = inspected(tmp_path / "sessions" / "s1.jsonl")
    assert row["items"] == 2 and row["items_by_kind"] == {"user": 1, "assistant": 1}
    assert any(TASK[:20] in i["preview"] for i in row["largest"])


def test_inspect_reads_what_sessions_export_writes(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    recorded(store)
    exported = tmp_path / "exported.jsonl"
    result = invoke("sessions", "export", "--store", store, "s1", "-o", str(exported))
    assert result.exit_code == 0, result.output
    row = inspected(exported)
    assert row["items"] == 2 and row["items_by_kind"] == {"user": 1, "assistant": 1}


@pytest.mark.parametrize("command", [("list",), ("show", "s1"), ("export", "s1")])
@pytest.mark.parametrize("kind", ["sqlite", "folder"])
def test_a_sessions_command_on_a_missing_store_fails_and_creates_nothing(tmp_path: Path, command: tuple[str, ...],
                                                                        kind: str) -> None:
    missing = tmp_path / "no" / "such" / ("x.db" if kind == "sqlite" else "sessions")
    store = f"sqlite:///{missing}" if kind == "sqlite" else str(missing)
    result = invoke("sessions", command[0], "--store", store, *command[1:])
    assert result.exit_code != 0
    assert "does not exist" in result.output and "0 session" not in result.output
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("kind", ["sqlite", "folder"])
def test_sessions_show_reads_a_live_session_without_taking_it(tmp_path: Path, kind: str) -> None:
    """``show`` is a reader: a session another Context is writing (a JSONL folder's lock held) is shown,
    and its file is left byte for byte as it was."""
    store = f"sqlite:///{tmp_path / 'sessions.db'}" if kind == "sqlite" else str(tmp_path / "sessions")
    live = Context("claude-sonnet-4-6", storage=Storage(store=store, session_id="s1"))
    live.add([{"role": "user", "content": TASK}], system="You are a coding agent.")
    file = tmp_path / "sessions.db" if kind == "sqlite" else tmp_path / "sessions" / "s1.jsonl"
    before = file.read_bytes()
    result = invoke("sessions", "show", "--store", store, "s1", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["items"] == 1
    assert file.read_bytes() == before
    live.add([{"role": "assistant", "content": "I will read parser.py first."}])  # the writer goes on
    live.close()
    assert json.loads(invoke("sessions", "show", "--store", store, "s1", "--json").stdout)["items"] == 2
