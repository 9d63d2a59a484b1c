"""The official SDK clients (``anthropic``, ``openai``), built one way and imported only when one is made.

contextfold itself needs neither SDK. The model-backed summarizers and the
reference agent build their clients here and read every answer through the
provider's adapter (:meth:`contextfold.adapters.Adapter.read_response`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .errors import MissingDependency


@dataclass(frozen=True)
class SDK:
    """What contextfold uses of one SDK package: its client classes, its root error, its key variables."""

    package: str
    client: str
    async_client: str
    base_error: str
    key_variables: tuple[str, ...]


SDKS = {
    "anthropic": SDK(
        "anthropic", "Anthropic", "AsyncAnthropic", "AnthropicError", ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
    ),
    "openai": SDK("openai", "OpenAI", "AsyncOpenAI", "OpenAIError", ("OPENAI_API_KEY",)),
}
"""The SDK packages by name (both OpenAI formats, Chat and Responses, use ``openai``)."""


def sdk_module(package: str) -> ModuleType:
    """The SDK module, imported now; :class:`MissingDependency` (an ``ImportError``) naming the extra when it is not
    installed."""
    try:
        return importlib.import_module(SDKS[package].package)
    except ImportError as error:
        raise MissingDependency(SDKS[package].package, package, f"the SDK of the {package} provider") from error


def make_client(package: str, *, asynchronous: bool = False, **options: Any) -> Any:
    """A client of ``package`` (``api_key``, ``base_url``, ``timeout``, ``max_retries`` as the SDK takes them)."""
    sdk = SDKS[package]
    return getattr(sdk_module(package), sdk.async_client if asynchronous else sdk.client)(**options)


def error_classes(package: str) -> tuple[type[BaseException], type[BaseException]]:
    """The SDK's "bad request" error (where "prompt is too long" arrives) and its root error class."""
    module = sdk_module(package)
    return module.BadRequestError, getattr(module, SDKS[package].base_error)
