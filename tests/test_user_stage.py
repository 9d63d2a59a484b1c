"""A stage a user adds through ``Context(pipeline=...)``: it runs where it was put, its events are recorded like
the built-in stages' events, and the invariant check still guards what it returns.

The README's "Your own stage" block is the stage under test: it is run as written.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from contextfold import DEFAULT_PIPELINE, Budget, Context, Conversation, Event, InvalidPipeline, Policy
from contextfold.pipeline.stages.persist import persist

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
SECTION = README.split("## Your own stage", 1)[1].split("\n## ", 1)[0]
OUTPUT = "\n".join(f"line {n}: the same build log" for n in range(40))  # over the stage's 200 characters


def readme_stage() -> dict[str, Any]:
    """The README block's names, after running it."""
    block = re.search(r"```python\n(.*?)```", SECTION, re.DOTALL)
    assert block, "the README's 'Your own stage' section has no Python block"
    names: dict[str, Any] = {"__name__": "readme_stage"}
    exec(compile(block.group(1), "README.md", "exec"), names)  # noqa: S102 - the README's own example, run as written
    return names


def call(k: int, command: str = "make") -> dict[str, Any]:
    return {"role": "assistant",
            "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": "bash", "input": {"command": command}}]}


def result(k: int, output: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": output}]}


def started(**kw: Any) -> Context:
    context = Context(window_tokens=50_000, **kw)
    context.add([{"role": "user", "content": "Make the build pass"}], system="You are a coding agent.")
    return context


def test_the_readme_stage_replaces_a_repeated_output_and_its_event_is_recorded() -> None:
    names = readme_stage()
    context: Context = names["context"]
    assert [s.__name__ for s in context.steward.pipeline.cheap] == ["persist", "truncate", "dedupe_outputs", "put_back"]
    context = started(pipeline=context.steward.pipeline)
    heard: list[Event] = []
    context.subscribe(heard.append)
    context.add([call(1), result(1, OUTPUT)])
    first = context.prepare_view()
    context.add([call(2), result(2, OUTPUT), call(3), result(3, OUTPUT + " changed")])
    view = context.prepare_view()
    texts = [item.text for item in view.items if item.role == "tool"]
    assert texts == [OUTPUT, "[same output as call toolu_1]", OUTPUT + " changed"]
    assert first[2].text == OUTPUT  # the first occurrence is never touched
    replaced = [e for e in context.events if e.stage == "dedupe"]
    assert [(e.action, e.items) for e in replaced] == [("replaced", (view[4].id,))]
    assert replaced[0] in heard


def test_a_stage_runs_where_it_was_added() -> None:
    """One probe before ``persist``, one after it: only the second sees the output persist shortened."""
    seen: dict[str, int] = {}

    def probe(name: str) -> Any:
        def stage(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
            seen[name] = max(len(item.text) for item in conversation.items[budget.new_from:])
            return conversation, [Event(name, "looked")]
        stage.__name__ = name
        return stage

    pipeline = DEFAULT_PIPELINE.add(probe("before_persist"), before=persist).add(probe("after_persist"), after="persist")
    assert [s.__name__ for s in pipeline.cheap] == ["before_persist", "persist", "after_persist", "truncate", "put_back"]
    context = started(pipeline=pipeline, policy=Policy(persist_whole_tail_fraction=0))  # persisted on arrival
    context.add([call(1, "cat big.log"), result(1, "x" * 60_000)])
    context.prepare_view()
    assert seen["before_persist"] == 60_000 and seen["after_persist"] < 4_000
    stages = [e.stage for e in context.events if e.stage in ("before_persist", "persist", "after_persist")]
    assert stages == ["before_persist", "persist", "after_persist"]


def test_a_stage_that_breaks_a_pair_is_repaired_before_the_request_goes_out() -> None:
    def drop_results(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
        kept = [item for item in conversation.items if item.role != "tool"]
        return conversation.with_items(kept), [Event("drop_results", "dropped")]

    context = started(pipeline=DEFAULT_PIPELINE.add(drop_results))
    context.add([call(1), result(1, "ok"), {"role": "assistant", "content": "Done."}])
    view = context.prepare_view()
    assert view.validate() == []
    assert [e.action for e in context.events if e.stage == "invariants"] == ["repaired"]


def test_a_stage_that_returns_something_else_is_a_typed_error_naming_it() -> None:
    def careless(conversation: Conversation, budget: Budget) -> Any:
        return conversation  # forgot the events

    context = started(pipeline=DEFAULT_PIPELINE.add(careless))
    with pytest.raises(InvalidPipeline, match="careless") as caught:
        context.prepare_view()
    assert caught.value.stage == "careless"


def test_replace_and_remove_keep_the_order_and_name_what_is_missing() -> None:
    def keep(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
        return conversation, []

    replaced = DEFAULT_PIPELINE.replace("snip", keep)
    assert [s.__name__ for s in replaced.batch] == ["budget_outputs", "keep", "clear"]
    assert [s.__name__ for s in DEFAULT_PIPELINE.remove("truncate").cheap] == ["persist", "put_back"]
    assert [s.__name__ for s in DEFAULT_PIPELINE.add(keep, tier="batch").batch][-1] == "keep"
    assert [s.__name__ for s in DEFAULT_PIPELINE.batch] == ["budget_outputs", "snip", "clear"]  # unchanged
    with pytest.raises(InvalidPipeline, match="'dedupe'.*cheap: persist, truncate, put_back; batch: budget_outputs, snip, clear; "
                       "escalate: snip, clear, summarize, selective; after: survival"):
        DEFAULT_PIPELINE.remove("dedupe")
    with pytest.raises(InvalidPipeline, match="already in the pipeline"):
        DEFAULT_PIPELINE.add(persist)
    with pytest.raises(InvalidPipeline, match="not both"):
        DEFAULT_PIPELINE.add(keep, after="persist", before="truncate")
    with pytest.raises(InvalidPipeline, match="takes a Pipeline"):
        Context(window_tokens=50_000, pipeline=[keep])  # type: ignore[arg-type]


def test_a_fork_keeps_the_pipeline() -> None:
    def keep(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
        return conversation, []

    context = started(pipeline=DEFAULT_PIPELINE.add(keep))
    assert context.fork().steward.pipeline is context.steward.pipeline
