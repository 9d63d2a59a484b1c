"""LangChain's ``trim_messages``, the real one from ``langchain_core``, as its documentation sets it up.

Before each request the whole history goes through ``trim_messages`` with
``strategy="last"``, ``token_counter=count_tokens_approximately``,
``start_on="human"``, ``include_system=True`` and ``max_tokens`` = the window
minus the reply's reserve. The messages are the replay's own Chat Completions
rendering of each item, read by LangChain's ``convert_to_messages``; what it
keeps is mapped back to our item objects by identity, so the replay compares
cached prefixes as for any strategy.

What it does that others do not, and the replay reports as it is:

* the kept tail must start on a human message, so in an agent session whose
  only human message is the task, as soon as the history outgrows the
  budget nothing but the system prompt is kept (no task, no history): the
  replay counts the missing task as a violation on each such request (and
  the bench counts the emptied request too); a session with no human
  message at all loses every message even when it fits;
* a system message after the first is trimmed like any other message;
* its count leaves out the tool definitions and assumes four characters per
  token, so a request can still be over the window.

Calls and results are never parted: the kept tail starts on a human message,
which no round spans. Needs the ``bench`` extra (``python3 -m pip install -e '.[bench]'`` in the checkout).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ...conversation import Conversation, Header, Item
from ...errors import ContextfoldError, install_hint
from ..base import Sent, Step, StrategyConfig
from ..render import render_item
from ._baseline import Baseline


class LangChainUnavailable(ContextfoldError):
    """``langchain_core`` is not installed."""


class TrimMessages(Baseline):
    name = "langchain"

    def __init__(self, config: StrategyConfig) -> None:
        super().__init__(config)
        try:
            from langchain_core.messages import convert_to_messages, trim_messages
            from langchain_core.messages.utils import count_tokens_approximately
        except ImportError as error:
            raise LangChainUnavailable(
                f"the langchain strategy runs langchain_core's trim_messages: {install_hint('bench')}"
            ) from error
        self._convert = convert_to_messages
        self._trim = trim_messages
        self._count = count_tokens_approximately
        self._messages: list[tuple[Any, Item]] = []  # (LangChain message, the item it renders), in request order
        self._converted = 0  # view items converted so far

    def start(self, header: Header) -> None:
        super().start(header)
        self._messages = []
        self._converted = 0
        self._add([*header.system, *header.pinned])

    def _add(self, items: Sequence[Item]) -> None:
        """Each item as a LangChain message; an item with nothing to send has none."""
        for item in items:
            rendered = render_item(item)
            if rendered is not None:
                self._messages.append((self._convert([rendered.data])[0], item))

    def prepare(self, step: Step, new_from: int) -> Sent:
        self._add(self.view.items[self._converted :])
        self._converted = len(self.view)
        kept = self._trim(
            [message for message, _ in self._messages],
            strategy="last",
            token_counter=self._count,
            max_tokens=self.config.window_tokens - self.config.max_output_tokens,
            start_on="human",
            include_system=True,
        )
        items_of = {id(message): item for message, item in self._messages}
        if any(id(message) not in items_of for message in kept):
            raise ContextfoldError("trim_messages returned a message it was not given (a partial copy)")
        chosen = {id(items_of[id(message)]) for message in kept}
        return Sent(self._request(chosen))

    def _request(self, chosen: set[int]) -> Conversation:
        """The view with only the chosen items (by identity), header items included."""
        header = self.view.header

        def keep(items: Sequence[Item]) -> tuple[Item, ...]:
            return tuple(item for item in items if id(item) in chosen)

        if len(chosen) == len(self._messages):
            return self.view
        trimmed = replace(header, system=keep(header.system), pinned=keep(header.pinned))
        return Conversation(keep(self.view.items), trimmed if trimmed != header else header)


def create(config: StrategyConfig) -> TrimMessages:
    return TrimMessages(config)
