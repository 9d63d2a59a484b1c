"""Summaries made in the background: started on a snapshot, swapped in by compare-and-swap, waited for only
above the hard level; with the sync and the async API.

No test here depends on timing: the summarizer writes each summary only when the test opens its gate, and
a step that waits says so with a ``waiting`` event, on which the test opens it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest

from contextfold.context import Context, Storage
from contextfold.conversation import Item, Summary, Text
from contextfold.errors import InvalidPolicy
from contextfold.events import Event
from contextfold.pipeline.base import Policy
from contextfold.summarizers.base import SummaryRequest, SummaryResult
from contextfold.summarizers.extractive import ExtractiveSummarizer

SYSTEM = "You are a coding agent."
TOOLS = [{"name": "bash", "description": "run a command", "input_schema": {"type": "object", "properties": {}}}]
GATE_S = 120.0
"""Only a safety net: a gate the test forgot to open fails the test instead of hanging it."""


class Gated:
    """A model-like summarizer (it has a deadline, so a Context makes its summaries in the background)
    that writes each summary only once the test opens its gate."""

    name = "gated"
    deadline_s = 30.0

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.started = threading.Event()
        self.calls = 0

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        self.started.set()
        if not self.gate.wait(GATE_S):
            raise RuntimeError("the test never opened the gate")
        return ExtractiveSummarizer().summarize(request)


class AsyncGated(Gated):
    """:class:`Gated` with a coroutine, as the model summarizers have: the async API awaits this one."""

    def __init__(self) -> None:
        super().__init__()
        self.agate: asyncio.Event | None = None

    async def asummarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        self.started.set()
        assert self.agate is not None
        await asyncio.wait_for(self.agate.wait(), GATE_S)
        return ExtractiveSummarizer().summarize(request)


def turn(k: int, output: str) -> list[dict]:
    return [
        {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": "bash",
                                           "input": {"command": f"cat f{k}.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": output}]},
    ]


def output(k: int, lines: int = 40) -> str:
    return "".join(f"f{k}.py:{n}: value_{k}_{n} = compute({n})\n" for n in range(lines))


def new_context(summarizer: Gated, **policy: object) -> Context:
    knobs: dict = {"trigger_tokens": 3_000, "min_summary_messages": 2, "economic_summaries": False, **policy}
    context = Context(window_tokens=20_000, summarizer=summarizer, policy=Policy(**knobs))
    context.add([{"role": "user", "content": "Fix the bug in f1.py"}], system=SYSTEM, tools=TOOLS)
    return context


def actions(context: Context) -> list[str]:
    return [e.action for e in context.events if e.stage == "summarize"]


def ids(items: object) -> list[str]:
    return [item.id for item in items]  # type: ignore[attr-defined]


def summary_done(context: Context) -> None:
    """Return once the background summary has ended (its result is ready for the next step to put in)."""
    while context.summary_running:
        time.sleep(0.001)  # a poll, not a bound: nothing depends on how long it takes


def grow_until_started(context: Context, summarizer: Gated, step: Callable[[], object], first: int = 1) -> int:
    """Add turns, a step after each, until a background summary has started; the next turn number."""
    k, before = first, actions(context).count("started")
    while actions(context).count("started") == before:
        context.add(turn(k, output(k)))
        step()
        k += 1
        assert k < first + 40, "no summary became due"
    assert summarizer.started.wait(GATE_S)
    return k


def assert_whole(context: Context) -> None:
    """Every item of the history is in the view once, in order, or in the one run the summaries cover; no
    call is left without its result."""
    view = context.view()
    assert view.validate() == []
    seen = ids(view)
    assert len(seen) == len(set(seen)), "an item is in the view twice"
    history = ids(context.history)
    in_view, in_history = set(seen), set(history)
    assert [i for i in history if i in in_view] == [i for i in seen if i in in_history], "the view reordered items"
    missing = [n for n, i in enumerate(history) if i not in in_view]
    if missing:
        assert any(isinstance(b, Summary) for item in view for b in item.blocks), "items left without a summary"
        assert missing == list(range(missing[0], missing[-1] + 1)), "an item left the view outside the summary"


# ------------------------------------------------------------------ the policy


def test_the_background_knobs_are_checked_where_they_are_set() -> None:
    with pytest.raises(InvalidPolicy, match="background_summaries"):
        Policy(background_summaries="sometimes")  # type: ignore[arg-type]
    with pytest.raises(InvalidPolicy, match="hard_fill_fraction"):
        Policy(hard_fill_fraction=1.5)
    with pytest.raises(InvalidPolicy, match="hard_fill_fraction"):
        Policy(hard_fill_fraction=0)


def test_the_hard_level_is_never_above_the_largest_request_that_fits() -> None:
    assert Context(window_tokens=20_000, policy=Policy(hard_fill_fraction=0.5)).hard_tokens == 10_000
    assert Context(window_tokens=20_000, policy=Policy(hard_fill_fraction=1.0)).hard_tokens == 19_400


def test_the_offline_summarizer_summarizes_inline_and_a_model_one_in_the_background() -> None:
    extractive = Context(window_tokens=20_000, policy=Policy(trigger_tokens=3_000, min_summary_messages=2))
    extractive.add([{"role": "user", "content": "Fix the bug in f1.py"}], system=SYSTEM, tools=TOOLS)
    for k in range(1, 12):
        extractive.add(turn(k, output(k)))
        extractive.prepare()
    assert "summarized" in actions(extractive) and "started" not in actions(extractive)
    never = new_context(Gated(), background_summaries="never")
    never_summarizer = never.summarizer
    assert isinstance(never_summarizer, Gated)
    never_summarizer.gate.set()
    for k in range(1, 12):
        never.add(turn(k, output(k)))
        never.prepare()
    assert "summarized" in actions(never) and "started" not in actions(never)


# ------------------------------------------------------------------ the sync API


def test_prepare_goes_on_with_the_full_view_while_the_summary_runs_and_the_next_step_swaps_it_in() -> None:
    summarizer = Gated()
    context = new_context(summarizer)
    k = grow_until_started(context, summarizer, context.prepare)
    for extra in range(k, k + 3):  # the loop goes on: every request is the whole view, nothing summarized yet
        context.add(turn(extra, output(extra)))
        request = context.prepare()
        assert len(request["messages"]) == len(context.history)
    assert summarizer.calls == 1 and "applied" not in actions(context)
    summarizer.gate.set()
    summary_done(context)
    view = context.prepare_view()
    assert actions(context)[-2:] == ["summarized", "applied"]
    (applied,) = [e for e in context.events if e.action == "applied"]
    assert applied.tokens_after < applied.tokens_before
    assert any(isinstance(b, Summary) for item in view for b in item.blocks)
    assert ids(view)[-6:] == ids(context.history)[-6:]  # the three turns added meanwhile, each once, in order
    assert len(view) < len(context.history)
    assert_whole(context)
    assert summarizer.calls == 1


def test_above_the_hard_level_a_step_waits_for_the_summary_and_sends_it() -> None:
    summarizer = Gated()
    context = new_context(summarizer, hard_fill_fraction=0.3)  # 6,000 tokens of a 20,000 window
    k = grow_until_started(context, summarizer, context.prepare)
    waits: list[Event] = []

    def open_when_waiting(event: Event) -> None:
        if event.action == "waiting":
            waits.append(event)
            summarizer.gate.set()

    context.subscribe(open_when_waiting)
    while not waits:
        context.add(turn(k, output(k, lines=120)))
        request = context.prepare()
        k += 1
    assert "applied" in actions(context)  # the very step that waited sends the summary
    assert any("This session is being continued" in str(m["content"]) for m in request["messages"])
    assert context.counter.count(context.view()) <= context.hard_tokens
    assert_whole(context)


def test_a_manual_compact_supersedes_a_running_summary() -> None:
    summarizer = Gated()
    context = new_context(summarizer)
    grow_until_started(context, summarizer, context.prepare)
    summarizer.gate.set()  # the compact below summarizes inline with it
    events = context.compact()
    assert next(e.action for e in events if e.stage == "summarize") == "discarded"
    assert "manual compact" in next(e.detail for e in events if e.action == "discarded")
    assert any(e.action == "summarized" for e in events)
    summary_done(context)
    context.prepare()
    assert "applied" not in actions(context)  # its result came too late and is never used
    assert_whole(context)


def test_settle_puts_the_summary_in_and_close_discards_one_still_running() -> None:
    summarizer = Gated()
    context = new_context(summarizer)
    grow_until_started(context, summarizer, context.at_turn_boundary)
    summarizer.gate.set()
    assert [e.action for e in context.settle() if e.stage == "summarize"][-1] == "applied"
    assert_whole(context)
    summarizer.gate.clear()
    summarizer.started.clear()
    grow_until_started(context, summarizer, context.prepare, first=50)
    context.close()
    assert actions(context)[-1] == "discarded"
    summarizer.gate.set()


def test_a_failed_background_summary_counts_towards_the_breaker() -> None:
    class Failing(Gated):
        def summarize(self, request: SummaryRequest) -> SummaryResult:
            super().summarize(request)
            raise RuntimeError("summarizer crashed")

    summarizer = Failing()
    summarizer.gate.set()
    context = new_context(summarizer)
    for k in range(1, 30):
        context.add(turn(k, output(k)))
        context.prepare()
        context.settle()
        if context.breaker_open:
            break
    assert context.breaker_open and actions(context).count("failed") == 3
    assert "applied" not in actions(context)


# ------------------------------------------------------------------ the async API


def test_the_async_api_runs_the_summary_as_a_task_and_swaps_it_in() -> None:
    async def main() -> None:
        summarizer = AsyncGated()
        summarizer.agate = asyncio.Event()
        context = new_context(summarizer)
        k = 1
        while "started" not in actions(context):
            context.add(turn(k, output(k)))
            await context.aprepare()
            k += 1
        await asyncio.sleep(0)  # the task takes its first step: the snapshot goes to the executor
        for extra in range(k, k + 2):
            context.add(turn(extra, output(extra)))
            request = await context.aprepare()
            assert len(request["messages"]) == len(context.history)
        summarizer.agate.set()
        events = await context.asettle()
        assert [e.action for e in events if e.stage == "summarize"][-2:] == ["summarized", "applied"]
        assert ids(context.view())[-4:] == ids(context.history)[-4:]
        assert_whole(context)

    asyncio.run(main())


def test_the_async_api_awaits_the_summary_above_the_hard_level() -> None:
    async def main() -> None:
        summarizer = AsyncGated()
        summarizer.agate = asyncio.Event()
        context = new_context(summarizer, hard_fill_fraction=0.3)

        def open_the_gates(event: Event) -> None:
            """Once the step waits: the summary it waits for goes on, and so does the one it then makes inline
            (the view, with the background summary in, is still above the hard level), on the loop thread."""
            if event.action == "waiting":
                summarizer.agate.set()  # type: ignore[union-attr]
                summarizer.gate.set()

        context.subscribe(open_the_gates)
        k = 1
        while "applied" not in actions(context):
            context.add(turn(k, output(k, lines=120 if "started" in actions(context) else 40)))
            await context.aprepare()
            k += 1
            assert k < 60
        assert actions(context).index("waiting") < actions(context).index("applied")
        assert "failed" not in actions(context)
        assert_whole(context)

    asyncio.run(main())


# ------------------------------------------------------------------ the swap itself


def test_splice_refuses_a_summary_whose_span_changed_and_recuts_one_that_moved() -> None:
    from contextfold.context.background import Placement, splice

    items = [Item("user", (Text(f"item {n}"),)) for n in range(8)]
    summary = Item("user", (Text("summary of 1-4"),))
    summarized = [items[0], summary, *items[5:]]
    appended = [*items, Item("user", (Text("new"),))]
    placed = splice(items, summarized, appended)
    assert isinstance(placed, Placement) and (placed.start, placed.end) == (1, 5)
    cleared = [*items[:3], Item("user", (Text("cleared"),), id=items[3].id), *items[4:]]
    refused = splice(items, summarized, cleared)
    assert isinstance(refused, str) and "changed or left the view" in refused
    moved = [Item("user", (Text("restored"),)), *items]  # another view put an item in front
    recut = splice(items, summarized, moved)
    assert isinstance(recut, Placement) and (recut.start, recut.end) == (2, 6)
    assert [i.id for i in recut.apply(Context(window_tokens=1_000).view().with_items(moved)).items] == [
        moved[0].id, items[0].id, summary.id, *[i.id for i in items[5:]]]


def test_two_workers_on_one_store_while_one_summarizes_in_the_background(tmp_path) -> None:
    """Worker A's summary runs while worker B adds turns to the same session: B starts none of its own (A holds
    the session's lease), A folds B's turns in and swaps its summary in against the store's view, B reads it."""
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    policy = Policy(trigger_tokens=3_000, min_summary_messages=2, economic_summaries=False)
    a_summarizer, b_summarizer = Gated(), Gated()
    a = Context(window_tokens=20_000, summarizer=a_summarizer, policy=policy,
                storage=Storage(store=url, session_id="shared"))
    a.add([{"role": "user", "content": "Fix the bug in f1.py"}], system=SYSTEM, tools=TOOLS)
    b = Context.resume(url, "shared", window_tokens=20_000, summarizer=b_summarizer, policy=policy)
    grow_until_started(a, a_summarizer, a.prepare)
    for k in range(100, 103):
        b.add(turn(k, output(k)))
        b.prepare()
    assert "started" not in actions(b) and b_summarizer.calls == 0
    a_summarizer.gate.set()
    summary_done(a)
    a.prepare()
    assert actions(a)[-1] == "applied" and len(a.history) == len(b.history)
    b.prepare()
    assert ids(b.view()) == ids(a.view())
    for worker in (a, b):
        assert_whole(worker)
        worker.close()
    b_summarizer.gate.set()
