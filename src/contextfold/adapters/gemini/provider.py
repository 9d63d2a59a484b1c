"""Google Gemini as one object: ``generateContent``'s wire (:mod:`.wire`), usage and overflow errors; the SDK half
(``google-genai``) is :class:`~.client.GeminiClient`, its :attr:`~contextfold.adapters.base.Adapter.client`.

A request body is ``contents``, ``system_instruction`` and ``tools`` in the
snake_case form google-genai's types dump to. Usage is ``usage_metadata``: the
prompt count includes the cached part, thoughts count as output. "Prompt too
long" is Gemini's own 400 ("The input token count (X) exceeds the maximum
number of tokens allowed (Y)"), besides the wordings every adapter knows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ...conversation import Conversation, Header, JSONObject, JSONValue
from ...errors import InvalidContent
from ...usage import CacheRule, Usage
from .._reading import as_list, as_object
from ..base import Adapter, WireHeader, present_fields
from ..overflow import PromptTooLong
from ..usage import usage_count, usage_data
from .client import GeminiClient
from .wire import from_genai, system_instruction_to_genai, to_genai, tools_to_genai

_OVER = re.compile(r"input token count \(?(\d[\d,]*)\)? exceeds the maximum number of tokens allowed \(?(\d[\d,]*)\)?",
                   re.IGNORECASE)
_FILTERED = "stopped by a filter"
_INCOMPLETE = {
    "MAX_TOKENS": "truncated (finish reason MAX_TOKENS)",
    "SAFETY": f"{_FILTERED} (SAFETY)",
    "RECITATION": f"{_FILTERED} (RECITATION)",
    "BLOCKLIST": f"{_FILTERED} (BLOCKLIST)",
    "PROHIBITED_CONTENT": f"{_FILTERED} (PROHIBITED_CONTENT)",
    "SPII": f"{_FILTERED} (SPII)",
    "MALFORMED_FUNCTION_CALL": "the model wrote a malformed function call",
    "UNEXPECTED_TOOL_CALL": "the model called a tool it was not given",
    "BLOCKED_PROMPT": "the prompt was blocked",
}
"""Finish reasons meaning the answer is not whole, in words."""


class Gemini(Adapter):
    """Google Gemini's ``generateContent``: ``contents``, ``system_instruction`` and ``tools``; no cache marks."""

    name = "gemini"
    title = "Google Gemini"
    messages_key = "contents"
    usage_field = "usage_metadata"
    incomplete_stops = _INCOMPLETE
    cache_rule = CacheRule(minimum=1_024)  # implicit caching: nothing under 1,024 tokens, no steps
    system_messages = False  # contents are user or model: a system instruction is system_instruction alone
    client: GeminiClient

    def __init__(self) -> None:
        self.client = GeminiClient(self)

    def _read(self, messages: Any, system: object, tools: Any, known_call_ids: Iterable[str]) -> Conversation:
        return from_genai(messages, system_instruction=system, tools=tools, known_call_ids=known_call_ids)

    def write(self, conversation: Conversation) -> dict[str, Any]:
        items = Conversation([*conversation.header.pinned, *conversation.items], conversation.header)
        return {"contents": to_genai(items), "system_instruction": system_instruction_to_genai(conversation),
                "tools": tools_to_genai(conversation)}

    def write_header(self, header: Header) -> WireHeader:
        request = self.write(Conversation(header=header))
        return WireHeader(present_fields(system_instruction=request["system_instruction"], tools=request["tools"]),
                          request["contents"])

    def write_items(self, items: Any) -> list[dict[str, JSONValue]]:
        return to_genai(Conversation(list(items)))

    def data(self, response: object) -> dict[str, JSONValue]:
        """A reply as the JSON google-genai's types dump to (enums as their names, bytes in base64); a dump that
        is not an object is the :class:`InvalidContent` of any other reply that is not one."""
        dump = getattr(response, "model_dump", None)
        if callable(dump) and not isinstance(response, Mapping):
            response = dump(mode="json", exclude_none=True)
        return super().data(response)

    def _answer(self, data: JSONObject) -> Conversation:
        content = _candidate(data).get("content")
        if not content or not content.get("parts"):
            return Conversation()
        return from_genai([{**content, "role": "model"}])

    def _stop(self, data: Mapping[str, Any]) -> str | None:
        candidate = _candidate(data)
        if not candidate and isinstance(data.get("prompt_feedback"), Mapping) and data["prompt_feedback"].get("block_reason"):
            return "BLOCKED_PROMPT"
        reason = candidate.get("finish_reason")
        return reason if isinstance(reason, str) else None  # an enum name; anything else says nothing (str() of a huge int raises)

    def read_usage(self, usage: object) -> Usage:
        data = usage_data(usage)
        return Usage(
            prompt_tokens=usage_count(data, "prompt_token_count", "promptTokenCount"),
            output_tokens=usage_count(data, "candidates_token_count", "candidatesTokenCount")
            + usage_count(data, "thoughts_token_count", "thoughtsTokenCount"),
            cache_read_tokens=usage_count(data, "cached_content_token_count", "cachedContentTokenCount"),
        )

    def prompt_too_long(self, error: BaseException | str) -> PromptTooLong | None:
        numbers = _OVER.search(str(error))
        if numbers is None:
            return super().prompt_too_long(error)
        actual, maximum = (int(n.replace(",", "")) for n in numbers.groups())
        return PromptTooLong(maximum / actual if actual > maximum > 0 else None)


def _candidate(data: JSONObject) -> Mapping[str, Any]:
    """The first candidate of a reply (the only one contextfold asks for); empty when there is none."""
    candidates = as_list(data.get("candidates") or [], None, "candidates")
    if not candidates:
        return {}
    candidate = as_object(candidates[0], None, "candidates[0]")
    if "content" in candidate and not isinstance(candidate["content"], Mapping):
        raise InvalidContent(None, "candidates[0].content", f"expected an object, got {type(candidate['content']).__name__}")
    return candidate

