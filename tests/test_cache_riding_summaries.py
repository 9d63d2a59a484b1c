"""An automatic compaction's summary request is the agent's own request plus an instruction, read from cache.

Through the real SDK clients against the scripted server's prompt cache
(:mod:`contextfold.testing.prompt_cache`), on Anthropic Messages, OpenAI Chat
and Responses, with the summarizer's sync and async APIs: the summary
request reads at least 90 % of its input tokens from the cache the agent's
last request wrote, where the separately rendered prompt reads almost none.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cache_riding import SYSTEM, TASK, cache_uses, run_session, script, summary_exchanges

from contextfold.testing.scripted import ScriptedModel

PROVIDERS = ("anthropic", "openai", "responses")


@pytest.fixture
def server() -> Iterator[ScriptedModel]:
    with ScriptedModel(script) as model:
        yield model


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_summary_request_reads_at_least_90_percent_from_the_agents_cache(
    server: ScriptedModel, provider: str, asynchronous: bool
) -> None:
    context = run_session(server, provider, asynchronous=asynchronous)
    assert server.problems == []
    (summarized,) = [e for e in context.events if e.action == "summarized"]
    assert summarized.data["fallback"] is None and summarized.data["summary_request"] is None
    (exchange,) = summary_exchanges(server)
    use = exchange.cache
    assert use is not None and use.read_share >= 0.90, use
    # what the summarizer recorded is what the server reported
    ((_, usage),) = summarized.calls
    assert usage is not None and (usage.prompt_tokens, usage.cache_read_tokens) == (use.prompt, use.read)
    # and it is the agent's request: its system prompt and task first, the summary in the context after it
    assert SYSTEM.strip() in str(exchange.body) and TASK in str(exchange.body)
    assert any(item.provenance.summary for item in context.view())


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_separately_rendered_prompt_reads_next_to_nothing(server: ScriptedModel, provider: str) -> None:
    run_session(server, provider, ride_cache=False)
    assert server.problems == []
    (use,) = cache_uses(summary_exchanges(server))
    assert use.read_share < 0.05, use


def test_a_request_over_the_summarizers_window_falls_back_to_the_fitted_prompt_and_says_so(
    server: ScriptedModel,
) -> None:
    context = run_session(server, "openai", window_tokens=60_000)
    assert server.problems == []
    (first,) = [e for e in context.events if e.action == "summarized"]
    assert first.data["summary_request"] is None
    server.exchanges.clear()
    summarizer = context.summarizer
    size = context.counter.count(context.view())
    summarizer.window_tokens = int((0.8 * size + summarizer.reply_tokens) / 0.95)  # the agent's request no longer fits
    events = context.compact()
    (summarized,) = [e for e in events if e.action == "summarized"]
    assert summarized.data["fallback"] is None
    assert "over the summarizer's budget" in summarized.data["summary_request"]
    assert "fitted prompt was sent instead" in summarized.detail
    (exchange,) = summary_exchanges(server)
    assert exchange.body["messages"][0]["content"].startswith("You write the hand-over summary")
