"""Replaying a recorded session through a context strategy, request by request, and measuring it.

Every assistant item of the recording is a reply, and the request before it
is what the strategy returns for a :class:`~.base.Step` whose ``new_items``
are all items since the previous request point (the previous reply
included), handed over as the recording's own objects. Each request is then
measured (:mod:`.render`: the request as Chat Completions messages, each
counted once per item), priced with the prompt cache (:mod:`.cost`), probed
for what survived (:mod:`.probes`) and checked (:mod:`.invariants`); the
strategy hears back a simulated usage. The replayer reads each request before
asking for the next, so a strategy may hand back a conversation it goes on
extending.

Times: a request is sent when its last new item arrived, so its time is the
latest timestamp among the new items, else the reply's, else unknown.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from contextlib import closing, nullcontext
from typing import NamedTuple

from ..conversation import Conversation, Header, Item
from ..pipeline.base import Prices
from ..tokens import Estimator, exact_estimator
from ..usage import Usage
from .base import Sent, Step, Strategy, StrategyConfig
from .cost import DEFAULT_CACHE_TTL_S, DEFAULT_PRICES, common_prefix, warm
from .dump import RequestWriter
from .invariants import RecordingInvariants
from .probes import Haystack, SessionProbes, evaluate
from .render import Message, item_tokens, render_request, render_tools, tools_tokens
from .result import AGENT, SUMMARIZER, ReplayResult, RequestRecord, priced, summarize

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


class _Previous(NamedTuple):
    """What the cache holds from the previous agent request."""

    tools_json: str
    messages: list[Message]
    time_s: float | None


class _Replay:
    """The state of one replay between steps: the previous agent request, the probes, the dump."""

    def __init__(
        self,
        recording: Conversation,
        estimator: Estimator,
        prices: Prices,
        cache_ttl_s: float,
        dump: RequestWriter | None,
    ) -> None:
        self.recording = recording
        self.estimator = estimator
        self.prices = prices
        self.cache_ttl_s = cache_ttl_s
        self.dump = dump
        self.probes = SessionProbes(recording)
        self.invariants = RecordingInvariants(recording)
        self.haystack = Haystack()
        self.records: list[RequestRecord] = []
        self._tools: tuple[Header, str, int] | None = None
        self._previous: _Previous | None = None

    def summarizer_call(self, step: Step, request: Conversation, usage: Usage | None) -> None:
        tools_json, tools_tokens_ = self._tools_of(request.header)
        messages, tokens = render_request(request, self.estimator)
        output = usage.output_tokens if usage is not None else 0
        self._write(step, SUMMARIZER, output, tools_json, messages)
        self.records.append(
            priced(self.prices, step=step.number, index=step.index, kind=SUMMARIZER, time_s=step.time_s,
                   input_tokens=tools_tokens_ + sum(tokens), cache_read_tokens=0, output_tokens=output)
        )

    def agent_request(self, step: Step, request: Conversation) -> RequestRecord:
        tools_json, tools_tokens_ = self._tools_of(request.header)
        messages, tokens = render_request(request, self.estimator)
        output = item_tokens(self.recording.items[step.index], self.estimator)
        read = self._cache_read(tools_json, tools_tokens_, messages, tokens, step.time_s)
        self._previous = _Previous(tools_json, messages, step.time_s)
        self._write(step, AGENT, output, tools_json, messages)
        record = priced(
            self.prices, step=step.number, index=step.index, kind=AGENT, time_s=step.time_s,
            input_tokens=tools_tokens_ + sum(tokens), cache_read_tokens=read, output_tokens=output,
            survival=evaluate(self.probes.at(step.index), self.haystack.searcher({m: m.text for m in messages})),
            violations=self.invariants.check(request, step.index),
        )
        self.records.append(record)
        return record

    def _tools_of(self, header: Header) -> tuple[str, int]:
        """The header's tool definitions as JSON, and their tokens (rendered again only when they change)."""
        known = self._tools
        if known is None or not (known[0] is header or known[0].tools == header.tools):
            tools = render_tools(header)
            known = self._tools = (header, json.dumps(tools, ensure_ascii=False), tools_tokens(tools, self.estimator))
        return known[1], known[2]

    def _cache_read(
        self, tools_json: str, tools_tokens_: int, messages: list[Message], tokens: list[int], time_s: float | None
    ) -> int:
        """Tokens served from the cache: the unchanged leading segments of the previous request, if still alive."""
        previous = self._previous
        if previous is None or previous.tools_json != tools_json or not warm(previous.time_s, time_s, self.cache_ttl_s):
            return 0
        same = common_prefix(previous.messages, messages, lambda old, new: old is new or old.data == new.data)
        return tools_tokens_ + sum(tokens[:same])

    def _write(self, step: Step, kind: str, output: int, tools_json: str, messages: list[Message]) -> None:
        if self.dump is not None:
            self.dump.write(step=step.number, index=step.index, time_s=step.time_s, kind=kind,
                            output_tokens=output, tools_json=tools_json, messages=messages)


def replay(
    conversation: Conversation,
    strategy: Strategy,
    config: StrategyConfig,
    *,
    tokenizer: Estimator | None = None,
    prices: Prices = DEFAULT_PRICES,
    cache_ttl_s: float = DEFAULT_CACHE_TTL_S,
    requests_path: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    session: str = "",
) -> ReplayResult:
    """Feed ``conversation`` through ``strategy`` as the agent would have, and measure every request.

    ``tokenizer`` counts every request (default: exact ``o200k_base`` via
    tiktoken, :class:`~contextfold.errors.TokenizerUnavailable` when it cannot
    be loaded). ``requests_path`` names a file to write every request to
    (:mod:`.dump`). ``session`` is the name the totals carry.
    """
    estimator = tokenizer or exact_estimator("o200k_base")
    points = request_points(conversation)
    with closing(RequestWriter(requests_path)) if requests_path is not None else nullcontext() as dump:
        state = _Replay(conversation, estimator, prices, cache_ttl_s, dump)
        strategy.start(conversation.header)
        start = 0
        for number, index in enumerate(points):
            new_items = conversation.items[start:index]
            start = index
            step = Step(number, index, new_items, request_time(new_items, conversation.items[index]))
            sent: Sent = strategy.step(step)
            for request, usage in sent.summarizer_calls:
                state.summarizer_call(step, request, usage)
            record = state.agent_request(step, sent.request)
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


def _usage(record: RequestRecord) -> Usage:
    """What a provider would have reported for the request."""
    return Usage(
        prompt_tokens=record.input_tokens,
        output_tokens=record.output_tokens,
        cache_read_tokens=record.cache_read_tokens,
        cache_write_tokens=record.cache_write_tokens,
    )

