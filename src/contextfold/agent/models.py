"""The model client: one class over every provider's official SDK, its details read from the provider's adapter.

The loop needs three things from a model: which wire format its requests
are in (``provider``, a name :class:`contextfold.Context` knows), a call that
sends the request :meth:`contextfold.Context.prepare` built, and which
exceptions may mean "the prompt is too long" (``request_errors``, handed to
:meth:`~contextfold.Context.retry_request`) or any API failure
(``api_errors``, reported to the user). Everything provider-specific (the SDK,
its key and model variables, the default model, how a request is sent) is the
adapter's SDK half (its ``client``, :func:`contextfold.adapters.adapter_for`); a
wire-only provider has none (:class:`~contextfold.errors.WireOnlyProvider`). The SDK is imported only
when a client is made, so contextfold does not need it installed otherwise.

Base URL and API key come from the arguments, else the SDK's usual
environment variables; the model name from the argument, else the
provider's model variable (``ANTHROPIC_MODEL``, ``OPENAI_MODEL``...), else its
default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Protocol

from contextfold import ContextfoldError
from contextfold.adapters import PROVIDERS, Adapter, adapter_for
from contextfold.conversation import JSONObject
from contextfold.sdk import ClientOptions, is_loopback

LOOPBACK_KEY = "unused-local-server"
"""The key sent to a base URL on this machine when none is set: the SDKs refuse to start without one, and a
server of one's own (``contextfold serve-fake``, Ollama) takes any."""
MAX_RETRIES = 2
"""SDK retries on connection errors, 429 and 5xx before an error reaches the loop."""

__all__ = ["MAX_RETRIES", "PROVIDERS", "ModelClient", "ModelSetupError", "SDKModel", "make_model", "model_name"]


class ModelClient(Protocol):
    """What the agent loop needs from a model."""

    provider: str
    model: str
    request_errors: tuple[type[BaseException], ...]
    api_errors: tuple[type[BaseException], ...]

    def create(self, request: JSONObject) -> object:
        """Send ``request`` (the body ``Context.prepare`` built) and return the SDK's response object."""
        ...


class ModelSetupError(ContextfoldError):
    """The model client cannot be made (unknown provider, no API key for a server not on this machine)."""


def model_name(provider: str, model: str | None) -> str:
    """``model``, else the provider's model variable, else its default."""
    client = adapter_for(provider).require_client("the reference agent")
    return model or os.environ.get(client.sdk.model_variable) or client.default_model


class SDKModel:
    """One provider's model through its SDK: the model name, the reply limit, the client and its error classes."""

    def __init__(
        self,
        adapter: Adapter,
        model: str | None = None,
        *,
        max_tokens: int,
        base_url: str | None = None,
        api_key: str | None = None,
    ) -> None:
        self.adapter = adapter
        self.provider = adapter.name
        self.model = model_name(adapter.name, model)
        self.max_tokens = max_tokens
        self.provider_client = adapter.require_client("the reference agent")
        self.request_errors, self.api_errors = self.provider_client.error_classes()
        self._client = self.provider_client.make_client(ClientOptions(api_key, base_url, max_retries=MAX_RETRIES))

    def create(self, request: JSONObject) -> object:
        return self.provider_client.create(self._client, request, model=self.model, max_tokens=self.max_tokens)


def make_model(
    provider: str, model: str | None = None, *, max_tokens: int, base_url: str | None = None, api_key: str | None = None
) -> ModelClient:
    """The client for ``provider`` (one of :data:`PROVIDERS`); a :class:`ModelSetupError` says what is missing."""
    if provider not in PROVIDERS:
        raise ModelSetupError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")
    adapter = adapter_for(provider)
    sdk = adapter.require_client("the reference agent").sdk
    sdk.module()  # a missing SDK first: installing it is the first thing to do
    keys = sdk.key_variables
    key = sdk.api_key(api_key)
    if key is None and is_loopback(sdk.base_url(base_url)):
        key = LOOPBACK_KEY
    if key is None:
        raise ModelSetupError(f"no API key for {provider}: set {' or '.join(keys)} (a server on this machine, "
                              "such as contextfold serve-fake, needs none)")
    return SDKModel(adapter, model, max_tokens=max_tokens, base_url=base_url, api_key=key)
