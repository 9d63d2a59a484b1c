"""Turning the view into a provider request, re-rendering only what is new.

An agent calls ``prepare()`` on every step with a history that mostly did not
change. Rendering a thousand messages each time costs milliseconds; this
keeps the wire messages of everything before the last assistant turn and
renders only that turn and what follows. It starts over when the view was
replaced (a stage fired) or the header changed.

Splitting before an assistant item is safe for all three formats: no adapter
merges an assistant message with what precedes it, and every tool result
after it answers a call in it.
"""

from __future__ import annotations

import json
from typing import Any

from .caching import EPHEMERAL, MAX_BREAKPOINTS, is_summary_message, mark_last_block
from .conversation import Conversation, Header, Item


def _render_messages(items: list[Item], provider: str) -> list[dict[str, Any]]:
    conversation = Conversation(items)
    if provider == "anthropic":
        return conversation.to_anthropic()["messages"]
    if provider == "openai":
        return conversation.to_openai()
    return conversation.to_responses()


def _render_header(header: Header, provider: str) -> dict[str, Any]:
    conversation = Conversation(header=header)
    if provider == "anthropic":
        request = conversation.to_anthropic()
        return {"system": request["system"], "tools": request["tools"], "pinned": request["messages"]}
    if provider == "openai":
        from .adapters.openai_chat import tools_to_openai

        return {"lead": conversation.to_openai(), "tools": tools_to_openai(conversation)}
    from .adapters.openai_responses import tools_to_responses

    return {"lead": conversation.to_responses(), "tools": tools_to_responses(conversation)}


def _marks(messages: list[dict[str, Any]]) -> int:
    return sum(json.dumps(m, default=str).count('"cache_control"') for m in messages)


class Renderer:
    """Renders views of one session for one provider, incrementally."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self._view: Conversation | None = None
        self._header: Header | None = None
        self._head: dict[str, Any] = {}
        self._head_marks = 0  # cache_control marks in the rendered header, counted once per header
        self._frozen: list[dict[str, Any]] = []  # wire messages of items[:_upto]
        self._upto = 0
        self._frozen_marks = 0
        self._summary_at: int | None = None  # index in _frozen of the latest summary message

    def render(self, view: Conversation) -> dict[str, Any]:
        if view is not self._view or view.header is not self._header or len(view) < self._upto:
            self._reset(view)
        items = view.items
        split = len(items)
        while split > self._upto and items[split - 1].role != "assistant":
            split -= 1
        split = split - 1 if split > self._upto else self._upto  # the last assistant turn is re-rendered
        if split > self._upto:
            fresh = _render_messages(list(items[self._upto : split]), self.provider)
            self._freeze(fresh)
            self._upto = split
        tail = _render_messages(list(items[self._upto :]), self.provider) if self._upto < len(items) else []
        return self._request(tail)

    def _reset(self, view: Conversation) -> None:
        self._view, self._header = view, view.header
        self._head = _render_header(view.header, self.provider)
        head_marks = _marks(self._head.get("pinned", [])) + _marks(self._head["tools"])
        self._head_marks = head_marks + json.dumps(self._head.get("system"), default=str).count('"cache_control"')
        self._frozen, self._upto, self._frozen_marks, self._summary_at = [], 0, 0, None

    def _freeze(self, messages: list[dict[str, Any]]) -> None:
        for message in messages:
            if is_summary_message(message):
                self._summary_at = len(self._frozen)
            self._frozen.append(message)
        self._frozen_marks += _marks(messages)

    def _request(self, tail: list[dict[str, Any]]) -> dict[str, Any]:
        if self.provider == "anthropic":
            return self._anthropic(tail)
        key = "messages" if self.provider == "openai" else "input"
        return {key: [*self._head["lead"], *self._frozen, *tail], "tools": self._head["tools"]}

    def _anthropic(self, tail: list[dict[str, Any]]) -> dict[str, Any]:
        """Messages with up to four cache breakpoints (tools, system, latest summary, last message).

        When the caller placed marks of its own, none are added: the limit is four.
        """
        head = self._head
        messages = [*head["pinned"], *self._frozen, *tail]
        request = {"system": head["system"], "messages": messages, "tools": head["tools"]}
        own = self._head_marks + self._frozen_marks + _marks(tail)  # marks the caller placed itself
        if own or not messages:
            return request
        if head["tools"]:
            request["tools"] = [*head["tools"][:-1], {**head["tools"][-1], "cache_control": EPHEMERAL}]
        system = head["system"]
        if system:
            blocks = [{"type": "text", "text": system}] if isinstance(system, str) else [dict(b) for b in system]
            blocks[-1]["cache_control"] = EPHEMERAL
            request["system"] = blocks
        summary_at = next((len(head["pinned"]) + len(self._frozen) + i for i in range(len(tail) - 1, -1, -1)
                           if is_summary_message(tail[i])), None)
        if summary_at is None and self._summary_at is not None:
            summary_at = len(head["pinned"]) + self._summary_at
        for index in sorted({summary_at, len(messages) - 1} - {None})[: MAX_BREAKPOINTS - 2]:
            messages[index] = mark_last_block(messages[index])
        return request
