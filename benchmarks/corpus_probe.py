"""The gaming probe, the window and pairing checks and the stub check, on every corpus session.

    python benchmarks/corpus_probe.py [--windows 32000,16000,8000] [--probe-windows 32000,16000]
                                      [--strategy default] [--per-file 1] [--only SUBSTRING]

Each session the shared referee reads (``../shared/corpus``, or ``CONTEXTFOLD_SHARED``; the first
``--per-file`` conversations of a file) is replayed through ``--strategy`` at each window with its
requests dumped, and the dump is checked by the referee, not by our own code:

* requests over the window and pairing violations (``referee.measure``);
* at the ``--probe-windows``, the gaming probe: strict recall of the dump against strict recall of
  the same dump with the referee's bare identifier list after each summary (``referee.strict.game``);
  a measure that such a list moves (by ``PROBE_TOLERANCE`` or more) does not measure usable context;
* every summary and survival note the dump carries, for a "… N more" stub (a heading over a count).

A replay refused with the typed ``ContextOverflow`` ("does not fit") is reported as such. Prints one
Markdown row per session and window, then the totals; exits 1 if any bar is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the referee's sessions and ours of each

from referee_oracle import matching, referee_importable, referee_sessions

from contextfold import importers
from contextfold.errors import ContextOverflow
from contextfold.replay import StrategyConfig, replay, strategies
from contextfold.tokens import exact_estimator

SHARED = Path(os.environ.get("CONTEXTFOLD_SHARED", HERE.parents[1] / "shared"))
PROBE_TOLERANCE = 0.005
STUB = re.compile(r"(?:…|\.\.\.)\s*\(?\d[\d,]*\s+(?:more|earlier)\b")
"""A count standing in for content: ``… 30 more identifiers``, ``- … 6 earlier actions``."""
ADDED = ("This session is being continued", "[contextfold:")
"""How the messages contextfold writes into a request begin (summaries, notes, restored files)."""


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content or () if isinstance(part, dict))


def added_texts(requests: list[dict[str, Any]]) -> list[str]:
    """Every distinct message contextfold wrote into the requests (a summary repeats in each later request)."""
    seen: dict[str, None] = {}
    for request in requests:
        for message in request["messages"]:
            text = message_text(message)
            if text.lstrip().startswith(ADDED):
                seen.setdefault(text, None)
    return list(seen)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", default="32000,16000,8000")
    parser.add_argument("--probe-windows", default="32000,16000")
    parser.add_argument("--strategy", default="default")
    parser.add_argument("--per-file", type=int, default=1)
    parser.add_argument("--only", default="", help="only the sessions whose file path holds this")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    args = parser.parse_args()
    if not referee_importable(SHARED):
        return 2
    from referee import cli, loaders, measure, strict

    tokenizer = exact_estimator("o200k_base", SHARED / "tokenizers")
    probe_windows = {int(w) for w in args.probe_windows.split(",")}
    rows: list[dict[str, Any]] = []
    print("| session | window | over window | pairing violations | summaries | stubs | lists added | strict | gamed | delta | s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        dump = Path(folder) / "requests.jsonl"
        for file, index in referee_sessions(SHARED, args.per_file):
            if args.only not in file:
                continue
            trajectory = loaders.load_all(SHARED / "corpus" / file)[index]
            conversation = matching(importers.load(SHARED / "corpus" / file), trajectory)
            session = strict.Session(trajectory)
            for window in map(int, args.windows.split(",")):
                started = time.perf_counter()
                row: dict[str, Any] = {"session": f"{file}#{index}", "window": window}
                config = StrategyConfig(window)
                try:
                    replay(conversation, strategies.create(args.strategy, config), config, tokenizer=tokenizer,
                           requests_path=dump)
                except ContextOverflow as refusal:
                    row["refused"] = str(refusal)
                    rows.append(row)
                    print(f"| {row['session']} | {window:,} | refused: {refusal} |", flush=True)
                    continue
                requests = cli.read_requests(str(dump))
                measured = measure.measure(trajectory, requests, window)
                texts = added_texts(requests)
                summaries = [t for t in texts if t.lstrip().startswith(ADDED[0])]
                stubs = [m.group() for t in texts for m in STUB.finditer(t)]
                row.update(over=measured["overflow_count"], violations=measured["pairing_violations"],
                           summaries=len(summaries), added=len(texts), stubs=stubs)
                if window in probe_windows:
                    row["strict"] = strict.score(session, requests)["strict"]
                    gamed = strict.game(requests, session)
                    row["notes"] = sum(len(g["messages"]) - len(r["messages"]) for g, r in zip(gamed, requests))
                    row["gamed"] = strict.score(session, gamed)["strict"]
                    row["delta"] = None if row["strict"] is None else row["gamed"] - row["strict"]
                row["seconds"] = round(time.perf_counter() - started, 1)
                rows.append(row)
                print(f"| {row['session']} | {window:,} | {row['over']} | {row['violations']} | {len(summaries)} | "
                      f"{len(stubs)} | {row.get('notes', '–')} | {show(row.get('strict'))} | {show(row.get('gamed'))} | "
                      f"{show(row.get('delta'), '+.4f')} | {row['seconds']} |", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return report(rows)


def report(rows: list[dict[str, Any]]) -> int:
    """The totals, and whether every bar was met (exit status 0) or not (1)."""
    done = [r for r in rows if "refused" not in r]
    probed = [r for r in done if r.get("delta") is not None]
    moved = [r for r in probed if abs(r["delta"]) >= PROBE_TOLERANCE]
    over = sum(r["over"] for r in done)
    violations = sum(r["violations"] for r in done)
    stubs = sum(len(r["stubs"]) for r in done)
    largest = max((abs(r["delta"]) for r in probed), default=0.0)
    print(f"\n{len(rows)} replays ({len(rows) - len(done)} refused as not fitting): {over} requests over the window, "
          f"{violations} pairing violations, {stubs} stubs in {sum(r['added'] for r in done)} messages contextfold wrote; "
          f"gaming probe on {len(probed)}: largest |delta| {largest:.4f}, {len(moved)} at or over {PROBE_TOLERANCE}")
    for r in moved:
        print(f"  moved: {r['session']} at {r['window']:,}: {r['strict']:.4f} -> {r['gamed']:.4f}")
    return 0 if not (over or violations or stubs or moved) else 1


def show(value: float | None, spec: str = ".3f") -> str:
    return "–" if value is None else format(value, spec)


if __name__ == "__main__":
    sys.exit(main())
