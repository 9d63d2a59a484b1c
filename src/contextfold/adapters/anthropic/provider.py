"""Anthropic's Messages API as one object: its wire (:mod:`.wire`), cache marks, context edits; the SDK half is
:class:`~.client.AnthropicClient`, its :attr:`~contextfold.adapters.base.Adapter.client`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...conversation import Conversation, Header, Item, JSONObject, JSONValue
from ...usage import Usage
from ..base import Adapter, CacheMiss, WireHeader, present_fields
from ..reminders import reminder_item
from ..usage import anthropic_usage
from .cache import header_marked, item_marked, with_breakpoints, with_reminder_blocks
from .client import AnthropicClient
from .context import ContextReport, Edit, read_context_report, with_edits
from .wire import ORIGIN, TARGET, empty_text, from_anthropic, to_anthropic, with_lead

_INCOMPLETE = {
    "max_tokens": "truncated (stop reason max_tokens)",
    "refusal": "the model refused",
    "model_context_window_exceeded": "truncated (the model's window was exhausted)",
}
"""Stop reasons meaning the answer is not whole, in words."""


class AnthropicMessages(Adapter):
    """The Anthropic Messages API: ``system``, ``messages`` and ``tools``; cache breakpoints are marks."""

    name = ORIGIN
    title = TARGET
    messages_key = "messages"
    usage_field = "usage"
    incomplete_stops = _INCOMPLETE
    client: AnthropicClient

    def __init__(self) -> None:
        self.client = AnthropicClient(self)

    def _read(self, messages: Any, system: Any, tools: Any, known_call_ids: Iterable[str]) -> Conversation:
        return from_anthropic(messages, system, tools, known_call_ids=known_call_ids)

    def write(self, conversation: Conversation) -> dict[str, Any]:
        return to_anthropic(conversation)

    def write_header(self, header: Header) -> WireHeader:
        request = to_anthropic(Conversation(header=header))
        fields = present_fields(system=request["system"], tools=request["tools"])
        static = 0
        if 0 < header.static_system < len(header.system):  # the blocks the static items are written as
            written = to_anthropic(Conversation(header=Header(system=header.system[: header.static_system])))["system"]
            static = 1 if isinstance(written, str) else len(written or ())
        return WireHeader(fields, request["messages"], header_marked(header, ORIGIN), static)

    def request(
        self, header: WireHeader, messages: Sequence[JSONObject], cache_at: Sequence[int] = ()
    ) -> dict[str, JSONValue]:
        """The pinned items (``header.lead``) go before ``messages``, or after a compaction block in them
        (:func:`.wire.with_lead`); the breakpoints ``cache_at`` (indices into ``[*lead, *messages]``) follow them."""
        placed, ends = with_lead(header.lead, messages)
        request = {**header.fields, "messages": placed}
        return with_breakpoints(request, [ends[at] for at in cache_at], header.static_blocks) if cache_at else request

    def cache_marked(self, item: Item) -> bool:
        return item_marked(item, ORIGIN)

    def with_reminders(self, request: JSONObject, reminders: Sequence[str]) -> dict[str, JSONValue]:
        """Reminders as text blocks at the end of the last user message, after its cache breakpoint.

        A user message of their own would do as well for the cache (Anthropic
        keys on blocks), but the API joins consecutive user messages into one
        turn anyway, and this is where the coding agents put them.
        """
        return with_reminder_blocks(request, self.write_items([reminder_item(reminders)])) if reminders else dict(request)

    def for_summary(self, request: JSONObject, cache_key: str | None = None) -> dict[str, JSONValue]:
        """``request`` unchanged: a change of ``tool_choice`` invalidates every cached message block (only the tools
        and the system prompt stay cached), so tool use is turned off by the instruction alone; Anthropic has no
        cache key."""
        return dict(request)

    def _answer(self, data: JSONObject) -> Conversation:
        """The reply's blocks without empty text ones: the API returns them (before a tool call, or as the whole of
        an empty turn) and refuses them in the next request (anthropic-sdk-python#461), so the reply the agent adds
        is one that can be sent back; they say nothing. A message's own empty text is still refused on input."""
        content = data.get("content", [])
        if isinstance(content, list):
            content = [block for block in content if not empty_text(block)]
        return from_anthropic([{"role": "assistant", "content": content}])

    def _stop(self, data: Mapping[str, Any]) -> str | None:
        return data.get("stop_reason")

    def _cache_miss(self, data: Mapping[str, Any]) -> CacheMiss | None:
        reason = (data.get("diagnostics") or {}).get("cache_miss_reason")
        if not isinstance(reason, Mapping) or not isinstance(reason.get("type"), str):
            return None  # none asked, nothing diverged, or the diagnosis is still pending
        missed = reason.get("cache_missed_input_tokens")
        return CacheMiss(reason["type"], missed if isinstance(missed, int) else None)

    def with_cache_diagnostics(self, request: JSONObject, previous_id: str | None) -> dict[str, JSONValue]:
        """``diagnostics={"previous_message_id": ...}`` (``None`` on a first turn opts in with nothing to compare)."""
        return {**request, "diagnostics": {"previous_message_id": previous_id}}

    def read_usage(self, usage: object) -> Usage:
        return anthropic_usage(usage)

    def with_context_edits(
        self, request: JSONObject, edits: tuple[Edit, ...]
    ) -> tuple[dict[str, JSONValue], dict[str, str]]:
        """``request`` asking the server to edit the context (:mod:`.context`), and the beta header."""
        return with_edits(request, edits)

    def read_context_report(self, response: object) -> ContextReport:
        """What a reply says the server did to the context: edits applied, compaction blocks."""
        return read_context_report(response)
