"""The last step before a request goes out: every call answered, every result after its call.

Stages keep the invariants by construction; this checks them anyway, on
what the caller added as much as on what the stages made, and repairs what
it can (reporting each repair in an event). One case is the caller's to
fix, not ours: the latest assistant turn still waiting for its tool results
(when nothing but results follows it).
The check is incremental: a view that only grew is checked from where it
was left, so an ordinary step costs what it added.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from ..conversation import Conversation, Validator, Violation
from ..errors import InvalidConversation
from ..events import Event


class InvariantCheck:
    """The invariant check of one session's requests, remembering how far the current view was checked."""

    def __init__(self) -> None:
        self._validator = Validator()
        self._checked: tuple[Conversation, int] | None = None  # (view object, items fed to the validator)

    def ready(self, view: Conversation, interrupted: AbstractSet[str] = frozenset()) -> tuple[Conversation, list[Event]]:
        """``view`` as it may be sent (repaired if need be), and the repair event if there was one.

        Raises :class:`~contextfold.errors.InvalidConversation` when the only
        problem is that the last assistant turn's calls have no results yet,
        unless they are ``interrupted`` (open when a session was resumed: the
        process that ran them is gone, so they are answered with an error result).
        """
        violations = self._violations(view)
        last = _last_assistant(view)
        # Calls still open at the end are the caller's to answer; calls a later message closed
        # (a run interrupted between the model's call and its tools) are repaired like any other break.
        open_at_end = last is not None and all(item.role == "tool" for item in view.items[last + 1 :])
        pending = [v for v in violations if v.kind == "unanswered_call" and v.index == last and open_at_end
                   and v.call_id not in interrupted]
        if pending and len(pending) == len(violations):
            raise InvalidConversation(
                f"the last assistant turn (item {pending[0].index}) has {len(pending)} tool call(s) without results: "
                "add the tool results before preparing the next request"
            )
        if not violations:
            return view, []
        view, repairs = view.repair()
        return view, [Event("invariants", "repaired", tuple(str(r.call_id) for r in repairs),
                            detail="; ".join(f"{r.action} at {r.index}" for r in repairs))]

    def _violations(self, view: Conversation) -> list[Violation]:
        if self._checked is None or self._checked[0] is not view or self._checked[1] > len(view):
            self._validator, fed = Validator(), 0
        else:
            fed = self._checked[1]
        for item in view.items[fed:]:
            self._validator.feed(item)
        self._checked = (view, len(view))
        return self._validator.violations + self._validator.open_violations()


def _last_assistant(view: Conversation) -> int | None:
    for index in range(len(view) - 1, -1, -1):
        if view[index].role == "assistant":
            return index
    return None
