"""Replaying a recorded session through a context strategy, request by request, and measuring it.

Every assistant item of the recording is a reply, and the request before it
is what the strategy returns for a :class:`~.base.Step` whose ``new_items``
are all items since the previous request point (the previous reply
included), handed over as the recording's own objects. Each request is then
measured (:mod:`.render`: the request as Chat Completions messages, each
counted once per item), priced with the prompt cache (:mod:`.cost`) and with
its new summaries priced as LLM calls (:mod:`.summary_price`), probed for
what survived (:mod:`.probes`) and what the reply went on to use
(:mod:`.recall`, and with its context :mod:`.strict`), and checked (:mod:`.invariants`); the
strategy hears back a simulated usage. The replayer reads each request before
asking for the next, so a strategy may hand back a conversation it goes on
extending.

Times: a request is sent when its last new item arrived, so its time is the
latest timestamp among the new items, else the reply's, else unknown.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Sequence
from contextlib import nullcontext

from ..conversation import Conversation, Header, Item, JSONObject, reproducible_ids
from ..pipeline.base import Prices
from ..tokens import Estimator, exact_estimator
from ..usage import EVERY_TOKEN, CacheRule, Usage
from .base import Sent, Step, Strategy, StrategyConfig
from .cost import DEFAULT_CACHE_TTL_S, DEFAULT_PRICES, Prompt, PromptCache
from .dump import RequestWriter
from .invariants import RecordingInvariants
from .lint import SummaryLint, SummaryLinter
from .probes import Haystack, SessionProbes, evaluate
from .recall import Search, session_needs
from .recall import evaluate as evaluate_recall
from .render import (
    Message,
    as_message,
    item_tokens,
    render_item,
    render_request,
    render_tools,
    summary_positions,
    tools_tokens,
)
from .result import AGENT, SUMMARIZER, ReplayResult, RequestRecord, priced, summarize
from .strict import StrictSession, model_text, searchable

logger = logging.getLogger("contextfold.replay")
from .summary_price import BothRules

Progress = Callable[[int, int], None]
"""Called after each step with (steps done, steps in all)."""


def request_points(conversation: Conversation) -> list[int]:
    """The indexes of the recorded replies: every assistant item."""
    return [index for index, item in enumerate(conversation.items) if item.role == "assistant"]


def request_time(new_items: Sequence[Item], reply: Item) -> float | None:
    """When the request was sent: the last timestamp among the new items, else the reply's, else ``None``."""
    for item in reversed(new_items):
        if item.timestamp is not None:
            return item.timestamp
    return reply.timestamp


def _same_message(old: Message, new: Message) -> bool:
    return old is new or old.data == new.data


class _Replay:
    """The state of one replay between steps: the prompt caches, the probes, the dump."""

    def __init__(
        self,
        recording: Conversation,
        estimator: Estimator,
        prices: Prices,
        cache_ttl_s: float,
        dump: RequestWriter | None,
        cache_rule: CacheRule,
    ) -> None:
        self.recording = recording
        self.estimator = estimator
        self.prices = prices
        self.dump = dump
        self.probes = SessionProbes(recording)
        self.needs = session_needs(recording)
        self.strict = StrictSession(recording)
        self.linter = SummaryLinter(recording)
        self.invariants = RecordingInvariants(recording)
        self.haystack = Haystack()
        self.recall_haystack = Haystack()
        self.strict_haystack = Haystack()
        self.records: list[RequestRecord] = []
        self.cache: PromptCache[Message] = PromptCache(cache_ttl_s, _same_message, cache_rule)
        self.summaries = BothRules(prices, lambda: PromptCache(cache_ttl_s, _same_message, cache_rule), self._message)
        self._tools: tuple[Header, str, int] | None = None

    def summarizer_call(self, step: Step, request: Conversation, usage: Usage | None) -> None:
        tools_json, tools_tokens_ = self._tools_of(request.header)
        messages, tokens = render_request(request, self.estimator)
        output = usage.output_tokens if usage is not None else 0
        self._write(step, SUMMARIZER, output, tools_json, messages, ())
        self.records.append(
            priced(self.prices, step=step.number, index=step.index, kind=SUMMARIZER, time_s=step.time_s,
                   input_tokens=tools_tokens_ + sum(tokens), cache_read_tokens=0, output_tokens=output)
        )

    def agent_request(self, step: Step, request: Conversation, summaries_paid: bool,
                      search: Search | None = None, summarized_at_s: float | None = None) -> RequestRecord:
        """Measure the agent's request; ``summaries_paid``: summarizer requests of this step wrote its summaries;
        ``search``: the strategy's search of its history, for recoverable recall; ``summarized_at_s``: when its new
        summaries were made, if before the request."""
        tools_json, tools_tokens_ = self._tools_of(request.header)
        messages, tokens = render_request(request, self.estimator)
        output = item_tokens(self.recording.items[step.index], self.estimator)
        previous = self.cache.previous
        prompt = Prompt(tools_json, tools_tokens_, messages, tokens, step.time_s)
        read = self.cache.read(prompt)
        summaries = summary_positions(request, messages)
        self._write(step, AGENT, output, tools_json, messages, summaries)
        known = {m.json for m in previous.messages} if previous is not None and summaries else set()
        new_summaries = [tokens[n] for n in summaries if messages[n].json not in known]
        lint = sum((self.linter.lint(model_text(messages[n].item), step.index)
                    for n in summaries if messages[n].json not in known), SummaryLint())
        llm, live = 0.0, 0.0
        if new_summaries and not summaries_paid:  # the messages since the replaced request go into the live call
            since = [(m, self.estimator.item(m.item)) for m in map(render_item, step.new_items) if m is not None]
            written_s = step.time_s if summarized_at_s is None else summarized_at_s
            llm, live = self.summaries.price(previous, new_summaries, written_s, since)
        record = priced(
            self.prices, step=step.number, index=step.index, kind=AGENT, time_s=step.time_s,
            input_tokens=prompt.input_tokens, cache_read_tokens=read, output_tokens=output,
            llm_summary_usd=llm, live_summary_usd=live,
            survival=evaluate(self.probes.at(step.index), self.haystack.searcher({m: m.text for m in messages})),
            recall=evaluate_recall(self.needs.get(step.index),
                                   self.recall_haystack.searcher({m: m.wire_text for m in messages}), search),
            strict=self.strict.evaluate(step.index, self.strict_haystack.searcher({m: searchable(m.item) for m in messages})),
            violations=self.invariants.check(request, step.index),
            lint=lint,
        )
        self.records.append(record)
        return record

    def _message(self, data: JSONObject) -> tuple[Message, int]:
        message = as_message(dict(data))
        return message, self.estimator.item(message.item)

    def _tools_of(self, header: Header) -> tuple[str, int]:
        """The header's tool definitions as JSON, and their tokens (rendered again only when they change)."""
        known = self._tools
        if known is None or not (known[0] is header or known[0].tools == header.tools):
            tools = render_tools(header)
            known = self._tools = (header, json.dumps(tools, ensure_ascii=False), tools_tokens(tools, self.estimator))
        return known[1], known[2]

    def _write(
        self, step: Step, kind: str, output: int, tools_json: str, messages: list[Message], summaries: Sequence[int]
    ) -> None:
        if self.dump is not None:
            self.dump.write(step=step.number, index=step.index, time_s=step.time_s, kind=kind,
                            output_tokens=output, tools_json=tools_json, messages=messages, summaries=summaries)


def replay(
    conversation: Conversation,
    strategy: Strategy,
    config: StrategyConfig,
    *,
    tokenizer: Estimator | None = None,
    prices: Prices = DEFAULT_PRICES,
    cache_ttl_s: float = DEFAULT_CACHE_TTL_S,
    cache_rule: CacheRule = EVERY_TOKEN,
    requests_path: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    session: str = "",
) -> ReplayResult:
    """Feed ``conversation`` through ``strategy`` as the agent would have, and measure every request.

    ``tokenizer`` counts every request (default: exact ``o200k_base`` via
    tiktoken, :class:`~contextfold.errors.TokenizerUnavailable` when it cannot
    be loaded). ``requests_path`` names a file to write every request to
    (:mod:`.dump`). ``cache_rule`` is how the provider's cache serves a prefix (its adapter's
    ``cache_rule``; default: every token of a common prefix, Anthropic's rule with its minimum ignored). ``session`` is the name the totals carry. The ids of the
    items the strategy writes are drawn from a stream seeded by the session and
    strategy, so the same replay writes the same requests every time.
    """
    estimator = tokenizer or exact_estimator("o200k_base")
    conversation = answered(conversation, session)
    points = request_points(conversation)
    seed = f"{session}\0{strategy.name}\0{conversation.items[0].id if conversation.items else ''}"
    with reproducible_ids(seed), \
            RequestWriter(requests_path) if requests_path is not None else nullcontext() as dump:
        state = _Replay(conversation, estimator, prices, cache_ttl_s, dump, cache_rule)
        strategy.start(conversation.header)
        start = 0
        for number, index in enumerate(points):
            new_items = conversation.items[start:index]
            start = index
            step = Step(number, index, new_items, request_time(new_items, conversation.items[index]))
            sent: Sent = strategy.step(step)
            for request, usage in sent.summarizer_calls:
                state.summarizer_call(step, request, usage)
            record = state.agent_request(step, sent.request, bool(sent.summarizer_calls), sent.search,
                                         sent.summarized_at_s)
            strategy.record_usage(_usage(record))
            if progress is not None:
                progress(number + 1, len(points))
    totals = summarize(
        state.records,
        session=session,
        strategy=strategy.name,
        tokenizer=estimator.text.name,
        window=config.window_tokens,
        max_output_tokens=config.max_output_tokens,
    )
    return ReplayResult(state.records, totals)


def answered(conversation: Conversation, session: str = "") -> Conversation:
    """``conversation``, or, when the recording lost the result of a call the agent made before a later request,
    its repair (:meth:`Conversation.repair`: each such call answered with an error result saying none was
    recorded), with a warning. No provider takes a request holding a call without its result, so the agent's
    next request cannot have been sent as recorded; a harness that crashed or dropped a record leaves this
    shape, and the rest of the session is still worth replaying. A call left open by the recording's end is no
    fault: no request follows it."""
    points = request_points(conversation)
    last = points[-1] if points else 0
    lost = [v for v in conversation.validate() if v.kind == "unanswered_call" and v.index < last]
    if not lost:
        return conversation
    repaired, repairs = conversation.repair()
    logger.warning("%s: %d tool call(s) have no recorded result (first at item %d): answered with an error result "
                   "so the requests after them can be sent; %d repair(s) in all", session or "the session",
                   len(lost), lost[0].index, len(repairs))
    return repaired


def _usage(record: RequestRecord) -> Usage:
    """What a provider would have reported for the request."""
    return Usage(
        prompt_tokens=record.input_tokens,
        output_tokens=record.output_tokens,
        cache_read_tokens=record.cache_read_tokens,
        cache_write_tokens=record.cache_write_tokens,
    )

