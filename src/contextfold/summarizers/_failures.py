"""What a summarizer call that got no answer means for the retry loop: too long (send less), transient (wait and
send again) or fatal (fall back), as the provider's SDK half, its adapter and the HTTP client read the exception."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from ..adapters import ProviderClient

TOO_LONG, TRANSIENT, FATAL = "too_long", "transient", "fatal"
_RETRIED_STATUS = frozenset({408, 409, 429})
_TRANSIENT_CALLS = frozenset({"timeout", "connection"})


@dataclass(frozen=True)
class Failure:
    """A call that got no answer, classified: ``kind`` is ``too_long``, ``transient`` or ``fatal``.

    ``retry_after_s`` is the wait the provider asked for; ``fits_share`` is
    the share of the request the provider said would fit (its maximum over
    the size it counted), when it said.
    """

    kind: str
    reason: str
    retry_after_s: float | None = None
    fits_share: float | None = None


def classify(error: BaseException, client: ProviderClient) -> Failure:
    """What an SDK exception means for the retry loop, as the provider's SDK half (``client``) and its adapter (is
    it "prompt is too long"?) read it."""
    timeouts, transport = _httpx_errors()
    if isinstance(error, (TimeoutError, *timeouts)):
        return Failure(TRANSIENT, "timed out")
    if isinstance(error, transport):
        return Failure(TRANSIENT, f"connection error: {error}")
    call = client.call_error(error)
    if call is None:
        return Failure(FATAL, f"{type(error).__name__}: {error}")
    if call.kind in _TRANSIENT_CALLS or call.status is None:
        return Failure(TRANSIENT, call.message)
    text = f"HTTP {call.status}: {call.message}"
    too_long = client.adapter.prompt_too_long(error)
    if too_long is not None:
        return Failure(TOO_LONG, text, fits_share=too_long.fits_share)
    if call.status in _RETRIED_STATUS or call.status >= 500:
        return Failure(TRANSIENT, text, retry_after_s=call.retry_after_s)
    return Failure(FATAL, text)


HTTP_CLIENTS = ("httpx", "httpx2")
"""The HTTP packages the SDKs raise through: httpx, and httpx2 (google-genai 3's, with the same error classes)."""


def _httpx_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """httpx's (and httpx2's) timeout and transport errors, which a streamed body raises unwrapped (the SDKs wrap
    only what happens before the response starts, and google-genai 3 not even that); none when neither was
    imported."""
    modules = [sys.modules[name] for name in HTTP_CLIENTS if sys.modules.get(name) is not None]
    return tuple(m.TimeoutException for m in modules), tuple(m.TransportError for m in modules)
