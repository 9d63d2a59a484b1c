"""What every integration test needs besides the server: the framework, or a clear skip; and the pairing mutation."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from contextfold import Conversation
from contextfold.boundary import Cut
from contextfold.testing.scripted import ScriptedModel


def require(module: str, extra: str) -> ModuleType:
    """``module``, imported; when it is missing the test is skipped saying how to install it, or fails under ``CI=true``.

    Test modules call it at their top, so the skip is a module-level one: a
    fresh checkout with only ``.[dev]`` installed collects every file and
    skips the framework tests, naming the extra. CI installs every
    integration extra, so a framework missing there is a broken build, not a
    reason to skip.
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        reason = f"{module} is not installed (python3 -m pip install -e '.[{extra}]'): {error}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true: {reason}", pytrace=False)
        pytest.skip(reason, allow_module_level=True)


def _split_round(conversation: Conversation, cut: Cut | None) -> Cut | None:
    """The cut moved into the middle of a round: the calls go into the summary, their results stay in the tail."""
    if cut is None:
        return None
    items = conversation.items
    for index in range(cut.index, len(items) - 1):
        if items[index].tool_calls and items[index + 1].role == "tool":
            return replace(cut, index=index + 1)
    return cut


@contextmanager
def pairing_disabled() -> Iterator[None]:
    """contextfold with its call/result pairing turned off: cuts split rounds and nothing repairs the result.

    The mutation check of every integration test runs the same loop inside
    this and expects the scripted server to reject a request: proof that the
    server's checks (and so the test) can fail.
    """
    summarize = importlib.import_module("contextfold.pipeline.stages.summarize")  # the package exports a function of that name
    choose = summarize.choose_cut
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(summarize, "choose_cut", lambda conversation, **kw: _split_round(conversation, choose(conversation, **kw)))
        patch.setattr(Conversation, "repair", lambda self: (self, []))
        yield


def run_script(path: Path, server: ScriptedModel, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run a Python script whose SDK clients find ``server`` through the environment (base URLs, keys, no tracing)."""
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": "test", "ANTHROPIC_BASE_URL": server.base_url("anthropic"),
        "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": server.base_url("openai"),
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
        "GOOGLE_API_KEY": "test", "GOOGLE_GEMINI_BASE_URL": server.base_url("gemini"),
    }
    return subprocess.run([sys.executable, str(path), *args], check=False, cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def naming_history_tools(model: ScriptedModel) -> list[int]:
    """The requests ``model`` received (by index) that mention ``search_history`` or ``read_history`` anywhere:
    a summary's last line, a preview, the tools offered. An agent not given the tools must see none (a model
    told to call a tool it lacks calls it, and its framework answers with an error or stops the run)."""
    return [n for n, exchange in enumerate(model.exchanges)
            if any(name in json.dumps(exchange.body) for name in ("search_history", "read_history"))]


def assert_told_with_receipts(context: Any, told: list[Any], receipts: list[Any]) -> None:
    """The integration's ``on_compaction`` hook was told of each automatic compaction with its receipt, the receipts
    it exposes are the Context's, and every read_history reference of each returns the item it names."""
    from test_receipts import assert_refs_read_back

    from contextfold.pipeline.receipts import receipts_in

    assert told, "the loop compacted, and the hook was told"
    assert receipts == receipts_in(context.events)
    assert [notice.receipt for notice in told] == [r for r in receipts if r.occasion != "manual"]
    assert sum(assert_refs_read_back(context, receipt) for receipt in receipts) > 0

