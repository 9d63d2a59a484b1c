"""``contextfold sessions``: the sessions of a store, listed, shown, exported and pruned.

``--store`` is a folder of transcripts or a store URL (``sqlite:///sessions.db``,
``postgresql://...``, ``redis://...``); it can come from ``CONTEXTFOLD_STORE``
instead, so that a password need not be typed on a command line (where shell
history keeps it). Nothing here changes a session except ``prune``, and that
only as its options say.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from contextlib import closing
from datetime import datetime, timezone
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from ..context.timeline import Timeline
from ..conversation import JSONValue
from ..private_files import replace_file
from ..stores import open_store, prune
from ..stores.base import VIEW_EVENT
from ..pipeline.receipts import stored_receipts
from ..stores.records import restore, to_line
from ..stores.transcript import Restored
from .options import existing, reports_errors

store_option = click.option(
    "--store", "location", envvar="CONTEXTFOLD_STORE", required=True, metavar="URL",
    help="A folder of transcripts or a store URL (sqlite:///, postgresql://, redis://); env CONTEXTFOLD_STORE.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="JSON instead of a table.")


@click.group("sessions")
def sessions() -> None:
    """The sessions of a store: list, show, export, prune."""


@sessions.command("list")
@store_option
@json_option
@reports_errors
def list_sessions(location: str, as_json: bool) -> None:
    """Every session, oldest update first: when it was created and last written, how many records."""
    with closing(open_store(existing(location), read_only=True)) as store:
        infos = store.sessions()
        name = store.url
    if as_json:
        for info in infos:
            click.echo(json.dumps({"session_id": info.session_id, "created": info.created, "updated": info.updated,
                                   "records": info.records}))
        return
    table = Table("session", "created", "updated", "records", title=f"{name}: {len(infos)} session(s)",
                  title_justify="left")
    for info in infos:
        table.add_row(info.session_id, _when(info.created), _when(info.updated), f"{info.records:,}")
    Console().print(table)


@sessions.command("show")
@store_option
@click.argument("session_id")
@json_option
@click.option("--receipts", "with_receipts", is_flag=True,
              help="Also each compaction's receipt: what it took out, and the read_history call that reads each back.")
@reports_errors
def show(location: str, session_id: str, as_json: bool, with_receipts: bool) -> None:
    """What one session holds: items by role, events by kind, its view checkpoints and current view."""
    restored = _restored(location, session_id)
    figures = describe(restored, session_id)
    receipts = stored_receipts(restored.events) if with_receipts else []
    if as_json:
        click.echo(json.dumps({**figures, "receipts": [r.to_dict() for r in receipts]} if with_receipts else figures,
                              ensure_ascii=False))
        return
    table = Table("figure", "value", title=f"session {session_id}", title_justify="left")
    for key, value in figures.items():
        shown = ", ".join(f"{k} {v:,}" for k, v in value.items()) if isinstance(value, dict) else str(value)
        table.add_row(key.replace("_", " "), shown)
    console = Console()
    console.print(table)
    if with_receipts:
        console.print(f"{len(receipts)} compaction receipt(s)", highlight=False)
    for number, receipt in enumerate(receipts, 1):
        console.print(f"\n[bold]receipt {number}[/]", highlight=False)
        for line in receipt.lines(limit=1_000):
            console.print(line, markup=False, highlight=False)


def _restored(location: str, session_id: str) -> Restored:
    with closing(open_store(existing(location), read_only=True)) as store:  # a live session's writer keeps its lock
        return restore(f"{store.url}#{session_id}", store.read(session_id))


def describe(restored: Restored, session_id: str) -> dict[str, JSONValue]:
    """The figures ``show`` prints."""
    history = restored.conversation
    checkpoints = [e for e in restored.events if e.kind == VIEW_EVENT]
    timeline = Timeline()  # the view a resume takes: from the last usable checkpoint (a damaged one is passed over)
    timeline.restore(restored, session_id)
    return {
        "session_id": session_id,
        "created": _when(restored.report.created),
        "records": restored.report.records,
        "items": len(history),
        "items_by_role": dict(Counter(item.role for item in history)),
        "events_by_kind": dict(Counter(event.kind for event in restored.events)),
        "view_checkpoints": len(checkpoints),
        "items_in_view": len(timeline.view),
        "system_prompt_items": len(history.header.system),
        "tools": len(history.header.tools),
    }


@sessions.command("export")
@store_option
@click.argument("session_id")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write here (owner-only, replaced atomically) instead of standard output.")
@reports_errors
def export(location: str, session_id: str, output: Path | None) -> None:
    """The session as a transcript file: every record, one JSON line each, exactly as stored.

    Put it in a folder as ``<session_id>.jsonl`` and it is a session of the JSONL store.
    """
    with closing(open_store(existing(location), read_only=True)) as store:
        data = b"".join(to_line(record) for record in store.read(session_id))
    if output is None:
        sys.stdout.buffer.write(data)  # click 8.5 deprecates get_binary_stream (its stub is no longer callable)
        return
    with replace_file(output) as file:
        file.write(data)


@sessions.command("prune")
@store_option
@click.option("--older-than-days", type=click.FloatRange(min=0), default=None,
              help="Delete the sessions not written for this many days.")
@click.option("--keep-checkpoints", type=click.IntRange(min=1), default=None,
              help="In every other session, empty all view checkpoints but the last K (the view stays exact).")
@click.option("--dry-run", is_flag=True, help="Say what would be deleted and emptied; change nothing.")
@click.option("-y", "--yes", is_flag=True, help="Delete sessions without asking first (for scripts).")
@json_option
@reports_errors
def prune_sessions(location: str, older_than_days: float | None, keep_checkpoints: int | None, dry_run: bool,
                   yes: bool, as_json: bool) -> None:
    """Retention, run when asked and only then: delete old sessions, empty old checkpoints.

    Deleting sessions asks first, naming them (``--yes`` does not ask); ``--dry-run`` only says what would go.
    """
    if older_than_days is None and keep_checkpoints is None:
        raise click.UsageError("say what to prune: --older-than-days N, --keep-checkpoints K, or both")
    with closing(open_store(existing(location))) as store:
        now = time.time()  # the same cutoff for the plan and the prune: nothing is deleted that was not asked about
        report = prune(store, older_than_days=older_than_days, keep_checkpoints=keep_checkpoints, now=now, dry_run=True)
        if not dry_run:
            if report.deleted_sessions and not yes:
                _confirm_deleting(report.deleted_sessions, len(store.sessions()))
            report = prune(store, older_than_days=older_than_days, keep_checkpoints=keep_checkpoints, now=now)
    if as_json:
        click.echo(json.dumps({"deleted_sessions": report.deleted_sessions,
                               "pruned_checkpoints": report.pruned_checkpoints, "dry_run": dry_run}))
        return
    verbs = ("would delete", "would empty") if dry_run else ("deleted", "emptied")
    click.echo(f"{verbs[0]} {len(report.deleted_sessions)} session(s)"
               + (f": {', '.join(report.deleted_sessions)}" if report.deleted_sessions else ""))
    emptied = sum(report.pruned_checkpoints.values())
    click.echo(f"{verbs[1]} {emptied} view checkpoint(s) in {len(report.pruned_checkpoints)} session(s)")


def _confirm_deleting(doomed: list[str], total: int) -> None:
    """Ask before deleting sessions, naming a few; no answer (a script without ``--yes``) deletes nothing."""
    every = " (every session of the store)" if len(doomed) == total else f" of {total}"
    named = ", ".join(doomed[:5]) + (f" and {len(doomed) - 5} more" if len(doomed) > 5 else "")
    click.confirm(f"delete {len(doomed)} session(s){every}: {named}? (--yes skips this question)",
                  default=False, abort=True, err=True)


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
