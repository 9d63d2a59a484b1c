"""The facade an agent loop holds: add, prepare, record_usage, compact, fork, events, stats.

One agent step, as this class runs it::

    context.add(new_messages)          # each item goes to the transcript first, then to the view
    request = context.prepare()        # cheap stages on new items; a batch of edits if it pays;
                                       # a summary at a turn boundary over the trigger; invariants; wire format
    response = client.messages.create(**request, model=..., max_tokens=...)
    context.add_response(response)     # the reply, and the usage it reports (anchors the token count)

The history (every item ever added) is never changed; what is sent is a view
of it, kept between calls so that the cached prefix stays byte-stable until a
stage decides a change is worth it.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .codec import item_from_dict, item_to_dict
from .conversation import Conversation, Header, Item, Summary, Text, Validator, Violation, new_id
from .errors import ContextfoldError, InvalidConversation, TranscriptError
from .limits import ModelLimits, compaction_threshold, model_limits
from .pipeline import BATCH_STAGES, CHEAP_STAGES, compact, run_stages
from .pipeline.base import Budget, Event, Policy
from .pipeline.economics import Verdict, verdict
from .pipeline.summarize import summarize
from .rendering import Renderer
from .summarizers.base import Summarizer
from .tokens import Estimator, TokenCounter
from .transcript import Transcript
from .usage import Usage

PROVIDERS = ("anthropic", "openai", "responses")
VIEW_EVENT = "view"
"""Transcript event kind of a view checkpoint (what was being sent after a stage changed it)."""
DEFAULT_MAX_OUTPUT_TOKENS = 4_096
CACHE_BREAK_DROP = 0.05
"""A fall in cached prompt tokens larger than this share of the previous figure is a cache break."""

_PROMPT_TOO_LONG = re.compile(
    r"prompt is too long|context_length_exceeded|maximum context length|input is too long|too many tokens|"
    r"reduce the length of the messages|exceeds the context window",
    re.IGNORECASE,
)


def is_prompt_too_long(error: BaseException | str) -> bool:
    """Whether a provider error says the request did not fit (Anthropic's and OpenAI's wording)."""
    text = error if isinstance(error, str) else f"{error} {getattr(error, 'body', '') or ''}"
    return bool(_PROMPT_TOO_LONG.search(text))


def _default_summarizer() -> Summarizer:
    from .summarizers.extractive import ExtractiveSummarizer

    return ExtractiveSummarizer()


class Context:
    """The context of one agent session, kept within its window.

    ``model`` names the model (its window and reply limit come from
    :mod:`contextfold.limits`), or give ``window_tokens`` (and
    ``max_output_tokens``) directly. ``transcript`` is a folder (a transcript
    named after ``session_id`` is created or resumed there), a
    :class:`~contextfold.transcript.Transcript`, or ``None`` to keep nothing
    on disk. ``results_dir`` is where oversized outputs are persisted
    (default: next to the transcript, else nowhere: they are only cut).
    ``clock`` gives the time in seconds (``None`` when unknown: the prompt
    cache is then taken to be warm).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        window_tokens: int | None = None,
        max_output_tokens: int | None = None,
        policy: Policy | None = None,
        summarizer: Summarizer | None = None,
        transcript: Transcript | str | Path | None = None,
        session_id: str | None = None,
        results_dir: str | Path | None = None,
        provider: str = "anthropic",
        estimator: Estimator | None = None,
        clock: Callable[[], float | None] = time.time,
    ) -> None:
        if model is None and window_tokens is None:
            raise ContextfoldError("Context needs a model name or window_tokens")
        limits = model_limits(model) if model is not None else ModelLimits(window_tokens, DEFAULT_MAX_OUTPUT_TOKENS)  # type: ignore[arg-type]
        self.limits = ModelLimits(window_tokens or limits.context_window, max_output_tokens or limits.max_output_tokens)
        self.model = model
        self.policy = policy or Policy()
        self.summarizer = summarizer or _default_summarizer()
        self.provider = _check_provider(provider)
        self.session_id = session_id or new_id("session")
        self.clock = clock
        self.estimator = estimator or Estimator()
        self.counter = TokenCounter(self.estimator)
        self.history = Conversation()
        self.events: list[Event] = []
        self._subscribers: list[Callable[[Event], None]] = []
        self._view = Conversation()  # what is sent: appended to as items arrive, replaced when a stage fires
        self._processed = 0  # view items the cheap stages have seen
        self._last_sent: Conversation | None = None
        self._last_request_s: float | None = None
        self._requests = 0
        self._evaluated_at_tokens = 0
        self._failures = 0
        self._last_fired: str | None = None
        self._last_cache_read: int | None = None
        self._sent_tokens: int | None = None
        self._renderers: dict[str, Renderer] = {}
        self._validator = Validator()
        self._validated: tuple[Conversation, int] | None = None  # (view object, items fed to the validator)
        self._growth: float | None = None  # average growth of the request per call while no stage fires
        self._by_id: dict[str, Item] = {}  # history items by id, to record views by reference
        self.transcript = self._open_transcript(transcript)
        default_results = Path(self.transcript.path).parent / f"{self.session_id}-results" if self.transcript else None
        self.results_dir = Path(results_dir) if results_dir is not None else default_results

    # ------------------------------------------------------------------ thresholds
    @property
    def window_tokens(self) -> int:
        return self.limits.context_window

    @property
    def trigger_tokens(self) -> int:
        """Above this many prompt tokens a summary is due (policy override, else the dynamic threshold)."""
        p = self.policy
        if p.trigger_tokens is not None:
            return p.trigger_tokens
        if p.trigger_fraction is not None:
            return int(p.trigger_fraction * self.window_tokens)
        return max(compaction_threshold(self.limits), self.window_tokens // 4)

    @property
    def breaker_open(self) -> bool:
        """Automatic compaction has failed too often in a row and is off until a manual compact succeeds."""
        return self._failures >= self.policy.max_consecutive_failures

    # ------------------------------------------------------------------ events
    def subscribe(self, callback: Callable[[Event], None]) -> None:
        """Call ``callback`` with every event from now on."""
        self._subscribers.append(callback)

    def record_events(self, events: Iterable[Event]) -> None:
        """Record events from outside the pipeline (what a provider's own context management did), like any other."""
        self._emit(events)

    def _emit(self, events: Iterable[Event]) -> None:
        for event in events:
            self.events.append(event)
            if self.transcript is not None and event.stage != "transcript":
                try:
                    self.transcript.append_event(event.stage, event.to_dict())
                except TranscriptError as error:
                    self._transcript_failed(error)
            for callback in self._subscribers:
                callback(event)

    # ------------------------------------------------------------------ adding
    def add(
        self,
        messages: Sequence[Mapping[str, Any]] | Sequence[Item] | Conversation,
        provider: str | None = None,
        *,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[Item]:
        """Add messages (in ``provider``'s format, or items) and return the items stored.

        ``system`` and ``tools`` set the header (Anthropic style; for OpenAI
        formats a leading system message does the same). Every item is in
        the transcript before this returns.
        """
        conversation = self._to_conversation(messages, provider, system, tools)
        header = conversation.header
        if header.system or header.tools or header.pinned:
            self.set_header(header)
        stored = []
        for item in conversation.items:
            self._record(item)
            stored.append(self.history.append(item))
            self._by_id[item.id] = stored[-1]
            self._view.append(stored[-1])
        return stored

    def add_response(self, response: Any, provider: str | None = None) -> list[Item]:
        """Add a model reply (an SDK response object or its dict) and record the usage it reports."""
        provider = _check_provider(provider or self.provider)
        data = response.model_dump(exclude_none=True) if hasattr(response, "model_dump") else dict(response)
        if provider == "anthropic":
            items = self.add([{"role": "assistant", "content": data["content"]}], "anthropic")
        elif provider == "openai":
            message = {k: v for k, v in data["choices"][0]["message"].items() if v is not None}
            items = self.add([message], "openai")
        else:
            items = self.add(data["output"], "responses")
        if data.get("usage"):
            self.record_usage(data["usage"])
        return items

    def set_header(self, header: Header) -> None:
        """Replace the system prompt, tools and pinned items (recorded in the transcript)."""
        if header == self.history.header:
            return
        self.history.header = header
        self._view.header = header
        if self.transcript is not None:
            try:
                self.transcript.update_header(header)
            except TranscriptError as error:
                self._transcript_failed(error)

    def pin(self, text: str) -> None:
        """Keep ``text`` in every request, right after the system prompt, never compacted."""
        header = self.history.header
        self.set_header(replace(header, pinned=(*header.pinned, Item("user", (Text(text),)))))

    def _to_conversation(self, messages: Any, provider: str | None, system: Any, tools: Any) -> Conversation:
        if isinstance(messages, Conversation):
            return messages
        messages = list(messages)
        if messages and all(isinstance(m, Item) for m in messages):
            return Conversation(messages)
        known = [call.id for item in self.history for call in item.tool_calls]
        provider = _check_provider(provider or self.provider)
        if provider == "anthropic":
            return Conversation.from_anthropic(messages, system=system, tools=tools, known_call_ids=known)
        if provider == "openai":
            return Conversation.from_openai(messages, tools=tools, known_call_ids=known)
        return Conversation.from_responses(messages, tools=tools, known_call_ids=known)

    def _record(self, item: Item) -> None:
        if self.transcript is None:
            return
        try:
            self.transcript.append(item)
        except TranscriptError as error:
            self._transcript_failed(error)

    def _transcript_failed(self, error: TranscriptError) -> None:
        """The disk failed: keep going in memory (nothing is dropped from the view) and say so."""
        self._emit([Event("transcript", "failed", detail=f"transcript writes stopped: {error}")])
        self.transcript = None

    # ------------------------------------------------------------------ one request
    def _budget(self, **overrides: Any) -> Budget:
        now = self.clock()
        idle = now - self._last_request_s if now is not None and self._last_request_s is not None else None
        return Budget(
            policy=self.policy,
            window_tokens=self.window_tokens,
            trigger_tokens=self.trigger_tokens,
            count=self.counter.count,
            count_item=self.estimator.item,
            new_from=self._processed,
            requests_sent=self._requests,
            idle_s=idle,
            now_s=now,
            results_dir=self.results_dir,
            summarizer=self.summarizer,
            count_text=self.estimator.text,
            growth_tokens_per_request=self._growth,
            **overrides,
        )

    def view(self) -> Conversation:
        """What would be sent now, before this call's stages run (do not modify it)."""
        return self._view

    def prepare(self, provider: str | None = None) -> dict[str, Any]:
        """The request to send now (``system``/``messages``/``tools`` for Anthropic; ``messages``/``tools``
        for OpenAI Chat; ``input``/``tools`` for Responses), after whatever stages are due."""
        return self.render(self.prepare_view(), provider)

    def render(self, view: Conversation, provider: str | None = None) -> dict[str, Any]:
        """``view`` as a request body for ``provider`` (incrementally: only new messages are rendered)."""
        name = _check_provider(provider or self.provider)
        renderer = self._renderers.get(name)
        if renderer is None:
            renderer = self._renderers[name] = Renderer(name)
        return renderer.render(view)

    def prepare_view(self) -> Conversation:
        """:meth:`prepare` without the wire format: the conversation that would be sent."""
        budget = self._budget()
        view, events = run_stages(self.view(), budget, CHEAP_STAGES)
        view = self._maybe_edit(view, budget, events)
        due = _ends_at_boundary(view) and not self.breaker_open
        if due and self.counter.count(view) > self.trigger_tokens:
            view = self._compact(view, budget, events, automatic=True)
        return self._send(view, events)

    def at_turn_boundary(self) -> list[Event]:
        """Run the summary now if it is due (the agent loop calls this between turns)."""
        budget = self._budget()
        view, events = run_stages(self.view(), budget, CHEAP_STAGES)
        if _ends_at_boundary(view) and not self.breaker_open and self.counter.count(view) > self.trigger_tokens:
            view = self._compact(view, budget, events, automatic=True)
        self._commit(view)
        self._emit(events)
        return events

    def compact(self, instructions: str | None = None) -> list[Event]:
        """Summarize now, whatever the size, with ``instructions`` for the summarizer."""
        events: list[Event] = []
        budget = self._budget(instructions=instructions, force_summary=True)
        view, cheap = run_stages(self.view(), budget, CHEAP_STAGES)
        events.extend(cheap)
        self._commit(self._compact(view, budget, events, automatic=False))
        self._emit(events)
        return events

    def retry_request(self, error: BaseException | str, provider: str | None = None) -> dict[str, Any] | None:
        """After a provider error: if it says the prompt was too long, compact and return a new request.

        Returns ``None`` for any other error (the caller re-raises it). Call it
        once per failed request: one reactive compaction, one retry.
        """
        if not is_prompt_too_long(error):
            return None
        events = [Event("reactive", "prompt_too_long", detail=str(error)[:300])]
        budget = self._budget()
        target = min(self.trigger_tokens, int(self.counter.count(self.view()) * 0.7))
        view, more, _ = compact(self.view(), budget, target)
        events.extend(more)
        self._fired(more)
        return self.render(self._send(view, events), provider)

    def _maybe_edit(self, view: Conversation, budget: Budget, events: list[Event]) -> Conversation:
        """Consider changing the middle of the history, and do it only if it pays.

        Two candidates: the batch stages together (shrink, snip, clear), and,
        at a turn boundary, a summary. Each is priced with
        :func:`~contextfold.pipeline.economics.verdict`; the one that saves the
        most over the requests still to come is applied, if any pays (over the
        trigger, the forced summary follows). Evaluated only when the request
        grew enough since the last look, or the cache went cold, so most calls
        skip this entirely. Only an offline summarizer is tried here: pricing a
        model-written summary would mean paying for it.
        """
        tokens = self.counter.count(view)
        grown = tokens - self._evaluated_at_tokens
        if not (budget.cache_cold or grown >= self.policy.clear_min_savings_tokens // 2 or tokens > self.trigger_tokens):
            return view
        self._evaluated_at_tokens = tokens
        options: list[tuple[Conversation, list[Event], Verdict]] = []
        candidate, produced = run_stages(view, budget, BATCH_STAGES)
        if produced:
            options.append((candidate, produced, verdict(view, candidate, budget)))
        if self._summary_may_pay(view, tokens):
            summarized, made = summarize(view, replace(budget, tail_tokens=self.policy.economic_summary_tail_tokens))
            if made:
                options.append((summarized, made, verdict(view, summarized, budget)))
        if not options:
            return view
        chosen, produced, decision = max(options, key=lambda o: o[2].benefit_usd - o[2].cost_usd)
        if not decision.pays:  # over the trigger, the summary that follows does better than an unpaid batch
            events.append(Event("economics", "deferred", tokens_before=tokens, tokens_after=budget.count(chosen),
                                detail=decision.describe()))
            return view
        events.extend(produced)
        events.append(Event("economics", "applied", tokens_before=tokens, tokens_after=budget.count(chosen),
                            detail=decision.describe()))
        self._fired(produced)
        self._evaluated_at_tokens = budget.count(chosen)
        return chosen

    def _summary_may_pay(self, view: Conversation, tokens: int) -> bool:
        """Whether a summary below the trigger is worth pricing at all (it costs a summarizer run)."""
        p = self.policy
        return (
            p.economic_summaries
            and getattr(self.summarizer, "offline", False)  # pricing a model-written summary would pay for it
            and not self.breaker_open
            and tokens >= p.economic_summary_min_tokens
            and _ends_at_boundary(view)
        )

    def _compact(self, view: Conversation, budget: Budget, events: list[Event], *, automatic: bool) -> Conversation:
        try:
            result, produced, fits = compact(view, budget, self.trigger_tokens)
        except Exception as error:  # noqa: BLE001 - a summarizer bug must not take the agent down: keep the view, count it
            result, produced, fits = view, [Event("summarize", "failed", detail=f"{type(error).__name__}: {error}")], False
        events.extend(produced)
        # A summary the fallback wrote is a failure of the configured summarizer: it counts for the breaker.
        fallbacks = [e.data["fallback"] for e in produced if e.stage == "summarize" and e.data.get("fallback")]
        events.extend(Event("summarize", "fallback", detail=reason) for reason in fallbacks)
        if fits and not fallbacks:
            self._failures = 0
        elif automatic:
            self._failures += 1
            if self.breaker_open:
                events.append(Event("summarize", "breaker_open",
                                    detail=f"{self._failures} compactions in a row failed; automatic compaction is off"))
        self._fired(produced)
        self._evaluated_at_tokens = budget.count(result)
        return result

    def _track_growth(self, view: Conversation, *, changed: bool) -> None:
        """Learn how fast requests grow (a decayed mean over calls where nothing was compacted)."""
        tokens = self.counter.count(view)
        if not changed and self._sent_tokens is not None and tokens >= self._sent_tokens:
            sample = tokens - self._sent_tokens
            self._growth = sample if self._growth is None else 0.7 * self._growth + 0.3 * sample
        self._sent_tokens = tokens

    def _fired(self, events: Iterable[Event]) -> None:
        for event in events:
            if event.items:
                self._last_fired = event.stage

    def _commit(self, view: Conversation) -> None:
        if view is not self._view:
            self._checkpoint(view)
        self._view = view
        self._processed = len(view)

    def _checkpoint(self, view: Conversation) -> None:
        """Record a changed view in the transcript, so :meth:`resume` rebuilds exactly what was being sent.

        Items that are history items are recorded by id; summaries, restored files
        and shortened outputs in full.
        """
        if self.transcript is None:
            return
        entries = [
            {"ref": item.id} if self._by_id.get(item.id) is item else {"item": item_to_dict(item)} for item in view.items
        ]
        try:
            self.transcript.append_event(VIEW_EVENT, {"items": entries})
        except TranscriptError as error:
            self._transcript_failed(error)

    def close(self) -> None:
        """Flush and release the transcript (another process may then resume the session)."""
        if self.transcript is not None:
            self.transcript.close()
            self.transcript = None

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    def resume(cls, directory: str | Path, session_id: str, model: str | None = None, **options: Any) -> Context:
        """The context of a session recorded in ``directory``, as it was: its history, and the view it was sending.

        ``model`` and ``options`` are those of :class:`Context` (the transcript keeps
        the conversation, not the configuration).
        """
        context = cls(model, transcript=directory, session_id=session_id, **options)
        if context.transcript is None:
            raise TranscriptError(f"cannot resume {session_id!r}: {context.events[-1].detail if context.events else 'no transcript'}")
        restored = context.transcript.restored
        history = restored.conversation
        context.history = history.with_items(history.items)
        context._by_id = {item.id: item for item in context.history}
        checkpoint = next((e for e in reversed(restored.events) if e.kind == VIEW_EVENT), None)
        if checkpoint is None:
            view, after = [], 0
        else:
            view = [context._by_id[e["ref"]] if "ref" in e else item_from_dict(e["item"]) for e in checkpoint.data["items"]]
            after = checkpoint.item_count
        view.extend(context.history.items[after:])
        context._view = Conversation(view, context.history.header)
        context._processed = len(context._view) - (len(context.history) - after)
        return context

    def _violations(self, view: Conversation) -> list[Violation]:
        """The invariant check, incremental: a view that only grew is checked from where it was left."""
        if self._validated is None or self._validated[0] is not view or self._validated[1] > len(view):
            self._validator, fed = Validator(), 0
        else:
            fed = self._validated[1]
        for item in view.items[fed:]:
            self._validator.feed(item)
        self._validated = (view, len(view))
        return self._validator.violations + self._validator.open_violations()

    def _send(self, view: Conversation, events: list[Event]) -> Conversation:
        violations = self._violations(view)
        pending = [v for v in violations if v.kind == "unanswered_call" and v.index == _last_assistant(view)]
        if pending and len(pending) == len(violations):
            raise InvalidConversation(
                f"the last assistant turn (item {pending[0].index}) has {len(pending)} tool call(s) without results: "
                "add the tool results before preparing the next request"
            )
        if violations:
            view, repairs = view.repair()
            events.append(Event("invariants", "repaired", tuple(str(r.call_id) for r in repairs),
                                detail="; ".join(f"{r.action} at {r.index}" for r in repairs)))
        self._track_growth(view, changed=any(e.items for e in events))
        self._commit(view)
        self._last_sent = view.snapshot()
        self._requests += 1
        self._last_request_s = self.clock()
        self._emit(events)
        return view

    # ------------------------------------------------------------------ usage
    def record_usage(self, usage: Usage | Mapping[str, Any] | Any) -> None:
        """Take what the provider reported for the last request (anchors the count, detects cache breaks)."""
        if not isinstance(usage, Usage):
            data = usage.model_dump() if hasattr(usage, "model_dump") else dict(usage)
            usage = Usage.from_any(data)
        if self._last_sent is not None:
            self.counter.record_usage(usage, self._last_sent)
        previous = self._last_cache_read
        if previous and usage.cache_read_tokens < previous * (1 - CACHE_BREAK_DROP):
            cause = self._last_fired or "the cache expired or the prefix changed outside contextfold"
            self._emit([Event("cache", "break", tokens_before=previous, tokens_after=usage.cache_read_tokens,
                              detail=f"cached prompt fell from {previous:,} to {usage.cache_read_tokens:,}; cause: {cause}",
                              data={"cause": cause})])
        self._last_cache_read = usage.cache_read_tokens
        self._last_fired = None

    # ------------------------------------------------------------------ subagents and figures
    def fork(self, *, session_id: str | None = None, keep_history: bool = False) -> Context:
        """A context for a subagent: same model, policy and header, its own budget, counter and transcript.

        It starts empty (``keep_history=True`` copies the current view) and
        compacts on its own; the parent sees only what the caller adds back.
        """
        child = Context(
            self.model,
            window_tokens=self.window_tokens,
            max_output_tokens=self.limits.max_output_tokens,
            policy=self.policy,
            summarizer=self.summarizer,
            transcript=Path(self.transcript.path).parent if self.transcript is not None else None,
            session_id=session_id or f"{self.session_id}.sub-{new_id('f')[2:]}",
            provider=self.provider,
            estimator=Estimator(self.estimator.text, self.estimator.costs),
            clock=self.clock,
        )
        child.set_header(self.history.header)
        if keep_history:
            child.add(list(self._view.items))
        return child

    def stats(self) -> dict[str, Any]:
        """Figures for a status line or a report."""
        tokens = self.counter.count(self.view())
        by_stage = Counter(f"{e.stage}:{e.action}" for e in self.events)
        return {
            "requests": self._requests,
            "items_in_history": len(self.history),
            "items_in_view": len(self._view),
            "tokens": tokens,
            "window_tokens": self.window_tokens,
            "trigger_tokens": self.trigger_tokens,
            "utilization": tokens / self.window_tokens,
            "summaries": sum(1 for item in self._view if any(isinstance(b, Summary) for b in item.blocks)),
            "events": dict(by_stage),
            "tokens_saved": sum(max(e.saved_tokens, 0) for e in self.events if e.items),
            "consecutive_failures": self._failures,
            "breaker_open": self.breaker_open,
            "last_stage": next((e.stage for e in reversed(self.events) if e.items), None),
        }

    def _open_transcript(self, transcript: Transcript | str | Path | None) -> Transcript | None:
        if transcript is None or isinstance(transcript, Transcript):
            return transcript
        try:
            return Transcript.open(transcript, self.session_id)
        except TranscriptError as error:
            self.events.append(Event("transcript", "failed", detail=f"could not open the transcript: {error}"))
            return None


def _check_provider(provider: str) -> str:
    if provider not in PROVIDERS:
        raise ContextfoldError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")
    return provider


def _last_assistant(view: Conversation) -> int | None:
    for index in range(len(view) - 1, -1, -1):
        if view[index].role == "assistant":
            return index
    return None


def _ends_at_boundary(view: Conversation) -> bool:
    """No call is waiting for its result: every call of the last assistant turn is answered."""
    answered: set[str] = set()
    for item in reversed(view.items):
        result = item.tool_result
        if result is not None:
            answered.add(result.call_id)
            continue
        return all(call.id in answered for call in item.tool_calls)
    return True
