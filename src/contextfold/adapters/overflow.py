"""Provider errors that say a request did not fit the model's window, and by how much.

Anthropic says ``prompt is too long: 210000 tokens > 200000 maximum``;
OpenAI and compatible servers ``context_length_exceeded`` / ``This model's
maximum context length is 128000 tokens. However, your messages resulted in
131000 tokens``. Both wordings are recognised whichever adapter is asked,
since OpenAI-compatible servers and proxies mix them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOO_LONG = re.compile(
    r"prompt is too long|context_length_exceeded|maximum context length|input is too long|too many tokens|"
    r"reduce the length of the messages|exceeds the context window",
    re.IGNORECASE,
)
_ANTHROPIC_OVER = re.compile(r"(\d[\d,]*) tokens > (\d[\d,]*)")
_OPENAI_MAXIMUM = re.compile(r"maximum context length is (\d[\d,]*)")
_OPENAI_ACTUAL = re.compile(r"(?:resulted in|requested) (\d[\d,]*) tokens")


@dataclass(frozen=True)
class PromptTooLong:
    """A "prompt is too long" error; ``fits_share`` is the provider's maximum over the size it counted, if it said."""

    fits_share: float | None = None


def error_text(error: BaseException | str) -> str:
    """An error's message with the body the SDK attached (where the provider's wording is)."""
    return error if isinstance(error, str) else f"{error} {getattr(error, 'body', '') or ''}"


def prompt_too_long(error: BaseException | str) -> PromptTooLong | None:
    """What ``error`` says about a request that did not fit, or ``None`` when it is another error."""
    text = error_text(error)
    if not _TOO_LONG.search(text):
        return None
    return PromptTooLong(_fits_share(text))


def _fits_share(text: str) -> float | None:
    numbers = _ANTHROPIC_OVER.search(text)
    if numbers:
        actual, maximum = (int(n.replace(",", "")) for n in numbers.groups())
    else:
        top, used = _OPENAI_MAXIMUM.search(text), _OPENAI_ACTUAL.search(text)
        if not (top and used):
            return None
        maximum, actual = int(top.group(1).replace(",", "")), int(used.group(1).replace(",", ""))
    return maximum / actual if actual > maximum > 0 else None
