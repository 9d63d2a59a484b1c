"""The model client adapter: one small class per provider, each over its official SDK.

The loop needs three things from a model: which wire format its requests
are in (``provider``, a name :class:`contextfold.Context` knows), a call that
sends the request :meth:`contextfold.Context.prepare` built, and which
exceptions may mean "the prompt is too long" (``request_errors``, handed to
:meth:`~contextfold.Context.retry_request`) or any API failure
(``api_errors``, reported to the user). The SDKs are imported only when a
client is made, so contextfold does not need them installed otherwise.

Base URL and API key come from the arguments, else the SDK's usual
environment variables (``ANTHROPIC_BASE_URL``/``ANTHROPIC_API_KEY``,
``OPENAI_BASE_URL``/``OPENAI_API_KEY``); the model name from the argument,
else ``ANTHROPIC_MODEL``/``OPENAI_MODEL``, else a current default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Protocol

from contextfold import ContextfoldError
from contextfold.sdk import SDKS, error_classes, make_client, sdk_module

PROVIDERS = ("anthropic", "openai")
DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-4.1"}
MODEL_ENV = {"anthropic": "ANTHROPIC_MODEL", "openai": "OPENAI_MODEL"}
MAX_RETRIES = 2
"""SDK retries on connection errors, 429 and 5xx before an error reaches the loop."""


class ModelClient(Protocol):
    """What the agent loop needs from a model."""

    provider: str
    model: str
    request_errors: tuple[type[BaseException], ...]
    api_errors: tuple[type[BaseException], ...]

    def create(self, request: Mapping[str, Any]) -> Any:
        """Send ``request`` (the body ``Context.prepare`` built) and return the SDK's response object."""
        ...


class ModelSetupError(ContextfoldError):
    """The model client cannot be made (unknown provider, no API key)."""


def model_name(provider: str, model: str | None) -> str:
    """``model``, else the provider's environment variable, else its default."""
    return model or os.environ.get(MODEL_ENV[provider]) or DEFAULT_MODELS[provider]


class _SDKModel:
    """What both clients share: the model name, the reply limit, the SDK client and its error classes."""

    provider: str

    def __init__(
        self, model: str | None = None, *, max_tokens: int, base_url: str | None = None, api_key: str | None = None
    ) -> None:
        self.model = model_name(self.provider, model)
        self.max_tokens = max_tokens
        bad_request, root = error_classes(self.provider)
        self.request_errors: tuple[type[BaseException], ...] = (bad_request,)
        self.api_errors: tuple[type[BaseException], ...] = (root,)
        self._client = make_client(self.provider, base_url=base_url, api_key=api_key, max_retries=MAX_RETRIES)


class AnthropicModel(_SDKModel):
    """Claude through the Messages API (``anthropic`` SDK)."""

    provider = "anthropic"

    def create(self, request: Mapping[str, Any]) -> Any:
        body = {key: value for key, value in request.items() if value}  # no system prompt: no "system" field
        return self._client.messages.create(model=self.model, max_tokens=self.max_tokens, **body)


class OpenAIModel(_SDKModel):
    """GPT models through Chat Completions (``openai`` SDK); any server speaking that format via ``base_url``."""

    provider = "openai"

    def create(self, request: Mapping[str, Any]) -> Any:
        body = {key: value for key, value in request.items() if value}  # an empty tool list is refused
        return self._client.chat.completions.create(model=self.model, max_completion_tokens=self.max_tokens, **body)


def make_model(
    provider: str, model: str | None = None, *, max_tokens: int, base_url: str | None = None, api_key: str | None = None
) -> ModelClient:
    """The client for ``provider`` (``anthropic`` or ``openai``); a :class:`ModelSetupError` says what is missing."""
    kinds = {"anthropic": AnthropicModel, "openai": OpenAIModel}
    if provider not in kinds:
        raise ModelSetupError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")
    sdk_module(provider)  # a missing SDK first: installing it is the first thing to do
    keys = SDKS[provider].key_variables
    if api_key is None and not any(os.environ.get(name) for name in keys):
        raise ModelSetupError(f"no API key for {provider}: set {' or '.join(keys)}")
    return kinds[provider](model, max_tokens=max_tokens, base_url=base_url, api_key=api_key)
