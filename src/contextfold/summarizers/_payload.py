"""What a model summarizer sends: the request for a budget of prompt tokens, either the summary prompt with the
oldest units left out (:class:`PromptFitter`) or the agent's own next request with the instruction appended, read
from its prompt cache (:class:`RidingFitter`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from itertools import accumulate
from typing import Any, Protocol

from ..adapters import Adapter
from ..conversation import Conversation, Header, Item, Text
from ..rendering import Renderer
from ._text import Meter
from .base import SummaryRequest
from .prompts import (
    SYSTEM_PROMPT,
    frame,
    omission_note,
    quote_user_messages,
    render_span,
    riding_instruction,
    task_prompt,
)


@dataclass(frozen=True)
class Payload:
    """One request to the summarizing model: its wire body parts, its size, and its neutral form for accounting.

    ``body`` holds the provider-specific fields (``system``/``messages``, or
    ``input``); ``tokens`` is the estimated prompt size; ``omitted_items``
    counts the span items left out for room. ``rendered`` says ``body`` is
    the whole request as the adapter rendered it (the agent's own request);
    ``note`` says why the request is not that one, when it could have been.
    """

    body: Mapping[str, Any]
    conversation: Conversation
    tokens: int
    omitted_items: int = 0
    rendered: bool = False
    note: str | None = None


class Fitter(Protocol):
    """Builds the request for a budget of prompt tokens; ``None`` when nothing useful fits."""

    def fit(self, budget_tokens: int) -> Payload | None: ...


class PromptFitter:
    """The summary prompt for a budget: the oldest units are left out (their user messages quoted) until it fits.

    Sizes are summed from per-unit counts made once, so fitting again with a
    smaller budget costs no new counting but the final check.
    """

    def __init__(self, request: SummaryRequest, style: str) -> None:
        self.meter = Meter(request.count_text)
        self.span = render_span(request.items)
        self.task = task_prompt(style, request.target_tokens, request.instructions, request.history_tools)
        fixed = (SYSTEM_PROMPT, self.task, frame((), self.span.earlier_summary, None), omission_note(0, ()))
        self.fixed_tokens = sum(map(self.meter, fixed))
        # left[i]: tokens of the units from i on; quoted[i]: tokens of the user messages of units before i, quoted.
        unit_tokens = [self.meter(unit) for unit in self.span.units]
        self.left = [*accumulate(reversed(unit_tokens), initial=0)][::-1]
        quotes = [self.meter(quote_user_messages(messages)) if messages else 0 for messages in self.span.unit_user_messages]
        self.quoted = [*accumulate(quotes, initial=0)]

    def fit(self, budget_tokens: int) -> Payload | None:
        for start in range(len(self.span.units) or 1):  # at least one unit is kept; with none, one try
            if self.fixed_tokens + self.left[start] + self.quoted[start] > budget_tokens:
                continue
            payload = self._payload(start)
            if payload.tokens <= budget_tokens:
                return payload
        return None

    def _payload(self, start: int) -> Payload:
        omitted = sum(self.span.unit_items[:start])
        messages = [text for unit in self.span.unit_user_messages[:start] for text in unit]
        note = omission_note(omitted, messages) if start else None
        user = f"{frame(self.span.units[start:], self.span.earlier_summary, note)}\n\n{self.task}"
        tokens = self.meter(SYSTEM_PROMPT) + self.meter.exact(user)
        system = Header(system=(Item("system", (Text(SYSTEM_PROMPT),)),))
        conversation = Conversation([Item("user", (Text(user),))], system)
        return Payload({"system": SYSTEM_PROMPT, "user": user}, conversation, tokens, omitted)


class RidingFitter:
    """The agent's own next request with the summary instruction appended as the last user message.

    Sent as the agent would send it (same system prompt, tools, messages and
    cache marks, rendered by the provider's adapter, tool use turned off the
    way :meth:`~contextfold.adapters.Adapter.for_summary` says), the request
    reads everything but the instruction from the prompt cache the agent's
    last request wrote. When it is over the budget, ``fitted`` (the
    separately rendered prompt) makes the request instead, with a note saying so.
    A trailing call still waiting for its result is left out (with what
    follows it), so the request stays valid.
    """

    def __init__(self, request: SummaryRequest, style: str, adapter: Adapter, cache_key: str | None,
                 fitted: PromptFitter) -> None:
        assert request.next_request is not None
        self.fitted = fitted
        conversation = _answered(request.next_request)
        span = {item.id for item in request.items}
        places = [n for n, item in enumerate(conversation) if item.id in span]
        before, after = (places[0], len(conversation) - places[-1] - 1) if places else (0, 0)
        instruction = riding_instruction(style, request.target_tokens, request.instructions, before, after,
                                         request.history_tools)
        self.conversation = conversation.with_items([*conversation, Item("user", (Text(instruction),))])
        self.tokens = request.next_request_tokens + fitted.meter.exact(instruction)
        self.body = adapter.for_summary(Renderer(adapter).render(self.conversation), cache_key)

    def fit(self, budget_tokens: int) -> Payload | None:
        if self.tokens <= budget_tokens:
            return Payload(self.body, self.conversation, self.tokens, rendered=True)
        return self._instead(budget_tokens, f"the agent's request ({self.tokens:,} tokens) is over the summarizer's "
                                            f"budget of {budget_tokens:,}")

    def refused(self, budget_tokens: int, reason: str) -> Payload | None:
        """The fitted prompt after the provider refused the agent's request (``reason``)."""
        return self._instead(budget_tokens, f"the agent's request was refused ({reason})")

    def _instead(self, budget_tokens: int, why: str) -> Payload | None:
        payload = self.fitted.fit(budget_tokens)
        note = f"{why}: the fitted prompt was sent instead, not read from the prompt cache"
        return replace(payload, note=note) if payload is not None else None


def _answered(conversation: Conversation) -> Conversation:
    """``conversation`` without its last call turn when a call of it has no result yet (all of it, usually)."""
    items = list(conversation)
    answered = {item.tool_result.call_id for item in items if item.tool_result is not None}
    last = next((n for n in range(len(items) - 1, -1, -1) if items[n].tool_calls), None)
    if last is None or all(call.id in answered for call in items[last].tool_calls):
        return conversation
    return conversation.with_items(items[:last])
