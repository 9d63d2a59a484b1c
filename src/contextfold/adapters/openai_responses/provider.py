"""OpenAI's Responses API as one object: the wire (:mod:`.wire`), the ``openai`` SDK, models, the compaction item."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...conversation import Conversation, JSONObject, JSONValue
from ...usage import Usage
from .._stainless import call_timeout
from ..base import CacheMiss, CompactionCall, MessageListAdapter, as_data
from ..openai_chat.provider import OpenAIClient
from .wire import ORIGIN, TARGET, from_responses, to_responses, tools_to_responses


class OpenAIResponses(OpenAIClient, MessageListAdapter):
    """The OpenAI Responses API: ``input`` items and ``tools``; the cache needs no marks."""

    def __init__(self) -> None:
        super().__init__((ORIGIN, TARGET, "input"), from_responses, to_responses, tools_to_responses)
        self.incomplete_stops = {
            "max_output_tokens": "truncated (max_output_tokens)",
            "content_filter": "stopped by the content filter",
            "incomplete": "incomplete",
        }

    def _answer(self, data: Mapping[str, Any]) -> Conversation:
        return from_responses(data.get("output") or [])

    def read_compaction(self, response: object) -> ServerCompacted:
        """What the compaction endpoint (``responses.compact``) returned, an SDK object or its dict.

        Its ``compaction`` item is kept exactly as received (its content is
        encrypted; only a later Responses request can carry it); an answer
        without one, or with empty content, has ``item`` ``None``.
        """
        data = as_data(response)
        item = next((entry for entry in data.get("output") or () if entry.get("type") == "compaction"), None)
        usage = self._usage_in(data)
        return ServerCompacted(dict(item) if item and item.get("encrypted_content") else None, usage)

    compaction_shapes = ("trigger", "compact")

    def compaction_call(self, client: Any, request: Mapping[str, Any], *, model: str, max_tokens: int,
                        instructions: str | None = None, shape: str | None = None,
                        timeout_s: float | None = None) -> CompactionCall:
        """OpenAI's compaction of what ``request`` holds: ``"trigger"`` sends it with a ``compaction_trigger`` item
        last (the reply is one ``compaction`` item), ``"compact"`` sends its input to ``responses.compact`` (the
        reply is the user messages and one ``compaction`` item). Neither takes instructions for the summary:
        ``instructions`` are not sent."""
        if self._compaction_shape(shape) == "trigger":
            body = {**request, "input": [*request.get("input", ()), COMPACTION_TRIGGER]}
            return CompactionCall(client.responses.create,
                                  self.arguments(client, body, model=model, max_tokens=max_tokens, timeout_s=timeout_s))
        kept = {key: request[key] for key in _COMPACT_FIELDS if request.get(key)}  # the endpoint takes no tools
        return CompactionCall(client.responses.compact, {"model": model, **kept, **call_timeout(timeout_s)})

    def _cache_miss(self, data: JSONObject) -> CacheMiss | None:
        diagnosis = data.get("prompt_cache_diagnostics")
        kind = diagnosis.get("type") if isinstance(diagnosis, Mapping) else None
        if kind == "cache_miss":
            missed = diagnosis.get("cache_missed_tokens")  # type: ignore[union-attr]
            return CacheMiss(str(diagnosis.get("reason")), missed if isinstance(missed, int) else None)  # type: ignore[union-attr]
        if kind in ("comparison_response_not_found", "unavailable"):
            return CacheMiss(kind, None)
        return None  # a hit, or none asked

    def with_cache_diagnostics(self, request: Mapping[str, Any], previous_id: str | None) -> dict[str, JSONValue]:
        """``prompt_cache_options.comparison_response_id`` (nothing to compare on a first turn)."""
        if previous_id is None:
            return dict(request)
        return {**request, "prompt_cache_options": {**(request.get("prompt_cache_options") or {}),
                                                     "comparison_response_id": previous_id}}

    def _stop(self, data: Mapping[str, Any]) -> str | None:
        if data.get("status") == "incomplete":
            details = data.get("incomplete_details")
            return (details.get("reason") if isinstance(details, Mapping) else None) or "incomplete"
        return data.get("status")

    def endpoint(self, client: Any) -> Callable[..., Any]:
        return client.responses.create  # type: ignore[no-any-return]

    def arguments(self, client: object, request: JSONObject, *, model: str, max_tokens: int,
                  timeout_s: float | None = None) -> dict[str, JSONValue]:
        body = {key: value for key, value in request.items() if value}  # an empty tool list is refused
        return {"model": model, "max_output_tokens": max_tokens, **body, **call_timeout(timeout_s)}


COMPACTION_TRIGGER = {"type": "compaction_trigger"}
"""The input item asking for compaction in band; it must be the last input item."""
_COMPACT_FIELDS = ("input", "prompt_cache_key", "prompt_cache_options")
"""The fields of a Responses request that ``responses.compact`` takes too."""


@dataclass(frozen=True)
class ServerCompacted:
    """A compaction OpenAI made server-side: its ``compaction`` item as received (or ``None``), and the usage."""

    item: JSONObject | None
    usage: Usage | None
