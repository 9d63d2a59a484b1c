"""The typed-error contract under fuzzing, at full size: every public entry point fed hostile input.

    python benchmarks/fuzz.py [--count 3000] [--processes 300] [--bound 20] [--seed 0] [--only PREFIX,...]
                              [--budget-s SECONDS]

Needs the shared corpus (``../shared/corpus``, or ``CONTEXTFOLD_SHARED``). The inputs are made by
``tests/fuzzing.py`` (the suite's fuzz test runs the same cases, fewer of them); ``--count`` inputs go to
each entry point:

* the provider adapters (Anthropic Messages, OpenAI Chat, OpenAI Responses, Gemini): a valid request drawn by
  ``tests/strategies.py`` (Gemini's: a neutral conversation written by its adapter), mutated and read (an accepted one must write back to itself, read back to the
  same neutral items, and write to the other two formats or refuse with a typed error), and a model reply,
  mutated and read with its usage; the same requests and replies through ``Context.add`` (then
  ``prepare``) and ``Context.add_response``; Chat replies as a stream of chunks through ``reply_from_chunks``;
* the framework adapters (google-genai/ADK contents, Strands, LangChain, pydantic-ai when installed): a valid
  neutral conversation written in the framework's types, mutated inside those types, and read;
* the importers: mutations of every corpus recording (and of a contextfold session file) imported; what is
  accepted must be countable and storable;
* the commands that read files (``inspect``, ``tokens``, ``replay``, ``compact`` on mutated recordings under
  200 KB, in-process with click's runner, and the first ``--processes`` of them ``inspect``-ed by real
  subprocesses, ``--jobs`` at a time: see :func:`inspect_processes` for why a sample), and
  those that read a store (``sessions list``, ``sessions show``, ``sessions export``, ``inspect STORE#ID`` on a
  mutated JSONL transcript): exit 0, or one ``contextfold:`` line and a non-zero exit.

Every input runs under a time bound of ``--bound`` seconds (a hang is counted, not waited out). Prints a
table of inputs, accepted, typed errors, raw exceptions, mismatches and hangs per entry point, then one JSON
object of the same, then each distinct failure with the first input that showed it. Exits 1 if there was
any failure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the shared fuzzing cases and request strategies

import fuzzing
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from strategies import anthropic_requests, conversations, openai_chat_requests, responses_requests

SHARED = Path(os.environ.get("CONTEXTFOLD_SHARED", HERE.parent.parent / "shared"))
REQUESTS = {"anthropic": anthropic_requests(), "openai": openai_chat_requests(), "responses": responses_requests(),
            "gemini": conversations().map(fuzzing.gemini_request)}
COMMAND_BASE_BYTES = 200_000
"""Recordings the commands are run on are under this size (a replay of a large one takes seconds)."""
STOP_AT = [float("inf")]
"""The monotonic time after which no new input starts (``--budget-s``): a run on a busy machine ends with its
figures for the inputs it ran instead of being cut off without them."""


def _out_of_time() -> bool:
    return time.monotonic() > STOP_AT[0]


class Progress(fuzzing.Tally):
    """A tally that writes its table to stderr every ``every_s`` seconds, so a long run shows where it is."""

    def __init__(self, every_s: float) -> None:
        super().__init__()
        self.every_s = every_s
        self.shown_at = time.monotonic()

    def add(self, case: str, outcome: fuzzing.Outcome, described: str) -> None:
        super().add(case, outcome, described)
        if self.every_s and time.monotonic() - self.shown_at > self.every_s:
            self.shown_at = time.monotonic()
            print(time.strftime("%H:%M:%S"), file=sys.stderr)
            print_table(self, sys.stderr)


KINDS = ("accepted", "rejected", "untyped", "mismatch", "hang")


def table(tally: fuzzing.Tally) -> dict[str, dict[str, int]]:
    """Counts of each outcome per entry point."""
    rows: dict[str, dict[str, int]] = {}
    for (case, kind), number in sorted(tally.counts.items()):
        rows.setdefault(case, dict.fromkeys(KINDS, 0))[kind] = number
    return rows


def print_table(tally: fuzzing.Tally, file: Any = None) -> None:
    print(f"{'entry point':34} {'inputs':>7} {'accepted':>9} {'typed':>7} {'raw':>5} {'mismatch':>9} {'hangs':>6}",
          file=file, flush=True)
    for case, row in table(tally).items():
        print(f"{case:34} {sum(row.values()):7d} {row['accepted']:9d} {row['rejected']:7d} {row['untyped']:5d} "
              f"{row['mismatch']:9d} {row['hang']:6d}", file=file, flush=True)


def _wanted(case: str, only: str) -> bool:
    """Whether the entry point ``case`` is run: its name starts with one of the comma-separated prefixes, or is
    one ending in ``$`` (``cli inspect$``: not ``cli inspect (subprocess)`` nor ``cli inspect STORE#ID``)."""
    return any(case == prefix[:-1] if prefix.endswith("$") else case.startswith(prefix) for prefix in only.split(","))


def _drawn(count: int, base_seed: int, strategy: Any, run: Callable[..., None]) -> None:
    """``run(drawn, case_seed)`` on ``count`` values of ``strategy``, the same ones for the same ``base_seed``."""
    configured = settings(max_examples=count, database=None, deadline=None, phases=[Phase.generate],
                          suppress_health_check=list(HealthCheck))

    def in_time(drawn: Any, case_seed: int) -> None:
        if not _out_of_time():
            run(drawn, case_seed)

    seed(base_seed)(configured(given(strategy, st.integers(0, 2**32 - 1))(in_time)))()


def provider_inputs(tally: fuzzing.Tally, count: int, bound: float, base_seed: int, only: str) -> None:
    for provider, requests in REQUESTS.items():
        cases = (f"{provider} request", f"{provider} reply", f"context.add {provider}",
                 f"context.add_response {provider}", "reply_from_chunks")
        if count and any(_wanted(case, only) for case in cases):
            _drawn(count, base_seed, requests, _provider_run(tally, provider, bound, only))


def _provider_run(tally: fuzzing.Tally, provider: str, bound: float, only: str) -> Callable[[dict, int], None]:
    def judged(case: str, run: Callable[[], fuzzing.Outcome], done: list[str]) -> None:
        if _wanted(case, only):
            tally.add(case, fuzzing.judged(run, bound), "; ".join(done))

    def run(request: dict, case_seed: int) -> None:
        rng = random.Random(case_seed)
        mutated, done = fuzzing.mutate_tree(request, rng)
        judged(f"{provider} request", lambda: fuzzing.adapter_case(provider, mutated), done)
        judged(f"context.add {provider}", lambda: fuzzing.context_add_case(provider, mutated), done)
        reply = fuzzing.reply_of(provider, request)
        mutated_reply, done = fuzzing.mutate_tree(reply, rng)
        judged(f"{provider} reply", lambda: fuzzing.reply_case(provider, mutated_reply), done)
        judged(f"context.add_response {provider}", lambda: fuzzing.context_response_case(provider, mutated_reply),
               done)
        if provider == "openai":
            chunks, done = fuzzing.mutate_tree(fuzzing.chunks_of(reply), rng)
            judged("reply_from_chunks", lambda: fuzzing.chunks_case(chunks), done)

    return run


def framework_inputs(tally: fuzzing.Tally, count: int, bound: float, base_seed: int, only: str) -> None:
    chosen = [f for f in fuzzing.frameworks() if _wanted(f.name, only)]

    def run(conversation: Any, case_seed: int) -> None:
        rng = random.Random(case_seed)
        for framework in chosen:
            tree, done = fuzzing.mutate_tree(fuzzing.framework_seed(framework, conversation), rng)
            tally.add(framework.name, fuzzing.judged(partial(fuzzing.framework_case, framework, tree), bound),
                      "; ".join(done))

    if chosen and count:
        _drawn(count, base_seed, conversations(), run)


def _mutated_file(bases: dict[str, bytes], base_seed: int, number: int, purpose: str) -> tuple[str, bytes, str]:
    """Input ``number``'s mutated recording for ``purpose``, as ``(name, data, what was done)``: for ``import``
    any recording, for ``commands`` one under :data:`COMMAND_BASE_BYTES`; the same one for the same seed.

    Each purpose draws from its own generator, so a run of one group mutates only the files it reads (parsing
    and mutating a 4 MB recording costs as much as importing it)."""
    names = sorted(bases) if purpose == "import" else sorted(n for n in bases if len(bases[n]) < COMMAND_BASE_BYTES)
    rng = random.Random(f"{base_seed}:{number}:{purpose}")
    name = rng.choice(names)
    data, done = fuzzing.mutate_file(bases[name], rng)
    return name, data, f"{name}: {done}"


SESSION_FILE_CASES = ("importers", "cli inspect", "cli tokens", "cli replay", "cli compact")


def session_files(tally: fuzzing.Tally, count: int, bound: float, base_seed: int, only: str) -> None:
    purposes = [purpose for purpose, cases in (("import", ["importers"]), ("commands", SESSION_FILE_CASES[1:]))
                if any(_wanted(case, only) for case in cases)]
    if not purposes:
        return  # drawing and writing the mutated files is most of the cost: not for nothing
    bases = fuzzing.base_files(SHARED / "corpus")
    runner = CliRunner()
    with tempfile.TemporaryDirectory(prefix="contextfold-fuzz-") as folder:
        for number in range(count):
            if _out_of_time():
                break
            for purpose in purposes:
                name, data, described = _mutated_file(bases, base_seed, number, purpose)
                path = Path(folder) / f"{number}-{name}"
                path.write_bytes(data)
                out = Path(folder) / "compacted.json"
                if purpose == "import":
                    tally.add("importers", fuzzing.judged(partial(fuzzing.file_case, path), bound), described)
                for command, arguments in fuzzing.file_commands(path, out).items() if purpose == "commands" else ():
                    if _wanted(f"cli {command}", only):
                        tally.add(f"cli {command}", fuzzing.judged(partial(fuzzing.command_case, runner, arguments), bound),
                                  described)
                path.unlink()
                out.unlink(missing_ok=True)


def inspect_processes(tally: fuzzing.Tally, processes: int, jobs: int, bound: float, base_seed: int, only: str) -> None:
    """``inspect`` as a real subprocess on the first ``processes`` of the commands' recordings, ``jobs`` at a time.

    Each costs an interpreter start and contextfold's import (about 0.6 s of CPU once the bytecode is cached,
    see :func:`fuzzing.inspect_process`), so 3,000 of them take half an hour of a whole core; the in-process ``cli inspect`` runs the same command code on every input. What only a real process
    shows (the ``python -m contextfold`` entry, real pipes and their encoding, a traceback escaping click, a hang)
    does not depend on the input's content, so a sample of the same inputs checks it."""
    if not processes or not _wanted("cli inspect (subprocess)", only):
        return
    bases = fuzzing.base_files(SHARED / "corpus")
    with tempfile.TemporaryDirectory(prefix="contextfold-fuzz-process-") as folder:
        def run(number: int) -> tuple[fuzzing.Outcome, str] | None:
            if _out_of_time():
                return None
            name, data, described = _mutated_file(bases, base_seed, number, "commands")
            path = Path(folder) / f"{number}-{name}"
            path.write_bytes(data)
            try:
                return fuzzing.inspect_process(path, bound, pycache=Path(folder) / "pycache"), described
            finally:
                path.unlink()

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            for done in pool.map(run, range(processes)):
                if done is not None:
                    tally.add("cli inspect (subprocess)", *done)


def store_files(tally: fuzzing.Tally, count: int, bound: float, base_seed: int, only: str) -> None:
    if not any(_wanted(f"cli {command}", only) for command in fuzzing.store_commands(Path("."), "s")):
        return
    runner = CliRunner()
    with tempfile.TemporaryDirectory(prefix="contextfold-fuzz-store-") as folder:
        base = fuzzing.transcript_base(Path(folder) / "base")
        for number in range(count):
            if _out_of_time():
                break
            rng = random.Random(base_seed * 1_000_033 + number)
            data, done = fuzzing.mutate_file(base, rng)
            store = Path(folder) / f"store-{number}"
            store.mkdir(mode=0o700)
            (store / "base.jsonl").write_bytes(data)
            (store / "base.jsonl").chmod(0o600)
            for command, arguments in fuzzing.store_commands(store, "base").items():
                if _wanted(f"cli {command}", only):
                    tally.add(f"cli {command}", fuzzing.judged(partial(fuzzing.command_case, runner, arguments), bound),
                              done)
            for path in sorted(store.rglob("*"), reverse=True):
                path.rmdir() if path.is_dir() else path.unlink()
            store.rmdir()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=3_000, help="inputs per entry point")
    parser.add_argument("--processes", type=int, default=300, help="of the files, inspected by a real subprocess")
    parser.add_argument("--jobs", type=int, default=2, help="subprocesses at a time")
    parser.add_argument("--bound", type=float, default=20.0, help="seconds any one input may take")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget-s", type=float, default=0.0,
                        help="start no input after this many seconds, and report what ran (0: no limit)")
    parser.add_argument("--progress-s", type=float, default=120.0, help="seconds between tables on stderr (0: none)")
    parser.add_argument("--only", default="", help="only the entry points whose name starts with one of these "
                        "comma-separated prefixes, or is one ending in $ (run groups of them side by side)")
    args = parser.parse_args()
    if not (SHARED / "corpus" / "SOURCES.md").exists():
        sys.exit(f"the shared corpus is not at {SHARED / 'corpus'} (set CONTEXTFOLD_SHARED)")
    tally = Progress(args.progress_s)
    started = time.perf_counter()
    if args.budget_s:
        STOP_AT[0] = time.monotonic() + args.budget_s
    provider_inputs(tally, args.count, args.bound, args.seed, args.only)
    framework_inputs(tally, args.count, args.bound, args.seed, args.only)
    session_files(tally, args.count, args.bound, args.seed, args.only)
    inspect_processes(tally, min(args.processes, args.count), args.jobs, args.bound, args.seed, args.only)
    store_files(tally, args.count, args.bound, args.seed, args.only)
    rows = table(tally)
    print_table(tally)
    print(json.dumps({
        "entry_points": len(rows),
        "inputs": sum(sum(row.values()) for row in rows.values()),
        "raw_exceptions": sum(row["untyped"] for row in rows.values()),
        "mismatches": sum(row["mismatch"] for row in rows.values()),
        "hangs": sum(row["hang"] for row in rows.values()),
        "per_entry_point": rows,
        "total_s": round(time.perf_counter() - started, 1),
        "stopped_by_budget": _out_of_time(),
    }, indent=1))
    for key, (seen, example) in tally.bad.items():
        print(f"{seen:5d} x {key}\n        first: {example[:500]}")
    sys.exit(1 if tally.failures() else 0)


if __name__ == "__main__":
    main()
