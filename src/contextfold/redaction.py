"""Recognisable secrets taken out of items before anything is written (``Policy.redact_secrets``).

A tool output that prints an environment or a config file puts API keys in
the conversation, and from there in the transcript, the persisted outputs
and every request sent. With the policy on, :class:`~contextfold.context.Context`
passes each new item through :func:`redact_item` before it is recorded, and
an event says what kinds were found (never the secrets themselves).

Only shapes that are unmistakable are matched, so ordinary text is left
alone: Anthropic and OpenAI keys by their prefixes, AWS access key ids,
AWS secret keys where they are assigned to a name that says so, GitHub
tokens, and the value of any ``Bearer`` authorization. Texts, tool-call
arguments and tool outputs are redacted; thinking blocks are not (their
signature covers their exact text).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from .conversation import Item, Text, ToolCall, ToolResult

PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("anthropic key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{20,}")),
    ("openai key", re.compile(r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}")),
    ("aws access key id", re.compile(r"\b(?:AKIA|ASIA|AIDA|AROA)[0-9A-Z]{16}\b")),
    ("aws secret key", re.compile(r"(?i)(?<=aws_secret_access_key)(\s*[=:]\s*[\"']?)[A-Za-z0-9/+=]{40}\b")),
    ("github token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b")),
    ("bearer token", re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._~+/\-]{16,}=*")),
)
"""Each kind of secret and its pattern (a group 1, when present, is kept: the ``=`` before a value)."""


def _replacement(kind: str) -> Callable[[re.Match[str]], str]:
    """What a match of ``kind`` becomes: its group 1 (when the pattern has one) kept, the secret replaced."""

    def substitute(match: re.Match[str]) -> str:
        return f"{match.group(1) or ''}[REDACTED {kind}]" if match.re.groups else f"[REDACTED {kind}]"

    return substitute


def redact_text(text: str, found: Counter[str]) -> str:
    """``text`` with every secret replaced by ``[REDACTED <kind>]``; ``found`` counts them by kind."""
    for kind, pattern in PATTERNS:
        text, count = pattern.subn(_replacement(kind), text)
        if count:
            found[kind] += count
    return text


def redact_item(item: Item) -> tuple[Item, Counter[str]]:
    """``item`` with its secrets redacted (the same object when none), and what was found by kind."""
    found: Counter[str] = Counter()
    blocks = tuple(_block(block, found) for block in item.blocks)
    return (replace(item, blocks=blocks) if found else item), found


def _block(block: Any, found: Counter[str]) -> Any:
    if isinstance(block, Text):
        return replace(block, text=redact_text(block.text, found))
    if isinstance(block, ToolCall):
        before = sum(found.values())
        arguments = _value(block.arguments, found)
        return replace(block, arguments=arguments, raw_arguments=None) if sum(found.values()) > before else block
    if isinstance(block, ToolResult):
        content = (redact_text(block.content, found) if isinstance(block.content, str)
                   else tuple(_block(b, found) for b in block.content))
        arguments = _value(block.arguments, Counter()) if block.arguments else block.arguments  # counted at the call
        return replace(block, content=content, arguments=arguments)
    return block


def _value(value: Any, found: Counter[str]) -> Any:
    """A JSON value with the secrets in its strings redacted."""
    if isinstance(value, str):
        return redact_text(value, found)
    if isinstance(value, Mapping):
        return {key: _value(inner, found) for key, inner in value.items()}
    if isinstance(value, list):
        return [_value(inner, found) for inner in value]
    return value


def describe(found: Counter[str]) -> str:
    """``"2 anthropic key, 1 bearer token"``: what an event says (kinds and counts, never values)."""
    return ", ".join(f"{count} {kind}" for kind, count in sorted(found.items()))
