"""What contextfold uses of a provider's official SDK package, and importing it only when a client is made.

contextfold itself needs no SDK. Each provider's SDK half (its adapter's
``client``, a :class:`~contextfold.adapters.ProviderClient`) names its SDK here
(an :class:`SDK`) and builds its clients from it; the model-backed
summarizers and the reference agent ask it
(``adapter_for(provider).require_client(...)``) for a client and read every
answer through the adapter. Nothing here knows a provider by name.
"""

from __future__ import annotations

import importlib
import ipaddress
import os
from dataclasses import dataclass
from types import ModuleType
from urllib.parse import urlsplit

from .errors import MissingDependency


@dataclass(frozen=True)
class SDK:
    """One provider's SDK: its import path, the extra that installs it, the environment variables it reads."""

    package: str
    """What to import (``anthropic``, ``openai``, ``google.genai``)."""
    extra: str
    """The contextfold extra that installs it (``python3 -m pip install -e '.[extra]'`` in the checkout)."""
    key_variables: tuple[str, ...]
    """Where the SDK looks for the API key, in order."""
    model_variable: str
    """Where the reference agent looks for the model's name (``ANTHROPIC_MODEL``)."""
    base_url_variable: str | None = None
    """Where the SDK looks for a server of one's own, if it does (``OPENAI_BASE_URL``)."""

    def module(self) -> ModuleType:
        """The SDK module, imported now; :class:`MissingDependency` (an ``ImportError``) naming the extra when it
        is not installed."""
        try:
            return importlib.import_module(self.package)
        except ImportError as error:
            raise MissingDependency(self.package, self.extra, f"the SDK of the {self.extra} provider") from error

    def api_key(self, given: str | None = None) -> str | None:
        """``given``, else the first key variable that is set, else ``None``."""
        return given or next((os.environ[name] for name in self.key_variables if os.environ.get(name)), None)

    def base_url(self, given: str | None = None) -> str | None:
        """``given``, else the SDK's base-URL variable when it has one and it is set."""
        return given or (os.environ.get(self.base_url_variable) if self.base_url_variable else None) or None


def is_loopback(url: str | None) -> bool:
    """Whether ``url`` names a server on this machine (``localhost``, ``127.0.0.0/8``, ``::1``): one of one's own
    (``contextfold serve-fake``, Ollama, vLLM), which takes any key, where a provider's own needs a real one."""
    if not url:
        return False
    try:
        host = urlsplit(url).hostname
    except ValueError:  # a malformed URL (an unclosed IPv6 bracket) names no server of this machine
        return False
    if host is None:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ClientOptions:
    """How to build a client; ``None`` leaves the SDK's own default (and the variables it reads)."""

    api_key: str | None = None
    base_url: str | None = None
    timeout_s: float | None = None
    max_retries: int = 2
    """The SDK's own retries (0 when the caller retries itself)."""


SDK_DEFAULTS = ClientOptions()
"""A client as the SDK builds it by default (its variables, timeout and retries)."""
