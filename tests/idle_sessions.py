"""Synthetic recorded sessions with idle gaps, for the idle-compaction tests (no corpus needed)."""

from __future__ import annotations

from dataclasses import replace

from contextfold import Context, Policy, ToolCall
from contextfold.conversation import Conversation, Item, assistant, reproducible_ids, tool, user

START_S = 1_800_000_000.0


def gapped_session(turns: int, gap_s: float, *, pasted_lines: int = 0, rounds: int = 3) -> Conversation:
    """``turns`` turns of the person, each a request (with ``pasted_lines`` of a pasted document: text no clearing
    shortens), ``rounds`` file reads and an answer, ``gap_s`` of idleness after each; every item timestamped, and
    its id the same on every call (ids are counted in the requests that name them)."""
    with reproducible_ids(f"idle {turns} {gap_s} {pasted_lines} {rounds}"):
        return _session(turns, gap_s, pasted_lines, rounds)


def _session(turns: int, gap_s: float, pasted_lines: int, rounds: int) -> Conversation:
    items: list[Item] = []
    now = START_S

    def at(item: Item, seconds: float) -> None:
        nonlocal now
        now += seconds
        items.append(replace(item, timestamp=now))

    for turn in range(turns):
        pasted = "\n".join(f"spec {turn}.{k}: the retry budget of service {turn}-{k} is {k * 7} ms, owner team {k % 5}"
                           for k in range(pasted_lines))
        ask = "Audit every module and report the retry budgets." if turn == 0 else f"Next, part {turn}."
        at(user(f"{ask}\n{pasted}" if pasted else ask), 0.0)
        for r in range(rounds):
            n = turn * rounds + r
            at(assistant("", [ToolCall(f"c{n}", "read_file", {"path": f"src/mod{n}.py"})]), 5.0)
            at(tool(f"c{n}", "\n".join(f"retry_budget_{n}_{k} = {k * 7}  # module {n} line {k}" for k in range(60))), 2.0)
        at(assistant(f"Part {turn} audited: " + " ".join(f"budget {turn}.{k} noted;" for k in range(40))), 5.0)
        now += gap_s
    return Conversation(items)


class Clock:
    """The time a Context reads: set by the test."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def busy_context(clock: Clock, **policy: object) -> Context:
    """A context with a long turn: a pasted specification and reads, then the agent's answer."""
    # lean's tail (a tenth of the trigger) and lines put back (800 tokens): this session is one long turn, and
    # balanced's (35 %, 1,600) keep so much of it that an idle summary saves too little to pay for itself
    knobs = {"tail_max_trigger_fraction": 0.1, "survival_max_tokens": 800, **policy}
    context = Context(window_tokens=32_000, max_output_tokens=2_000, clock=clock,
                      policy=Policy(idle_compaction=True, **knobs))  # type: ignore[arg-type]
    spec = "\n".join(f"spec {k}: the retry budget of service {k} is {k * 7} ms, owner team {k % 5}" for k in range(600))
    context.add([user("Audit every module against the specification I paste next.")])
    context.add([assistant("Paste it.")])
    context.add([user(f"The specification:\n{spec}")])
    for n in range(24):
        context.add([assistant("", [ToolCall(f"c{n}", "read_file", {"path": f"src/mod{n}.py"})])])
        context.add([tool(f"c{n}", "\n".join(f"retry_budget_{n}_{k} = {k * 7}" for k in range(30)))])
        context.prepare_view()
    context.add([assistant("All modules audited: the budgets match the specification.")])
    return context
