"""The baseline: send the whole history, unchanged, every time.

What an agent without context management does, and what every other strategy
is measured against: it keeps the cached prefix intact and loses nothing, and
it overflows the window as soon as the session outgrows it.
"""

from __future__ import annotations

from ...conversation import Conversation, Header
from ...usage import Usage
from ..base import Sent, Step, StrategyConfig


class FullHistory:
    """Appends each step's new items to one conversation and sends it."""

    name = "none"

    def __init__(self, config: StrategyConfig) -> None:
        self.config = config
        self._conversation = Conversation()

    def start(self, header: Header) -> None:
        self._conversation = Conversation(header=header)

    def step(self, step: Step) -> Sent:
        # The same conversation grows step after step: the replayer reads each request before the next step.
        self._conversation.extend(step.new_items)
        return Sent(self._conversation)

    def record_usage(self, usage: Usage) -> None:
        """Nothing to adapt: the full history does not depend on what the provider reported."""


def create(config: StrategyConfig) -> FullHistory:
    return FullHistory(config)
