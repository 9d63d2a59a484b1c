"""How close the anchored token count comes to what providers reported, on real recordings.

Every recording whose items are the requests that were sent, with the
usage reported for each (mini-swe-agent, live-swe-agent, the Claude Code
transcript, the hive-mind Claude Code stream-json logs), is replayed request
by request (:func:`contextfold.tokens.anchored_errors`): before each
reported response, the request (header plus every item before it) is counted
anchored on the previous reported usage and compared with the reported
prompt size. For comparison the same requests are measured with plain
characters / 4 and, when tiktoken and the offline o200k file are at hand,
with the anchored counter over exact o200k counts.

The bar: median absolute error <= 2 % and p95 <= 5 % over all requests.

    python benchmarks/token_accuracy.py [FILE ...] [--corpus DIR] [--tokenizers DIR] [--json]

moatless-tools also records usage, but for per-state prompts that its
imported chat does not reproduce (and two models alternate), so it is not
part of the default set; name its files to see them anyway.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any

from contextfold import importers
from contextfold.conversation import Conversation
from contextfold.errors import SessionFormatError, TokenizerUnavailable
from contextfold.tokens import (
    NO_FRAMING,
    CharRatioText,
    Estimator,
    RequestCheck,
    TokenCounter,
    anchored_errors,
    error_summary,
    exact_estimator,
)

SHARED = Path(os.environ.get("CONTEXTFOLD_SHARED", Path(__file__).resolve().parents[2] / "shared"))
REPLAYABLE = ("mini-swe-agent", "live-swe-agent", "claude-code-transcript", "hive-mind-solve-logs")
"""Corpus folders whose items are the requests that were sent."""
MEDIAN_BAR = 0.02
P95_BAR = 0.05


def plain_checks(conversation: Conversation, checks: Sequence[RequestCheck], estimator: Estimator) -> list[RequestCheck]:
    """The same requests measured without anchoring: ``estimator`` over header plus items before each step."""
    totals = [0, *accumulate(estimator.item(item) for item in conversation.items)]
    header = estimator.header(conversation.header)
    return [check._replace(estimate=header + totals[check.step]) for check in checks]


def measure(conversation: Conversation, tokenizers: Path | None) -> dict[str, list[RequestCheck]]:
    """Checks of one conversation under each counting method."""
    anchored = anchored_errors(conversation)
    result = {
        "anchored": anchored,
        "chars/4": plain_checks(conversation, anchored, Estimator(CharRatioText(4.0), NO_FRAMING)),
    }
    if tokenizers is not None:
        result["anchored o200k"] = anchored_errors(conversation, lambda: TokenCounter(exact_estimator("o200k_base", tokenizers)))
    return result


def corpus_files(corpus: Path) -> list[Path]:
    return sorted(p for folder in REPLAYABLE for p in (corpus / folder).rglob("*") if p.is_file())


def exact_available(tokenizers: Path) -> bool:
    try:
        exact_estimator("o200k_base", tokenizers)
    except TokenizerUnavailable:
        return False
    return True


def label(path: Path, corpus: Path) -> str:
    """The path relative to the corpus when it is in it."""
    resolved, root = path.resolve(), corpus.resolve()
    return str(resolved.relative_to(root)) if resolved.is_relative_to(root) else str(path)


def run(paths: Sequence[Path], tokenizers: Path | None, corpus: Path) -> dict[str, Any]:
    files: list[dict[str, Any]] = []
    pooled: dict[str, list[RequestCheck]] = {}
    for path in paths:
        try:
            loaded = importers.load(path)
        except SessionFormatError:
            continue
        merged: dict[str, list[RequestCheck]] = {}
        for conversation in loaded:
            for method, checks in measure(conversation, tokenizers).items():
                merged.setdefault(method, []).extend(checks)
        if not merged.get("anchored"):
            continue  # no usage recorded in this format
        for method, checks in merged.items():
            pooled.setdefault(method, []).extend(checks)
        files.append({"file": label(path, corpus), **{m: error_summary(c) for m, c in merged.items()}})
    overall = {method: error_summary(checks) for method, checks in pooled.items()}
    anchored = overall.get("anchored", error_summary([]))
    passed = (
        anchored["requests"] > 0
        and anchored["median_abs_error"] <= MEDIAN_BAR
        and anchored["p95_abs_error"] <= P95_BAR
    )
    return {"files": files, "overall": overall, "bar": {"median": MEDIAN_BAR, "p95": P95_BAR, "passed": passed}}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:6.2f}%"


def print_table(report: dict[str, Any]) -> None:
    methods = list(report["overall"])
    head = f"{'file':60s} {'requests':>8s}" + "".join(f" {m + ' med':>16s} {m + ' p95':>16s}" for m in methods)
    print(head)
    for row in [*report["files"], {"file": "ALL", **report["overall"]}]:
        line = f"{row['file'][:60]:60s} {row['anchored']['requests']:8d}"
        for method in methods:
            summary = row.get(method, {})
            line += f" {_pct(summary.get('median_abs_error')):>16s} {_pct(summary.get('p95_abs_error')):>16s}"
        print(line)
    bar = report["bar"]
    verdict = "PASS" if bar["passed"] else "FAIL"
    print(f"bar (anchored): median <= {bar['median']:.0%}, p95 <= {bar['p95']:.0%}: {verdict}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, help="recordings to replay (default: the replayable corpus)")
    parser.add_argument("--corpus", type=Path, default=SHARED / "corpus")
    parser.add_argument("--tokenizers", type=Path, default=SHARED / "tokenizers",
                        help="folder with o200k_base.tiktoken for the exact-count column")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    tokenizers = args.tokenizers if exact_available(args.tokenizers) else None
    report = run(args.files or corpus_files(args.corpus), tokenizers, args.corpus)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print_table(report)
    return 0 if report["bar"]["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
