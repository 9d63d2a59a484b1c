"""OpenAI's Responses API as one object: its wire (:mod:`.wire`) and the compaction item; the SDK half is
:class:`~.client.ResponsesClient`, its :attr:`~contextfold.adapters.base.Adapter.client`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...conversation import Conversation, JSONObject, JSONValue
from ...usage import Usage
from ..base import CacheMiss, as_data
from ..openai_chat.provider import OpenAIFormat
from .client import ResponsesClient
from .wire import ORIGIN, TARGET, from_responses, to_responses, tools_to_responses


class OpenAIResponses(OpenAIFormat):
    """The OpenAI Responses API: ``input`` items and ``tools``; the cache needs no marks."""

    client: ResponsesClient

    def __init__(self) -> None:
        super().__init__((ORIGIN, TARGET, "input"), from_responses, to_responses, tools_to_responses)
        self.incomplete_stops = {
            "max_output_tokens": "truncated (max_output_tokens)",
            "content_filter": "stopped by the content filter",
            "incomplete": "incomplete",
        }
        self.client = ResponsesClient(self)

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


@dataclass(frozen=True)
class ServerCompacted:
    """A compaction OpenAI made server-side: its ``compaction`` item as received (or ``None``), and the usage."""

    item: JSONObject | None
    usage: Usage | None
