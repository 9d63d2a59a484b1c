"""Folds: what a module reads of a whole conversation, read on over the items appended since it last read.

A step asks the same questions of a request that grew by a round since the last (which files' newest read is
cleared?), and reading the whole history again at every request made an idle step grow with the session. A
conversation only grows (stages never change one: they build a new one), so what was read of its first items stays
true: a fold keeps its state on the conversation object (``Conversation.folds``) with the number of items it has
read, and reads only the rest. A copy, or the new conversation a stage builds, starts without it. The readings of
one item are :mod:`contextfold.readings`; a fold is their counterpart for the whole sequence::

    CLEARED: Fold[set[str]] = Fold("cleared_reads", set, read_one)   # read_one(state, index, item) changes state

    cleared = CLEARED.of(conversation)   # the caller reads the state and never changes it
"""

from __future__ import annotations

from typing import Callable, Generic, TypeVar

from .conversation import Conversation, Item

_S = TypeVar("_S")


class Fold(Generic[_S]):
    """A reading of a conversation's items in order: a fresh state from ``start()``, then ``step(state, index,
    item)`` for each item, changing the state in place. Folds compare by identity: declare each once, at module
    level (one state per fold is kept on each conversation, so they never grow past the folds declared)."""

    __slots__ = ("name", "start", "step")

    def __init__(self, name: str, start: Callable[[], _S], step: Callable[[_S, int, Item], None]) -> None:
        self.name = name
        self.start = start
        self.step = step

    def __repr__(self) -> str:
        return f"Fold({self.name!r})"

    def of(self, conversation: Conversation) -> _S:
        """The state over every item of ``conversation``, read on from the items already read (not to be changed)."""
        known = conversation.folds.get(self)
        read, state = known if known is not None else (0, self.start())
        items = conversation.items
        end = len(items)  # what it has read is what it records: a round appended meanwhile is read next time
        for index in range(read, end):
            self.step(state, index, items[index])
        conversation.folds[self] = (end, state)
        return state  # stored by this method, under this fold, from its own start()
