"""Gemini's SDK half: the ``google-genai`` SDK, its models, its errors, and how a ``generateContent`` request is sent.

A request body (:class:`~.provider.Gemini`'s wire) is ``contents``, ``system_instruction`` and ``tools``;
:meth:`GeminiClient.create` hands it to ``client.models.generate_content``, ``system_instruction`` and ``tools``
in its ``config``. A summary is asked for whole: ``stream`` is not used (Gemini streams on another endpoint,
``streamGenerateContent``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ...conversation import JSONObject, JSONValue
from ...sdk import SDK, SDK_DEFAULTS, ClientOptions
from ..base import ProviderClient
from ..calls import CallError, retry_after_s

if TYPE_CHECKING:
    from google.genai import Client
    from google.genai.client import AsyncClient


class GeminiClient(ProviderClient):
    """The ``google-genai`` SDK: ``genai.Client`` (``.aio`` for async), timeouts in milliseconds, ``APIError``."""

    sdk = SDK("google.genai", "gemini", ("GOOGLE_API_KEY", "GEMINI_API_KEY"), "GEMINI_MODEL", "GOOGLE_GEMINI_BASE_URL")
    default_model = "gemini-2.5-pro"
    summary_model = "gemini-2.5-flash"

    def make_client(self, options: ClientOptions = SDK_DEFAULTS, *, asynchronous: bool = False) -> object:
        module = self.sdk.module()
        http: dict[str, JSONValue] = {}
        base_url = self.sdk.base_url(options.base_url)
        if base_url:
            http["base_url"] = base_url
        if options.timeout_s is not None:
            http["timeout"] = _millis(options.timeout_s)
        if options.max_retries:
            http["retry_options"] = {"attempts": options.max_retries + 1}
        client = module.Client(api_key=self.sdk.api_key(options.api_key), http_options=http or None)
        return client.aio if asynchronous else client

    def error_classes(self) -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
        errors = self.sdk.module().errors
        return (errors.ClientError,), (errors.APIError,)

    def call_error(self, error: BaseException) -> CallError | None:
        if not isinstance(error, self.sdk.module().errors.APIError):
            return None
        response = getattr(error, "response", None)
        wait = retry_after_s(getattr(response, "headers", None))
        return CallError("status", str(error.message or error), int(error.code), wait)

    async def aclose(self, client: AsyncClient) -> None:
        await client.aclose()

    def endpoint(self, client: Client | AsyncClient) -> Callable[..., object]:
        return client.models.generate_content

    def arguments(self, client: object, request: JSONObject, *, model: str, max_tokens: int,
                  timeout_s: float | None = None) -> dict[str, JSONValue]:
        config: dict[str, JSONValue] = {"max_output_tokens": max_tokens}
        config.update((key, request[key]) for key in ("system_instruction", "tools") if request.get(key))
        if timeout_s is not None:
            config["http_options"] = {"timeout": _millis(timeout_s)}
        return {"model": model, "contents": request["contents"], "config": config}


def _millis(seconds: float) -> int:
    """google-genai takes timeouts in milliseconds."""
    return max(int(seconds * 1000), 1)
