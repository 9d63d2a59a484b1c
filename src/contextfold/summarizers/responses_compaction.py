"""OpenAI's Responses compaction endpoint (``POST /v1/responses/compact``) as a summarizer.

The endpoint takes the conversation as Responses input items and returns its
user messages followed by one ``compaction`` item whose content is
encrypted: only OpenAI's models can read it, when it is sent back in a later
Responses request. So this summarizer keeps two things:

* ``SummaryResult.native``: the compaction item, as returned; the summary
  block holds it, and the Responses adapter sends it in place of the span;
* ``SummaryResult.text``: the extractive summary of the same span, so that
  what enters the conversation is readable by any other model and by people.

The endpoint has no field for a manual compaction's instructions; only the
readable text follows them. This summarizer sends a span contextfold chose;
:meth:`Context.start_compaction <contextfold.context.Context.start_compaction>`
sends the whole request instead. Retries, fitting to the window and the
fallback are those of every :class:`~contextfold.summarizers.llm.LLMSummarizer`;
the SDK's ``client.responses.compact`` (``openai`` 2.x and later) is used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from ..adapters import to_responses
from ..adapters.registry import RESPONSES
from ..conversation import Conversation, Header
from ._payload import Fitter, Payload
from .base import SummaryRequest, SummaryResult
from .llm import Answer, LLMSummarizer

DEFAULT_COMPACTION_MODEL = "gpt-5.1-codex-mini"


class ItemsFitter:
    """The span as Responses input items, its oldest units left out until it fits a budget."""

    def __init__(self, request: SummaryRequest) -> None:
        self.header = Header(system=request.header.system)  # the endpoint gets no tools
        span = [item for item in request.items if not item.provenance.restored]
        conversation = Conversation(span)
        self.units = [span[start:end] for start, end in conversation.units()]
        self.wire = [to_responses(Conversation(unit)) for unit in self.units]
        sizes = [request.count_text(json.dumps(items, ensure_ascii=False)) for items in self.wire]
        self.left = [*accumulate(reversed(sizes), initial=0)][::-1]

    def fit(self, budget_tokens: int) -> Payload | None:
        for start in range(len(self.units)):
            if self.left[start] <= budget_tokens:
                items = [item for unit in self.units[start:] for item in unit]
                wire = [entry for unit in self.wire[start:] for entry in unit]
                omitted = sum(len(unit) for unit in self.units[:start])
                return Payload({"input": wire}, Conversation(items, self.header), self.left[start], omitted)
        return None


@dataclass
class OpenAIResponsesCompactionSummarizer(LLMSummarizer):
    """Compaction by OpenAI's Responses compaction endpoint; the readable text is the extractive summary."""

    provider: str = RESPONSES.name
    model: str = DEFAULT_COMPACTION_MODEL
    name: str = "openai-compaction"

    def _fitter(self, request: SummaryRequest) -> Fitter:
        return ItemsFitter(request)

    def _arguments(self, payload: Payload) -> dict[str, Any]:
        arguments: dict[str, Any] = {"model": self.model, "input": payload.body["input"]}
        system = payload.conversation.header.system_text
        if system:
            arguments["instructions"] = system
        return arguments

    def _send(self, client: Any, payload: Payload, timeout_s: float) -> Answer:
        return _answer(client.responses.compact(**self._arguments(payload), timeout=timeout_s))

    async def _asend(self, client: Any, payload: Payload, timeout_s: float) -> Answer:
        return _answer(await client.responses.compact(**self._arguments(payload), timeout=timeout_s))

    def _accept(self, answer: Answer, payload: Payload, request: SummaryRequest) -> SummaryResult | str:
        item = next(iter(answer.output), None)
        if item is None:
            return "answer rejected: no compaction item in it"
        readable = self.fallback.summarize(request)
        state = {**readable.state, "model": self.model, "omitted_items": payload.omitted_items}
        return SummaryResult(readable.text, state=state, native=dict(item), native_provider=RESPONSES.name)


def _answer(response: Any) -> Answer:
    """The endpoint's answer read by the Responses adapter: its compaction item (the only output kept) and usage."""
    compacted = RESPONSES.read_compaction(response)
    return Answer("", None, compacted.usage, (compacted.item,) if compacted.item is not None else ())
