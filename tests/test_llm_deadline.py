"""A hostile summarizing server (a byte every 2 s, pings forever) cannot hold a compaction past its deadline.

Both SDKs, streamed and not, sync and async: the compaction returns soon
after ``deadline_s`` with the extractive summary, says why, and the next
request is valid. The bound asserted is generous (several times the
deadline); without the deadline these calls would never return at all.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from test_llm_summarizers import ROUTE, make, request, session

from contextfold.adapters import adapter_for
from contextfold.context import Context
from contextfold.conversation import Summary
from contextfold.summarizers._failures import FATAL, TRANSIENT, Failure, classify
from contextfold.testing.fake_llm import FakeLLMServer, Stall

DEADLINE_S = 1.5
GENEROUS_S = DEADLINE_S + 30  # the SDK import and client set-up under a loaded machine count too


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("kind", ["trickle", "ping"])
def test_compact_returns_within_its_deadline_with_a_valid_request(
    fake_llm: FakeLLMServer, provider: str, stream: bool, kind: str
) -> None:
    fake_llm.script(ROUTE[provider], *[Stall(kind, every_s=0.5 if kind == "ping" else 2.0)] * 4)
    summarizer = make(provider, fake_llm, stream=stream, deadline_s=DEADLINE_S, timeout_s=60.0)
    context = Context(window_tokens=200_000, summarizer=summarizer)
    context.add(session())
    started = time.monotonic()
    events = context.compact()
    elapsed = time.monotonic() - started
    assert elapsed < GENEROUS_S, f"compact() took {elapsed:.1f} s against a deadline of {DEADLINE_S} s"
    fallback = [e for e in events if e.stage == "summarize" and e.action == "fallback"]
    assert len(fallback) == 1 and f"no answer within the deadline of {DEADLINE_S:g} s" in fallback[0].detail
    view = context.prepare_view()
    assert view.validate() == [] and any(isinstance(b, Summary) for item in view for b in item.blocks)
    assert context.prepare()["messages"]
    assert len(fake_llm.wait_received(ROUTE[provider])) >= 1  # the hostile server was reached, however late


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_the_async_summary_is_cancelled_at_its_deadline(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.script(ROUTE[provider], *[Stall("trickle")] * 4)
    summarizer = make(provider, fake_llm, stream=True, deadline_s=DEADLINE_S, timeout_s=60.0)
    started = time.monotonic()
    result = asyncio.run(summarizer.asummarize(request()))
    assert time.monotonic() - started < GENEROUS_S
    assert result.fallback is not None and "deadline" in result.fallback and result.text


@pytest.mark.parametrize("sdk_name", ["anthropic", "openai"])
def test_a_socket_timeout_inside_a_streamed_body_is_a_transient_timeout(sdk_name: str) -> None:
    """The SDKs wrap errors raised before the response starts, not those of a streamed body: httpx's own
    ``ReadTimeout`` or a dropped connection mid-stream must be retried within the deadline like any
    timeout (on a loaded machine the socket timeout can fire just before the deadline does)."""
    httpx = pytest.importorskip("httpx")
    pytest.importorskip(sdk_name)
    sdk = adapter_for(sdk_name).client
    assert classify(httpx.ReadTimeout("timed out"), sdk) == Failure(TRANSIENT, "timed out")
    assert classify(TimeoutError("timed out"), sdk) == Failure(TRANSIENT, "timed out")
    dropped = classify(httpx.RemoteProtocolError("peer closed connection"), sdk)
    assert dropped.kind == TRANSIENT and "peer closed connection" in dropped.reason
    assert classify(ValueError("bad"), sdk).kind == FATAL
