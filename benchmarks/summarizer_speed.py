"""How fast the extractive summarizer is, and how much it shrinks what it summarizes.

Speed: the summary of a 500-message span must take at most 20 ms. Measured
on the first 500 items of the synthetic session and of the largest
mini-swe-agent recording, at the default summary target, with the heuristic
counter the pipeline uses (and exact o200k counts when the offline file is at
hand); the figure is the median of ``--runs`` runs, the worst run beside it.

Compression: the issue wants an automatic compaction to shrink the span it
summarizes by at least 85 %. For every corpus conversation, the span is what
an automatic compaction would summarize, everything before the most recent
quarter of the tokens (cut between rounds), summarized at the default target;
the summary is counted with the preamble the pipeline puts in front of it.
A second column caps the target at 15 % of the span, which is what the
pipeline should ask for on small spans (the summarizer fills what it is
given when the facts are there). Spans under ``--min-span`` tokens are left
out: no automatic compaction fires on them.

    python benchmarks/summarizer_speed.py [--corpus DIR] [--tokenizers DIR] [--runs N] [--min-span TOKENS]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from contextfold import importers
from contextfold.conversation import Conversation, Item
from contextfold.errors import TokenizerUnavailable
from contextfold.pipeline.base import Policy
from contextfold.summarizers import ExtractiveSummarizer, SummaryRequest, summary_preamble
from contextfold.synthetic import generate_session
from contextfold.tokens import Estimator, TiktokenText, heuristic_tokens

SHARED = Path(os.environ.get("CONTEXTFOLD_SHARED", Path(__file__).resolve().parents[2] / "shared"))
SPAN_ITEMS = 500
SPEED_BAR_MS = 20.0
SHRINK_BAR = 0.85
KEPT_TAIL_SHARE = 0.25
CAPPED_SHARE = 0.15
TARGET_TOKENS = Policy().summary_target_tokens
SUMMARIZER = ExtractiveSummarizer()


def timed(items: Sequence[Item], conversation: Conversation, count: Callable[[str], int], runs: int) -> tuple[float, float]:
    """Median and worst milliseconds to summarize ``items``."""
    request = SummaryRequest(items, conversation.header, TARGET_TOKENS, count)
    SUMMARIZER.summarize(request)  # warm caches of imports and compiled patterns
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        SUMMARIZER.summarize(request)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), max(times)


def summarized_span(conversation: Conversation, estimator: Estimator) -> tuple[list[Item], int]:
    """The items an automatic compaction would summarize (all but the last quarter of tokens), and their tokens."""
    sizes = [estimator.item(item) for item in conversation.items]
    keep_from = len(sizes)
    tail = 0
    for start, end in reversed(conversation.units()):
        tail += sum(sizes[start:end])
        if tail > KEPT_TAIL_SHARE * sum(sizes):
            break
        keep_from = start
    return list(conversation.items[:keep_from]), sum(sizes[:keep_from])


def speed(corpus: Path, tokenizers: Path, runs: int) -> None:
    sessions = [("synthetic", generate_session())]
    recordings = sorted((corpus / "mini-swe-agent").glob("*.traj.json"), key=lambda p: p.stat().st_size)
    if recordings:
        sessions.append((f"mini-swe-agent/{recordings[-1].name}", importers.load(recordings[-1])[0]))
    counters: list[tuple[str, Callable[[str], int]]] = [("heuristic", heuristic_tokens)]
    try:
        counters.append(("o200k", TiktokenText("o200k_base", tokenizers)))
    except TokenizerUnavailable as error:
        print(f"(exact o200k counts skipped: {error})")
    print(f"Speed: summary of the first {SPAN_ITEMS} items at a {TARGET_TOKENS:,}-token target (bar {SPEED_BAR_MS:.0f} ms)")
    for name, conversation in sessions:
        items = conversation.items[:SPAN_ITEMS]
        for counter_name, count in counters:
            median, worst = timed(items, conversation, count, runs)
            verdict = "ok" if median <= SPEED_BAR_MS else "OVER"
            print(f"  {name:<52} {len(items):>4} items  {counter_name:<9} {median:6.1f} ms median, {worst:6.1f} ms worst  {verdict}")


def compression(corpus: Path, min_span: int) -> None:
    estimator = Estimator()
    preamble = heuristic_tokens(summary_preamble())
    print(f"\nCompression at automatic compactions (span = all but the last {KEPT_TAIL_SHARE:.0%} of tokens, "
          f"target {TARGET_TOKENS:,}, bar {SHRINK_BAR:.0%})")
    print(f"  {'session':<58} {'items':>5} {'span tok':>9} {'summary':>8} {'shrink':>7} {'capped':>7}")
    shrinks: list[float] = []
    capped: list[float] = []
    for path in sorted(p for p in corpus.rglob("*") if p.is_file() and p.name != "SOURCES.md"):
        for index, conversation in enumerate(importers.load(path)):
            span, span_tokens = summarized_span(conversation, estimator)
            if span_tokens < min_span:
                continue
            figures = []
            for target in (TARGET_TOKENS, min(TARGET_TOKENS, int(CAPPED_SHARE * span_tokens))):
                result = SUMMARIZER.summarize(SummaryRequest(span, conversation.header, target, heuristic_tokens))
                figures.append(1 - (heuristic_tokens(result.text) + preamble) / span_tokens)
            shrinks.append(figures[0])
            capped.append(figures[1])
            name = f"{path.relative_to(corpus)}" + (f" #{index}" if index else "")
            summary = round((1 - figures[0]) * span_tokens)
            print(f"  {name[-58:]:<58} {len(span):>5} {span_tokens:>9,} {summary:>8,} {figures[0]:>7.1%} {figures[1]:>7.1%}")
    for label, values in (("target", shrinks), ("capped target", capped)):
        if values:
            print(f"  {label}: {len(values)} spans, median shrink {statistics.median(values):.1%}, "
                  f"smallest {min(values):.1%}; {sum(v >= SHRINK_BAR for v in values)} at or above the bar")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=SHARED / "corpus")
    parser.add_argument("--tokenizers", type=Path, default=SHARED / "tokenizers")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--min-span", type=int, default=10_000, help="smallest span (tokens) to measure compression on")
    args = parser.parse_args()
    speed(args.corpus, args.tokenizers, args.runs)
    if args.corpus.is_dir():
        compression(args.corpus, args.min_span)
    else:
        print(f"\n(compression skipped: no corpus at {args.corpus})")


if __name__ == "__main__":
    main()
