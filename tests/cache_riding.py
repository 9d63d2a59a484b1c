"""An agent loop whose automatic compactions summarize with a model, against the scripted server's prompt cache.

The agent reads one chunk of a long file per step through the real SDK
client of its provider (Anthropic Messages, OpenAI Chat or Responses), with
``Context.prepare()`` building every request, until a compaction has
happened; the summaries are written by :class:`ModelSummarizer` on the same
server and model, synchronously or through its async API. What each request
read from and wrote to the server's prompt cache is in
:attr:`ScriptedModel.exchanges`, priced in :func:`paid_usd`.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import anthropic
import openai

from contextfold import Context
from contextfold.adapters import adapter_for
from contextfold.conversation import reproducible_ids, tool
from contextfold.pipeline.base import Policy, Prices
from contextfold.replay import StrategyConfig, replay
from contextfold.replay.strategies.default import Pipeline
from contextfold.summarizers.base import SummaryRequest, SummaryResult
from contextfold.summarizers.llm import ModelSummarizer
from contextfold.summarizers.prompts import summary_from_answer
from contextfold.testing.prompt_cache import CHARS_PER_TOKEN, CacheUse, PromptCache, content_tokens
from contextfold.testing.scripted import Call, Exchange, ScriptedModel, Seen, Turn
from contextfold.tokens import Estimator

MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-4.1", "responses": "gpt-4.1"}
CACHE_KEY = "agent-session-1"
TOOLS = [{"name": "read_chunk", "description": "Read one numbered chunk of the log file under investigation.",
          "input_schema": {"type": "object", "properties": {"chunk": {"type": "integer"}}, "required": ["chunk"]}}]
SYSTEM = "You are a careful engineer investigating a failing service from its logs. " * 8
TASK = "Find why the payments service returned HTTP 502 overnight; read the log chunk by chunk."
SUMMARY_MARK = "inside <summary></summary> tags"
ANSWER = ("<analysis>chunks read so far</analysis><summary>## 1. Primary Request and Intent\n"
          "Find the cause of the overnight HTTP 502s of the payments service.\n"
          "## 9. Optional Next Step\nRead the next log chunk.</summary>")
POLICY = Policy(trigger_fraction=0.5, budget_steps=(), exclude_tools=("read_chunk",), economic_summaries=False)
"""A summary at half the window, and no budgeting or clearing of old outputs before it (the session reaches it sooner)."""
CHUNK = re.compile(r"== chunk (\d+) ==")


def chunk_text(number: int, lines: int = 60) -> str:
    """Chunk ``number`` of the log: distinct lines of about 70 characters each."""
    rows = [f"2026-11-26T02:{number % 60:02d}:{n % 60:02d} payments[{number}] upstream latency {n * 7 + number} ms"
            for n in range(lines)]
    return f"== chunk {number} ==\n" + "\n".join(rows)


def is_summary_request(body: Mapping[str, Any]) -> bool:
    messages = body.get("messages") or body.get("input") or []
    return bool(messages) and SUMMARY_MARK in json.dumps(messages[-1])


def script(seen: Seen) -> Turn:
    if is_summary_request(seen.body):
        return Turn(ANSWER)
    read = [int(n) for result in seen.results for n in CHUNK.findall(result)]
    return Turn("", (Call("read_chunk", {"chunk": max(read) + 1 if read else 0}),))


@dataclass
class AsyncDriven:
    """The model summarizer called through its async API (``asummarize``) by the pipeline's sync call."""

    inner: ModelSummarizer

    @property
    def name(self) -> str:
        return self.inner.name

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        return asyncio.run(self.inner.asummarize(request))


def summarizer(server: ScriptedModel, provider: str, *, asynchronous: bool, ride_cache: bool = True) -> Any:
    model = ModelSummarizer(provider=provider, model=MODELS[provider], base_url=server.base_url(provider),
                            api_key="test", ride_cache=ride_cache,
                            cache_key=CACHE_KEY if provider != "anthropic" else None)
    return AsyncDriven(model) if asynchronous else model


def send(client: Any, provider: str, request: Mapping[str, Any]) -> Any:
    """The agent's request through the provider's SDK, as an agent would send it."""
    model = MODELS[provider]
    if provider == "anthropic":
        return client.messages.create(model=model, max_tokens=1_024, **request)
    if provider == "openai":
        return client.chat.completions.create(model=model, prompt_cache_key=CACHE_KEY, **request)
    return client.responses.create(model=model, prompt_cache_key=CACHE_KEY, **request)


def run_session(server: ScriptedModel, provider: str, *, asynchronous: bool = False, ride_cache: bool = True,
                window_tokens: int = 60_000, steps_after: int = 3, policy: Policy = POLICY) -> Context:
    """Run the agent until a compaction has happened and ``steps_after`` more steps; the context is returned."""
    context = Context(window_tokens=window_tokens, provider=provider, policy=policy,
                      summarizer=summarizer(server, provider, asynchronous=asynchronous, ride_cache=ride_cache))
    context.add([{"role": "user", "content": TASK}], "anthropic", system=SYSTEM, tools=TOOLS)
    sdk = anthropic.Anthropic if provider == "anthropic" else openai.OpenAI
    client = sdk(base_url=server.base_url(provider), api_key="test", max_retries=0)
    left = None
    for _ in range(400):
        items = context.add_response(send(client, provider, context.prepare()))
        calls = [call for item in items for call in item.tool_calls]
        context.add([tool(call.id, chunk_text(int(call.arguments["chunk"]))) for call in calls])
        if left is None and any(e.action == "summarized" for e in context.events):
            left = steps_after
        if left is not None:
            left -= 1
            if left < 0:
                return context
    raise AssertionError("no compaction in 400 steps")


def summary_exchanges(server: ScriptedModel) -> list[Exchange]:
    return [e for e in server.valid if is_summary_request(e.body)]


def cache_uses(exchanges: list[Exchange]) -> list[CacheUse]:
    return [e.cache for e in exchanges if e.cache is not None]


def paid_usd(uses: list[CacheUse], outputs: list[int], prices: Prices) -> float:
    """What the requests cost as the server reported them: reads, writes, uncached input and output."""
    return sum(u.read * prices.cache_read_per_mtok + u.written * prices.cache_write_per_mtok
               + u.uncached * prices.input_per_mtok + out * prices.output_per_mtok
               for u, out in zip(uses, outputs)) / 1e6


@dataclass(frozen=True)
class LiveVsReplay:
    """One session's cost as the server reported it (``live_usd``) and as the replay of its history priced it.

    ``replay_live_usd`` prices the summary as the live path pays (the agent's
    cache, ``cost_live_usd``); ``replay_referee_usd`` by the reference
    scorer's rule (the summarizer's own cache, ``cost_llm_usd``).
    """

    provider: str
    live_usd: float
    replay_live_usd: float
    replay_referee_usd: float

    def difference(self, replayed: float) -> float:
        """How far a replay figure is from what the live path paid, as a fraction of the latter."""
        return replayed / self.live_usd - 1


@dataclass(frozen=True)
class Written:
    """The replay's summarizer: the summary the live session's model wrote, offline (so both send the same summary)."""

    text: str
    name: str = "written"

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        return SummaryResult(self.text)


PRICES = Prices()
"""Claude Sonnet's list prices, for every provider alike (the comparison is of rules, not of price tables)."""


def live_vs_replay(provider: str, prices: Prices = PRICES, window_tokens: int = 60_000) -> LiveVsReplay:
    """Run the agent against the scripted server, then replay its history with contextfold's pipeline, and price both.

    What is compared is the pricing rules, not tokenizers: the server counts
    each request's text with contextfold's own counter (:func:`content_tokens`
    of ``Estimator().text``), and the replay counts with the same estimator.
    What remains between the two counts is framing (per-message and per-call
    overheads the estimator adds, the wire's ids and roles the server counts)
    and each provider's cache rules (minimum lengths, 128-token steps).
    Output tokens are the server's own count (a quarter of the text plus 20).
    Ids are drawn reproducibly, so every run gives the same figures.
    """
    estimator = Estimator()
    policy = replace(POLICY, background_summaries="never")  # the summary at the step it fires, in both
    with ScriptedModel(script) as server:
        server.cache = PromptCache(count=content_tokens(estimator.text))
        with reproducible_ids(f"live-{provider}"):  # the same ids, so the same counts, on every run
            context = run_session(server, provider, window_tokens=window_tokens, policy=policy)
        exchanges = server.valid
        outputs = [len(e.turn.text) // CHARS_PER_TOKEN + 20 if e.turn is not None else 0 for e in exchanges]
        live = paid_usd(cache_uses(exchanges), outputs, prices)
    summary = summary_from_answer(ANSWER) or ""  # what the model wrote; the pipeline frames it on both sides
    config = StrategyConfig(window_tokens=window_tokens, summarizer=Written(summary))
    strategy = Pipeline(config)  # contextfold's replay strategy, with the live session's policy and provider
    strategy.context = Context(window_tokens=window_tokens, provider=provider, summarizer=Written(summary),
                               policy=policy, clock=lambda: None)
    totals = replay(context.history, strategy, config, tokenizer=estimator, prices=prices,
                    cache_rule=adapter_for(provider).cache_rule).totals
    return LiveVsReplay(provider, live, totals.cost_live_usd, totals.cost_llm_usd)
