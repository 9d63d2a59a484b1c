"""Items are read once as they arrive (references, an output's lines, a summary's facts), never at the cost of the item."""

from __future__ import annotations

import logging

import pytest

import contextfold.pipeline.admit as admit_module
from contextfold.context import Context
from contextfold.pipeline.importance import LINE_INDEX, REFERENCES
from contextfold.summarizers._facts import TALLY


def round_of(k: int, output: str) -> list[dict]:
    """One assistant tool call and its result, in Anthropic's format."""
    return [
        {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": "bash", "input": {"command": "pytest -x tests/"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": output}]},
    ]


def test_what_a_compaction_asks_of_an_item_is_read_when_it_arrives() -> None:
    context = Context(window_tokens=20_000)
    context.add([{"role": "user", "content": "Fix parse_value in src/app.py"}])
    call, output = context.add(round_of(1, "src/app.py:12: ValueError\n1 failed, 3 passed in 0.2s"))
    for item in (call, output):
        assert REFERENCES in item.readings  # its specific tokens, which clearing, the summary and the survival check use
    # where each of the output's tokens is, which clearing keeps the lines of: numbers, not copies of the lines
    assert output.readings.get(LINE_INDEX) == {"src/app.py:12": 0, "ValueError": 0, "0.2s": 1}
    assert output.readings.get(TALLY) == "1 failed, 3 passed in 0.2s"  # the summary's last test run, read once


def test_a_failure_reading_ahead_is_logged_and_the_items_kept(monkeypatch: pytest.MonkeyPatch,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    def broken(items: object) -> None:
        raise RuntimeError("reader bug")

    monkeypatch.setattr(admit_module, "read_ahead", broken)
    context = Context(window_tokens=20_000)
    context.add([{"role": "user", "content": "Fix parse_value in src/app.py"}])
    with caplog.at_level(logging.WARNING, logger="contextfold.pipeline.admit"):
        added = context.add(round_of(1, "1 failed"))
    assert len(added) == 2 and len(context.view()) == 3
    assert "reading new items ahead failed" in caplog.text and "reader bug" in caplog.text
    assert context.prepare()["messages"][-1]["content"][0]["content"] == "1 failed"
