"""OpenAI Chat Completions as one object: its wire (:mod:`.wire`), replies streamed or whole; the SDK half is
:class:`~.client.ChatClient`, its :attr:`~contextfold.adapters.base.Adapter.client`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ...conversation import Conversation, JSONObject, JSONValue
from ...usage import CacheRule
from .._reading import as_list, as_object
from ..base import MessageListAdapter, Reply
from .client import ChatClient
from .stream import completion_from_chunks
from .wire import ORIGIN, TARGET, from_openai, to_openai, tools_to_openai


class OpenAIFormat(MessageListAdapter):
    """What both OpenAI wire formats share: the usage field, the prompt cache's rule, a summary request's form."""

    usage_field = "usage"
    cache_rule = CacheRule(minimum=1_024, increment=128)  # automatic: nothing under 1,024 tokens, then steps of 128

    def for_summary(self, request: JSONObject, cache_key: str | None = None) -> dict[str, JSONValue]:
        """``request`` with ``tool_choice`` ``none`` (the tools stay, so the cached prefix does) and the agent's
        ``prompt_cache_key``: OpenAI routes a request to the cache of its key."""
        summary = {**request, "tool_choice": "none"} if request.get("tools") else dict(request)
        return {**summary, "prompt_cache_key": cache_key} if cache_key else summary


class OpenAIChat(OpenAIFormat):
    """OpenAI Chat Completions (and compatible servers): ``messages`` and ``tools``; the cache needs no marks."""

    client: ChatClient

    def __init__(self) -> None:
        super().__init__((ORIGIN, TARGET, "messages"), from_openai, to_openai, tools_to_openai)
        self.incomplete_stops = {
            "length": "truncated (finish reason length)",
            "content_filter": "stopped by the content filter",
        }
        self.client = ChatClient(self)

    def _answer(self, data: JSONObject) -> Conversation:
        message = {k: v for k, v in as_object(_choice(data).get("message") or {}, 0, "").items() if v is not None}
        return from_openai([message]) if message else Conversation()

    def _stop(self, data: JSONObject) -> str | None:
        return _choice(data).get("finish_reason")


_ADAPTER = OpenAIChat()


def _choice(data: JSONObject) -> Mapping[str, Any]:
    """The first choice of a completion (the only one contextfold asks for)."""
    choices = as_list(data.get("choices") or [{}], None, "choices")
    return as_object(choices[0], None, "choices[0]") if choices else {}


def reply_from_chunks(chunks: Iterable[object]) -> Reply:
    """A streamed completion (SDK chunks or their dicts) put back together and read as one reply.

    The deltas' text, their tool calls and usage are joined as
    :func:`.stream.completion_from_chunks` says, so a streamed reply that calls
    tools reads as the same reply unstreamed. A malformed chunk is an
    :class:`~contextfold.errors.InvalidContent` whose index is the chunk's
    position in the stream and whose field is the path inside it.
    """
    return _ADAPTER.read_response(completion_from_chunks(chunks))
