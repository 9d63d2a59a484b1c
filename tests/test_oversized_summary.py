"""A model summary too large to use (a model that ignored its target) is replaced by the extractive summary.

Before, it was discarded and nothing changed: the request stayed as large as it was, compaction after
compaction. The model is the scripted local server (``contextfold.testing.fake_llm``) behind the real SDK.
"""

from __future__ import annotations

import logging

from test_llm_summarizers import make, session

from contextfold.context import Context
from contextfold.conversation import Summary
from contextfold.testing.fake_llm import FakeLLMServer, Reply

RAMBLING = "<summary>\n## 1. Primary Request and Intent\n" + "Fix the ledger totals, RAMBLING. " * 3000 + "\n</summary>"
"""A summary some twenty times the size of the span it replaces."""


def test_a_model_summary_too_large_to_use_falls_back_to_the_extractive_one(fake_llm: FakeLLMServer, caplog) -> None:
    fake_llm.script("messages", Reply(RAMBLING))
    context = Context("claude-sonnet-4-5", window_tokens=200_000, summarizer=make("anthropic", fake_llm))
    context.add(session(rounds=30)[1:])
    with caplog.at_level(logging.WARNING, "contextfold"):
        events = context.compact()
    (summarized,) = [e for e in events if (e.stage, e.action) == ("summarize", "summarized")]
    assert summarized.tokens_after < summarized.tokens_before  # the compaction happened
    assert summarized.calls  # the model's call is still priced
    (fallback,) = [e for e in events if (e.stage, e.action) == ("summarize", "fallback")]
    assert "too large to use" in fallback.detail and "extractive used instead" in fallback.detail
    assert "too large to use" in caplog.text
    summaries = [b for item in context.view().items for b in item.blocks if isinstance(b, Summary)]
    assert len(summaries) == 1 and "RAMBLING" not in summaries[0].text  # the extractive summary, not the model's
