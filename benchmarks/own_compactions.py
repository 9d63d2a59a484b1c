"""Against Claude Code's own compactions: what it sent, and what a preset sends, on its recorded transcripts.

    python benchmarks/own_compactions.py [FILE ...] [--window 200000] [--presets balanced,lean]
                                         [--policy NAME=FILE ...] [--requests DIR]

A Claude Code transcript with real ``/compact`` boundaries records what Claude
Code itself kept: at each boundary its summary (a user item the importer marks
``meta["compact_summary"]``) took the place of the chat before it. So the
requests Claude Code sent are the recorded history cut at each recorded
summary: before the reply at item k, the items from the latest summary before
k (or from the start) up to k. This replays each transcript once that way
(``claude-code-own``) and once per preset or policy file through contextfold's
pipeline, at the same window, and prints per transcript:

strict, kwic far, outcome, asked
    strict recall and the person's words held (:mod:`contextfold.replay.strict`,
    the reference scorer's definitions);
mean request
    input tokens per agent request. The recording holds no system prompt or
    tool list, so Claude Code's requests look smaller than they were; both
    sides are counted the same way;
summaries, over, broken
    summaries in the last request's history (Claude Code: the recorded ones),
    requests over the window and pairing violations (each should be 0).

The bar (issue 32): at no more tokens per request than Claude Code's own, a
preset keeps at least its strict and kwic far. ``--requests DIR`` writes every
replay's requests for the reference scorer (``referee.cli measure FILE
--requests DUMP --window W``). With no FILE, the corpus's Claude Code
transcripts that hold a recorded summary are used.

The same window: Claude Code's window also held what the recording does not
(its system prompt, tool definitions, memory files, hook output: 20k to 70k
tokens on the corpus's transcripts, by the usage each reply reports against
the recorded request before it), and it compacted when all of it neared the
window. ``--hidden`` (default ``auto``: the median of those differences, an
estimate that also holds the two tokenizers' difference) replays the presets
in the window less that much, as they would have run in Claude Code's place;
``--hidden 0`` gives them the whole window for the recorded part alone. Both
sides' mean request is of the recorded part, so the comparison of tokens per
request is the same either way. ``--max-output`` is the model's reply limit
(64,000: Claude Sonnet 4's), which sets where the default trigger falls.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from contextfold import importers
from contextfold.conversation import Conversation
from contextfold.pipeline.base import Policy
from contextfold.replay import StrategyConfig, replay, strategies
from contextfold.replay.base import Sent, Step
from contextfold.replay.fired import Recorder, summaries
from contextfold.replay.result import AGENT, ReplayResult, Totals
from contextfold.replay.run import answered
from contextfold.replay.strategies.none import FullHistory
from contextfold.tokens import exact_estimator

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("CONTEXTFOLD_SHARED", HERE.parents[1] / "shared"))
OWN = "claude-code-own"


class RecordedCompactions(FullHistory):
    """The requests the recording's own harness sent: the history since its latest recorded summary."""

    name = OWN

    def step(self, step: Step) -> Sent:
        for number, item in enumerate(step.new_items):
            if item.meta.get("compact_summary"):
                self._conversation = Conversation(header=self._conversation.header)
                self._conversation.extend(step.new_items[number:])
                return Sent(self._conversation)
        return super().step(step)


def compacted(conversation: Conversation) -> int:
    """How many recorded summaries ``conversation`` holds."""
    return sum(1 for item in conversation.items if item.meta.get("compact_summary"))


def corpus_transcripts(corpus: Path) -> list[Path]:
    """The corpus's Claude Code transcripts that hold at least one recorded summary."""
    found = []
    for path in sorted((corpus / "claude-code-transcript").glob("*/*.jsonl")):
        if any(compacted(c) for c in importers.load(path)[:1]):
            found.append(path)
    return found


@dataclass(frozen=True)
class Row:
    """One replay's figures."""

    strategy: str
    totals: Totals
    summaries: int

    @property
    def mean_request(self) -> float:
        return self.totals.input_tokens / self.totals.requests if self.totals.requests else 0.0

    def cells(self) -> list[str]:
        s = self.totals.strict
        figures = ["–" if v is None else f"{v:.3f}" for v in (s.strict, s.kwic_far, s.outcome, s.asked)]
        return [self.strategy, *figures, f"{self.mean_request / 1000:.1f}k", str(self.summaries),
                str(self.totals.overflows), str(self.totals.violations)]


def hidden_tokens(recording: Conversation, own: ReplayResult) -> int:
    """What the recording does not hold of each request Claude Code sent: the median, over the replies that
    report their usage, of the prompt tokens reported less the recorded request's tokens (0 without usage)."""
    gaps = []
    for record in own.requests:
        usage = importers.recorded_usage(recording.items[record.index]) if record.kind == AGENT else None
        if usage is not None and usage.prompt_tokens:
            gaps.append(usage.prompt_tokens - record.input_tokens)
    return max(0, sorted(gaps)[len(gaps) // 2]) if gaps else 0


def run(path: Path, window: int, max_output: int, hidden: int | None, policies: Sequence[tuple[str, Policy]],
        requests: Path | None) -> tuple[int, list[Row]]:
    """The hidden tokens used, and Claude Code's own requests, then each policy's, on the first conversation of
    ``path``; ``hidden`` ``None``: estimated from the recording's usage."""
    conversation = answered(importers.load(path)[0], str(path))  # a lost result answered: indexes as the replay's
    tokenizer = exact_estimator("o200k_base", SHARED / "tokenizers")
    rows = []
    for name, policy in [(OWN, None), *policies]:
        shown = window if policy is None else window - (hidden or 0)
        if shown <= max_output:  # Claude Code ran this session in a larger window than the one asked for
            print(f"{path.stem[:8]}: Claude Code sent {hidden:,} tokens more than the recording holds, more than "
                  f"{window:,} less the {max_output:,}-token reply leaves; presets not run (give its --window)",
                  file=sys.stderr, flush=True)
            break
        config = StrategyConfig(shown, max_output, policy=policy)
        recorder = Recorder(RecordedCompactions(config) if policy is None else strategies.create("default", config))
        dump = None if requests is None else requests / f"{path.stem[:8]}-{name}-{window}.jsonl"
        result = replay(conversation, recorder, config, tokenizer=tokenizer, requests_path=dump, session=str(path))
        if policy is None and hidden is None:
            hidden = hidden_tokens(conversation, result)
        written = compacted(conversation) if policy is None else summaries(recorder.all_events())
        rows.append(Row(name, result.totals, written))
        print(f"{path.stem[:8]} {name}: done", file=sys.stderr, flush=True)
    return hidden or 0, rows


def table(window: int, results: Sequence[tuple[Path, int, list[Row]]]) -> str:
    head = ["strategy", "strict", "kwic far", "outcome", "asked", "mean request", "summaries", "over", "broken"]
    lines = [f"window {window:,}"]
    for path, hidden, rows in results:
        lines += ["", f"{path.stem[:8]} ({path.parent.name}): presets in {window - hidden:,} "
                  f"({hidden:,} tokens Claude Code sent that the recording does not hold)",
                  "| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
        lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
        if len(rows) == 1:
            lines.append(f"(presets not run: Claude Code's window was larger than {window:,})")
    return "\n".join(lines)


def parse_policies(presets: str, files: Sequence[str]) -> list[tuple[str, Policy]]:
    chosen = [(name, Policy.preset(name)) for name in presets.split(",") if name]
    for spec in files:
        name, _, file = spec.partition("=")
        chosen.append((name, Policy.load(file)))
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--window", type=int, default=200_000)
    parser.add_argument("--max-output", type=int, default=64_000, help="the model's reply limit")
    parser.add_argument("--hidden", default="auto",
                        help="tokens of Claude Code's window the recording does not hold (auto: from its usage)")
    parser.add_argument("--presets", default="balanced")
    parser.add_argument("--policy", action="append", default=[], metavar="NAME=FILE",
                        help="also replay a policy file (Policy.save), reported as NAME")
    parser.add_argument("--requests", type=Path, help="write every replay's requests to this folder")
    args = parser.parse_args()
    files = args.files or corpus_transcripts(SHARED / "corpus")
    if not files:
        print(f"no Claude Code transcript with a recorded summary (corpus at {SHARED}; set CONTEXTFOLD_SHARED)",
              file=sys.stderr)
        return 2
    if args.requests is not None:
        args.requests.mkdir(parents=True, exist_ok=True)
    policies = parse_policies(args.presets, args.policy)
    hidden = None if args.hidden == "auto" else int(args.hidden)
    results = [(path, *run(path, args.window, args.max_output, hidden, policies, args.requests)) for path in files]
    print(table(args.window, results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
