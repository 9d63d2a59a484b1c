"""The SDK half the ``anthropic`` and ``openai`` SDKs share (both are generated alike): clients, errors, timeouts.

Both build a client as ``Client(api_key=, base_url=, timeout=, max_retries=)``,
cap one call's timeout with a ``timeout=`` argument, and raise
``BadRequestError`` (where "prompt is too long" arrives), ``APIStatusError``
(any error status, with the HTTP response), ``APITimeoutError`` and
``APIConnectionError``, all under one root error class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..conversation import JSONValue
from ..sdk import SDK_DEFAULTS, ClientOptions
from .base import ProviderClient
from .calls import CallError, retry_after_s

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from openai import AsyncOpenAI


class StainlessClient(ProviderClient):
    """A provider's SDK half over a Stainless-generated SDK; ``sdk`` and these class names say which one."""

    client_class: str
    async_client_class: str
    base_error: str

    def make_client(self, options: ClientOptions = SDK_DEFAULTS, *, asynchronous: bool = False) -> object:
        module = self.sdk.module()
        arguments: dict[str, JSONValue] = {"api_key": options.api_key, "base_url": options.base_url,
                                           "max_retries": options.max_retries}
        if options.timeout_s is not None:
            arguments["timeout"] = options.timeout_s
        return getattr(module, self.async_client_class if asynchronous else self.client_class)(**arguments)

    def error_classes(self) -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
        module = self.sdk.module()
        return (module.BadRequestError,), (getattr(module, self.base_error),)

    def call_error(self, error: BaseException) -> CallError | None:
        module = self.sdk.module()
        if isinstance(error, module.APITimeoutError):
            return CallError("timeout", "timed out")
        if isinstance(error, module.APIConnectionError):
            return CallError("connection", f"connection error: {error}")
        status = getattr(error, "status_code", None)
        if isinstance(error, module.APIStatusError) and isinstance(status, int):
            return CallError("status", _message(error), status, retry_after_s(error.response.headers))
        return None

    async def aclose(self, client: AsyncAnthropic | AsyncOpenAI) -> None:
        await client.close()


def call_timeout(timeout_s: float | None) -> dict[str, JSONValue]:
    """The keyword that caps one call's timeout (both SDKs take ``timeout=`` on every method)."""
    return {} if timeout_s is None else {"timeout": timeout_s}


def _message(error: BaseException) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and inner.get("message"):
            return str(inner["message"])
    return str(error)
