"""How right the anchored count is on a recorded session: replayed request by request against reported usage."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

from ..conversation import Conversation
from ..importers import recorded_usage
from .anchored import TokenCounter


class RequestCheck(NamedTuple):
    """One replayed request: ``step`` is the index of the assistant item that answered it."""

    step: int
    estimate: int
    reported: int

    @property
    def error(self) -> float:
        """Signed relative error of the estimate (0.02 = 2 % over)."""
        return (self.estimate - self.reported) / self.reported


def anchored_errors(
    conversation: Conversation, counter_factory: Callable[[], TokenCounter] = TokenCounter
) -> list[RequestCheck]:
    """Replay a recorded conversation request by request against its reported usage.

    Every assistant item with a :func:`~contextfold.importers.recorded_usage` answered a request made of
    the header and all items before it. That request is counted anchored on the
    previous reported usage, then its own usage is recorded. The first request
    has nothing to anchor on and is not checked.
    """
    counter = counter_factory()
    checks: list[RequestCheck] = []
    for index, item in enumerate(conversation.items):
        reported = recorded_usage(item)
        if reported is None or reported.prompt_tokens <= 0:
            continue
        request = conversation.with_items(conversation.items[:index])
        estimate = counter.count(request)
        if counter.anchored:
            checks.append(RequestCheck(index, estimate, reported.prompt_tokens))
        counter.record_usage(reported, request)
    return checks


def error_summary(checks: Sequence[RequestCheck]) -> dict[str, float | int | None]:
    """``requests``, ``median_abs_error`` and ``p95_abs_error`` (fractions; ``None`` when empty)."""
    errors = sorted(abs(check.error) for check in checks)
    return {
        "requests": len(errors),
        "median_abs_error": percentile(errors, 0.5),
        "p95_abs_error": percentile(errors, 0.95),
    }


def percentile(sorted_values: Sequence[float], fraction: float) -> float | None:
    """Linear-interpolated percentile of already sorted values (``fraction`` in 0..1)."""
    if not sorted_values:
        return None
    position = fraction * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)
