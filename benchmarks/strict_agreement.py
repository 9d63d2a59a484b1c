"""Strict recall, ours against the shared referee's, on every corpus session.

    python benchmarks/strict_agreement.py [--windows 32000,16000] [--strategy default] [--per-file 1]

Each session the referee reads (``../shared/corpus``, or ``CONTEXTFOLD_SHARED``; the first
``--per-file`` conversations of a file) is replayed through ``--strategy`` at each window with its
requests dumped; the dump is scored by the referee's ``strict.py`` and compared with the figures
the replay reported. Prints a Markdown table (ours, the referee's, the largest difference over
strict, kwic, kwic far, line, line far, outcome and outcome far) and exits 1 if any differs by
more than 0.01. The suite checks one strategy and window per session
(``tests/test_replay_strict.py``); this is the full sweep.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the referee's sessions and ours of each

from referee_oracle import matching, referee_importable, referee_sessions

from contextfold import importers
from contextfold.replay import StrategyConfig, replay, strategies
from contextfold.replay.strict import MEASURES
from contextfold.tokens import exact_estimator

SHARED = Path(os.environ.get("CONTEXTFOLD_SHARED", HERE.parents[1] / "shared"))
TOLERANCE = 0.01


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", default="32000,16000")
    parser.add_argument("--strategy", default="default")
    parser.add_argument("--per-file", type=int, default=1)
    args = parser.parse_args()
    if not referee_importable(SHARED):
        return 2
    from referee import cli, loaders, strict

    tokenizer = exact_estimator("o200k_base", SHARED / "tokenizers")
    worst = 0.0
    print("| session | window | strict (ours) | strict (referee) | kwic far (ours / referee) | largest difference |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        dump = Path(folder) / "requests.jsonl"
        for file, index in referee_sessions(SHARED, args.per_file):
            trajectory = loaders.load_all(SHARED / "corpus" / file)[index]
            conversation = matching(importers.load(SHARED / "corpus" / file), trajectory)
            for window in map(int, args.windows.split(",")):
                config = StrategyConfig(window)
                ours = replay(conversation, strategies.create(args.strategy, config), config, tokenizer=tokenizer,
                              requests_path=dump).totals
                theirs = strict.strict(trajectory, cli.read_requests(str(dump)))
                mine = {m: getattr(ours.strict, m) for m in MEASURES}
                gaps = [abs(mine[m] - theirs[m]) if mine[m] is not None and theirs[m] is not None
                        else (0.0 if mine[m] is theirs[m] is None else 1.0) for m in MEASURES]
                worst = max(worst, *gaps)
                print(f"| {file}#{index} | {window:,} | {show(mine['strict'])} | {show(theirs['strict'])} | "
                      f"{show(mine['kwic_far'])} / {show(theirs['kwic_far'])} | {max(gaps):.4f} |", flush=True)
    print(f"\nlargest difference over every session and measure: {worst:.4f} (tolerance {TOLERANCE})")
    return 0 if worst <= TOLERANCE else 1


def show(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


if __name__ == "__main__":
    sys.exit(main())
