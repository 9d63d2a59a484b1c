"""Anthropic as one object: the Messages API's wire (:mod:`.wire`), the ``anthropic`` SDK, models and summary calls."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ...conversation import Conversation, Header, Item, JSONObject, JSONValue
from ...sdk import SDK
from ...usage import Usage
from .._stainless import StainlessClient, call_timeout
from ..base import Adapter, CacheMiss, CompactionCall, Reply, WireHeader, present_fields
from ..reminders import reminder_item
from ..usage import anthropic_usage
from .cache import header_marked, item_marked, with_breakpoints, with_reminder_blocks
from .context import ContextReport, Edit, read_context_report, with_compaction, with_edits
from .wire import ORIGIN, TARGET, from_anthropic, to_anthropic, with_lead

_INCOMPLETE = {
    "max_tokens": "truncated (stop reason max_tokens)",
    "refusal": "the model refused",
    "model_context_window_exceeded": "truncated (the model's window was exhausted)",
}
"""Stop reasons meaning the answer is not whole, in words."""


class AnthropicMessages(StainlessClient, Adapter):
    """The Anthropic Messages API: ``system``, ``messages`` and ``tools``; cache breakpoints are marks."""

    name = ORIGIN
    title = TARGET
    messages_key = "messages"
    usage_field = "usage"
    incomplete_stops = _INCOMPLETE
    sdk = SDK("anthropic", "anthropic", ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"), "ANTHROPIC_MODEL",
              "ANTHROPIC_BASE_URL")
    client_class, async_client_class, base_error = "Anthropic", "AsyncAnthropic", "AnthropicError"
    default_model = "claude-sonnet-4-6"
    summary_model = "claude-haiku-4-5"

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
        return from_anthropic([{"role": "assistant", "content": data.get("content", [])}])

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

    # ------------------------------------------------------------------ sending
    def endpoint(self, client: Any) -> Callable[..., Any]:
        return client.messages.create  # type: ignore[no-any-return]

    def arguments(self, client: object, request: JSONObject, *, model: str, max_tokens: int,
                  timeout_s: float | None = None) -> dict[str, JSONValue]:
        body = {key: value for key, value in request.items() if value}  # no system prompt: no "system" field
        return {"model": model, "max_tokens": max_tokens, **body, **call_timeout(timeout_s)}

    def send(self, client: Any, request: JSONObject, *, model: str, max_tokens: int,
             timeout_s: float | None = None, stream: bool = False) -> Reply:
        if not stream:
            return super().send(client, request, model=model, max_tokens=max_tokens, timeout_s=timeout_s)
        arguments = self.arguments(client, request, model=model, max_tokens=max_tokens, timeout_s=timeout_s)
        with client.messages.stream(**arguments) as events:
            return self.read_response(events.get_final_message())

    async def asend(self, client: Any, request: JSONObject, *, model: str, max_tokens: int,
                    timeout_s: float | None = None, stream: bool = False) -> Reply:
        if not stream:
            return await super().asend(client, request, model=model, max_tokens=max_tokens, timeout_s=timeout_s)
        arguments = self.arguments(client, request, model=model, max_tokens=max_tokens, timeout_s=timeout_s)
        async with client.messages.stream(**arguments) as events:
            return self.read_response(await events.get_final_message())

    # ------------------------------------------------------------------ server-side context management (beta)
    compaction_shapes = ("summarize",)

    def compaction_call(self, client: Any, request: JSONObject, *, model: str, max_tokens: int,
                        instructions: str | None = None, shape: str | None = None,
                        timeout_s: float | None = None) -> CompactionCall:
        """An on-demand ``compaction`` request (beta, :func:`.context.with_compaction`) for what ``request`` holds."""
        self._compaction_shape(shape)
        body, headers = with_compaction(request, instructions)
        arguments = self.arguments(client, body, model=model, max_tokens=max_tokens, timeout_s=timeout_s)
        return CompactionCall(client.beta.messages.create, {**arguments, "extra_headers": headers})

    def with_context_edits(
        self, request: JSONObject, edits: tuple[Edit, ...]
    ) -> tuple[dict[str, JSONValue], dict[str, str]]:
        """``request`` asking the server to edit the context (:mod:`.context`), and the beta header."""
        return with_edits(request, edits)

    def read_context_report(self, response: object) -> ContextReport:
        """What a reply says the server did to the context: edits applied, compaction blocks."""
        return read_context_report(response)
