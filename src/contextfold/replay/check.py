"""Recomputing a replay's figures from its ``--requests`` dump alone.

The release bar for the replay is that nothing it reports has to be taken on
trust: :func:`recount` reads the dumped requests back, tokenizes every
message from scratch (each distinct message once), rebuilds the cache
prefix by comparing consecutive agent requests message by message,
re-prices everything, re-checks the invariants on the dumped messages, and
(given the original session) re-runs the probes by text search in the
dumped messages, and recall and strict recall in them. What it shares with the replayer is
only the rules (how a message is counted, how a request is priced and
totalled, what a probe and recall look for), not any figure.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from ..adapters.openai_chat import from_openai
from ..conversation import Conversation, Header, JSONObject, JSONValue
from ..errors import InvalidMessage
from ..pipeline.base import Prices
from ..pipeline.task import task_index
from ..tokens import Estimator
from .base import StrategyConfig
from .cost import DEFAULT_CACHE_TTL_S, DEFAULT_PRICES, Prompt, PromptCache
from .dump import DumpedRequest, read_requests
from .probes import Haystack, SessionProbes, Survival, evaluate
from .recall import Recall, session_needs
from .recall import evaluate as evaluate_recall
from .render import Message, as_message, render_item, render_tools, tools_tokens
from .result import AGENT, RequestRecord, Totals, priced, summarize
from .strict import Strict, StrictSession, searchable
from .summary_price import BothRules


def recount(
    dump_path: str | os.PathLike[str],
    window: int,
    tokenizer: Estimator,
    prices: Prices = DEFAULT_PRICES,
    ttl: float = DEFAULT_CACHE_TTL_S,
    session: Conversation | None = None,
    *,
    max_output_tokens: int = StrategyConfig.max_output_tokens,
) -> Totals:
    """The totals of the dumped replay, recomputed (``window`` and ``max_output_tokens`` in tokens, ``ttl`` in seconds).

    Without ``session`` (the recording that was replayed) the probes and the
    header and task invariants cannot be checked: survival is then empty and
    only the structure of each request is.
    """
    counter = _Counter(tokenizer)
    rules = _DumpedRules(session)
    scorer = _Scorer(session) if session is not None else None
    records: list[RequestRecord] = []
    cache: PromptCache[str] = PromptCache(ttl)
    summaries: BothRules[str] = BothRules(prices, lambda: PromptCache(ttl), counter.keyed)
    last_index: int | None = None  # the recorded reply the previous agent request preceded
    for request in read_requests(dump_path):
        keys = [counter.key(m) for m in request.messages]
        tools_key = counter.key(request.tools)
        tools = counter.tools(tools_key, request.tools)
        tokens = [counter.message(key, m) for key, m in zip(keys, request.messages)]
        read = 0
        llm_summary_usd = live_summary_usd = 0.0
        survival: Survival | None = None
        recall: Recall | None = None
        strict: Strict | None = None
        violations: tuple[str, ...] = ()
        if request.kind == AGENT:
            previous = cache.previous
            read = cache.read(Prompt(tools_key, tools, keys, tokens, request.time_s))
            known = set(previous.messages) if previous is not None else set()
            new_summaries = [tokens[n] for n in request.summaries if keys[n] not in known]
            paid = bool(records) and records[-1].kind != AGENT and records[-1].step == request.step
            if not paid:  # a summarizer request of this step wrote its summaries
                since = [] if session is None or last_index is None or not new_summaries else [
                    counter.keyed(m.data) for m in map(render_item, session.items[last_index:request.index])
                    if m is not None]
                llm_summary_usd, live_summary_usd = summaries.price(previous, new_summaries, request.time_s, since)
            if scorer is not None:
                survival, recall, strict = scorer.score(request, keys, counter)
            violations = rules.check(request)
            last_index = request.index
        records.append(
            priced(prices, step=request.step, index=request.index, kind=request.kind, time_s=request.time_s,
                   input_tokens=tools + sum(tokens), cache_read_tokens=read, output_tokens=request.output_tokens,
                   llm_summary_usd=llm_summary_usd, live_summary_usd=live_summary_usd, survival=survival, recall=recall, strict=strict,
                   violations=violations)
        )
    return summarize(records, session=str(dump_path), strategy="", tokenizer=tokenizer.text.name, window=window,
                     max_output_tokens=max_output_tokens)


class _Scorer:
    """What the recording that was replayed lets be measured of each agent request: its probes' survival, the
    recall of what the agent needed next, and the strict measure, each searched in the request's messages."""

    def __init__(self, session: Conversation) -> None:
        self._probes = SessionProbes(session)
        self._needs = session_needs(session)
        self._strict = StrictSession(session)
        self._haystack, self._recall_haystack, self._strict_haystack = Haystack(), Haystack(), Haystack()

    def score(self, request: DumpedRequest, keys: list[str],
              counter: _Counter) -> tuple[Survival, Recall | None, Strict | None]:
        messages = request.messages
        contains = self._haystack.searcher({key: counter.text(key, m) for key, m in zip(keys, messages)})
        survival = evaluate(self._probes.at(request.index), contains)
        wire = {key: counter.text(key, m, decode_arguments=False) for key, m in zip(keys, messages)}
        recall = evaluate_recall(self._needs.get(request.index), self._recall_haystack.searcher(wire))
        lines = {key: searchable(counter.read(key, m).item) for key, m in zip(keys, messages)}
        strict = self._strict.evaluate(request.index, self._strict_haystack.searcher(lines))
        return survival, recall, strict


class _Counter:
    """Tokens and text of dumped messages, each distinct message (by its canonical JSON) read back once."""

    def __init__(self, estimator: Estimator) -> None:
        self.estimator = estimator
        self._messages: dict[str, Message] = {}
        self._tools: dict[str, int] = {}

    @staticmethod
    def key(value: object) -> str:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)

    def read(self, key: str, data: dict[str, JSONValue]) -> Message:
        if key not in self._messages:
            self._messages[key] = as_message(data)
        return self._messages[key]

    def message(self, key: str, data: dict[str, JSONValue]) -> int:
        return self.estimator.item(self.read(key, data).item)

    def keyed(self, data: JSONObject) -> tuple[str, int]:
        """The message's key and tokens."""
        key = self.key(data)
        return key, self.message(key, dict(data))

    def tools(self, key: str, tools: Sequence[JSONObject]) -> int:
        if key not in self._tools:
            self._tools[key] = tools_tokens(tools, self.estimator)
        return self._tools[key]

    def text(self, key: str, data: dict[str, JSONValue], *, decode_arguments: bool = True) -> str:
        message = self.read(key, data)
        return message.text if decode_arguments else message.wire_text


class _DumpedRules:
    """The replay's invariants (:mod:`.invariants`), checked on dumped messages.

    Structure: the messages read back as a conversation that validates.
    Header (with the session): the recording's system messages come first,
    and the tool definitions are the recording's. Task (with the session,
    once it was said): the task's message is there, or its text is inside
    some message (a summary or a pinned copy).
    """

    def __init__(self, session: Conversation | None) -> None:
        self.session = session
        index = None if session is None else task_index(session)  # the task, as the pipeline reads it
        self.task_index = index
        task = None if session is None or index is None else render_item(session.items[index])
        self.task = None if task is None else task.data
        self.task_text = "" if session is None or index is None else session.items[index].text

    def check(self, request: DumpedRequest) -> tuple[str, ...]:
        try:
            conversation = from_openai(request.messages)
            broken = [f"structure: {violation}" for violation in conversation.validate()]
        except InvalidMessage as error:
            broken = [f"structure: {error}"]
        if self.session is not None:
            broken.extend(self._header(request, self.session.header))
        if self.task is not None and self.task_index is not None and self.task_index < request.index \
                and not self._holds_task(request.messages):
            broken.append("task: the person's first message is missing")
        return tuple(broken)

    @staticmethod
    def _header(request: DumpedRequest, header: Header) -> list[str]:
        system = [m.data for m in map(render_item, header.system) if m is not None]
        broken = []
        if request.messages[: len(system)] != system:
            broken.append("header: the system items differ from the recording's")
        if request.tools != render_tools(header):
            broken.append("header: the tool definitions differ from the recording's")
        return broken

    def _holds_task(self, messages: list[dict[str, JSONValue]]) -> bool:
        return self.task in messages or any(self.task_text in as_message(m).text for m in messages)
