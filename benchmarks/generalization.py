"""Generalization: the default strategy, per session format, on the sessions no knob was tuned on.

    python benchmarks/generalization.py [--windows 32000,16000] [--per-format 3] [--formats claude-code,aider]

The default policy's knobs were set by measuring the corpus as it was when
they were set: the first :data:`TUNED_ROWS` files of ``../shared/corpus``
(``SOURCES.md`` rows 1-21; see README, "How it compares"). The harness
table of :mod:`contextfold.reading` was not tuned at all: each rule is a
format's documented fixed text. A figure on sessions the knobs were tuned
on says little about a session never seen; so for each format this prints
the figures of its *held-out* sessions (rows after 21: none were looked at
when a knob was set) beside those of its tuned-on sessions, each the mean
of up to ``--per-format`` sessions:

strict, kwic far, outcome
    strict recall (:mod:`contextfold.replay.strict`), the referee's definitions;
asked
    the person's first and latest words held (:mod:`contextfold.replay.strict`);
cost
    the replay's cost with summaries priced as LLM calls, over the full history's;
lint
    the summary lint's counts summed (:mod:`contextfold.replay.lint`): each should be 0.

A format with no held-out session says so: its figures are tuned-on figures
and claim nothing about generalization. The sessions are the first of each
format in path order (deterministic), one conversation per file (a
tau-bench file's first ``--per-format`` conversations). Prints a Markdown
table; ``--json FILE`` also writes every session's figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from contextfold import importers
from contextfold.errors import UnknownSessionFormat
from contextfold.replay import StrategyConfig, replay, strategies
from contextfold.replay.lint import SummaryLint
from contextfold.tokens import exact_estimator

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("CONTEXTFOLD_SHARED", HERE.parents[1] / "shared"))
TUNED_ROWS = 21
"""``SOURCES.md`` rows the default policy's knobs were measured on when they were set (the corpus of 21 files)."""
_ROW = re.compile(r"^\| (\d+) \| `([^`]+)` \|", re.MULTILINE)
_FIGURES = ("strict", "kwic_far", "outcome", "asked", "cost")


@dataclass(frozen=True)
class Figures:
    """One session's figures at one window."""

    session: str
    format: str
    window: int
    held_out: bool
    strict: float | None
    kwic_far: float | None
    outcome: float | None
    asked: float | None
    cost: float | None
    lint: SummaryLint


def corpus_rows(corpus: Path) -> dict[str, int]:
    """Each corpus file (relative path) with its row in ``SOURCES.md`` (the order files joined the corpus)."""
    return {path: int(number) for number, path in _ROW.findall((corpus / "SOURCES.md").read_text(encoding="utf-8"))}


def sessions(corpus: Path, per_format: int, formats: Sequence[str]) -> list[tuple[str, str, int, bool]]:
    """``(file, format, conversation index, held out)`` for up to ``per_format`` held-out and as many tuned-on
    sessions of each format (all formats when ``formats`` is empty)."""
    rows = corpus_rows(corpus)
    picked: dict[tuple[str, bool], list[tuple[str, str, int, bool]]] = {}
    for file, row in sorted(rows.items(), key=lambda pair: pair[0]):
        try:
            kind = importers.detect(corpus / file)
        except UnknownSessionFormat:
            continue
        if formats and kind not in formats:
            continue
        held = row > TUNED_ROWS
        chosen = picked.setdefault((kind, held), [])
        indexes = range(per_format) if kind == "tau-bench" else range(1)
        chosen += [(file, kind, index, held) for index in indexes if len(chosen) < per_format]
    return [session for key in sorted(picked) for session in picked[key]]


def measure(corpus: Path, file: str, kind: str, index: int, held: bool, window: int) -> Figures:
    """The default strategy's figures on one session, its cost relative to the full history's."""
    conversation = importers.load(corpus / file)[index]
    config = StrategyConfig(window)
    tokenizer = exact_estimator("o200k_base", SHARED / "tokenizers")
    ours = replay(conversation, strategies.create("default", config), config, tokenizer=tokenizer, session=file).totals
    full = replay(conversation, strategies.create("none", config), config, tokenizer=tokenizer, session=file).totals
    return Figures(file, kind, window, held, ours.strict.strict, ours.strict.kwic_far, ours.strict.outcome,
                   ours.strict.asked, ours.cost_llm_usd / full.cost_usd if full.cost_usd else None, ours.lint)


def mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def table(rows: Sequence[Figures]) -> str:
    """Per format and window: held-out figures, then tuned-on ones."""
    lines = ["| format | window | sessions | " + " | ".join(_FIGURES) + " | lint (harness, done, closed, cuts) |",
             "|---|---:|---|" + "---:|" * len(_FIGURES) + "---|"]
    groups: dict[tuple[str, int, bool], list[Figures]] = {}
    for row in rows:
        groups.setdefault((row.format, row.window, not row.held_out), []).append(row)
    for (kind, window, tuned), members in sorted(groups.items()):
        lint = sum((m.lint for m in members), SummaryLint())
        shown = [mean([getattr(m, name) for m in members]) for name in _FIGURES]
        cells = " | ".join("–" if v is None else f"{v:.3f}" for v in shown)
        which = f"{len(members)} {'tuned on' if tuned else 'held out'}"
        lines.append(f"| {kind} | {window:,} | {which} | {cells} | {lint.harness_quoted}, {lint.next_step_done}, "
                     f"{lint.closed_error_open}, {lint.mid_word_cuts} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", default="32000,16000")
    parser.add_argument("--per-format", type=int, default=3)
    parser.add_argument("--formats", default="", help="comma-separated importer formats (default: all)")
    parser.add_argument("--json", type=Path, help="write every session's figures here")
    args = parser.parse_args()
    corpus = SHARED / "corpus"
    if not (corpus / "SOURCES.md").exists():
        print(f"no corpus at {corpus} (set CONTEXTFOLD_SHARED)", file=sys.stderr)
        return 2
    formats = [f for f in args.formats.split(",") if f]
    rows = []
    for file, kind, index, held in sessions(corpus, args.per_format, formats):
        for window in map(int, args.windows.split(",")):
            rows.append(measure(corpus, file, kind, index, held, window))
            print(f"{file}#{index} {window}: strict {rows[-1].strict} asked {rows[-1].asked}", file=sys.stderr, flush=True)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
