"""OpenAI Chat Completions as one object: the wire (:mod:`.wire`), the ``openai`` SDK, models and summary calls."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from ...conversation import Conversation, JSONObject, JSONValue
from ...errors import InvalidContent
from ...sdk import SDK, SDK_DEFAULTS, ClientOptions
from ...usage import CacheRule
from .._reading import as_list, as_object, shown, type_of
from .._stainless import StainlessClient, call_timeout
from ..base import MessageListAdapter, Reply, as_data
from .wire import ORIGIN, TARGET, from_openai, to_openai, tools_to_openai


class OpenAIClient(StainlessClient):
    """The ``openai`` SDK's client side and models, which both OpenAI formats share.

    A server of one's own that needs no key (Ollama, vLLM) gets a placeholder
    key when a ``base_url`` is given and no key is set: the SDK refuses to
    build a client without one.
    """

    sdk = SDK("openai", "openai", ("OPENAI_API_KEY",), "OPENAI_MODEL", "OPENAI_BASE_URL")
    client_class, async_client_class, base_error = "OpenAI", "AsyncOpenAI", "OpenAIError"
    usage_field = "usage"
    cache_rule = CacheRule(minimum=1_024, increment=128)  # automatic: nothing under 1,024 tokens, then steps of 128
    default_model = "gpt-4.1"
    summary_model = "gpt-4.1-mini"

    def for_summary(self, request: JSONObject, cache_key: str | None = None) -> dict[str, JSONValue]:
        """``request`` with ``tool_choice`` ``none`` (the tools stay, so the cached prefix does) and the agent's
        ``prompt_cache_key``: OpenAI routes a request to the cache of its key."""
        summary = {**request, "tool_choice": "none"} if request.get("tools") else dict(request)
        return {**summary, "prompt_cache_key": cache_key} if cache_key else summary

    def make_client(self, options: ClientOptions = SDK_DEFAULTS, *, asynchronous: bool = False) -> Any:
        base_url = self.sdk.base_url(options.base_url)
        key = self.sdk.api_key(options.api_key) or ("unused" if base_url else None)
        return super().make_client(replace(options, api_key=key, base_url=base_url), asynchronous=asynchronous)


class OpenAIChat(OpenAIClient, MessageListAdapter):
    """OpenAI Chat Completions (and compatible servers): ``messages`` and ``tools``; the cache needs no marks.

    The reply limit is ``max_completion_tokens`` when talking to OpenAI itself
    (its current models want it) and ``max_tokens`` elsewhere (what most
    compatible servers read).
    """

    def __init__(self) -> None:
        super().__init__((ORIGIN, TARGET, "messages"), from_openai, to_openai, tools_to_openai)
        self.incomplete_stops = {
            "length": "truncated (finish reason length)",
            "content_filter": "stopped by the content filter",
        }

    def _answer(self, data: JSONObject) -> Conversation:
        message = {k: v for k, v in as_object(_choice(data).get("message") or {}, 0, "").items() if v is not None}
        return from_openai([message]) if message else Conversation()

    def _stop(self, data: JSONObject) -> str | None:
        return _choice(data).get("finish_reason")

    def endpoint(self, client: Any) -> Callable[..., Any]:
        return client.chat.completions.create  # type: ignore[no-any-return]

    def arguments(self, client: object, request: JSONObject, *, model: str, max_tokens: int,
                  timeout_s: float | None = None) -> dict[str, JSONValue]:
        body = {key: value for key, value in request.items() if value}  # an empty tool list is refused
        limit = "max_completion_tokens" if "api.openai.com" in str(getattr(client, "base_url", "")) else "max_tokens"
        return {"model": model, limit: max_tokens, **body, **call_timeout(timeout_s)}

    def send(self, client: Any, request: JSONObject, *, model: str, max_tokens: int,
             timeout_s: float | None = None, stream: bool = False) -> Reply:
        if not stream:
            return super().send(client, request, model=model, max_tokens=max_tokens, timeout_s=timeout_s)
        return reply_from_chunks(client.chat.completions.create(**self._streamed(client, request, model, max_tokens,
                                                                                 timeout_s)))

    async def asend(self, client: Any, request: JSONObject, *, model: str, max_tokens: int,
                    timeout_s: float | None = None, stream: bool = False) -> Reply:
        if not stream:
            return await super().asend(client, request, model=model, max_tokens=max_tokens, timeout_s=timeout_s)
        chunks = await client.chat.completions.create(**self._streamed(client, request, model, max_tokens, timeout_s))
        return reply_from_chunks([chunk async for chunk in chunks])

    def _streamed(self, client: object, request: JSONObject, model: str, max_tokens: int,
                  timeout_s: float | None) -> dict[str, JSONValue]:
        arguments = self.arguments(client, request, model=model, max_tokens=max_tokens, timeout_s=timeout_s)
        return {**arguments, "stream": True, "stream_options": {"include_usage": True}}


_ADAPTER = OpenAIChat()


def _choice(data: JSONObject) -> Mapping[str, Any]:
    """The first choice of a completion (the only one contextfold asks for)."""
    choices = as_list(data.get("choices") or [{}], None, "choices")
    return as_object(choices[0], None, "choices[0]") if choices else {}


def reply_from_chunks(chunks: Iterable[object]) -> Reply:
    """A streamed completion (SDK chunks or their dicts) put back together and read as one reply.

    The deltas' text, their tool calls (fragments joined by their ``index``:
    the id and name as first given, the argument text in order), the finish
    reason and the usage chunk are kept, so a streamed reply that calls tools
    reads as the same reply unstreamed. A malformed chunk is an
    :class:`InvalidContent` whose index is the chunk's position in the stream
    and whose field is the path inside it.
    """
    if isinstance(chunks, (str, bytes, Mapping)) or not isinstance(chunks, Iterable):
        raise InvalidContent(None, "chunks", f"expected a stream of chunks, got {type(chunks).__name__}")
    parts: list[str] = []
    calls: dict[int, dict[str, JSONValue]] = {}  # the tool calls so far, by their index in the stream
    finish: str | None = None
    usage: JSONObject | None = None
    for number, chunk in enumerate(chunks):
        data = as_object(as_data(chunk) if hasattr(chunk, "model_dump") else chunk, number, "chunk")
        for position, raw in enumerate(as_list(data.get("choices") or (), number, "choices")):
            choice = as_object(raw, number, f"choices[{position}]")
            field = f"choices[{position}].delta"
            delta = as_object(choice.get("delta") or {}, number, field)
            parts.append(type_of(delta, number, field, "content") or "")
            for slot, fragment in enumerate(as_list(delta.get("tool_calls") or (), number, f"{field}.tool_calls")):
                _add_call_fragment(calls, fragment, number, f"{field}.tool_calls[{slot}]")
            finish = type_of(choice, number, f"choices[{position}]", "finish_reason") or finish
        usage = as_object(data["usage"], number, "usage") if data.get("usage") else usage
    message = {"role": "assistant", "content": "".join(parts) or (None if calls else ""),
               **({"tool_calls": [calls[index] for index in sorted(calls)]} if calls else {})}
    completion = {"choices": [{"message": message, "finish_reason": finish}], **({"usage": usage} if usage else {})}
    return _ADAPTER.read_response(completion)


def _add_call_fragment(calls: dict[int, dict[str, Any]], raw: object, number: int, field: str) -> None:
    """One streamed piece of a tool call folded into ``calls``: the first fragment of an index gives its id
    and name, every fragment may add argument text."""
    fragment = as_object(raw, number, field)
    index = fragment.get("index", 0)
    if not isinstance(index, int) or isinstance(index, bool):
        raise InvalidContent(number, f"{field}.index", f"expected an integer, got {shown(index)}")
    function = as_object(fragment.get("function") or {}, number, f"{field}.function")
    call = calls.setdefault(index, {"id": None, "type": "function", "function": {"name": None, "arguments": ""}})
    call["id"] = call["id"] or type_of(fragment, number, field, "id")
    call["function"]["name"] = call["function"]["name"] or type_of(function, number, f"{field}.function", "name")
    call["function"]["arguments"] += type_of(function, number, f"{field}.function", "arguments") or ""
