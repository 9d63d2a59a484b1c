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

PROVIDERS = ("anthropic", "openai")
DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-4.1"}
MODEL_ENV = {"anthropic": "ANTHROPIC_MODEL", "openai": "OPENAI_MODEL"}
KEY_ENV = {"anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"), "openai": ("OPENAI_API_KEY",)}
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
        self._client = self._connect(base_url, api_key)

    def _connect(self, base_url: str | None, api_key: str | None) -> Any:
        """The SDK client; sets ``request_errors`` and ``api_errors`` from the SDK's exception classes."""
        raise NotImplementedError


class AnthropicModel(_SDKModel):
    """Claude through the Messages API (``anthropic`` SDK)."""

    provider = "anthropic"

    def _connect(self, base_url: str | None, api_key: str | None) -> Any:
        import anthropic

        self.request_errors = (anthropic.BadRequestError,)
        self.api_errors = (anthropic.AnthropicError,)
        return anthropic.Anthropic(base_url=base_url, api_key=api_key, max_retries=MAX_RETRIES)

    def create(self, request: Mapping[str, Any]) -> Any:
        body = {key: value for key, value in request.items() if value}  # no system prompt: no "system" field
        return self._client.messages.create(model=self.model, max_tokens=self.max_tokens, **body)


class OpenAIModel(_SDKModel):
    """GPT models through Chat Completions (``openai`` SDK); any server speaking that format via ``base_url``."""

    provider = "openai"

    def _connect(self, base_url: str | None, api_key: str | None) -> Any:
        import openai

        self.request_errors = (openai.BadRequestError,)
        self.api_errors = (openai.OpenAIError,)
        return openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=MAX_RETRIES)

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
    if api_key is None and not any(os.environ.get(name) for name in KEY_ENV[provider]):
        raise ModelSetupError(f"no API key for {provider}: set {' or '.join(KEY_ENV[provider])}")
    return kinds[provider](model, max_tokens=max_tokens, base_url=base_url, api_key=api_key)
