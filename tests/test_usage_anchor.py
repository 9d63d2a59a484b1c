"""The usage an adapter reads anchors the token count, so a first figure far from contextfold's own count warns."""

from __future__ import annotations

import logging
import warnings

import pytest

from contextfold import Context, Usage, UsageMismatch

LONG_TEXT = "the quick brown fox jumps over a lazy dog " * 1_715  # about 72,000 characters


def sent_context() -> Context:
    context = Context(window_tokens=200_000, provider="anthropic")
    context.add([{"role": "user", "content": LONG_TEXT}])
    context.prepare()
    return context


def test_a_fake_usage_figure_for_a_long_first_request_warns_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    context = sent_context()
    with caplog.at_level(logging.WARNING, logger="contextfold.tokens.anchored"), \
            pytest.warns(UsageMismatch) as caught:
        context.record_usage({"input_tokens": 234, "output_tokens": 5})  # the toy provider's made-up figure
    mismatch = caught[0].message
    assert isinstance(mismatch, UsageMismatch)
    assert mismatch.reported == 234 and mismatch.estimated > 5 * 234
    assert [r.getMessage() for r in caplog.records] == [str(mismatch)]


def test_a_figure_above_the_count_is_hidden_overhead_not_a_misread() -> None:
    """A recorded harness's system prompt and tools are not in the request contextfold counts (19,800 reported for
    57 counted in the corpus), nor a tiny request's tool-use system prompt."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", UsageMismatch)
        sent_context().record_usage(Usage(prompt_tokens=17_000))
        sent_context().record_usage(Usage(prompt_tokens=1_000_000))
        tiny = Context(window_tokens=200_000, provider="anthropic")
        tiny.add([{"role": "user", "content": "hi"}])
        tiny.prepare()
        tiny.record_usage(Usage(prompt_tokens=400))  # a tool-use system prompt the count cannot see


def test_only_the_first_figure_is_checked() -> None:
    context = sent_context()
    context.record_usage(Usage(prompt_tokens=17_000))
    context.add([{"role": "assistant", "content": "ok"}])
    context.prepare()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UsageMismatch)
        context.record_usage(Usage(prompt_tokens=170_000))
