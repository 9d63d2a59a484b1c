"""A tool output over the 32 MiB block limit, arriving in any provider's format, goes to disk like any
large output; one that cannot be stored still answers its call, with an error result, an event and a log
warning. Other blocks keep the limit."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from contextfold import Context, OversizedBlock, Storage
from contextfold.adapters import MAX_BLOCK_BYTES, adapter_for
from contextfold.pipeline.offload_store import saved_output

HUGE = "y" * (MAX_BLOCK_BYTES + 1024)
"""An output no single block may otherwise hold (and more than a transcript record holds)."""

CALL = {"command": "cat huge.log"}


def wire_round(provider: str, output: Any) -> list[dict[str, Any]]:
    """A task, a call and its output, in ``provider``'s request format."""
    if provider == "anthropic":
        return [
            {"role": "user", "content": "read the log"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "c0", "name": "bash", "input": CALL}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c0", "content": output}]},
        ]
    if provider == "openai":
        function = {"name": "bash", "arguments": '{"command": "cat huge.log"}'}
        call = {"id": "c0", "type": "function", "function": function}
        return [
            {"role": "user", "content": "read the log"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c0", "content": output},
        ]
    return [
        {"role": "user", "content": "read the log"},
        {"type": "function_call", "call_id": "c0", "name": "bash", "arguments": '{"command": "cat huge.log"}'},
        {"type": "function_call_output", "call_id": "c0", "output": output},
    ]


def text_parts(provider: str, text: str) -> list[dict[str, Any]]:
    kind = {"anthropic": "text", "openai": "text", "responses": "input_text"}[provider]
    return [{"type": kind, "text": text}]


PROVIDERS = ["anthropic", "openai", "responses"]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("shape", ["string", "parts"])
def test_an_oversized_output_read_by_the_adapter_goes_to_disk_and_answers_its_call(
    tmp_path: Path, provider: str, shape: str
) -> None:
    output = HUGE if shape == "string" else text_parts(provider, HUGE)
    context = Context(window_tokens=200_000, storage=Storage(transcript=tmp_path, session_id="s1"), provider=provider)
    context.add(wire_round(provider, output), tools=context.history_tools())  # offered in the provider's format
    stored = context.history[2]
    assert stored.tool_result.call_id == "c0" and saved_output(stored) == HUGE
    assert len(stored.text) < 10_000  # only the preview is held
    assert [e.action for e in context.events if e.stage == "persist"] == ["persisted"]
    request = context.prepare()
    assert context.prepare_view().validate() == []
    answered = adapter_for(provider).read(request[adapter_for(provider).messages_key])
    assert answered[-1].tool_result.call_id == "c0" and "read_history(" in answered[-1].tool_result.text
    context.close()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_oversized_output_that_cannot_be_stored_becomes_an_error_result(
    tmp_path: Path, provider: str, caplog: pytest.LogCaptureFixture
) -> None:
    """No results folder at all: the output cannot be kept whole anywhere, and the call is still answered."""
    context = Context(window_tokens=200_000, provider=provider)
    with caplog.at_level(logging.WARNING, logger="contextfold"):
        context.add(wire_round(provider, HUGE))
    result = context.history[2].tool_result
    assert result.call_id == "c0" and result.is_error and "OutputNotStored" in result.text
    assert len(result.text) < 10_000
    assert [e.action for e in context.events if e.stage == "persist"] == ["not_stored"]
    assert any("too large to keep" in record.getMessage() for record in caplog.records)
    context.prepare()
    assert context.prepare_view().validate() == []


def test_a_disk_that_refuses_the_output_gives_the_error_result_too(tmp_path: Path) -> None:
    """A results folder that cannot be used (a link: refused) is a disk fault like any other."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "results").symlink_to(elsewhere)
    context = Context(window_tokens=200_000, storage=Storage(results_dir=tmp_path / "results"), provider="openai")
    context.add(wire_round("openai", HUGE))
    result = context.history[2].tool_result
    assert result.is_error and "OutputNotStored" in result.text and list(elsewhere.iterdir()) == []
    context.prepare()
    assert context.prepare_view().validate() == []


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_adapters_read_an_oversized_output_and_write_it_back_unchanged(provider: str) -> None:
    adapter = adapter_for(provider)
    messages = wire_round(provider, HUGE)
    conversation = adapter.read(messages)
    assert conversation[-1].tool_result.text == HUGE
    assert adapter.write(conversation)[adapter.messages_key] == messages


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_other_block_keeps_the_limit(provider: str) -> None:
    """A user's text, and an image inside a tool output, are sent whole: over the limit they are refused."""
    with pytest.raises(OversizedBlock) as caught:
        adapter_for(provider).read([{"role": "user", "content": HUGE}])
    assert (caught.value.index, caught.value.field) == (0, "content")
    image = {
        "anthropic": {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": HUGE}},
        "openai": {"type": "image_url", "image_url": {"url": "data:image/png;base64," + HUGE}},
        "responses": {"type": "input_image", "image_url": "data:image/png;base64," + HUGE},
    }[provider]
    with pytest.raises(OversizedBlock) as caught:
        adapter_for(provider).read(wire_round(provider, [image]))
    assert caught.value.index == 2
