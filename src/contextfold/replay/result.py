"""The figures of a replay: one record per request sent, and the totals over a session.

The replayer (:mod:`.run`) and the recount from a dump (:mod:`.check`) both
produce :class:`RequestRecord` s and total them here, so the two can be
compared field by field. All token figures are in tokens of the replay's
tokenizer; money is USD at the replay's :class:`~contextfold.pipeline.base.Prices`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from ..conversation import JSONValue
from ..pipeline.base import Prices
from .cost import cost_usd
from .lint import SummaryLint
from .probes import PROBES, Survival
from .recall import Recall, session_recall
from .strict import SessionStrict, Strict, session_strict

AGENT, SUMMARIZER = "agent", "summarizer"


@dataclass(frozen=True)
class RequestRecord:
    """One request sent: the agent's own (``kind`` "agent") or one a strategy made to summarize.

    ``step`` numbers the request points from 0; ``index`` is the recorded
    reply the step precedes; ``time_s`` the request's time (unix seconds, or
    ``None`` when the recording has none). ``input_tokens`` is the whole
    prompt, of which ``cache_read_tokens`` came from the cache and
    ``cache_write_tokens`` were written to it; the rest was read uncached
    (only summarizer requests, which are priced without a cache).
    ``survival``, ``recall``, ``strict`` and ``violations`` are for agent requests only.
    ``cost_llm_usd`` is ``cost_usd`` plus, for an agent request that brings a
    summary no summarizer request paid for, what an LLM would have charged to
    write it by the reference scorer's rule (its own cache); ``cost_live_usd``
    the same as the live path pays (the agent's cache; :mod:`.summary_price`).
    """

    step: int
    index: int
    kind: str
    time_s: float | None
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    output_tokens: int
    cost_usd: float
    cost_no_cache_usd: float
    cost_llm_usd: float = 0.0
    cost_live_usd: float = 0.0
    survival: Survival | None = None
    recall: Recall | None = None
    strict: Strict | None = None
    lint: SummaryLint = field(default_factory=SummaryLint)
    violations: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, JSONValue]:
        data = asdict(self)
        data["survival"] = None if self.survival is None else self.survival.to_dict()
        data["violations"] = list(self.violations)
        return data


def priced(
    prices: Prices,
    *,
    step: int,
    index: int,
    kind: str,
    time_s: float | None,
    input_tokens: int,
    cache_read_tokens: int,
    output_tokens: int,
    llm_summary_usd: float = 0.0,
    live_summary_usd: float = 0.0,
    survival: Survival | None = None,
    recall: Recall | None = None,
    strict: Strict | None = None,
    violations: tuple[str, ...] = (),
    lint: SummaryLint | None = None,
) -> RequestRecord:
    """A record with its costs: an agent request writes to the cache all it did not read from it; a summarizer
    request is read uncached (``cache_read_tokens`` is ignored). ``llm_summary_usd`` is what writing the
    summaries the request brings would have cost an LLM (added to ``cost_llm_usd`` only), ``live_summary_usd``
    what it costs as the live path pays (added to ``cost_live_usd`` only)."""
    agent = kind == AGENT
    read = cache_read_tokens if agent else 0
    write = input_tokens - read if agent else 0
    cost = cost_usd(prices, cache_read=read, cache_write=write, output=output_tokens, uncached=0 if agent else input_tokens)
    return RequestRecord(
        step=step,
        index=index,
        kind=kind,
        time_s=time_s,
        input_tokens=input_tokens,
        cache_read_tokens=read,
        cache_write_tokens=write,
        output_tokens=output_tokens,
        cost_usd=cost,
        cost_no_cache_usd=cost_usd(prices, cache_read=0, cache_write=0, output=output_tokens, uncached=input_tokens),
        cost_llm_usd=cost + llm_summary_usd,
        cost_live_usd=cost + live_summary_usd,
        survival=survival,
        recall=recall,
        strict=strict,
        violations=violations,
        lint=lint or SummaryLint(),
    )


@dataclass(frozen=True)
class Totals:
    """A replayed session in figures (the ``--json`` object; see :func:`summarize` for the rules).

    ``overflows`` counts agent requests over the window; ``overflows_reserve``
    those that leave less than ``max_output_tokens`` for the reply.
    ``survival`` maps each probe to its mean over the requests where it had
    something to look for, and ``mean`` to the mean of those means.
    ``recall`` and ``recall_far`` are forward-reference recall weighted by
    the ``recall_needed`` (``recall_far_needed``) tokens of the requests
    (:mod:`.recall`), ``worst_request_recall`` the lowest of one request;
    ``None`` when no request needed anything. ``strict`` is strict recall
    (:mod:`.strict`): keyword in context, verbatim lines, last error and
    test result, each with its far variant, and their mean. ``cost_llm_usd`` is the cost with every
    summary priced as if an LLM had written it, by the reference scorer's rule; ``cost_live_usd`` the
    same as the live path pays, its summarizer reading the agent's cache (:mod:`.summary_price`). ``recoverable_recall`` is the share of the
    ``recoverable_missing`` needed tokens the requests did not hold that one search of the history
    returned (``None`` for a strategy without one). ``lint`` counts what the summaries the requests carried
    misread (:mod:`.lint`; each should be 0).
    """

    session: str
    strategy: str
    tokenizer: str
    window: int
    max_output_tokens: int
    requests: int
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    output_tokens: int
    summarizer_calls: int
    summarizer_input_tokens: int
    summarizer_output_tokens: int
    cost_usd: float
    cost_no_cache_usd: float
    cache_hit_ratio: float
    peak_tokens: int
    overflows: int
    overflows_reserve: int
    violations: int
    survival: dict[str, float | None] = field(default_factory=dict)
    cost_llm_usd: float = 0.0
    cost_live_usd: float = 0.0
    recall: float | None = None
    recall_far: float | None = None
    worst_request_recall: float | None = None
    recall_needed: int = 0
    recall_far_needed: int = 0
    strict: SessionStrict = field(default_factory=SessionStrict)
    recoverable_recall: float | None = None
    recoverable_missing: int = 0
    lint: SummaryLint = field(default_factory=SummaryLint)

    def to_dict(self) -> dict[str, JSONValue]:
        return asdict(self)


@dataclass(frozen=True)
class ReplayResult:
    """Every request a replay sent, in order (summarizer requests before the agent request of their step), and the totals."""

    requests: Sequence[RequestRecord]
    totals: Totals


def summarize(
    records: Sequence[RequestRecord], *, session: str, strategy: str, tokenizer: str, window: int, max_output_tokens: int
) -> Totals:
    """Totals over ``records``.

    Costs include the summarizer requests; token, cache, peak and overflow
    figures are the agent's requests only (the summarizer's are counted
    apart). ``cache_hit_ratio`` is cache reads over agent input tokens.
    ``violations`` counts every broken invariant of every agent request.
    """
    agent = [r for r in records if r.kind == AGENT]
    recall = session_recall(r.recall for r in agent)
    helpers = [r for r in records if r.kind != AGENT]
    input_tokens = sum(r.input_tokens for r in agent)
    cache_read = sum(r.cache_read_tokens for r in agent)
    return Totals(
        session=session,
        strategy=strategy,
        tokenizer=tokenizer,
        window=window,
        max_output_tokens=max_output_tokens,
        requests=len(agent),
        input_tokens=input_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=sum(r.cache_write_tokens for r in agent),
        output_tokens=sum(r.output_tokens for r in agent),
        summarizer_calls=len(helpers),
        summarizer_input_tokens=sum(r.input_tokens for r in helpers),
        summarizer_output_tokens=sum(r.output_tokens for r in helpers),
        cost_usd=sum(r.cost_usd for r in records),
        cost_no_cache_usd=sum(r.cost_no_cache_usd for r in records),
        cache_hit_ratio=cache_read / input_tokens if input_tokens else 0.0,
        peak_tokens=max((r.input_tokens for r in agent), default=0),
        overflows=sum(r.input_tokens > window for r in agent),
        overflows_reserve=sum(r.input_tokens > window - max_output_tokens for r in agent),
        violations=sum(len(r.violations) for r in agent),
        survival=mean_survival([r.survival for r in agent if r.survival is not None]),
        cost_llm_usd=sum(r.cost_llm_usd for r in records),
        cost_live_usd=sum(r.cost_live_usd for r in records),
        recall=recall.recall,
        recall_far=recall.recall_far,
        worst_request_recall=recall.worst_request_recall,
        recall_needed=recall.needed,
        recall_far_needed=recall.needed_far,
        strict=session_strict(r.strict for r in agent),
        recoverable_recall=recall.recoverable,
        recoverable_missing=recall.missing,
        lint=sum((r.lint for r in agent), SummaryLint()),
    )


def mean_survival(survivals: Sequence[Survival]) -> dict[str, float | None]:
    """Each probe's mean over the requests where it counted, and ``mean``: the mean of the probes that counted."""
    means: dict[str, float | None] = {}
    for name in PROBES:
        values = [v for v in (getattr(s, name) for s in survivals) if v is not None]
        means[name] = sum(values) / len(values) if values else None
    counted = [v for v in means.values() if v is not None]
    means["mean"] = sum(counted) / len(counted) if counted else None
    return means
