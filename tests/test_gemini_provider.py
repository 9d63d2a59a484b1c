"""Gemini as a provider like the others: ``Context(provider="gemini")`` with the real google-genai client.

The client talks to the scripted Gemini server (:mod:`agent_model_server`,
whose ``generateContent`` rules are those of the real API, :mod:`gemini_wire`)
as a user's own loop would: the request ``Context.prepare()`` built goes to
``client.models.generate_content``, the SDK's response goes to
``add_response``, and each function call is answered by a function response
naming the call's id (contextfold's; it is not sent, as Gemini sends none).
The summarizer's fault paths run in :mod:`test_llm_summarizers` (``gemini``
is one of its providers); what is here is the whole session, Gemini's own
"prompt too long" wording, and a failing Gemini summarizer inside a Context.
"""

from __future__ import annotations

import json
import logging
from itertools import pairwise
from typing import Any

import pytest

from contextfold import Context
from contextfold.adapters import adapter_for
from contextfold.pipeline.base import Policy
from contextfold.summarizers import ModelSummarizer
from contextfold.testing.fake_llm import FakeLLMServer, Fault
from contextfold.testing.scripted import CHARS_PER_TOKEN, Call, ScriptedModel, Seen, Turn

genai = pytest.importorskip("google.genai")
types = genai.types

WINDOW = 8_000
ROUNDS = 60
MODEL = "gemini-2.5-flash"
SYSTEM = "You are a coding agent. Read the files you are asked about."
TOOLS = [{"function_declarations": [{"name": "read_file", "description": "Read a file of the repository.",
                                     "parameters_json_schema": {"type": "object",
                                                                "properties": {"path": {"type": "string"}},
                                                                "required": ["path"]}}]}]


def file_text(path: str) -> str:
    """What reading ``path`` gives: about 1,300 characters, its first line naming the file."""
    return f"# {path}: module ok\n" + "".join(f"def f{k}(x):\n    return x * {k}  # {path}\n" for k in range(30))


def script(seen: Seen) -> Turn:
    """Read one file per request for ``ROUNDS`` requests, then answer; the last result must be the file asked for."""
    if seen.step > 0:
        asked = f"src/m{seen.step - 1}.py"
        assert seen.results == (file_text(asked),), f"step {seen.step}: the result of {asked} did not arrive whole"
    if seen.step < ROUNDS:
        return Turn(text=f"Reading module {seen.step}.", calls=(Call("read_file", {"path": f"src/m{seen.step}.py"}),))
    return Turn(text="All modules read.")


def client_for(server: ScriptedModel) -> Any:
    return genai.Client(api_key="test-key", http_options={"base_url": server.base_url("gemini")})


def send(client: Any, request: dict[str, Any]) -> Any:
    """The request as a user of google-genai sends it: the contents, and the rest in the config."""
    config = types.GenerateContentConfig(system_instruction=request.get("system_instruction"),
                                         tools=request.get("tools"), max_output_tokens=1_024)
    return client.models.generate_content(model=MODEL, contents=request["contents"], config=config)


def test_sixty_tool_rounds_at_an_8k_window_every_request_valid_and_under_the_window() -> None:
    context = Context(window_tokens=WINDOW, max_output_tokens=1_024, provider="gemini")
    context.add([types.Content(role="user", parts=[types.Part(text="Read every module of src/, one by one.")])],
                system=SYSTEM, tools=TOOLS)
    with ScriptedModel(script) as server:
        client = client_for(server)
        for _ in range(ROUNDS + 1):
            items = context.add_response(send(client, context.prepare()))
            calls = [call for item in items for call in item.tool_calls]
            if not calls:
                break
            parts = [types.Part(function_response=types.FunctionResponse(
                id=call.id, name=call.name, response={"result": file_text(call.arguments["path"])})) for call in calls]
            context.add([types.Content(role="user", parts=parts)])
    assert server.problems == []
    exchanges = server.exchanges
    assert len(exchanges) == ROUNDS + 1 and exchanges[-1].turn is not None and exchanges[-1].turn.text == "All modules read."
    sizes = [len(json.dumps(e.body)) // CHARS_PER_TOKEN for e in exchanges]
    assert max(sizes) <= WINDOW, f"a request of {max(sizes):,} tokens (by the server's count) is over the window"
    counted = [event for event in context.events if event.action == "summarized"]
    shorter = sum(1 for before, after in pairwise(exchanges) if len(after.body["contents"]) < len(before.body["contents"]))
    assert counted and shorter >= 1, "60 rounds of 1,300 characters at 8k must have been compacted"
    assert all("functionCall" in p and "id" not in p["functionCall"] for e in exchanges for c in e.body["contents"]
               for p in c["parts"] if "functionCall" in p)  # Gemini's wire has no call ids
    first = exchanges[0].body
    assert first["systemInstruction"]["parts"][0]["text"] == SYSTEM
    assert first["tools"][0]["functionDeclarations"][0]["name"] == "read_file"
    print(f"\ngemini: {len(exchanges)} requests, largest {max(sizes):,} tokens, {len(counted)} summaries")


def test_an_sdk_response_is_read_with_its_usage_and_finish_reason() -> None:
    response = types.GenerateContentResponse(
        candidates=[types.Candidate(content=types.Content(role="model", parts=[types.Part(text="cut")]),
                                    finish_reason=types.FinishReason.MAX_TOKENS)],
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=5_000, cached_content_token_count=4_000, candidates_token_count=30, thoughts_token_count=12))
    reply = adapter_for("gemini").read_response(response)
    assert reply.text == "cut" and reply.stop == "MAX_TOKENS" and reply.incomplete is not None
    assert (reply.usage.prompt_tokens, reply.usage.cache_read_tokens, reply.usage.output_tokens) == (5_000, 4_000, 42)
    blocked = adapter_for("gemini").read_response({"prompt_feedback": {"block_reason": "SAFETY"}})
    assert blocked.conversation.items == [] and blocked.incomplete == "the prompt was blocked"


def test_a_finish_reason_that_is_not_a_name_is_no_stop_reason_not_a_raw_error() -> None:
    """Found by benchmarks/fuzz.py: str() of a 5,000-digit number raises ValueError."""
    content = {"role": "model", "parts": [{"text": "ok"}]}
    for reason in (10**5000 - 1, ["STOP"], {"x": 1}):
        reply = adapter_for("gemini").read_response({"candidates": [{"content": content, "finish_reason": reason}]})
        assert reply.text == "ok" and reply.stop is None


def test_gemini_says_prompt_too_long_in_its_own_words() -> None:
    gemini = adapter_for("gemini")
    too_long = gemini.prompt_too_long(
        "400 INVALID_ARGUMENT. The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).")
    assert too_long is not None and too_long.fits_share == pytest.approx(1_048_576 / 1_200_000)
    assert adapter_for("anthropic").prompt_too_long("The input token count (1200000) exceeds the maximum") is None
    assert gemini.prompt_too_long("400 INVALID_ARGUMENT. Please ensure that function call turn comes ...") is None


def test_retry_request_compacts_after_geminis_prompt_too_long(fake_llm: FakeLLMServer) -> None:
    fake_llm.script("gemini", Fault.prompt_too_long(9_000, 8_000))
    context = Context(window_tokens=WINDOW, provider="gemini")
    context.add([{"role": "user", "parts": [{"text": "Summarize the logs."}]}])
    for k in range(12):
        context.add([{"role": "model", "parts": [{"text": f"Reading log {k}."}]},
                     {"role": "user", "parts": [{"text": f"log {k}: " + "line\n" * 80}]}])
    client = genai.Client(api_key="test-key", http_options={"base_url": fake_llm.url})
    errors, _ = adapter_for("gemini").client.error_classes()
    with pytest.raises(errors) as refused:
        client.models.generate_content(model=MODEL, contents=context.prepare()["contents"])
    retry = context.retry_request(refused.value)
    assert retry is not None and len(retry["contents"]) < 25
    assert [e.action for e in context.events if e.stage == "reactive"] == ["prompt_too_long"]


def test_a_failing_gemini_summarizer_falls_back_to_the_extractive_summary_with_an_event(
    fake_llm: FakeLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    fake_llm.script("gemini", *[Fault.server_error()] * 4)
    summarizer = ModelSummarizer(provider="gemini", base_url=fake_llm.url, api_key="test-key", max_retries=1,
                                 sleep=lambda seconds: None)
    context = Context(window_tokens=20_000, provider="gemini", summarizer=summarizer,
                      policy=Policy(trigger_tokens=1_500, min_summary_messages=2))
    context.add([{"role": "user", "parts": [{"text": "Fix the bug in f1.py"}]}])
    for k in range(6):
        context.add([{"role": "model", "parts": [{"text": f"Looking at f{k}.py"}]},
                     {"role": "user", "parts": [{"text": f"f{k}.py:\n" + "x = 1\n" * 60}]}])
    with caplog.at_level(logging.WARNING):
        events = context.compact()
    assert len(fake_llm.requests) == 2 and fake_llm.problems == []
    (fallback,) = [e for e in events if e.action == "fallback"]
    assert "gemini summarizer (gemini-2.5-flash): HTTP 500" in fallback.detail and "extractive used instead" in fallback.detail
    (summarized,) = [e for e in events if e.action == "summarized"]
    assert summarized.data["fallback"] and any(item.provenance.summary for item in context.view())
    assert any("extractive" in record.getMessage() for record in caplog.records)
