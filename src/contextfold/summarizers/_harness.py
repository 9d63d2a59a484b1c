"""Messages an agent harness writes in the user's place: format nags, step and cost limits, hook feedback.

A harness (mini-swe-agent, SWE-agent, OpenHands, a Claude Code hook) speaks
to the agent as the user when the agent's answer broke one of its rules or a
limit was reached. Such a message is neither the user's request nor the next
step: a summary that quoted "No tool calls found in the response" as the
user's first request would send the agent after a format rule instead of the
task. Recognized by their fixed openings, which the harnesses write verbatim.
"""

from __future__ import annotations

import re

_HARNESS = re.compile(
    r"^\s*(?:"
    r"No tool calls? (?:were )?found in (?:the|your) response"
    r"|Please always provide EXACTLY ONE action"
    r"|Your (?:last )?(?:response|output) (?:was|did not|didn't|contained)\b"
    r"|Your command (?:ran successfully and did not produce any output|timed out)"
    r"|The (?:last )?command .{0,200}? timed out"
    r"|Stop hook feedback:"
    r"|(?:Exit|Exited|Exiting) due to\b"
    r"|(?:Step|Cost|Token|Turn) limit (?:reached|exceeded)"
    r"|LimitsExceeded\b"
    r"|Please continue working on the task on whatever approach you think is suitable"
    r"|Format error\b"
    r")",
    re.IGNORECASE,
)


def is_harness(text: str) -> bool:
    """Whether a user message is the harness speaking (a format nag, a limit, hook feedback), not the user."""
    return bool(_HARNESS.match(text))
