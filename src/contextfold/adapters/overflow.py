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
_COUNT = r"(?<![\d,])(\d[\d,]{0,24})(?![\d,])"
"""A token count as a server prints it, of at most 25 characters: a longer run of digits (a hostile or broken
server's) is no count, and ``int`` raises ValueError for one over 4,300 digits."""
_ANTHROPIC_OVER = re.compile(rf"{_COUNT} tokens > {_COUNT}")
_OPENAI_MAXIMUM = re.compile(rf"maximum context length is {_COUNT}")
_OPENAI_ACTUAL = re.compile(rf"(?:resulted in|requested) {_COUNT} tokens")


@dataclass(frozen=True)
class PromptTooLong:
    """A "prompt is too long" error; ``fits_share`` is the provider's maximum over the size it counted, if it said."""

    fits_share: float | None = None


def error_text(error: BaseException | str) -> str:
    """An error's message with the body the SDK attached (where the provider's wording is)."""
    if isinstance(error, str):
        return error
    try:
        return f"{error} {getattr(error, 'body', '') or ''}"
    except (ValueError, RecursionError):  # a body nested too deep to print, or holding a number too long to
        return str(error)


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
