"""The typed-error contract under fuzzing, at full size: hostile adapter inputs, mutated session files,
``contextfold inspect`` on them.

    python benchmarks/fuzz.py [--requests 3400] [--files 3000] [--inspect 300] [--processes 8]
                              [--bound 20] [--seed 0]

Needs the shared corpus (``../shared/corpus``, or ``CONTEXTFOLD_SHARED``). The inputs are made by
``tests/fuzzing.py`` (the suite's fuzz test runs the same cases, fewer of them):

* adapter inputs: ``--requests`` valid requests per provider (Anthropic Messages, OpenAI Chat, OpenAI
  Responses, drawn by ``tests/strategies.py``), each mutated and read; an accepted one must write back to
  itself, read back to the same neutral items, and write to the other two formats or refuse with a typed
  error (and what is written there must read back there). Each request also gives a model reply, mutated
  and read with its usage. So 2 x 3 x ``--requests`` adapter inputs;
* ``--files`` mutations of the corpus recordings (and of a contextfold session file made from one), written
  to a temporary folder only and imported; what is accepted must be countable and storable;
* ``contextfold inspect`` on the first ``--inspect`` mutated files in-process (click's runner) and on
  ``--processes`` of them as real subprocesses: exit 0, or one ``contextfold:`` line and a non-zero exit.

Every input runs under a time bound of ``--bound`` seconds (a hang is counted, not waited out). Prints one
JSON object of counts per kind of case and outcome (``accepted``, ``rejected`` with a typed error, and the
failures: ``untyped``, ``mismatch``, ``hang``), then each distinct failure with the first input that showed
it. Exits 1 if there was any failure.
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
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the shared fuzzing cases and request strategies

import fuzzing
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from strategies import anthropic_requests, openai_chat_requests, responses_requests

SHARED = Path(os.environ.get("CONTEXTFOLD_SHARED", HERE.parent.parent / "shared"))
REQUESTS = {"anthropic": anthropic_requests(), "openai": openai_chat_requests(), "responses": responses_requests()}


def adapter_inputs(tally: fuzzing.Tally, per_provider: int, bound: float, base_seed: int) -> None:
    for provider, requests in REQUESTS.items() if per_provider else ():
        configured = settings(max_examples=per_provider, database=None, deadline=None, phases=[Phase.generate],
                              suppress_health_check=list(HealthCheck))
        test = given(requests, st.integers(0, 2**32 - 1))(_provider_run(tally, provider, bound))
        seed(base_seed)(configured(test))()


def _provider_run(tally: fuzzing.Tally, provider: str, bound: float) -> Callable[[dict, int], None]:
    def run(request: dict, case_seed: int) -> None:
        rng = random.Random(case_seed)
        mutated, done = fuzzing.mutate_tree(request, rng)
        tally.add(f"request {provider}", fuzzing.judged(lambda: fuzzing.adapter_case(provider, mutated), bound),
                  "; ".join(done))
        reply, done = fuzzing.mutate_tree(fuzzing.reply_of(provider, request), rng)
        tally.add(f"reply {provider}", fuzzing.judged(lambda: fuzzing.reply_case(provider, reply), bound),
                  "; ".join(done))

    return run


def session_files(tally: fuzzing.Tally, count: int, inspect: int, processes: int, bound: float,
                  base_seed: int) -> None:
    bases = fuzzing.base_files(SHARED / "corpus")
    names = sorted(bases)
    runner = CliRunner()
    with tempfile.TemporaryDirectory(prefix="contextfold-fuzz-") as folder:
        for number in range(count):
            rng = random.Random(base_seed * 1_000_003 + number)
            name = rng.choice(names)
            data, done = fuzzing.mutate_file(bases[name], rng)
            path = Path(folder) / f"{number}-{name}"
            path.write_bytes(data)
            described = f"{name}: {done}"
            tally.add("session file", fuzzing.judged(partial(fuzzing.file_case, path), bound), described)
            if number < inspect:
                run = partial(fuzzing.inspect_case, runner, path, as_json=number % 2 == 1)
                tally.add("inspect (in-process)", fuzzing.judged(run, bound), described)
            if number < processes:
                tally.add("inspect (subprocess)", fuzzing.inspect_process(path, bound), described)
            path.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3_400, help="valid requests mutated, per provider")
    parser.add_argument("--files", type=int, default=3_000, help="mutated session files")
    parser.add_argument("--inspect", type=int, default=300, help="of them, inspected in-process")
    parser.add_argument("--processes", type=int, default=8, help="of them, inspected by a real subprocess")
    parser.add_argument("--bound", type=float, default=20.0, help="seconds any one input may take")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not (SHARED / "corpus" / "SOURCES.md").exists():
        sys.exit(f"the shared corpus is not at {SHARED / 'corpus'} (set CONTEXTFOLD_SHARED)")
    tally = fuzzing.Tally()
    started = time.perf_counter()
    adapter_inputs(tally, args.requests, args.bound, args.seed)
    adapters_s = time.perf_counter() - started
    session_files(tally, args.files, args.inspect, args.processes, args.bound, args.seed)
    counts: dict[str, dict[str, int]] = {}
    for (case, kind), number in sorted(tally.counts.items()):
        counts.setdefault(case, {})[kind] = number
    adapter_total = sum(sum(c.values()) for case, c in counts.items() if case.startswith(("request", "reply")))
    print(json.dumps({
        "adapter_inputs": adapter_total,
        "session_files": sum(counts.get("session file", {}).values()),
        "inspect_runs": sum(sum(c.values()) for case, c in counts.items() if case.startswith("inspect")),
        "failures": tally.failures(),
        "untyped": sum(n for (_, kind), n in tally.counts.items() if kind == "untyped"),
        "mismatches": sum(n for (_, kind), n in tally.counts.items() if kind == "mismatch"),
        "hangs": sum(n for (_, kind), n in tally.counts.items() if kind == "hang"),
        "counts": counts,
        "adapters_s": round(adapters_s, 1),
        "total_s": round(time.perf_counter() - started, 1),
    }, indent=1))
    for key, (seen, example) in tally.bad.items():
        print(f"{seen:5d} x {key}\n        first: {example[:500]}")
    sys.exit(1 if tally.failures() else 0)


if __name__ == "__main__":
    main()
