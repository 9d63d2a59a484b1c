"""The providers' own compaction end to end, through the real SDK clients against the scripted server.

Each shape (Anthropic's on-demand ``compaction`` request, OpenAI's
``compaction_trigger`` item and ``responses.compact``) is asked for on the
view while the conversation goes on, swapped in for exactly what it
summarized, kept in the transcript, and sent back as the provider's own
block/item in the next request, never as the readable text; every other
provider reads the text. Sync and async clients alike.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from contextfold.adapters import from_anthropic, from_responses, to_anthropic, to_openai, to_responses
from contextfold.adapters.registry import RESPONSES
from contextfold.context import Context, Storage
from contextfold.conversation import Summary
from contextfold.errors import ContextfoldError
from contextfold.providers.anthropic_native import ServerCompaction, with_context_management
from contextfold.summarizers.llm import ModelSummarizer
from contextfold.summarizers.responses_compaction import OpenAIResponsesCompactionSummarizer
from contextfold.testing.fake_llm import FakeLLMServer, Reply
from contextfold.testing.wire_checks import ON_DEMAND_COMPACTION_BETA, compaction_signature

MODEL = {"anthropic": "claude-sonnet-4-6", "responses": "gpt-5.1"}
TOOLS = {"anthropic": [{"name": "bash", "description": "run", "input_schema": {"type": "object", "properties": {}}}],
         "responses": [{"type": "function", "name": "bash", "description": "run",
                        "parameters": {"type": "object", "properties": {}}, "strict": False}]}
CLAUDE_SUMMARY = "CLAUDE-SUMMARY: utils.helper was renamed to utils.assist; tests pass."
PINNED = "PINNED: never run the migrations against the production database."


def turns(provider: str, k: int, lines: int = 1) -> list[dict[str, Any]]:
    """One tool round (its output ``lines`` long) and its answer, in ``provider``'s wire shape."""
    output = "\n".join(f"f{k}.py:{n + 3}: def helper_{n}():" for n in range(lines))
    if provider == "anthropic":
        return [{"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": "bash",
                                                   "input": {"command": f"grep -n helper f{k}.py"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}",
                                              "content": output}]},
                {"role": "assistant", "content": f"Step {k} done."},
                {"role": "user", "content": f"Now step {k + 1}."}]
    return [{"type": "function_call", "call_id": f"call_{k}", "name": "bash",
             "arguments": json.dumps({"command": f"grep -n helper f{k}.py"})},
            {"type": "function_call_output", "call_id": f"call_{k}", "output": output},
            {"role": "assistant", "content": f"Step {k} done."},
            {"role": "user", "content": f"Now step {k + 1}."}]


def session(provider: str, tmp_path: Path) -> Context:
    context = Context(window_tokens=200_000, provider=provider,
                      storage=Storage(transcript=tmp_path, session_id=f"native-{provider}"))
    if provider == "anthropic":
        context.add([{"role": "user", "content": "Rename helper to assist in utils.py."}],
                    system="You are a coding agent.", tools=TOOLS[provider])
    else:
        context.add([{"role": "system", "content": "You are a coding agent."},
                     {"role": "user", "content": "Rename helper to assist in utils.py."}], tools=TOOLS[provider])
    for k in range(3):
        context.add(turns(provider, k))
    return context


def client_for(provider: str, server: FakeLLMServer, asynchronous: bool) -> Any:
    if provider == "anthropic":
        kind = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
        return kind(base_url=server.url, api_key="test-key", max_retries=0)
    kind = openai.AsyncOpenAI if asynchronous else openai.OpenAI
    return kind(base_url=server.openai_url, api_key="test-key", max_retries=0)


def send(provider: str, client: Any, request: dict[str, Any], asynchronous: bool) -> Any:
    """An agent's own request, as it would send it."""
    if provider == "anthropic":
        call = client.messages.create(model=MODEL[provider], max_tokens=512, **request)
    else:
        call = client.responses.create(model=MODEL[provider], max_output_tokens=512, **request)
    return asyncio.run(call) if asynchronous else call


def compaction_reply(provider: str, shape: str | None) -> tuple[str, Reply]:
    if provider == "anthropic":
        return "messages", Reply(CLAUDE_SUMMARY)
    return ("compact" if shape == "compact" else "responses"), Reply("ENCRYPTED-BLOB-1")


def read_by_model(provider: str, body: dict[str, Any]) -> str:
    """What of a request the model reads, as JSON.

    Anthropic drops every message block before a ``compaction`` block that
    holds a summary (its compaction documentation; the SDK's
    ``MessageCreateParams.compaction`` says the block goes first). OpenAI
    reads the whole input: its ``responses.compact`` answer itself keeps the
    user messages before the ``compaction`` item.
    """
    if provider != "anthropic":
        return json.dumps(body["input"])
    messages = body["messages"]
    blocks = [(m, b) for m, message in enumerate(messages) if isinstance(message["content"], list)
              for b, block in enumerate(message["content"]) if block.get("type") == "compaction" and block.get("content")]
    if not blocks:
        return json.dumps(messages)
    m, b = blocks[-1]
    return json.dumps([{**messages[m], "content": messages[m]["content"][b:]}, *messages[m + 1 :]])


def unmarked(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages without their cache breakpoints (the last one moves as the conversation grows)."""
    return [{**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]}
            if isinstance(m["content"], list) else m for m in messages]


SHAPES = [("anthropic", None), ("responses", "trigger"), ("responses", "compact")]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize(("provider", "shape"), SHAPES, ids=["anthropic-summarize", "openai-trigger", "openai-compact"])
def test_a_compaction_asked_while_the_conversation_goes_on_replaces_exactly_what_it_summarized(
    fake_llm: FakeLLMServer, tmp_path: Path, provider: str, shape: str | None, asynchronous: bool
) -> None:
    context = session(provider, tmp_path)
    context.pin(PINNED)
    sent_before = [item.id for item in context.view()]
    route, reply = compaction_reply(provider, shape)
    fake_llm.script(route, reply)
    fake_llm.script("messages" if provider == "anthropic" else "responses", Reply("Working on step 3."), Reply("Done."))
    client = client_for(provider, fake_llm, asynchronous)

    pending = context.start_compaction(instructions="Keep every file path.", shape=shape)
    call = pending.call(client, model=MODEL[provider], max_tokens=1_024)
    if asynchronous:
        compacted = asyncio.run(call.asend())
    else:  # the background protocol: the compaction runs in a thread while the agent takes a step
        done: list[Any] = []
        worker = threading.Thread(target=lambda: done.append(call.send()))
        worker.start()
        fake_llm.wait_received(route)  # it took the compaction's scripted answer before the agent's step asks
    # The conversation goes on, on the full history, while the compaction request is out.
    step = send(provider, client, context.prepare(), asynchronous)
    context.add_response(step)
    context.add(turns(provider, 3)[-1:])
    if not asynchronous:
        worker.join()
        (compacted,) = done
    events = context.apply_compaction(pending, compacted)

    assert fake_llm.problems == []
    asked = fake_llm.received(route)[0]
    if provider == "anthropic":
        assert asked.body["compaction"] == {"type": "summarize", "instructions": "Keep every file path."}
        assert ON_DEMAND_COMPACTION_BETA in asked.headers["anthropic-beta"]
        step_messages = fake_llm.received("messages")[-1].body["messages"]  # the agent's own request, marks aside
        assert unmarked(asked.body["messages"]) == unmarked(step_messages[: len(asked.body["messages"])])
    elif shape == "trigger":
        assert asked.body["input"][-1] == {"type": "compaction_trigger"}
    else:
        assert asked.path == "/v1/responses/compact" and "tools" not in asked.body

    (event,) = events
    assert (event.stage, event.action) == ("native", "compacted") and list(event.items) == sent_before
    view = context.view().items
    natives = [b for item in view for b in item.blocks if isinstance(b, Summary) and b.native is not None]
    (summary,) = natives
    assert summary.native_provider == provider
    assert not set(sent_before) & {item.id for item in view}  # exactly the summarized items went ...
    assert [item.text for item in view[-2:]] == ["Working on step 3.", "Now step 4."]  # ... what came since stayed
    if provider == "anthropic":
        assert summary.text == CLAUDE_SUMMARY and view[0].blocks == (summary,)
    else:
        assert summary.native["encrypted_content"] == "ENCRYPTED-BLOB-1"
        assert "Rename helper to assist" in summary.text  # readable: contextfold's extractive summary

    # The next request of the same provider carries the block/item itself, not the readable text, and the
    # pinned item where the model reads it (after Anthropic's block: what is before it is dropped).
    request = context.prepare()
    send(provider, client, request, asynchronous)
    assert fake_llm.problems == []
    assert PINNED in read_by_model(provider, fake_llm.requests[-1].body)
    body = json.dumps(fake_llm.requests[-1].body)
    if provider == "anthropic":
        first = fake_llm.requests[-1].body["messages"][0]["content"][0]
        assert {k: v for k, v in first.items() if k != "cache_control"} == summary.native
        assert first["signature"] == compaction_signature(CLAUDE_SUMMARY) and body.count(CLAUDE_SUMMARY) == 1
    else:
        assert dict(summary.native) in fake_llm.requests[-1].body["input"]
        assert summary.body[:60] not in body and "Step 0 done" not in body
    # Any other reader gets the text.
    other = to_openai(context.view())
    assert summary.text in [message["content"] for message in other] and "encrypted_content" not in json.dumps(other)

    # The transcript keeps it: a resumed session sends the same block.
    context.close()
    resumed = Context.resume(tmp_path, context.session_id, window_tokens=200_000, provider=provider)
    assert [b for item in resumed.view() for b in item.blocks if isinstance(b, Summary) and b.native] == [summary]
    resumed.close()


def test_a_compaction_trigger_in_band_is_taken_from_the_reply(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    context = session("responses", tmp_path)
    sent = [item.id for item in context.view()]
    fake_llm.script("responses", Reply("ENCRYPTED-INBAND"), Reply("Next."))
    client = client_for("responses", fake_llm, False)
    call = RESPONSES.client.compaction_call(client, context.prepare(), model=MODEL["responses"], max_tokens=1_024)
    context.add_response(call.send())
    assert fake_llm.requests[0].body["input"][-1] == {"type": "compaction_trigger"}
    (item,) = context.view().items
    (summary,) = item.blocks
    assert isinstance(summary, Summary) and summary.native["encrypted_content"] == "ENCRYPTED-INBAND"
    assert "Rename helper to assist" in summary.text and next(e for e in reversed(context.events) if e.stage == "native").items[: len(sent)] == tuple(sent)
    assert context.last_receipt is not None and context.last_receipt.occasion == "provider"  # its receipt, too
    context.add([{"role": "user", "content": "Go on."}])
    send("responses", client, context.prepare(), False)
    assert fake_llm.problems == []
    assert fake_llm.requests[-1].body["input"][1] == dict(summary.native)  # after the system message
    context.close()


def test_the_compaction_summarizer_puts_its_item_in_later_requests(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    """The summarize stage with OpenAI's compaction endpoint: the summary block holds the item, sent in its place."""
    fake_llm.script("compact", Reply("ENCRYPTED-STAGE"))
    fake_llm.script("responses", Reply("Next."))
    summarizer = OpenAIResponsesCompactionSummarizer(base_url=fake_llm.openai_url, api_key="test-key")
    context = Context(window_tokens=200_000, provider="responses", summarizer=summarizer)
    context.add([{"role": "system", "content": "You are a coding agent."},
                 {"role": "user", "content": "Rename helper to assist in utils.py."}])
    for k in range(8):
        context.add(turns("responses", k, lines=80))
    context.compact()
    request = context.prepare()
    client_for("responses", fake_llm, False).responses.create(model="gpt-5.1", **request)
    assert fake_llm.problems == []
    items = fake_llm.requests[-1].body["input"]
    (compaction,) = [item for item in items if item.get("type") == "compaction"]
    assert compaction["encrypted_content"] == "ENCRYPTED-STAGE"
    (summary,) = [b for item in context.view() for b in item.blocks if isinstance(b, Summary)]
    assert summary.native == compaction and "Step 0 done." in summary.body
    assert summary.text not in [item.get("content") for item in items]  # not sent as text here ...
    assert summary.text in [m["content"] for m in to_anthropic(context.view())["messages"]]  # ... Claude reads it


def test_a_compaction_on_a_view_that_changed_meanwhile_is_discarded(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    context = session("anthropic", tmp_path)
    fake_llm.script("messages", Reply(CLAUDE_SUMMARY), Reply("OTHER-SUMMARY"))
    client = client_for("anthropic", fake_llm, False)
    first, second = context.start_compaction(), context.start_compaction()
    late = second.call(client, model=MODEL["anthropic"], max_tokens=512).send()
    context.apply_compaction(first, first.call(client, model=MODEL["anthropic"], max_tokens=512).send())
    before = [item.id for item in context.view()]  # the first compaction rewrote the view the second was asked on
    (event,) = context.apply_compaction(second, late)
    assert (event.stage, event.action) == ("native", "discarded") and "left the view" in event.detail
    assert [item.id for item in context.view()] == before
    context.close()


def test_an_answer_without_a_compaction_changes_nothing(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    context = session("anthropic", tmp_path)
    before = [item.id for item in context.view()]
    pending = context.start_compaction()
    (event,) = context.apply_compaction(pending, {"content": [{"type": "compaction", "content": None}],
                                                  "stop_reason": "compaction", "usage": {"input_tokens": 5,
                                                                                         "output_tokens": 1}})
    assert event.action == "discarded" and "no compaction" in event.detail
    assert [item.id for item in context.view()] == before
    with pytest.raises(ContextfoldError, match="has no compaction of its own"):
        Context(window_tokens=10_000, provider="openai").start_compaction().call(None, model="m", max_tokens=1)
    with pytest.raises(ContextfoldError, match="not 'nope'"):
        context.start_compaction(shape="nope").call(None, model="m", max_tokens=1)
    context.close()


@pytest.mark.parametrize("wire", [
    [{"role": "assistant", "content": [{"type": "compaction", "content": "S", "signature": "sig", "encrypted_content": "e"}]},
     {"role": "user", "content": "go"}],
    [{"role": "assistant", "content": [{"type": "compaction", "content": "S", "signature": "sig"},
                                       {"type": "text", "text": "Hi"}]}],
    [{"role": "assistant", "content": [{"type": "compaction", "content": None}]}, {"role": "user", "content": "go"}],
], ids=["on-demand", "edit", "failed"])
def test_anthropic_compaction_blocks_round_trip(wire: list[dict[str, Any]]) -> None:
    conversation = from_anthropic(wire)
    assert to_anthropic(conversation)["messages"] == wire
    summaries = [b for item in conversation for b in item.blocks if isinstance(b, Summary)]
    assert [s.text for s in summaries] == ([] if wire[0]["content"][0]["content"] is None else ["S"])


def test_openai_compaction_items_round_trip() -> None:
    wire = [{"role": "user", "content": "hi"}, {"type": "compaction", "id": "cmp_1", "encrypted_content": "ENC"},
            {"role": "user", "content": "go"}]
    conversation = from_responses(wire)
    assert to_responses(conversation) == wire
    assert "ENC" not in json.dumps(to_anthropic(conversation)) and "compacted by OpenAI" in json.dumps(to_openai(conversation))


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_the_compaction_edit_paused_after_compacting_round_trips(
    fake_llm: FakeLLMServer, tmp_path: Path, asynchronous: bool
) -> None:
    """``compact_20260112`` with ``pause_after_compaction``: the reply is the block alone (stop reason
    ``compaction``); it replaces what was sent and goes back first in the next request."""
    block = {"type": "compaction", "content": CLAUDE_SUMMARY, "signature": compaction_signature(CLAUDE_SUMMARY)}
    fake_llm.script("messages", Reply(blocks=(block,), stop="compaction"), Reply("Next."))
    context = session("anthropic", tmp_path)
    client = client_for("anthropic", fake_llm, asynchronous)
    edit = ServerCompaction(trigger_tokens=50_000, pause_after_compaction=True)

    def create() -> Any:
        request, headers = with_context_management(context.prepare(), edit, policy=context.policy)
        call = client.beta.messages.create(model=MODEL["anthropic"], max_tokens=512, **request, extra_headers=headers)
        return asyncio.run(call) if asynchronous else call

    context.add_response(create())
    (item,) = context.view().items
    assert item.blocks == (Summary(CLAUDE_SUMMARY, native=block, native_provider="anthropic"),)
    context.add([{"role": "user", "content": "Go on."}])
    create()
    assert fake_llm.problems == []
    sent = fake_llm.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["assistant", "user"]
    assert {k: v for k, v in sent[0]["content"][0].items() if k != "cache_control"} == block
    context.close()
    record = (tmp_path / f"{context.session_id}.jsonl").read_text()
    assert CLAUDE_SUMMARY in record and compaction_signature(CLAUDE_SUMMARY) in record


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_pinned_items_go_between_the_compaction_edit_block_and_the_answer(
    fake_llm: FakeLLMServer, tmp_path: Path, asynchronous: bool
) -> None:
    """``compact_20260112`` without a pause: the reply is the block, then the answer (here a tool call). The next
    request splits that message at the block, so the pinned item is read and the call still meets its result."""
    block = {"type": "compaction", "content": CLAUDE_SUMMARY, "signature": compaction_signature(CLAUDE_SUMMARY)}
    call = {"type": "tool_use", "id": "toolu_9", "name": "bash", "input": {"command": "pytest"}}
    fake_llm.script("messages", Reply("Running the tests.", blocks=(block, call), stop="tool_use"), Reply("Next."))
    context = session("anthropic", tmp_path)
    context.pin(PINNED)
    client = client_for("anthropic", fake_llm, asynchronous)

    def create() -> Any:
        request, headers = with_context_management(context.prepare(), ServerCompaction(), policy=context.policy)
        call = client.beta.messages.create(model=MODEL["anthropic"], max_tokens=512, **request, extra_headers=headers)
        return asyncio.run(call) if asynchronous else call

    context.add_response(create())
    context.add([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "ok"}]}])
    create()
    assert fake_llm.problems == []
    sent = fake_llm.requests[-1].body["messages"]
    assert [(m["role"], [b["type"] for b in m["content"]]) for m in sent] == [
        ("assistant", ["compaction"]), ("user", ["text"]), ("assistant", ["text", "tool_use"]), ("user", ["tool_result"])]
    assert sent[1]["content"][0]["text"] == PINNED and PINNED in read_by_model("anthropic", fake_llm.requests[-1].body)
    # The breakpoints follow the messages they closed: the pinned item (what no compaction rewrites), the answer
    # (the message the summary is in ends there) and the last message.
    assert [bool(m["content"][-1].get("cache_control")) for m in sent] == [False, True, True, True]
    context.close()


def test_a_second_compaction_reads_the_pinned_items_after_the_first_block(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    """A compaction asked on a view the first one leads (in the background, as :meth:`Context.start_compaction`
    does) sends the pinned items after that block; so does the agent's request once the second is in."""
    fake_llm.script("messages", Reply(CLAUDE_SUMMARY), Reply("SECOND-SUMMARY"), Reply("Next."))
    context = session("anthropic", tmp_path)
    context.pin(PINNED)
    client = client_for("anthropic", fake_llm, False)
    for _ in range(2):
        pending = context.start_compaction()
        context.apply_compaction(pending, pending.call(client, model=MODEL["anthropic"], max_tokens=512).send())
        context.add([{"role": "user", "content": "Go on."}])
    send("anthropic", client, context.prepare(), False)
    assert fake_llm.problems == []
    second, step = fake_llm.requests[1].body, fake_llm.requests[2].body
    assert second["compaction"] and second["messages"][0]["content"][0]["content"] == CLAUDE_SUMMARY
    assert PINNED in read_by_model("anthropic", second)
    assert step["messages"][0]["content"][0]["content"] == "SECOND-SUMMARY" and PINNED in read_by_model("anthropic", step)
    context.close()


def test_contextfolds_own_summary_of_a_compacted_session_reads_the_pinned_items(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    """contextfold's model summary of a session Claude compacted rides the agent's request: the compaction block
    first, the pinned item after it, the summary instruction last."""
    answer = "<summary>## 1. Primary Request and Intent\nRename helper to assist.</summary>"
    fake_llm.script("messages", Reply(CLAUDE_SUMMARY), Reply(answer))
    context = session("anthropic", tmp_path)
    context.summarizer = ModelSummarizer(provider="anthropic", base_url=fake_llm.url, api_key="test-key",
                                         model=MODEL["anthropic"])
    context.pin(PINNED)
    pending = context.start_compaction()
    context.apply_compaction(pending, pending.call(client_for("anthropic", fake_llm, False), model=MODEL["anthropic"],
                                                   max_tokens=512).send())
    for k in range(3, 8):
        context.add(turns("anthropic", k, lines=40))
    (summarized,) = [e for e in context.compact() if e.action == "summarized"]
    assert summarized.data["fallback"] is None and fake_llm.problems == []
    riding = fake_llm.received("messages")[-1].body  # the agent's request (not the fitted prompt), with the instruction
    assert riding["messages"][0]["content"][0]["content"] == CLAUDE_SUMMARY
    assert PINNED in read_by_model("anthropic", riding) and "<summary>" in json.dumps(riding["messages"][-1])
    context.close()
