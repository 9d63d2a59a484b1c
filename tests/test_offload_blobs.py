"""An offloaded output lives in the session's store: a second process that resumes the session reads it back,
and ``sessions prune`` removes it with the session. Real processes, real stores (SQLite, and PostgreSQL and
Redis started by the tests); the JSONL folder keeps the output as a file beside its transcript."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from contextfold import Context, Storage
from contextfold.cli.main import cli
from contextfold.errors import BlobNotFound
from contextfold.pipeline.offload_store import saved_output
from contextfold.stores import open_store

SRC = str(Path(__file__).resolve().parents[1] / "src")
OUTPUT = "".join(f"test_case_{n} PASSED in 0.{n % 97:02d}s\n" for n in range(6_000)) + "the one FAILED line\n"

FIRST = """
import json, sys
from contextfold import Context, Storage
url, output = sys.argv[1], sys.stdin.read()
context = Context(window_tokens=32_000, storage=Storage(store=url, session_id="s1"))
context.add([{"role": "user", "content": "run the tests"},
             {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash",
                                                "input": {"command": "pytest"}}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": output}]}])
kept = context.history.items[-1]
context.close()
print(json.dumps({"blob": kept.provenance.offloaded and kept.provenance.offloaded.blob, "chars": len(kept.tool_result.text)}))
"""

SECOND = """
import json, sys
from contextfold import Context
from contextfold.pipeline.offload_store import saved_output
context = Context.resume(sys.argv[1], "s1", window_tokens=32_000)
(item,) = [item for item in context.history.items if item.provenance.offloaded and item.provenance.offloaded.blob]
print(json.dumps({"whole": saved_output(item, context.transcript), "read": context.read_history(item.id, "6001-6001"),
                  "found": context.search_history("the one FAILED")}))
context.close()
"""


def run(script: str, url: str, stdin: str = "") -> str:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", script, url], input=stdin, capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_a_second_process_reads_the_output_the_first_offloaded_until_the_session_is_pruned(store_url: str) -> None:
    first = json.loads(run(FIRST, store_url, OUTPUT))
    assert first["blob"] and first["chars"] < len(OUTPUT) // 10  # the history holds a preview, the store the output
    second = json.loads(run(SECOND, store_url))
    assert second["whole"] == OUTPUT  # every byte, read from the store by another process
    assert "the one FAILED line" in second["read"] and "test_case_5999" not in second["read"]
    assert "the one FAILED line" in second["found"]
    pruned = CliRunner().invoke(cli, ["sessions", "prune", "--store", store_url, "--older-than-days", "0", "--yes"])
    assert pruned.exit_code == 0, pruned.output
    store = open_store(store_url)
    try:
        with pytest.raises(BlobNotFound):
            store.get_blob("s1", first["blob"])
        assert _blobs_left(store_url, store) == 0
    finally:
        store.close()


def _blobs_left(url: str, store) -> int:
    """Blobs the store still holds for any session, counted where the backend keeps them."""
    if url.startswith("redis"):
        return len(store._client.keys("contextfold:blobs:*"))
    if url.startswith(("sqlite", "postgresql")):
        with store._transaction(block=False) as cursor:
            cursor.execute("SELECT COUNT(*) FROM contextfold_blobs")
            return int(cursor.fetchone()[0])
    return len(list(Path(url.removeprefix("jsonl:///").removeprefix("jsonl://")).glob("*-results/*")))


def add_one_run(context: Context) -> None:
    """A task, one bash call and its oversized output (:data:`OUTPUT`), which the context offloads; the request
    offers the history tools, so the preview names the output's ref."""
    context.add([{"role": "user", "content": "run"},
                 {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": OUTPUT}]}],
                tools=context.history_tools("anthropic"))


def test_a_preview_in_a_shared_store_names_the_ref_and_read_history_reads_the_blob(shared_store_url: str) -> None:
    context = Context(window_tokens=32_000, storage=Storage(store=shared_store_url, session_id="s1"))
    try:
        add_one_run(context)
        item = context.history.items[-1]
        assert item.provenance.offloaded.saved_to is None and f'read_history("{item.id}"' in item.tool_result.text
        assert saved_output(item, context.transcript) == OUTPUT
        assert "the one FAILED line" in context.read_history(item.id, "6001-6001")
    finally:
        context.close()


def test_an_output_the_store_refuses_is_kept_whole_and_never_named(shared_store_url: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A blob that could not be made durable is never referred to: the output stays in the item."""
    from contextfold.errors import StoreUnavailable
    from contextfold.stores import StoredSession

    def refuse(self, data: bytes) -> str:
        raise StoreUnavailable("the store refused the blob")

    monkeypatch.setattr(StoredSession, "put_blob", refuse)
    context = Context(window_tokens=32_000, storage=Storage(store=shared_store_url, session_id="s1"))
    try:
        add_one_run(context)
        item = context.history.items[-1]
        assert item.provenance.offloaded is None and item.tool_result.text == OUTPUT
    finally:
        context.close()
