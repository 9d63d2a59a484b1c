"""Replay every corpus session through strategies and print the issue's bars, side by side.

    python benchmarks/replay_corpus.py [--corpus ../shared/corpus] [--windows 32000 128000]
                                       [--strategies none default] [--tau-bench-limit 20] [--json]

Per window it prints, for each strategy, the total cost with prompt-cache
pricing and without caching, the cost with every summary priced as if an LLM
had written it, requests over the window, invariant violations, mean
survival, forward-reference recall and far recall (the mean of the sessions'),
the worst request's recall, strict recall with its keyword-in-context far and
outcome parts (the mean of the sessions', :mod:`contextfold.replay.strict`), and the cost ratios against ``none`` (priced as if
its oversized requests had been accepted). Token counts use exact o200k (offline files from
$CONTEXTFOLD_TOKENIZERS_DIR or ../shared/tokenizers).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from contextfold.importers import load
from contextfold.replay import replay
from contextfold.replay.base import StrategyConfig
from contextfold.replay.recall import SessionRecall, mean_recall
from contextfold.replay.strategies import create
from contextfold.replay.strict import SessionStrict, mean_strict
from contextfold.tokens import exact_estimator

HERE = Path(__file__).resolve().parent


def sessions(corpus: Path, tau_limit: int) -> list[tuple[str, object]]:
    found = []
    for path in sorted(p for p in corpus.rglob("*") if p.is_file() and p.name != "SOURCES.md"):
        conversations = load(path)
        if "tau-bench" in str(path):
            conversations = conversations[:tau_limit]
        for number, conversation in enumerate(conversations):
            if any(item.role == "assistant" for item in conversation):
                found.append((f"{path.relative_to(corpus)}#{number}", conversation))
    return found


def compaction_shrinks(strategy: object) -> list[float]:
    """For each automatic summary the strategy made: 1 - summary tokens / summarized span tokens."""
    context = getattr(strategy, "context", None)
    if context is None:
        return []
    return [
        1 - e.data["summary_tokens"] / e.data["span_tokens"]
        for e in context.events
        if e.action == "summarized" and e.data.get("span_tokens")
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=HERE.parent.parent / "shared" / "corpus")
    parser.add_argument("--windows", type=int, nargs="+", default=[32_000, 128_000])
    parser.add_argument("--strategies", nargs="+", default=["none", "default"])
    parser.add_argument("--tau-bench-limit", type=int, default=20)
    parser.add_argument("--max-output", type=int, default=4_096)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    tokenizers = os.environ.get("CONTEXTFOLD_TOKENIZERS_DIR", str(HERE.parent.parent / "shared" / "tokenizers"))
    started = time.perf_counter()
    found = sessions(args.corpus, args.tau_bench_limit)
    report: dict = {"sessions": len(found), "windows": {}}
    with tempfile.TemporaryDirectory() as results:
        for window in args.windows:
            rows = {}
            for name in args.strategies:
                totals = {"cost_usd": 0.0, "cost_no_cache_usd": 0.0, "cost_llm_usd": 0.0, "overflows": 0, "violations": 0,
                          "requests": 0}
                survival: list[float] = []
                recalls: list[SessionRecall] = []
                stricts: list[SessionStrict] = []
                worst = []
                shrinks: list[float] = []
                for label, conversation in found:
                    config = StrategyConfig(window, args.max_output, results)
                    strategy = create(name, config)
                    result = replay(conversation, strategy, config, tokenizer=exact_estimator("o200k_base", tokenizers), session=label)
                    shrinks += compaction_shrinks(strategy)
                    stricts.append(result.totals.strict)
                    t = result.totals.to_dict()
                    for key in totals:
                        totals[key] += t[key]
                    if t["survival"]["mean"] is not None:
                        survival.extend([t["survival"]["mean"]] * t["requests"])
                    worst.append((t["survival"]["mean"] if t["survival"]["mean"] is not None else 1.0, label))
                    recalls.append(SessionRecall(t["recall"], t["recall_far"], t["worst_request_recall"],
                                                 t["recall_needed"], t["recall_far_needed"]))
                totals["survival_mean"] = sum(survival) / len(survival) if survival else None
                totals["worst_survival"] = sorted(worst)[:3]
                pooled = mean_recall(recalls)
                totals["recall"], totals["recall_far"] = pooled.recall, pooled.recall_far
                totals["worst_request_recall"] = pooled.worst_request_recall
                strict = mean_strict(stricts)
                totals["strict"], totals["kwic_far"], totals["outcome"] = strict.strict, strict.kwic_far, strict.outcome
                if shrinks:
                    shrinks.sort()
                    totals["compactions"] = len(shrinks)
                    totals["span_shrink_min"] = round(shrinks[0], 4)
                    totals["span_shrink_median"] = round(shrinks[len(shrinks) // 2], 4)
                    totals["span_shrink_at_least_85"] = sum(x >= 0.85 for x in shrinks)
                rows[name] = totals
            base = rows.get("none", {}).get("cost_usd")
            for name, row in rows.items():
                row["cost_vs_none"] = row["cost_usd"] / base if base else None
                row["cost_llm_vs_none"] = row["cost_llm_usd"] / base if base else None
            report["windows"][window] = rows
    report["seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        print()
        return
    print(f"{len(found)} sessions, {report['seconds']} s")
    for window, rows in report["windows"].items():
        print(f"\nwindow {window:,}")
        print(f"{'strategy':<12} {'cost $':>9} {'no-cache $':>11} {'LLM summ. $':>12} {'vs none':>8} {'LLM vs none':>12} "
              f"{'over':>6} {'viol':>5} {'survival':>9} {'recall':>7} {'far':>7} {'worst':>6} "
              f"{'strict':>7} {'kwic far':>9} {'outcome':>8}")

        def shown(value: float | None, digits: int) -> str:
            return "-" if value is None else f"{value:.{digits}f}"

        for name, r in rows.items():
            print(f"{name:<12} {r['cost_usd']:>9.3f} {r['cost_no_cache_usd']:>11.3f} {r['cost_llm_usd']:>12.3f} "
                  f"{shown(r['cost_vs_none'], 3):>8} {shown(r['cost_llm_vs_none'], 3):>12} {r['overflows']:>6} "
                  f"{r['violations']:>5} {shown(r['survival_mean'], 4):>9} {shown(r['recall'], 3):>7} "
                  f"{shown(r['recall_far'], 3):>7} {shown(r['worst_request_recall'], 2):>6} {shown(r['strict'], 3):>7} "
                  f"{shown(r['kwic_far'], 3):>9} {shown(r['outcome'], 3):>8}")
            print(f"{'':<10} lowest survival: {', '.join(f'{s:.3f} {label}' for s, label in r['worst_survival'])}")
            if "compactions" in r:
                print(f"{'':<10} {r['compactions']} summaries; summarized span shrank by {r['span_shrink_min']:.1%} at least, "
                      f"{r['span_shrink_median']:.1%} median; {r['span_shrink_at_least_85']} of them by 85 % or more")


if __name__ == "__main__":
    main()
