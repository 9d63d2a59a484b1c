"""The contract between the pipeline and any summarizer.

A summarizer turns a span of conversation into one text. The pipeline decides
what span and how long; the summarizer knows nothing of thresholds. A span may
begin with an earlier summary: its ``Summary.extra["state"]`` (written by the
summarizer that made it) lets the next summary carry every fact forward
instead of re-summarizing a summary.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..conversation import Conversation, Header, Item
from ..usage import Usage


def summary_preamble(transcript: str | None = None) -> str:
    """The sentences that introduce a summary to the model; the pipeline puts them in front of it.

    ``transcript`` is where the full record is kept, if the reader may consult it.
    """
    text = (
        "This session is being continued from an earlier conversation that ran out of context. "
        "The summary below covers the earlier portion of the conversation; the task before it and the "
        "messages after it are verbatim. Continue with the last task you were asked to work on "
        "without asking the user any further questions."
    )
    if transcript:
        text += (
            " If you need specific details from before this point (exact code, error messages, earlier output), "
            f"the full transcript is at {transcript}."
        )
    return text


SUMMARY_PREAMBLE = summary_preamble()
"""The preamble without a transcript path; summary messages are recognised by its start."""


@dataclass(frozen=True)
class SummaryRequest:
    """What to summarize: ``items`` (a pair-safe span), within ``target_tokens`` as ``count_text`` measures.

    ``next_request`` is the conversation the agent would send next (header
    and every item, the span among them), ``next_request_tokens`` its size,
    when the caller knows it: a model summarizer sends that request again
    with its instruction appended, so the provider's prompt cache serves
    all of it but the instruction. ``history_tools``: the agent can search and
    read its history after this summary (``search_history``/``read_history``),
    so a model summarizer may point at where a long output is instead of
    copying it; without them what the summary leaves out is gone from its view.
    """

    items: Sequence[Item]
    header: Header
    target_tokens: int
    count_text: Callable[[str], int]
    instructions: str | None = None
    next_request: Conversation | None = None
    next_request_tokens: int = 0
    history_tools: bool = False


@dataclass(frozen=True)
class SummaryResult:
    """A summary and what it cost.

    ``state`` is structured data the summarizer wants back next time (stored
    on the summary block). ``calls`` are the model requests it made, with
    their usage, so replay and stats can count what summarizing cost;
    ``fallback`` says why another summarizer had to take over, if one did;
    ``request`` how the model's request was made, when it was not the
    agent's own request (why the fitted prompt was sent instead).
    ``native`` is a provider's own compaction the summary stands for (its
    ``native_provider`` gets it in place of ``text``; see
    :class:`~contextfold.conversation.Summary`).
    """

    text: str
    state: Mapping[str, Any] = field(default_factory=dict)
    calls: Sequence[tuple[Conversation, Usage | None]] = ()
    fallback: str | None = None
    native: Mapping[str, Any] | None = None
    native_provider: str | None = None
    request: str | None = None


class Summarizer(Protocol):
    """Anything that can summarize a span; ``name`` appears in events."""

    @property
    def name(self) -> str:
        """Read-only, so a frozen dataclass or a class attribute provides it."""
        ...

    def summarize(self, request: SummaryRequest) -> SummaryResult: ...
