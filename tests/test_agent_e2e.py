"""``contextfold chat -p`` end to end, with the real SDK client of each provider against the scripted model.

A session of about 80 tool calls over a generated repository, in a window
small enough that both the agent and its subagent compact several times.
The bar: the task gets done (the files end as the script's edits make them,
the final answer is printed), every request the server received was valid,
every tool result reached the model intact, and the transcripts hold every
message the model exchanged.
"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest
from agent_session import (
    BUG,
    CHANGELOG,
    FINAL,
    FIX,
    MODULES,
    SUB_REPORT,
    SUBAGENT_MARK,
    PlannedSession,
    make_repository,
)
from click.testing import CliRunner

from contextfold import ToolResult
from contextfold.adapters._writing import ERROR_MARK
from contextfold.cli import cli
from contextfold.stores.transcript import Restored, Transcript
from contextfold.testing.scripted import Exchange, ScriptedModel

WINDOW = 9_000
MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-4.1", "gemini": "gemini-2.5-flash"}
KEYS = {
    "ANTHROPIC_API_KEY": "test-key",
    "OPENAI_API_KEY": "test-key",
    "GOOGLE_API_KEY": "test-key",
    "GEMINI_API_KEY": None,
    "ANTHROPIC_BASE_URL": None,
    "OPENAI_BASE_URL": None,
    "GOOGLE_GEMINI_BASE_URL": None,
}


def history(body: dict) -> list[dict]:
    """The messages of a request (Gemini calls them contents)."""
    return body["contents"] if "contents" in body else body["messages"]


def summaries_seen(exchanges: list[Exchange]) -> int:
    """Requests whose history got shorter than the one before: a summary replaced part of it."""
    sizes = [len(history(e.body)) for e in exchanges]
    return sum(1 for before, after in pairwise(sizes) if after < before)


def as_sent(result: ToolResult, provider: str) -> str:
    """A result's text as the model reads it: Chat Completions has no error flag, so the text carries a mark;
    Gemini's is a response object, ``{"error": text}`` for a failure (the scripted server shows its JSON)."""
    if result.is_error and provider == "openai":
        return ERROR_MARK + result.text
    return json.dumps({"error": result.text}) if result.is_error and provider == "gemini" else result.text


def assert_transcript_holds_the_session(restored: Restored, exchanges: list[Exchange], provider: str) -> None:
    """Every reply the model gave and every result it was sent are in the transcript, in order, verbatim."""
    items = restored.conversation.items
    replies = [i for i, item in enumerate(items) if item.role == "assistant"]
    assert len(replies) == len(exchanges)
    calls = 0
    for number, (index, exchange) in enumerate(zip(replies, exchanges)):
        item, turn = items[index], exchange.turn
        assert turn is not None
        assert item.text == turn.text
        assert [(c.name, dict(c.arguments)) for c in item.tool_calls] == [(c.name, dict(c.arguments)) for c in turn.calls]
        if provider != "gemini":  # Gemini's wire has no call ids: contextfold gives the calls its own
            assert [c.id for c in item.tool_calls] == list(exchange.call_ids)
        answers = items[index + 1 : index + 1 + len(exchange.call_ids)]
        assert [a.tool_result.call_id for a in answers] == [c.id for c in item.tool_calls]  # type: ignore[union-attr]
        if number + 1 < len(exchanges):
            assert tuple(as_sent(a.tool_result, provider) for a in answers) == exchanges[number + 1].results  # type: ignore[arg-type]
        calls += len(exchange.call_ids)
    assert len(items) == 1 + len(exchanges) + calls  # the task, the replies, one result per call: nothing else


@pytest.mark.parametrize("provider", ["anthropic", "openai", "gemini"])
@pytest.mark.slow  # a long probe: CI runs it in its own step (-m slow)
def test_chat_p_runs_a_long_scripted_session_through_compactions_and_a_subagent(tmp_path: Path, provider: str) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    make_repository(root)
    script = PlannedSession()
    with ScriptedModel(script) as server:
        result = CliRunner().invoke(
            cli,
            [
                "chat",
                "--provider",
                provider,
                "--model",
                MODELS[provider],
                "--base-url",
                server.base_url(provider),
                "--window",
                str(WINDOW),
                "--yes",
                "--cwd",
                str(root),
                "-p",
                "Fix scale() in every module of pkg/.",
            ],
            env=KEYS,
        )
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == FINAL
    assert server.problems == []
    assert script.failures == []

    # the work is done
    for name in MODULES:
        source = (root / "pkg" / f"{name}.py").read_text()
        assert FIX + "\n" in source and BUG not in source
    assert (root / "CHANGELOG.md").read_text() == CHANGELOG

    # the session: long, compacted more than once, with a subagent that compacted on its own
    sessions = server.sessions()
    main = next(e for (system, _), e in sessions.items() if not system.startswith(SUBAGENT_MARK))
    sub = next(e for (system, _), e in sessions.items() if system.startswith(SUBAGENT_MARK))
    assert len(sessions) == 2
    tool_calls = sum(len(e.call_ids) for e in server.exchanges)
    assert tool_calls >= 60
    assert summaries_seen(main) >= 2 and summaries_seen(sub) >= 1
    sub_ids = {i for e in sub for i in e.call_ids}
    assert not any(sub_ids & {c.get("id") for m in history(e.body) for c in _calls(m)} for e in main)
    assert any(SUB_REPORT in r for e in main for r in e.results)

    # the transcripts hold every message
    loaded = [Transcript.load(path) for path in (root / ".contextfold").glob("*.jsonl")]
    by_kind = {("sub" if r.conversation.header.system_text.startswith(SUBAGENT_MARK) else "main"): r for r in loaded}
    assert len(loaded) == 2 and len(by_kind) == 2
    assert_transcript_holds_the_session(by_kind["main"], main, provider)
    assert_transcript_holds_the_session(by_kind["sub"], sub, provider)
    summarized = [e for e in by_kind["main"].events if e.kind == "summarize" and e.data["action"] == "summarized"]
    assert len(summarized) == summaries_seen(main)
    print(
        f"\n{provider}: {len(server.exchanges)} requests, {tool_calls} tool calls, "
        f"{summaries_seen(main)} compactions in the agent, {summaries_seen(sub)} in its subagent"
    )


def _calls(message: dict) -> list[dict]:
    """Tool calls of a wire message of any format, as dicts (with an ``id``, but on Gemini's wire)."""
    if "parts" in message:
        return [p["functionCall"] for p in message["parts"] if "functionCall" in p]
    if isinstance(message.get("content"), list):
        return [b for b in message["content"] if b.get("type") == "tool_use"]
    return message.get("tool_calls") or []
