"""Can the suite see bugs? Small bugs put back one at a time into a copy of the project, and the tests run on each.

    python benchmarks/mutations.py [--only NAME ...] [--tests FILE ...] [--list] [--whole-suite] [--jobs N]

Each :class:`Mutation` is a bug someone made or could make: the exact snippet
of the source it changes, what it becomes, and one line saying what goes
wrong. ``src/``, ``tests/`` and ``pyproject.toml`` are copied into a
temporary folder (the checkout is never touched), the mutation is applied to
the copy, and the test files named for it run there with ``-x`` (or the files
given with ``--tests``, or the whole suite with ``--whole-suite``). A failing run kills the mutation; a passing
one means the suite cannot see that bug. Before the mutations, the same tests
run on the unchanged copy: a failure there would make every kill meaningless.

Prints one line per mutation (``killed`` with the first failing test, or
``SURVIVED``) and a total; exits 1 when one survived or a snippet is no longer
in its file (``STALE``: the code moved on, so the mutation must follow it).
The shared corpus is found as for the tests (``CONTEXTFOLD_SHARED``, else
``../shared`` beside the checkout).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPIED = ("src", "tests", "pyproject.toml")


@dataclass(frozen=True)
class Edit:
    """One snippet of one file (relative to the project root) and what it becomes; the snippet occurs once."""

    file: str
    original: str
    replacement: str


@dataclass(frozen=True)
class Mutation:
    name: str
    description: str
    edits: tuple[Edit, ...]
    tests: tuple[str, ...]  # test files (relative to the project root) that must kill it


def mutation(name: str, file: str, original: str, replacement: str, description: str, *tests: str) -> Mutation:
    """A mutation of one snippet of one file."""
    return Mutation(name, description, (Edit(file, original, replacement),), tests)


PIPE = "src/contextfold/pipeline/"
STAGE_DIR = PIPE + "stages/"
TOKENS = ("tests/test_tokens.py", "tests/test_context.py")
STAGES = ("tests/test_pipeline_stages.py", "tests/test_pipeline_fit.py", "tests/test_context.py")
PROPERTIES = ("tests/test_pipeline_properties.py",)
ADAPTERS = ("tests/test_adapters_wire.py", "tests/test_adapters_anthropic.py", "tests/test_adapters_openai_chat.py",
            "tests/test_adapters_openai_responses.py", "tests/test_adapters_cross.py", "tests/test_adapters_corpus.py")
REPLAY = ("tests/test_replay_run.py", "tests/test_replay_check.py")
TRANSCRIPT = ("tests/test_transcript.py", "tests/test_transcript_safety.py")

MUTATIONS: tuple[Mutation, ...] = (
    # ------------------------------------------------------------------ tokens
    mutation(
        "anchored-ratio-ignored", "src/contextfold/tokens/anchored.py",
        "return anchor.reported + round(self.ratio * self.estimator.items(added))",
        "return anchor.reported + round(self.estimator.items(added))",
        "the anchored counter adds the raw estimate of new items, ignoring the ratio it learnt", *TOKENS),
    mutation(
        "anchored-counts-short-after-compaction", "src/contextfold/tokens/anchored.py",
        "return max(0, round(max(offset + self.ratio * estimate, scaled)))",
        "return max(0, round(min(offset + self.ratio * estimate, scaled)))",
        "after a compaction the counter takes the smaller of its two calibrations (counts short)", *TOKENS),
    mutation(
        "anchored-outlier-unclamped", "src/contextfold/tokens/anchored.py",
        "observed = min(max(real_growth / estimated_growth, ratio / self.max_step), ratio * self.max_step)",
        "observed = real_growth / estimated_growth",
        "one outlying usage report swings the learnt ratio as far as it likes", *TOKENS),
    mutation(
        "image-long-edge-not-scaled", "src/contextfold/tokens/estimator.py",
        "scale = min(1.0, costs.image_max_edge_px / max(width, height, 1))",
        "scale = 1.0",
        "a wide image is counted at full size, not scaled to the provider's long edge first", *TOKENS),
    mutation(
        "tool-result-framing-dropped", "src/contextfold/tokens/estimator.py",
        "return costs.tool_result_tokens + self.text(block.content)",
        "return self.text(block.content)",
        "a text tool result is counted without its framing tokens", *TOKENS),
    # ------------------------------------------------------------------ pipeline
    mutation(
        "clear-latest-output", STAGE_DIR + "clear.py",
        "if result is None or index == latest or is_placeholder(item)",
        "if result is None or is_placeholder(item)",
        "clear may replace the latest output (the one the model is reading) when it is large", *STAGES, *PROPERTIES),
    mutation(
        "clear-ignores-min-savings", STAGE_DIR + "clear.py",
        "savings >= p.clear_min_savings_tokens)",
        "savings >= 0)",
        "clear breaks a warm cache for any saving, however small", *STAGES),
    mutation(
        "economics-horizon-uncapped", PIPE + "economics.py",
        "horizon = max(1, min(horizon, round(until_summary)))",
        "horizon = max(1, horizon)",
        "an edit is credited with savings over requests a summary will have made moot", *STAGES),
    mutation(
        "economics-cold-cache-charged", PIPE + "economics.py",
        "cost = 0.0 if budget.cache_cold else rewritten",
        "cost = rewritten",
        "a cold cache still charges an edit for rewriting the prefix", *STAGES),
    mutation(
        "prepare-batch-before-cheap", PIPE + "step.py",
        "        view, events = run_stages(view, budget, self.pipeline.cheap)\n"
        "        try:\n"
        "            decided, produced, fits = self._decide(view, budget, occasion)\n",
        "        events = []\n"
        "        try:\n"
        "            decided, produced, fits = self._decide(view, budget, occasion)\n"
        "            decided, cheap = run_stages(decided, budget, self.pipeline.cheap)\n"
        "            events.extend(cheap)\n",
        "prepare() prices the batch edit before persist and truncate have shrunk the new outputs", *STAGES),
    mutation(
        "persist-needs-both-limits", STAGE_DIR + "persist.py",
        "return len(text) > policy.persist_max_chars or count_item(item) > policy.persist_max_tokens",
        "return len(text) > policy.persist_max_chars and count_item(item) > policy.persist_max_tokens",
        "an output over one persist limit but not the other stays in the context", *STAGES),
    mutation(
        "truncate-cap-doubled", STAGE_DIR + "truncate.py",
        "if len(text) > cap and not is_compacted(item):",
        "if len(text) > cap * 2 and not is_compacted(item):",
        "truncate lets outputs up to twice its cap through", *STAGES),
    mutation(
        "snip-latest-output", STAGE_DIR + "snip.py",
        "if index == latest or is_placeholder(item):",
        "if is_placeholder(item):",
        "snip may replace the latest output when a later step supersedes it", *STAGES),
    mutation(
        "budget-shrinks-recent-rounds", STAGE_DIR + "budget.py",
        "tool_items(conversation, range(recent_round_start(conversation, p.budget_keep_recent_rounds)))",
        "tool_items(conversation, range(len(conversation)))",
        "budget cuts the outputs of the most recent rounds too", *STAGES),
    mutation(
        "selective-spares-nothing", STAGE_DIR + "selective.py",
        "spared = len(indices) - rule.keep_recent",
        "spared = len(indices)",
        "selective applies a rule to the newest items it should spare", *STAGES),
    mutation(
        "selective-image-in-task", STAGE_DIR + "selective.py",
        "if i != task and it.kind in",
        "if it.kind in",
        "selective removes an image from the task message", *STAGES, *PROPERTIES),
    mutation(
        "summary-swallows-task", STAGE_DIR + "summarize.py",
        "start = task + 1 if task is not None else 0",
        "start = task if task is not None else 0",
        "the task message goes into the summary (which may quote it) instead of staying first, verbatim",
        *STAGES, *PROPERTIES),
    mutation(
        "boundary-tail-over-budget", "src/contextfold/boundary.py",
        "if tails and (tokens > tail_budget_tokens or",
        "if tails and (tokens > 2 * tail_budget_tokens or",
        "a summary keeps a verbatim tail twice the size it was given", *STAGES),
    # ------------------------------------------------------------------ conversation
    mutation(
        "units-interleaved-rounds", "src/contextfold/conversation.py",
        "probe = index + 1\n",
        "probe = end\n",
        "units() ends a round's unit before a round that begins inside it (a cut can split interleaved rounds)",
        "tests/test_conversation.py", *STAGES),
    mutation(
        "validate-duplicate-call-id", "src/contextfold/conversation.py",
        'found.append(Violation("duplicate_id", index, f"tool call id {call.id!r} is used twice", call.id))\n'
        "                continue\n",
        "pass\n",
        "validate() accepts two tool calls with one id", "tests/test_conversation.py", *PROPERTIES),
    # ------------------------------------------------------------------ adapters (symmetric: no round trip sees them)
    Mutation(
        "anthropic-is-error-key", "Anthropic results carry their error flag under a key the API does not know",
        (Edit("src/contextfold/adapters/anthropic/wire.py", 'is_error = wire.take("is_error", bool, required=False)',
              'is_error = wire.take("error", bool, required=False)'),
         Edit("src/contextfold/adapters/anthropic/wire.py", "content=None if absent else content, is_error=result.is_error",
              "content=None if absent else content, error=result.is_error")),
        ADAPTERS),
    Mutation(
        "chat-tool-call-id-key", "Chat Completions tool messages name their call under a key the API does not know",
        (Edit("src/contextfold/adapters/openai_chat/wire.py", 'call_id = wire.take("tool_call_id", str)',
              'call_id = wire.take("call_id", str)'),
         Edit("src/contextfold/adapters/openai_chat/wire.py", 'return {"tool_call_id": result.call_id, "content": content}',
              'return {"call_id": result.call_id, "content": content}')),
        ADAPTERS),
    Mutation(
        "responses-reasoning-key",
        "Responses reasoning carries its encrypted content under a key the API does not know",
        (Edit("src/contextfold/adapters/openai_responses/wire.py", 'wire.take("encrypted_content", str, required=False)',
              'wire.take("encrypted", str, required=False)'),
         Edit("src/contextfold/adapters/openai_responses/wire.py", "summary=summary, encrypted_content=block.signature",
              "summary=summary, encrypted=block.signature")),
        ADAPTERS),
    # ------------------------------------------------------------------ transcript
    mutation(
        "transcript-checksum-unchecked", "src/contextfold/stores/transcript.py",
        "if zlib.crc32(line) != int(tail.group(1), 16):",
        "if False:",
        "a record changed on disk after it was written loads silently", *TRANSCRIPT),
    # ------------------------------------------------------------------ replay
    mutation(
        "cache-ttl-boundary", "src/contextfold/replay/cost.py",
        "now_s - previous_s <= ttl_s",
        "now_s - previous_s < ttl_s",
        "a request exactly one TTL after the previous one no longer reads the cache", *REPLAY),
    mutation(
        "cache-read-across-tool-change", "src/contextfold/replay/cost.py",
        "if previous is None or previous.tools != prompt.tools or not warm(",
        "if previous is None or not warm(",
        "changing the tool definitions no longer breaks the cached prefix", *REPLAY),
    mutation(
        "cache-write-at-input-price", "src/contextfold/replay/cost.py",
        "+ cache_write * prices.cache_write_per_mtok",
        "+ cache_write * prices.input_per_mtok",
        "cache writes are priced as plain input (the 25 % surcharge is lost)", *REPLAY),
    mutation(
        "cache-prefix-not-contiguous", "src/contextfold/replay/cost.py",
        "        if not same(old, new):\n            break\n",
        "        if not same(old, new):\n            continue\n",
        "the cache serves every unchanged message, not only the unchanged prefix", *REPLAY),
)


# ---------------------------------------------------------------------- running


@dataclass(frozen=True)
class Outcome:
    mutation: Mutation
    verdict: str  # killed | SURVIVED | STALE | timeout
    seconds: float
    detail: str


def copy_project(into: Path) -> None:
    """``src/``, ``tests/`` and ``pyproject.toml`` of the checkout, without caches."""
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, into / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"))
        else:
            shutil.copy2(source, into / name)


def shared_folder() -> str:
    return os.environ.get("CONTEXTFOLD_SHARED", str(ROOT.parent / "shared"))


def run_tests(copy: Path, tests: Sequence[str], timeout: float) -> tuple[int | None, str]:
    """Pytest on ``tests`` in ``copy``, its own source first: the exit code (``None``: timed out) and the output."""
    env = {**os.environ, "PYTHONPATH": str(copy / "src"), "PYTHONDONTWRITEBYTECODE": "1",
           "CONTEXTFOLD_SHARED": shared_folder()}
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-rfE", *tests]
    try:
        done = subprocess.run(command, check=False, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, ""
    return done.returncode, done.stdout + done.stderr


def first_failure(output: str) -> str:
    match = re.search(r"^(?:FAILED|ERROR) (\S+)", output, re.MULTILINE)
    if match:
        return match.group(1)
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return lines[-1][:160] if lines else "no output"


def apply_edits(copy: Path, edits: Sequence[Edit]) -> dict[Path, str] | str:
    """Apply ``edits`` to the copy: the original text of each changed file, or why a snippet cannot be applied."""
    originals: dict[Path, str] = {}
    for edit in edits:
        path = copy / edit.file
        current = path.read_text(encoding="utf-8")
        originals.setdefault(path, current)
        found = current.count(edit.original)
        if found != 1:
            restore(originals)
            return f"{edit.file}: the snippet occurs {found} times (expected once)"
        path.write_text(current.replace(edit.original, edit.replacement), encoding="utf-8")
    return originals


def restore(originals: dict[Path, str]) -> None:
    for path, text in originals.items():
        path.write_text(text, encoding="utf-8")


def try_mutation(copy: Path, item: Mutation, tests: Sequence[str], timeout: float) -> Outcome:
    started = time.monotonic()
    applied = apply_edits(copy, item.edits)
    if isinstance(applied, str):
        return Outcome(item, "STALE", 0.0, applied)
    try:
        code, output = run_tests(copy, tests, timeout)
    finally:
        restore(applied)
    seconds = time.monotonic() - started
    if code is None:
        return Outcome(item, "timeout", seconds, f"no result within {timeout:.0f} s (counted as killed)")
    if code == 0:
        return Outcome(item, "SURVIVED", seconds, "every test passed")
    if code == 1:
        return Outcome(item, "killed", seconds, first_failure(output))
    return Outcome(item, "killed", seconds, f"pytest exit {code} (collection or usage error): {first_failure(output)}")


def tests_for(item: Mutation, args: argparse.Namespace) -> tuple[str, ...]:
    """The test files to run against ``item`` (none given: pytest runs the whole suite)."""
    if args.whole_suite:
        return ()
    return tuple(args.tests) if args.tests else tuple(dict.fromkeys(item.tests))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these mutations")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--tests", nargs="+", metavar="FILE", help="run these test files for each, not its own")
    parser.add_argument("--whole-suite", action="store_true", help="run the whole suite (-x) for each")
    parser.add_argument("--jobs", type=int, default=1, help="mutations tried at once, each in its own copy (default 1)")
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds per test run (default 1200)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the run on the unchanged copy")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    unknown = set(args.only or ()) - {m.name for m in MUTATIONS}
    if unknown:
        parser.error(f"unknown mutation(s): {', '.join(sorted(unknown))}")
    if args.list:
        for item in chosen:
            print(f"{item.name:40} {item.description}")
        return 0
    missing = sorted({t for m in chosen for t in tests_for(m, args) if not (ROOT / t).is_file()})
    if missing:
        parser.error(f"test file(s) not in the checkout: {', '.join(missing)}")
    with tempfile.TemporaryDirectory(prefix="contextfold-mutations-") as tmp:
        copies = [Path(tmp) / f"copy{k}" for k in range(max(1, args.jobs))]
        for copy in copies:
            copy.mkdir()
            copy_project(copy)
        if not args.no_baseline:
            union = tuple(dict.fromkeys(t for m in chosen for t in tests_for(m, args)))
            code, output = run_tests(copies[0], union, args.timeout)
            if code != 0:
                print(f"the unchanged copy fails its tests ({first_failure(output)}): fix that first", flush=True)
                return 2
            print(f"baseline: the unchanged copy passes {len(union) or 'all'} test files", flush=True)
        free = list(copies)

        def attempt(item: Mutation) -> Outcome:
            copy = free.pop()
            try:
                outcome = try_mutation(copy, item, tests_for(item, args), args.timeout)
            finally:
                free.append(copy)
            print(f"{outcome.verdict:9} {item.name:40} {outcome.seconds:6.0f} s  {outcome.detail}", flush=True)
            return outcome

        with ThreadPoolExecutor(max_workers=len(copies)) as pool:
            outcomes = list(pool.map(attempt, chosen))
    killed = sum(o.verdict in ("killed", "timeout") for o in outcomes)
    survived = [o.mutation.name for o in outcomes if o.verdict == "SURVIVED"]
    stale = [o.mutation.name for o in outcomes if o.verdict == "STALE"]
    summary = f"\nkilled {killed} of {len(outcomes)}; survived {len(survived)}"
    summary += f": {', '.join(survived)}" if survived else ""
    summary += f"; stale {len(stale)}: {', '.join(stale)}" if stale else ""
    print(summary)
    return 1 if survived or stale else 0


if __name__ == "__main__":
    sys.exit(main())
