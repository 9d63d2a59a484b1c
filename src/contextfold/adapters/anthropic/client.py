"""Anthropic's SDK half: the ``anthropic`` SDK, its models, how a Messages request is sent (streamed or not) and the
on-demand compaction request (beta). The wire is :class:`~.provider.AnthropicMessages`'."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...conversation import JSONObject, JSONValue
from ...sdk import SDK
from .._stainless import StainlessClient, call_timeout
from ..base import CompactionCall, Reply
from .context import with_compaction

if TYPE_CHECKING:
    from anthropic import Anthropic, AsyncAnthropic


class AnthropicClient(StainlessClient):
    """The ``anthropic`` SDK: ``client.messages.create`` (``.stream`` when streamed), ``client.beta.messages.create``
    for a compaction."""

    sdk = SDK("anthropic", "anthropic", ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"), "ANTHROPIC_MODEL",
              "ANTHROPIC_BASE_URL")
    client_class, async_client_class, base_error = "Anthropic", "AsyncAnthropic", "AnthropicError"
    default_model = "claude-sonnet-4-6"
    summary_model = "claude-haiku-4-5"

    def endpoint(self, client: Anthropic | AsyncAnthropic) -> Callable[..., object]:
        return client.messages.create

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
            return self.adapter.read_response(events.get_final_message())

    async def asend(self, client: Any, request: JSONObject, *, model: str, max_tokens: int,
                    timeout_s: float | None = None, stream: bool = False) -> Reply:
        if not stream:
            return await super().asend(client, request, model=model, max_tokens=max_tokens, timeout_s=timeout_s)
        arguments = self.arguments(client, request, model=model, max_tokens=max_tokens, timeout_s=timeout_s)
        async with client.messages.stream(**arguments) as events:
            return self.adapter.read_response(await events.get_final_message())

    # ------------------------------------------------------------------ server-side context management (beta)
    compaction_shapes = ("summarize",)

    def compaction_call(self, client: Anthropic | AsyncAnthropic, request: JSONObject, *, model: str, max_tokens: int,
                        instructions: str | None = None, shape: str | None = None,
                        timeout_s: float | None = None) -> CompactionCall:
        """An on-demand ``compaction`` request (beta, :func:`.context.with_compaction`) for what ``request`` holds."""
        self._compaction_shape(shape)
        body, headers = with_compaction(request, instructions)
        arguments = self.arguments(client, body, model=model, max_tokens=max_tokens, timeout_s=timeout_s)
        return CompactionCall(client.beta.messages.create, {**arguments, "extra_headers": headers})
