"""OpenAI's SDK half: the ``openai`` SDK and models both OpenAI formats share (:class:`OpenAIClient`), and how a
Chat Completions request is sent, streamed or not (:class:`ChatClient`). The wire is :mod:`.provider`'s."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ...conversation import JSONObject, JSONValue
from ...sdk import SDK, SDK_DEFAULTS, ClientOptions
from .._stainless import StainlessClient, call_timeout
from ..base import Reply
from .stream import completion_from_chunks

if TYPE_CHECKING:
    from openai import AsyncOpenAI, OpenAI


class OpenAIClient(StainlessClient):
    """The ``openai`` SDK's client objects and models, which both OpenAI formats share.

    A server of one's own that needs no key (Ollama, vLLM) gets a placeholder
    key when a ``base_url`` is given and no key is set: the SDK refuses to
    build a client without one.
    """

    sdk = SDK("openai", "openai", ("OPENAI_API_KEY",), "OPENAI_MODEL", "OPENAI_BASE_URL")
    client_class, async_client_class, base_error = "OpenAI", "AsyncOpenAI", "OpenAIError"
    default_model = "gpt-4.1"
    summary_model = "gpt-4.1-mini"

    def make_client(self, options: ClientOptions = SDK_DEFAULTS, *, asynchronous: bool = False) -> object:
        base_url = self.sdk.base_url(options.base_url)
        key = self.sdk.api_key(options.api_key) or ("unused" if base_url else None)
        return super().make_client(replace(options, api_key=key, base_url=base_url), asynchronous=asynchronous)


class ChatClient(OpenAIClient):
    """Chat Completions through ``client.chat.completions.create``.

    The reply limit is ``max_completion_tokens`` when talking to OpenAI itself
    (its current models want it) and ``max_tokens`` elsewhere (what most
    compatible servers read).
    """

    def endpoint(self, client: OpenAI | AsyncOpenAI) -> Callable[..., object]:
        return client.chat.completions.create

    def arguments(self, client: object, request: JSONObject, *, model: str, max_tokens: int,
                  timeout_s: float | None = None) -> dict[str, JSONValue]:
        body = {key: value for key, value in request.items() if value}  # an empty tool list is refused
        limit = "max_completion_tokens" if "api.openai.com" in str(getattr(client, "base_url", "")) else "max_tokens"
        return {"model": model, limit: max_tokens, **body, **call_timeout(timeout_s)}

    def send(self, client: Any, request: JSONObject, *, model: str, max_tokens: int,
             timeout_s: float | None = None, stream: bool = False) -> Reply:
        if not stream:
            return super().send(client, request, model=model, max_tokens=max_tokens, timeout_s=timeout_s)
        chunks = client.chat.completions.create(**self._streamed(client, request, model, max_tokens, timeout_s))
        return self.adapter.read_response(completion_from_chunks(chunks))

    async def asend(self, client: Any, request: JSONObject, *, model: str, max_tokens: int,
                    timeout_s: float | None = None, stream: bool = False) -> Reply:
        if not stream:
            return await super().asend(client, request, model=model, max_tokens=max_tokens, timeout_s=timeout_s)
        chunks = await client.chat.completions.create(**self._streamed(client, request, model, max_tokens, timeout_s))
        return self.adapter.read_response(completion_from_chunks([chunk async for chunk in chunks]))

    def _streamed(self, client: object, request: JSONObject, model: str, max_tokens: int,
                  timeout_s: float | None) -> dict[str, JSONValue]:
        arguments = self.arguments(client, request, model=model, max_tokens=max_tokens, timeout_s=timeout_s)
        return {**arguments, "stream": True, "stream_options": {"include_usage": True}}
