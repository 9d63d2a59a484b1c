"""LLM summarizers through the real anthropic and openai SDK clients, against the local fake server.

What is checked: the request that reaches the server (a valid request of its
format, the span as a transcript, the sections, the user's instructions, no
tools), the answer's analysis stripped, the usage recorded; and every fault
path (prompt too long, 429 with retry-after, 5xx, timeouts, empty, truncated
and malformed answers) ending in a summary, retried or from the fallback,
with the reason said.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from dataclasses import replace
from email.utils import formatdate

import pytest

from contextfold.adapters.calls import retry_after_s
from contextfold.context import Context
from contextfold.conversation import Header, Item, Summary, ToolCall, assistant, tool, user
from contextfold.errors import SummarizerError
from contextfold.pipeline.base import Policy
from contextfold.summarizers import SECTION_TITLES, SummaryRequest, summary_preamble
from contextfold.summarizers.llm import LLMSummarizer, ModelSummarizer
from contextfold.summarizers.prompts import CONTINUATION_TITLES, SYSTEM_PROMPT, summary_from_answer
from contextfold.testing.fake_llm import FakeLLMServer, Fault, Reply
from contextfold.tokens import heuristic_tokens

ANSWER = (
    "<analysis>The user wants the ledger fixed; I mention <summary> here only in passing. SCRATCH-NOTES</analysis>\n"
    "<summary>\n## 1. Primary Request and Intent\nFix the ledger totals.\n## 8. Current Work\nRe-running the tests.\n</summary>"
)
SUMMARY = "## 1. Primary Request and Intent\nFix the ledger totals.\n## 8. Current Work\nRe-running the tests."
ROUTE = {"anthropic": "messages", "openai": "chat", "gemini": "gemini"}


class Sleeps(list):
    """An injected sleep that records the waits instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)

    async def asleep(self, seconds: float) -> None:
        self.append(seconds)


def make(provider: str, server: FakeLLMServer, sleeps: Sleeps | None = None, **options) -> LLMSummarizer:
    sleeps = sleeps if sleeps is not None else Sleeps()
    common = {"api_key": "test-key", "sleep": sleeps, "asleep": sleeps.asleep, "timeout_s": 5.0, **options}
    base_url = server.openai_url if provider == "openai" else server.url
    return ModelSummarizer(provider=provider, base_url=base_url, **common)


def session(rounds: int = 6) -> list[Item]:
    """A span: an earlier summary, user messages, tool rounds (one failing), the assistant's last words."""
    intro = f"{summary_preamble()}\n\n"  # as the summary stage writes it: the preamble, and how long it is
    earlier = Summary(f"{intro}EARLIER-SUMMARY: the parser was rewritten.", covers=9, preamble=len(intro))
    items = [Item("user", (earlier,))]
    items.append(user("Please fix the ledger totals in src/ledger.py; keep the API unchanged."))
    for k in range(rounds):
        items.append(assistant(f"Step {k}.", [ToolCall(f"c{k}", "bash", {"command": f"pytest tests/test_{k}.py"})]))
        failed = k == 2
        output = "FAILED test_total - AssertionError: 10 != 12" if failed else f"{k} passed\n" + "ok line\n" * 40
        items.append(tool(f"c{k}", output, failed or None))
        if k == 3:
            items.append(user(f"USER-MESSAGE-{k}: also check the rounding mode"))
    items.append(assistant("Rounding fixed; next I run the whole suite."))
    return items


def request(items: list[Item] | None = None, target: int = 1_500, instructions: str | None = None) -> SummaryRequest:
    return SummaryRequest(items if items is not None else session(), Header(), target, heuristic_tokens, instructions)


def user_text(provider: str, body: dict) -> str:
    if provider == "gemini":
        return body["contents"][-1]["parts"][0]["text"]
    messages = body["messages"]
    return messages[-1]["content"]


def system_text(provider: str, body: dict) -> str:
    if provider == "gemini":
        return body["systemInstruction"]["parts"][0]["text"]
    return body["system"] if provider == "anthropic" else body["messages"][0]["content"]


def reply_limit(body: dict) -> int | None:
    """The reply limit a request asks for, whichever field its format names it by."""
    return body.get("max_tokens") or body.get("max_completion_tokens") or body.get("generationConfig", {}).get(
        "maxOutputTokens")


@pytest.fixture(params=["anthropic", "openai", "gemini"])
def provider(request: pytest.FixtureRequest) -> str:
    return request.param


# --------------------------------------------------------------------------- the request and the answer


@pytest.mark.parametrize("offered", [True, False])
def test_the_model_is_told_to_point_at_history_only_when_the_agent_can_search_it(
    fake_llm: FakeLLMServer, offered: bool
) -> None:
    """Told the agent could search its history, a model summarizer names where details are instead of copying
    them; an agent without search_history then had neither the detail nor a way to reach it."""
    fake_llm.script(ROUTE["anthropic"], Reply(ANSWER, input_tokens=900, output_tokens=300))
    ask = replace(request(), history_tools=offered)
    make("anthropic", fake_llm).summarize(ask)
    text = user_text("anthropic", fake_llm.requests[0].body)
    assert ("search_history" in text) is offered
    assert ("quote the lines it will need" in text) is not offered


def test_the_request_carries_the_span_the_sections_and_the_instructions_and_no_tools(
    fake_llm: FakeLLMServer, provider: str
) -> None:
    fake_llm.script(ROUTE[provider], Reply(ANSWER, input_tokens=900, output_tokens=300))
    result = make(provider, fake_llm).summarize(request(instructions="Focus on the rounding mode."))
    assert fake_llm.problems == []
    (received,) = fake_llm.requests
    body = received.body
    assert "tools" not in body and "tool_choice" not in body
    assert system_text(provider, body) == SYSTEM_PROMPT and "no tools" in SYSTEM_PROMPT
    text = user_text(provider, body)
    for title in SECTION_TITLES:
        assert f". {title}\n" in text
    assert "pytest tests/test_0.py" in text and "AssertionError: 10 != 12" in text and "(error)" in text
    assert "USER-MESSAGE-3: also check the rounding mode" in text and "[user]" in text
    assert "<earlier_summary>\nEARLIER-SUMMARY: the parser was rewritten." in text and summary_preamble()[:40] not in text
    assert text.rstrip().endswith("Focus on the rounding mode.")
    assert text.index("<transcript>") < text.index("## 1. Primary Request")  # material first, task after it
    assert reply_limit(body) == 16_000
    assert result.text == SUMMARY and "SCRATCH-NOTES" not in result.text and result.fallback is None
    ((conversation, usage),) = result.calls
    assert usage.prompt_tokens == 900 and usage.output_tokens == 300
    assert conversation.header.system_text == SYSTEM_PROMPT and conversation.items[0].text == text


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("asynchronous", [False, True])
def test_streaming_and_async_give_the_same_summary(
    fake_llm: FakeLLMServer, provider: str, stream: bool, asynchronous: bool
) -> None:
    fake_llm.script(ROUTE[provider], Reply(ANSWER, output_tokens=77))
    summarizer = make(provider, fake_llm, stream=stream)
    result = asyncio.run(summarizer.asummarize(request())) if asynchronous else summarizer.summarize(request())
    assert result.text == SUMMARY and result.fallback is None
    assert result.calls[0][1].output_tokens == 77
    streamed = stream and provider != "gemini"  # Gemini streams on another endpoint: its summary is asked whole
    assert bool(fake_llm.requests[0].body.get("stream")) is streamed and fake_llm.problems == []


def test_the_continuation_style_asks_for_its_five_sections(fake_llm: FakeLLMServer) -> None:
    fake_llm.script("messages", Reply(ANSWER))
    make("anthropic", fake_llm, style="continuation").summarize(request())
    text = fake_llm.requests[0].body["messages"][0]["content"]
    assert all(f". {title}\n" in text for title in CONTINUATION_TITLES)
    assert "All user messages" not in text
    with pytest.raises(ValueError, match="unknown summary style"):
        make("anthropic", fake_llm, style="haiku")


@pytest.mark.parametrize("answer, expected", [
    ("<analysis>a <summary>fake</summary> b</analysis><summary>real</summary>", "real"),
    ("<summary>first</summary> then <summary>second</summary>", "second"),
    ("<summary>  </summary>", None),
    ("<analysis>only thinking", None),
    ("<summary>cut off before the closing tag", None),
])
def test_the_summary_is_read_without_the_analysis(answer: str, expected: str | None) -> None:
    assert summary_from_answer(answer) == expected


# --------------------------------------------------------------------------- fitting the summarizer's own window


def test_a_span_larger_than_the_summarizers_window_leaves_out_its_oldest_rounds(fake_llm: FakeLLMServer) -> None:
    fake_llm.script("messages", Reply(ANSWER))
    items = session(rounds=30)
    summarizer = make("anthropic", fake_llm, window_tokens=6_000, max_output_tokens=1_000)
    result = summarizer.summarize(request(items))
    text = fake_llm.requests[0].body["messages"][0]["content"]
    assert heuristic_tokens(SYSTEM_PROMPT) + heuristic_tokens(text) <= summarizer.input_budget_tokens
    assert "pytest tests/test_0.py" not in text and "pytest tests/test_29.py" in text  # the oldest rounds went
    assert "were left out" in text and "Please fix the ledger totals" in text  # ... but their user messages are quoted
    assert result.fallback is None and result.state["omitted_items"] > 0


def test_prompt_too_long_is_recovered_within_three_retries(fake_llm: FakeLLMServer, provider: str) -> None:
    route = ROUTE[provider]
    fake_llm.script(route, Fault.prompt_too_long(250_000, 200_000), Fault.prompt_too_long(), Fault.prompt_too_long(),
                    Reply(ANSWER))
    result = make(provider, fake_llm).summarize(request(session(rounds=20)))
    assert result.fallback is None and result.text == SUMMARY
    sizes = [len(user_text(provider, r.body)) for r in fake_llm.requests]
    assert len(sizes) == 4 and sizes == sorted(sizes, reverse=True) and len(set(sizes)) == 4
    first, last = (user_text(provider, r.body) for r in (fake_llm.requests[0], fake_llm.requests[-1]))
    assert "were left out" not in first and "were left out" in last
    assert fake_llm.problems == []


def test_a_fourth_prompt_too_long_falls_back(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.script(ROUTE[provider], *[Fault.prompt_too_long()] * 5)
    result = make(provider, fake_llm).summarize(request(session(rounds=20)))
    assert len(fake_llm.requests) == 4 and fake_llm.pending(ROUTE[provider]) == 1
    assert result.fallback is not None and "after leaving out older messages 3 times" in result.fallback
    assert "## 1. Primary Request and Intent" in result.text  # the extractive summary took over


# --------------------------------------------------------------------------- transient faults


def test_429_waits_what_retry_after_asks(fake_llm: FakeLLMServer, provider: str) -> None:
    sleeps = Sleeps()
    fake_llm.script(ROUTE[provider], Fault.rate_limited(retry_after_s=7), Reply(ANSWER))
    result = make(provider, fake_llm, sleeps).summarize(request())
    assert sleeps == [7.0] and result.fallback is None and len(fake_llm.requests) == 2


def test_a_retry_after_longer_than_the_limit_falls_back_at_once(fake_llm: FakeLLMServer) -> None:
    sleeps = Sleeps()
    fake_llm.script("messages", Fault.rate_limited(retry_after_s=600), Reply(ANSWER))
    result = make("anthropic", fake_llm, sleeps, max_wait_s=60).summarize(request())
    assert sleeps == [] and len(fake_llm.requests) == 1
    assert result.fallback is not None and "HTTP 429" in result.fallback and "600 s" in result.fallback


def test_5xx_and_overloaded_are_retried_with_backoff(fake_llm: FakeLLMServer, provider: str) -> None:
    sleeps = Sleeps()
    fake_llm.script(ROUTE[provider], Fault.server_error(), Fault.overloaded(), Reply(ANSWER))
    result = make(provider, fake_llm, sleeps, backoff_s=0.5).summarize(request())
    assert result.text == SUMMARY and result.fallback is None
    assert sleeps == [0.5, 1.0] and len(fake_llm.requests) == 3


def test_retries_are_bounded_then_the_fallback_says_why(fake_llm: FakeLLMServer) -> None:
    sleeps = Sleeps()
    fake_llm.script("chat", *[Fault.server_error()] * 4)
    result = make("openai", fake_llm, sleeps, max_retries=2).summarize(request())
    assert len(fake_llm.requests) == 3 and len(sleeps) == 2
    assert result.fallback == ("openai summarizer (gpt-4.1-mini): HTTP 500: The server had an error while processing "
                               "your request. Sorry about that! after 2 retries; extractive used instead")
    assert result.calls == ()  # no answer, no usage to count


def test_a_timeout_falls_back_to_the_extractive_summary(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.script(ROUTE[provider], Reply(ANSWER, delay_s=0.6), Reply(ANSWER, delay_s=0.6))
    result = make(provider, fake_llm, timeout_s=0.15, max_retries=1).summarize(request())  # both replies come too late
    assert result.fallback is not None and "timed out after 1 retries" in result.fallback
    assert result.text.startswith("## 1. Primary Request and Intent") and result.state.get("schema")


@pytest.mark.parametrize("reply, reason", [
    (Reply(""), "empty"),
    (Reply("<summary>cut off", stop="max_tokens"), "truncated"),
    (Reply("Here is my summary without the tags."), "no <summary>"),
])
def test_empty_truncated_and_malformed_answers_are_rejected(
    fake_llm: FakeLLMServer, provider: str, reply: Reply, reason: str
) -> None:
    fake_llm.script(ROUTE[provider], reply, Reply(ANSWER))
    result = make(provider, fake_llm).summarize(request())
    assert len(fake_llm.requests) == 1  # not retried
    assert result.fallback is not None and reason in result.fallback
    assert len(result.calls) == 1 and result.calls[0][1] is not None  # a rejected answer was still paid for


def test_retry_after_is_read_in_milliseconds_seconds_or_as_a_date() -> None:
    assert retry_after_s({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after_s({"retry-after": "3"}) == 3.0
    assert 55 <= retry_after_s({"retry-after": formatdate(time.time() + 60, usegmt=True)}) <= 61
    assert retry_after_s({}) is None and retry_after_s({"retry-after": "soon"}) is None


# --------------------------------------------------------------------------- inside the Context


def turn(k: int, output: str) -> list[dict]:
    return [
        {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": "bash",
                                           "input": {"command": f"cat f{k}.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": output}]},
    ]


def context_with(summarizer: LLMSummarizer, trigger_tokens: int = 1_500) -> Context:
    policy = Policy(trigger_tokens=trigger_tokens, min_summary_messages=2)  # summaries of a few turns, to test them
    context = Context(window_tokens=20_000, summarizer=summarizer, policy=policy)
    tools = [{"name": "bash", "description": "run", "input_schema": {"type": "object", "properties": {}}}]
    context.add([{"role": "user", "content": "Fix the bug in f1.py"}], system="You are a coding agent.", tools=tools)
    return context


def test_a_model_summary_enters_the_context_and_its_cost_is_in_the_event(fake_llm: FakeLLMServer) -> None:
    fake_llm.script("messages", Reply(ANSWER, input_tokens=1_234, output_tokens=321))
    context = context_with(make("anthropic", fake_llm))
    for k in range(1, 6):
        context.add(turn(k, f"line {k}\n" * 50))
    events = context.compact("keep the f1.py details")
    (summarized,) = [e for e in events if e.action == "summarized"]
    assert summarized.data["summarizer"] == "anthropic" and summarized.data["fallback"] is None
    assert [usage.prompt_tokens for _, usage in summarized.calls] == [1_234]
    (summary,) = [item for item in context.view() if item.provenance.summary]
    assert SUMMARY in summary.text and "SCRATCH-NOTES" not in summary.text
    assert not any(e.action == "fallback" for e in events)
    # the request is the agent's own (its system prompt and tools), the instruction its last user message
    body = fake_llm.requests[0].body
    assert body["system"][0]["text"] == "You are a coding agent." and body["tools"][0]["name"] == "bash"
    assert "Fix the bug in f1.py" in json.dumps(body["messages"][0]["content"])
    assert "keep the f1.py details" in body["messages"][-1]["content"][-1]["text"]
    assert summarized.data["summary_request"] is None  # nothing to say: it was the agent's request


def test_three_fallbacks_in_a_row_open_the_breaker_and_no_more_requests_are_made(fake_llm: FakeLLMServer) -> None:
    fake_llm.script("messages", *[Fault.server_error()] * 40)
    context = context_with(make("anthropic", fake_llm, max_retries=0))
    requests_when_open = None
    for k in range(1, 12):
        context.add(turn(k, "y " * 300))
        assert context.prepare()["messages"]  # the agent gets a valid request every time
        context.settle()  # a model summary is made in the background: put it in before the next step
        if context.breaker_open and requests_when_open is None:
            requests_when_open = len(fake_llm.requests)
    assert requests_when_open is not None and len(fake_llm.requests) == requests_when_open
    fallbacks = [e for e in context.events if e.action == "fallback"]
    assert len(fallbacks) >= 3 and all("HTTP 500" in e.detail and "extractive used instead" in e.detail for e in fallbacks)
    assert [e.action for e in context.events].count("breaker_open") == 1
    summaries = [e for e in context.events if e.action == "summarized"]
    assert all(e.data["fallback"] for e in summaries)  # every compaction still produced a (extractive) summary


def test_a_manual_compact_that_succeeds_closes_the_breaker(fake_llm: FakeLLMServer) -> None:
    context = context_with(make("anthropic", fake_llm, max_retries=0))  # nothing scripted: every call fails
    for k in range(1, 12):
        context.add(turn(k, "y " * 300))
        context.prepare()
        context.settle()  # the background summary, put in before the next step
    assert context.breaker_open
    fake_llm.script("messages", *[Reply(ANSWER)] * 3)
    context.compact()
    assert not context.breaker_open and context.stats()["consecutive_failures"] == 0


# --------------------------------------------------------------------------- setup errors and the optional SDKs


def test_a_missing_key_is_an_error_when_the_summarizer_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(SummarizerError, match="ANTHROPIC_API_KEY"):
        ModelSummarizer(provider="anthropic")
    with pytest.raises(SummarizerError, match="OPENAI_API_KEY"):
        ModelSummarizer(provider="openai")
    assert ModelSummarizer(provider="openai", base_url="http://127.0.0.1:1/v1")  # a server of one's own may need no key
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    assert "from-env" not in repr(ModelSummarizer(provider="anthropic"))


def test_windows_come_from_the_model_registry_else_the_default() -> None:
    known = ModelSummarizer(provider="anthropic", api_key="k", model="claude-haiku-4-5", max_output_tokens=8_000)
    assert known.input_budget_tokens == int(200_000 * 0.95) - 8_000
    local = ModelSummarizer(provider="openai", api_key="k", model="llama3.1:8b", max_output_tokens=4_000)
    assert local.input_budget_tokens == int(32_768 * 0.95) - 4_000
    capped = ModelSummarizer(provider="anthropic", api_key="k", model="claude-3-haiku", max_output_tokens=16_000)
    assert capped.reply_tokens == 4_096


BLOCKED = """
import sys
sys.modules['anthropic'] = None
sys.modules['openai'] = None
import contextfold
from contextfold import Context
from functools import partial
from contextfold.summarizers import ModelSummarizer
from contextfold.summarizers.responses_compaction import OpenAIResponsesCompactionSummarizer
from contextfold.errors import SummarizerError
context = Context(window_tokens=8000)
context.add([{'role': 'user', 'content': 'hello'}, {'role': 'assistant', 'content': 'hi'}])
context.compact()
for make in (partial(ModelSummarizer, provider='anthropic'), partial(ModelSummarizer, provider='openai'),
             OpenAIResponsesCompactionSummarizer):
    try:
        make(api_key='k')
    except SummarizerError as error:
        print(error)
"""


def test_contextfold_works_without_the_sdks_and_says_what_to_install() -> None:
    done = subprocess.run([sys.executable, "-c", BLOCKED], check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3
    assert "pip install -e '.[anthropic]'" in lines[0] and "pip install -e '.[openai]'" in lines[1]


def test_an_injected_client_is_used_as_is(fake_llm: FakeLLMServer) -> None:
    import anthropic

    client = anthropic.Anthropic(base_url=fake_llm.url, api_key="injected", max_retries=0)
    fake_llm.script("messages", Reply(ANSWER))
    result = ModelSummarizer(provider="anthropic", client=client, async_client=object()).summarize(request())
    headers = fake_llm.requests[0].headers
    assert result.text == SUMMARY and "injected" in (headers.get("x-api-key") or headers["authorization"])

