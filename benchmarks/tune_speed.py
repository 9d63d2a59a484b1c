"""How long ``contextfold tune`` takes on a folder of recorded sessions, cold (nothing kept from an earlier run).

    python benchmarks/tune_speed.py [--files 20] [--window 32000] [--jobs 2] [--budget-minutes 15] [--no-pairs]

The folder is ``--files`` files of ``../shared/corpus`` (every other file in
order of size, tau-bench's file left out since it alone holds 20 chats), linked
into a temporary folder; the sweep is the command's (:func:`contextfold.bench.tune.sweep`,
every policy of the grid and, by default, its pairs), into a temporary output
folder, bounded by ``--budget-minutes``. Prints the wall time, the runs made, the
sessions measured with every policy, whether the budget ran out, and the
cross-validated choice against the default, held out.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from contextfold.bench.frontier import GRID
from contextfold.bench.run import Settings, available_cores, find_sessions
from contextfold.bench.tune import choose_policy, paired, sweep

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("CONTEXTFOLD_SHARED", HERE.parents[1] / "shared"))


def corpus_files(count: int) -> list[Path]:
    """Every other corpus file by size (the smallest first), tau-bench's left out: a spread of sizes and formats."""
    corpus = SHARED / "corpus"
    files = sorted((p for p in corpus.rglob("*") if p.is_file() and p.suffix != ".md" and "tau-bench" not in p.parts),
                   key=lambda p: (p.stat().st_size, str(p)))
    return files[::2][:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--window", type=int, default=32_000)
    parser.add_argument("--jobs", type=int, default=min(2, available_cores()))
    parser.add_argument("--budget-minutes", type=float, default=15.0)
    parser.add_argument("--no-pairs", dest="pairs", action="store_false")
    args = parser.parse_args()
    os.environ.setdefault("CONTEXTFOLD_TOKENIZERS_DIR", str(SHARED / "tokenizers"))
    with tempfile.TemporaryDirectory(prefix="tune-speed-") as scratch:
        folder = Path(scratch) / "sessions"
        for file in corpus_files(args.files):
            link = folder / file.relative_to(SHARED / "corpus")
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(file)
        sessions, _ = find_sessions([folder])
        grid = paired() if args.pairs else GRID
        started = time.monotonic()
        result = sweep(sessions, Settings(args.window, tokenizer="o200k"), Path(scratch) / "out", grid=grid,
                       jobs=args.jobs, budget_s=args.budget_minutes * 60)
        seconds = time.monotonic() - started
    print(f"{args.files} files, {len(sessions)} sessions, {len(grid) + 1} strategies, window {args.window:,}, "
          f"{args.jobs} jobs: {seconds / 60:.1f} min for {result.measured} runs of {result.planned}; "
          f"{len(result.complete)} sessions measured with every policy, {len(result.failed)} failed"
          f"{'; the budget ran out' if result.stopped else ''}")
    if len(result.complete) >= 2:
        tuned = choose_policy(result, args.window, 5)
        held = tuned.found.held_out[tuned.anchor]
        print(f"chosen on every session: {tuned.chosen}; held out (chose {', '.join(held.chosen_names)}): strict "
              f"{share(held.chosen.strict)} at {held.chosen.cost:.3f} against balanced's {share(held.anchor.strict)} "
              f"at {held.anchor.cost:.3f}")


def share(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


if __name__ == "__main__":
    main()
