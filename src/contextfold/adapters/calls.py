"""What a failed SDK call says, in one shape for every provider: the retry loops decide on this, not on SDK classes.

Each provider's SDK half reads its SDK's exceptions into a :class:`CallError`
(:meth:`contextfold.adapters.ProviderClient.call_error`); ``retry_after_s`` reads the
wait an HTTP answer asks for, which every provider says the same way.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class CallError:
    """A call that got no answer: it timed out, could not connect, or the server answered an error status.

    ``status`` is the HTTP status (``kind == "status"`` only); ``message``
    what the provider said; ``retry_after_s`` the wait it asked for, if any.
    """

    kind: Literal["timeout", "connection", "status"]
    message: str
    status: int | None = None
    retry_after_s: float | None = None


def retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """The wait a response asks for: ``retry-after-ms``, else ``retry-after`` in seconds or as an HTTP date."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(float(millis) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        moment = email.utils.parsedate_to_datetime(value) if email.utils.parsedate(value) else None
        return max(moment.timestamp() - time.time(), 0.0) if moment is not None else None
