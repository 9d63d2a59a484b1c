"""Forward-reference recall: of the specific facts the agent used in its next reply, how many its request still held.

The survival probes (:mod:`.probes`) ask whether a few chosen facts are
still there; recall asks about what the agent actually went on to use. For
the request answered by recorded assistant message *k*, the *needed* tokens
are the specific tokens of message *k* (its text and its tool-call
arguments, as the JSON sent) that already occur in the recorded messages
before it (system messages not counted) and occur in no system message:
the identifiers, paths, line numbers and values it took from its context.
The rule for a specific token is :func:`~contextfold.pipeline.importance.specific_tokens`,
the one the pipeline's importance uses. The request's recall is the share of them present anywhere in its text
(:attr:`~.render.Message.wire_text` of each message sent). *Far* recall
counts only the needed tokens that occur in none of the last
:data:`FAR_MESSAGES` messages before *k*: long-range dependencies, where
compaction bites. The full history scores 1 by construction.

*Recoverable* recall asks what the agent could still get back: of the
needed tokens a request did not hold, the share that one ``search_history``
call with the token as the query (the strategy's :attr:`~.base.Sent.search`,
within its default limit) returns on a matching line. A strategy that offers
no search has none (``None``); one whose history lost what it offloaded
scores lower.

A session's recall is weighted by needed tokens over its requests
(:func:`session_recall`); a set of sessions takes the mean of its sessions'.
The definition is the one of issue 10, so that the reference scorer in
``../shared/referee`` arrives at the same figures from a ``--requests`` dump.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..conversation import Conversation
from ..lookback.history import matching_lines
from ..pipeline.importance import specific_tokens
from .render import recorded_messages

FAR_MESSAGES = 6
"""Messages before a reply that count as recent: a token found only further back is a far one."""


@dataclass(frozen=True)
class Needed:
    """The tokens a recorded reply used from its context: all of them, and the far ones among them."""

    tokens: frozenset[str]
    far: frozenset[str]


Search = Callable[[str], str]
"""One search_history call: the query in, the text the agent would read out."""


@dataclass(frozen=True)
class Recall:
    """How many needed tokens one request held: ``found`` of ``needed``, ``far_found`` of ``far_needed``; and of
    the ``needed - found`` it did not hold, how many one search returned (``None`` without a search)."""

    needed: int
    found: int
    far_needed: int
    far_found: int
    recovered: int | None = None


def session_needs(recording: Conversation) -> dict[int, Needed]:
    """The needed tokens of every recorded reply, by the reply's index in ``recording.items``.

    The recording is read as a request would carry it (:func:`~.render.recorded_messages`).
    """
    messages = recorded_messages(recording)
    tokens = [specific_tokens(message.wire_text) for _, message in messages]
    system: set[str] = set().union(*(t for t, (_, m) in zip(tokens, messages) if m.data.get("role") == "system"))
    seen: set[str] = set()
    recent: deque[frozenset[str]] = deque(maxlen=FAR_MESSAGES)
    needs: dict[int, Needed] = {}
    for mine, (index, message) in zip(tokens, messages):
        role = message.data.get("role")
        if role == "assistant" and index is not None:
            used = (mine & seen) - system
            needs[index] = Needed(frozenset(used), frozenset(used.difference(*recent)))
        if role != "system":
            seen |= mine
        recent.append(mine)
    return needs


def evaluate(needed: Needed | None, contains: Callable[[str], bool], search: Search | None = None) -> Recall | None:
    """What a request whose text ``contains`` answers for held of ``needed``, and of the rest what ``search``
    brings back; ``None`` when nothing was needed."""
    if needed is None or not needed.tokens:
        return None
    found = {token for token in needed.tokens if contains(token)}
    recovered = None if search is None else sum(
        any(token in line for line in matching_lines(search(token))) for token in needed.tokens - found)
    return Recall(len(needed.tokens), len(found), len(needed.far), len(needed.far & found), recovered)


@dataclass(frozen=True)
class SessionRecall:
    """A session's recall, far recall and worst request (``None`` where no request needed anything), and its
    recoverable recall over the ``missing`` needed tokens its requests did not hold (``None`` without a search)."""

    recall: float | None
    recall_far: float | None
    worst_request_recall: float | None
    needed: int
    needed_far: int
    recoverable: float | None = None
    missing: int = 0


def session_recall(counts: Iterable[Recall | None]) -> SessionRecall:
    """Recall over a session's requests, weighted by their needed tokens."""
    counted = [c for c in counts if c is not None]
    needed = sum(c.needed for c in counted)
    far = sum(c.far_needed for c in counted)
    searched = [c for c in counted if c.recovered is not None]
    missing = sum(c.needed - c.found for c in searched)
    return SessionRecall(
        recall=sum(c.found for c in counted) / needed if needed else None,
        recall_far=sum(c.far_found for c in counted) / far if far else None,
        worst_request_recall=min((c.found / c.needed for c in counted), default=None),
        needed=needed,
        needed_far=far,
        recoverable=sum(c.recovered or 0 for c in searched) / missing if missing else None,
        missing=missing,
    )


def mean_recall(sessions: Sequence[SessionRecall]) -> SessionRecall:
    """A set of sessions: the mean of their recalls and far recalls, the worst request of all."""

    def mean(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return sum(present) / len(present) if present else None

    worst = [s.worst_request_recall for s in sessions if s.worst_request_recall is not None]
    return SessionRecall(
        recall=mean([s.recall for s in sessions]),
        recall_far=mean([s.recall_far for s in sessions]),
        worst_request_recall=min(worst, default=None),
        needed=sum(s.needed for s in sessions),
        needed_far=sum(s.needed_far for s in sessions),
        recoverable=mean([s.recoverable for s in sessions]),
        missing=sum(s.missing for s in sessions),
    )
