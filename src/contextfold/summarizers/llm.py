"""Summaries written by a model, through a provider's official SDK, as safe as the offline path.

:class:`ModelSummarizer` (``ModelSummarizer(provider="anthropic")``, or
``"openai"`` for Chat Completions on any OpenAI-compatible endpoint: OpenAI,
vLLM, Ollama, a LiteLLM proxy, given ``base_url``; or any other provider
:func:`contextfold.adapters.adapter_for` knows) sends the summary prompt
through the provider's adapter, which builds the client, sends the request,
reads the answer and says what an error means. It is sync
(:meth:`~LLMSummarizer.summarize`) and async (:meth:`~LLMSummarizer.asummarize`),
and imports its SDK only when constructed, so contextfold itself needs none.
The prompts are in :mod:`.prompts`.

What happens to one summary request, and why:

* The request is fitted to the summarizer's own window (the model's, from
  :mod:`contextfold.limits`, else ``window_tokens``), minus its reply and a
  margin: the oldest units of the span are left out, their user messages
  still quoted. When the provider answers "prompt is too long" anyway, more
  is left out (as much as the provider says it was over) and the request
  is sent again, at most ``max_fit_retries`` times.
* Timeouts, connection errors, 408/409/429 and 5xx (529 overloaded
  included) are retried ``max_retries`` times, waiting what ``retry-after``
  asks (up to ``max_wait_s``) or an exponential backoff. The SDK clients are
  built with ``max_retries=0`` so that this loop, not the SDK's, decides;
  ``sleep``/``asleep`` are injectable so tests run fast and can check waits.
* An answer that is empty, truncated (the reply limit was hit), refused or
  without a ``<summary>`` is rejected: it is not retried (the same prompt
  would most likely fail the same way).
* The whole summary, every attempt and wait included, has a wall-clock
  ``deadline_s`` (default 40 s): a server that trickles a byte every few
  seconds, or streams pings forever, resets every socket timeout but not
  this one. An async call is cancelled at the deadline. A sync call runs
  the async SDK client in a short-lived thread with its own event loop, so
  it is cancelled the same way: the attempt's client is closed with its
  sockets and the thread has ended when :meth:`~LLMSummarizer.summarize`
  returns (a blocked socket read cannot be interrupted any other way). Only
  a sync ``client`` given by the caller is called in a thread that is left
  to end on its own at the deadline: its sockets are the caller's.
* Whatever fails, the request is never raised to the pipeline: ``fallback``
  (the extractive summarizer) writes the summary and
  :attr:`SummaryResult.fallback` says why. The :class:`~contextfold.context.Context`
  counts that as a failed compaction for its circuit breaker.

Every answered call is in :attr:`SummaryResult.calls` with the usage the
provider reported, so replay and stats count what summarizing cost. Calls
that got no answer (timeouts, errors) are not: nothing reports their usage.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import accumulate
from typing import Any, Protocol

from ..adapters import PROVIDERS, Adapter, Reply, adapter_for
from ..conversation import Conversation, Header, Item, Text
from ..errors import ContextfoldError, SummarizerError, UnknownModel, install_hint
from ..limits import check_tokens, model_limits, reply_within, require_provider
from ..redaction import redact_credentials
from ..rendering import Renderer
from ..sdk import ClientOptions
from ..usage import Usage
from ._text import Meter
from .base import Summarizer, SummaryRequest, SummaryResult
from .extractive import ExtractiveSummarizer
from .prompts import (
    STRUCTURED,
    SYSTEM_PROMPT,
    frame,
    omission_note,
    quote_user_messages,
    render_span,
    riding_instruction,
    section_titles,
    summary_from_answer,
    task_prompt,
)

DEFAULT_DEADLINE_S = 40.0
"""Wall-clock bound on one summary (all attempts and waits); then the fallback writes it."""
CLOSE_GRACE_S = 10.0
"""How long past its deadline a sync attempt may take to close its client before its thread is left behind."""
DEFAULT_WINDOW_TOKENS = 32_768
"""The summarizer's window when its model is not in :mod:`contextfold.limits` (a local model, say)."""
WINDOW_MARGIN = 0.05
"""Share of the window kept free besides the reply: the request's size is an estimate."""
SHRINK_WITHOUT_FIGURES = 0.75
"""After a "prompt is too long" that gives no token figures, the request is cut to this share."""
SHRINK_MARGIN = 0.9
"""After one that does, to this share of what the provider said would fit."""

TOO_LONG, TRANSIENT, FATAL = "too_long", "transient", "fatal"
_RETRIED_STATUS = frozenset({408, 409, 429})
_TRANSIENT_CALLS = frozenset({"timeout", "connection"})

log = logging.getLogger(__name__)


class OutOfTime(Exception):
    """The summary's deadline passed before an answer came (the outcome the drivers hand the plan)."""


# --------------------------------------------------------------------------- what goes out, what comes back


@dataclass(frozen=True)
class Payload:
    """One request to the summarizing model: its wire body parts, its size, and its neutral form for accounting.

    ``body`` holds the provider-specific fields (``system``/``messages``, or
    ``input``); ``tokens`` is the estimated prompt size; ``omitted_items``
    counts the span items left out for room. ``rendered`` says ``body`` is
    the whole request as the adapter rendered it (the agent's own request);
    ``note`` says why the request is not that one, when it could have been.
    """

    body: Mapping[str, Any]
    conversation: Conversation
    tokens: int
    omitted_items: int = 0
    rendered: bool = False
    note: str | None = None


@dataclass(frozen=True)
class Answer:
    """What the model sent back: its text, why it stopped if that was not a normal end, its usage, raw output items."""

    text: str
    stopped: str | None = None
    usage: Usage | None = None
    output: Sequence[Mapping[str, Any]] = ()


@dataclass(frozen=True)
class Failure:
    """A call that got no answer, classified: ``kind`` is ``too_long``, ``transient`` or ``fatal``.

    ``retry_after_s`` is the wait the provider asked for; ``fits_share`` is
    the share of the request the provider said would fit (its maximum over
    the size it counted), when it said.
    """

    kind: str
    reason: str
    retry_after_s: float | None = None
    fits_share: float | None = None


class Fitter(Protocol):
    """Builds the request for a budget of prompt tokens; ``None`` when nothing useful fits."""

    def fit(self, budget_tokens: int) -> Payload | None: ...


@dataclass(frozen=True)
class _Send:
    payload: Payload


@dataclass(frozen=True)
class _Wait:
    seconds: float


_Plan = Generator["_Send | _Wait", "Answer | BaseException | None", SummaryResult]


class _Run:
    """Steps a plan for a driver: each step it yields, then :attr:`outcome` (set by the driver) goes back in."""

    def __init__(self, plan: _Plan) -> None:
        self.plan = plan
        self.outcome: Answer | BaseException | None = None
        self.result: SummaryResult

    def steps(self) -> Iterator[_Send | _Wait]:
        while True:
            try:
                step = self.plan.send(self.outcome)
            except StopIteration as done:
                self.result = done.value
                return
            self.outcome = None
            yield step


# --------------------------------------------------------------------------- the common engine


@dataclass
class LLMSummarizer:
    """What every model-backed summarizer shares: configuration, the client, the retry loop and the fallback.

    ``provider`` names the adapter that owns the SDK, the client and what an
    error means; ``model`` defaults to its small summary model. Subclasses say
    how to build the request (:meth:`_fitter`), send it (:meth:`_send`,
    :meth:`_asend`) and read the answer (:meth:`_accept`). Units: tokens for
    sizes, seconds for times.
    """

    provider: str | None = None
    """The API the summary request is written for; default: the one serving ``model``
    (:func:`~contextfold.limits.model_provider`), ``anthropic`` when no model is named."""
    model: str = ""
    max_output_tokens: int = 16_000
    """Reply limit (analysis and summary together); lowered to the model's own limit when that is smaller."""
    timeout_s: float = 120.0
    """Socket timeout of one attempt (capped by the time left before ``deadline_s``)."""
    deadline_s: float = DEFAULT_DEADLINE_S
    """Wall-clock bound on one summary, every attempt and wait included; then ``fallback`` writes it."""
    base_url: str | None = None
    """A server of one's own (default: the SDK's, or its base-URL variable); then no key is required."""
    api_key: str | None = field(default=None, repr=False)
    """Default: the provider's key variable (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``...)."""
    window_tokens: int | None = None
    """The summarizer model's window; default: the model's, else :data:`DEFAULT_WINDOW_TOKENS`."""
    style: str = STRUCTURED
    stream: bool = False
    max_retries: int = 3
    """Retries after a timeout, a connection error, 408/409/429 or 5xx."""
    max_fit_retries: int = 3
    """Retries with less of the span after the provider said the prompt was too long."""
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    max_wait_s: float = 60.0
    """A ``retry-after`` longer than this is not waited for: the fallback is used at once."""
    client: Any = field(default=None, repr=False)
    """An SDK client to use instead of building one (sync calls)."""
    async_client: Any = field(default=None, repr=False)
    """An async SDK client to use instead of building one (async calls)."""
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    asleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, repr=False)
    fallback: Summarizer = field(default_factory=ExtractiveSummarizer)
    ride_cache: bool = True
    """Send the agent's own next request with the instruction appended, when the pipeline gives it and it fits
    the window (the provider's prompt cache then serves all but the instruction; give the agent's ``model``);
    ``False`` always sends the separately fitted prompt."""
    cache_key: str | None = None
    """The ``prompt_cache_key`` the agent's requests carry (OpenAI), which the summary request carries too."""
    name: str = ""
    """How events and logs name it; default: the provider's name."""

    def __post_init__(self) -> None:
        section_titles(self.style)  # an unknown style, provider or missing key is an error now, not at the first compaction
        check_tokens("max_output_tokens", self.max_output_tokens)  # as a Context checks its own (InvalidLimits)
        if self.window_tokens is not None:
            check_tokens("context_window", self.window_tokens)
        try:
            self.provider = require_provider(self.model or None, self.provider, PROVIDERS)
            self.adapter: Adapter = adapter_for(self.provider)
        except ContextfoldError as error:
            raise SummarizerError(str(error)) from None
        self.model = self.model or self.adapter.summary_model
        self.name = self.name or self.adapter.name
        if self.client is None or self.async_client is None:
            self._sdk()
            self._credentials()

    # ------------------------------------------------------------------ public
    def summarize(self, request: SummaryRequest) -> SummaryResult:
        run = _Run(self._plan(request))
        deadline = time.monotonic() + self.deadline_s
        for step in run.steps():
            left = deadline - time.monotonic()
            if isinstance(step, _Wait):
                self.sleep(max(min(step.seconds, left), 0.0))
                continue
            run.outcome = self._attempt(step.payload, left) if left > 0 else OutOfTime()
        return run.result

    async def asummarize(self, request: SummaryRequest) -> SummaryResult:
        run = _Run(self._plan(request))
        deadline = time.monotonic() + self.deadline_s
        for step in run.steps():
            left = deadline - time.monotonic()
            if isinstance(step, _Wait):
                await self.asleep(max(min(step.seconds, left), 0.0))
                continue
            run.outcome = await self._abounded(self._async_client, step.payload, left) if left > 0 else OutOfTime()
        return run.result

    def _attempt(self, payload: Payload, seconds: float) -> Answer | BaseException:
        """One sync attempt, over within ``seconds``; on a client of its own it leaves no thread or socket behind."""
        if self.client is not None:
            send = functools.partial(self._send, self.client, payload, min(self.timeout_s, seconds))
            return _within(seconds, send)

        async def attempt() -> Answer | BaseException:
            own: list[Any] = []  # the attempt's client, closed with its sockets whatever happened

            def fresh() -> Any:
                own.append(self._make_client(asynchronous=True))
                return own[0]

            try:
                return await self._abounded(fresh, payload, seconds)
            finally:
                if own:
                    await self.adapter.aclose(own[0])

        return _in_own_loop(attempt, seconds + CLOSE_GRACE_S)

    async def _abounded(self, client: Callable[[], Any], payload: Payload, seconds: float) -> Answer | BaseException:
        """The answer to ``payload`` from the client ``client()`` returns, cancelled after ``seconds``; errors returned."""
        try:
            return await asyncio.wait_for(self._asend(client(), payload, min(self.timeout_s, seconds)), seconds)
        except asyncio.TimeoutError:
            return OutOfTime()
        except Exception as error:  # noqa: BLE001 - classified by the plan; nothing escapes to the pipeline
            return error

    # ------------------------------------------------------------------ limits
    @property
    def reply_tokens(self) -> int:
        """``max_output_tokens``, capped by the model's reply limit when the model is known, and to half the
        window when the window could not hold it beside a prompt (:func:`~contextfold.limits.reply_within`)."""
        try:
            reply = min(self.max_output_tokens, model_limits(self.model).max_output_tokens)
        except UnknownModel:
            reply = self.max_output_tokens
        return reply_within(self._window_tokens, reply)

    @property
    def _window_tokens(self) -> int:
        """``window_tokens``, else the model's window, else :data:`DEFAULT_WINDOW_TOKENS`."""
        if self.window_tokens is not None:
            return self.window_tokens
        try:
            return model_limits(self.model).context_window
        except UnknownModel:
            return DEFAULT_WINDOW_TOKENS

    @property
    def input_budget_tokens(self) -> int:
        """Prompt tokens the request may take: the window less the reply and the margin."""
        return int(self._window_tokens * (1 - WINDOW_MARGIN)) - self.reply_tokens

    # ------------------------------------------------------------------ the plan: one piece of logic for both drivers
    def _plan(self, request: SummaryRequest) -> _Plan:
        """Yields requests to send and waits to make; receives each outcome; returns the result."""
        calls: list[tuple[Conversation, Usage | None]] = []
        try:
            fitter = self._fitter(request)
            payload = fitter.fit(self.input_budget_tokens)
        except ContextfoldError as error:  # the span cannot be put in this summarizer's request format
            return self._fall_back(request, calls, f"the span cannot be sent: {error}")
        retries = shrinks = 0
        while True:
            if payload is None:
                return self._fall_back(request, calls, "the span does not fit the summarizer's window")
            outcome = yield _Send(payload)
            if isinstance(outcome, Answer):
                calls.append((payload.conversation, outcome.usage))
                accepted = self._accept(outcome, payload, request)
                if isinstance(accepted, str):
                    return self._fall_back(request, calls, accepted)
                return replace(accepted, calls=tuple(calls))
            failure = self._classify(outcome)
            if failure.kind == FATAL and payload.rendered and isinstance(fitter, RidingFitter) \
                    and not isinstance(outcome, OutOfTime):  # the agent's request refused: the fitted prompt may pass
                payload = fitter.refused(self.input_budget_tokens, failure.reason)
                continue
            if failure.kind == TOO_LONG and shrinks < self.max_fit_retries:
                shrinks += 1
                share = SHRINK_MARGIN * failure.fits_share if failure.fits_share else SHRINK_WITHOUT_FIGURES
                payload = fitter.fit(min(int(payload.tokens * share), payload.tokens - 1))
                continue
            if failure.kind == TRANSIENT and retries < self.max_retries:
                wait = self._wait_s(failure, retries)
                if wait is None:
                    return self._fall_back(request, calls, f"{failure.reason}; asked to wait "
                                                           f"{failure.retry_after_s:g} s, more than {self.max_wait_s:g} s")
                retries += 1
                yield _Wait(wait)
                continue
            tried = f" after {retries} retries" if failure.kind == TRANSIENT else ""
            tried = f" after leaving out older messages {shrinks} times" if failure.kind == TOO_LONG else tried
            return self._fall_back(request, calls, f"{failure.reason}{tried}")

    def _wait_s(self, failure: Failure, retries: int) -> float | None:
        """Seconds to wait before retry number ``retries + 1``; ``None`` when the provider asks for too long."""
        if failure.retry_after_s is not None:
            return failure.retry_after_s if failure.retry_after_s <= self.max_wait_s else None
        return min(self.backoff_s * 2.0**retries, self.max_backoff_s)

    def _fall_back(
        self, request: SummaryRequest, calls: list[tuple[Conversation, Usage | None]], reason: str
    ) -> SummaryResult:
        result = self.fallback.summarize(request)
        why = redact_credentials(  # a gateway may echo the key in its error: never logged, stored or shown
            f"{self.name} summarizer ({self.model}): {reason}; {getattr(self.fallback, 'name', 'fallback')} used instead",
            known=[self.adapter.sdk.api_key(self.api_key)])
        log.warning("%s", why)
        return replace(result, calls=(*calls, *result.calls), fallback=why)

    def _classify(self, outcome: BaseException | None) -> Failure:
        if outcome is None:  # a driver bug; say so rather than loop
            return Failure(FATAL, "no outcome for the request")
        if isinstance(outcome, OutOfTime):
            log.warning("%s summarizer (%s): no answer within %g s; using the fallback", self.name, self.model,
                        self.deadline_s)
            return Failure(FATAL, f"no answer within the deadline of {self.deadline_s:g} s")
        return classify(outcome, self.adapter)

    # ------------------------------------------------------------------ clients
    def _sdk(self) -> None:
        try:
            self.adapter.sdk.module()
        except ImportError:
            sdk = self.adapter.sdk
            raise SummarizerError(
                f"the {self.name} summarizer needs the {sdk.package!r} package: {install_hint(sdk.extra)}"
            ) from None

    def _async_client(self) -> Any:
        if self.async_client is None:
            self.async_client = self._make_client(asynchronous=True)
        return self.async_client

    def _credentials(self) -> str | None:
        """The API key: ``api_key``, else the provider's key variable; :class:`SummarizerError` when there is none,
        unless a server of one's own is named (Ollama and vLLM need none)."""
        sdk = self.adapter.sdk
        key = sdk.api_key(self.api_key)
        if not key and not sdk.base_url(self.base_url):
            variable = sdk.key_variables[0]
            raise SummarizerError(f"no API key for the {self.name} summarizer: pass api_key= or set {variable}")
        return key

    def _make_client(self, *, asynchronous: bool) -> Any:
        """The SDK's client, without its own retries: the plan decides when to try again."""
        options = ClientOptions(self._credentials(), self.base_url, self.timeout_s, max_retries=0)
        return self.adapter.make_client(options, asynchronous=asynchronous)

    # ------------------------------------------------------------------ what subclasses define

    def _fitter(self, request: SummaryRequest) -> Fitter:
        raise NotImplementedError

    def _send(self, client: Any, payload: Payload, timeout_s: float) -> Answer:
        raise NotImplementedError

    async def _asend(self, client: Any, payload: Payload, timeout_s: float) -> Answer:
        raise NotImplementedError

    def _accept(self, answer: Answer, payload: Payload, request: SummaryRequest) -> SummaryResult | str:
        """The result an answer gives, or why it is rejected."""
        raise NotImplementedError


def _in_own_loop(attempt: Callable[[], Coroutine[Any, Any, Answer | BaseException]], bound_s: float) -> Answer | BaseException:
    """``attempt()`` run to its end in a new event loop on a thread of its own (the caller may be inside a loop).

    The attempt bounds itself (it is cancelled at its deadline and closes its
    client), so the thread is joined; ``bound_s`` only guards against a close
    that never returns, which is logged.
    """
    outcome: list[Answer | BaseException] = []

    def work() -> None:
        outcome.append(asyncio.run(attempt()))

    worker = threading.Thread(target=work, name="contextfold-summary", daemon=True)
    worker.start()
    worker.join(bound_s)
    if worker.is_alive():
        log.warning("a summary attempt did not end %g s after its deadline; its thread is left behind", CLOSE_GRACE_S)
    return outcome[0] if outcome else OutOfTime()


def _within(seconds: float, call: Callable[[], Answer]) -> Answer | BaseException:
    """``call()``'s answer or exception, or :class:`OutOfTime` if it takes longer than ``seconds``.

    For a sync client given by the caller, whose sockets this cannot close:
    the call runs in a daemon thread; past the deadline the caller stops
    waiting and the thread is left to end on its own (its socket timeout is
    capped at ``seconds`` too, so it does unless the server keeps trickling).
    """
    outcome: list[Answer | BaseException] = []

    def work() -> None:
        try:
            outcome.append(call())
        except Exception as error:  # noqa: BLE001 - handed to the plan to classify
            outcome.append(error)

    worker = threading.Thread(target=work, name="contextfold-summary", daemon=True)
    worker.start()
    worker.join(seconds)
    return outcome[0] if outcome else OutOfTime()


def classify(error: BaseException, adapter: Adapter) -> Failure:
    """What an SDK exception means for the retry loop, as the provider's adapter reads it."""
    timeouts, transport = _httpx_errors()
    if isinstance(error, (TimeoutError, *timeouts)):
        return Failure(TRANSIENT, "timed out")
    if isinstance(error, transport):
        return Failure(TRANSIENT, f"connection error: {error}")
    call = adapter.call_error(error)
    if call is None:
        return Failure(FATAL, f"{type(error).__name__}: {error}")
    if call.kind in _TRANSIENT_CALLS or call.status is None:
        return Failure(TRANSIENT, call.message)
    text = f"HTTP {call.status}: {call.message}"
    too_long = adapter.prompt_too_long(error)
    if too_long is not None:
        return Failure(TOO_LONG, text, fits_share=too_long.fits_share)
    if call.status in _RETRIED_STATUS or call.status >= 500:
        return Failure(TRANSIENT, text, retry_after_s=call.retry_after_s)
    return Failure(FATAL, text)


HTTP_CLIENTS = ("httpx", "httpx2")
"""The HTTP packages the SDKs raise through: httpx, and httpx2 (google-genai 3's, with the same error classes)."""


def _httpx_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """httpx's (and httpx2's) timeout and transport errors, which a streamed body raises unwrapped (the SDKs wrap
    only what happens before the response starts, and google-genai 3 not even that); none when neither was
    imported."""
    modules = [sys.modules[name] for name in HTTP_CLIENTS if sys.modules.get(name) is not None]
    return tuple(m.TimeoutException for m in modules), tuple(m.TransportError for m in modules)


# --------------------------------------------------------------------------- the prompt-based summarizers


class PromptFitter:
    """The summary prompt for a budget: the oldest units are left out (their user messages quoted) until it fits.

    Sizes are summed from per-unit counts made once, so fitting again with a
    smaller budget costs no new counting but the final check.
    """

    def __init__(self, request: SummaryRequest, style: str) -> None:
        self.meter = Meter(request.count_text)
        self.span = render_span(request.items)
        self.task = task_prompt(style, request.target_tokens, request.instructions, request.history_tools)
        fixed = (SYSTEM_PROMPT, self.task, frame((), self.span.earlier_summary, None), omission_note(0, ()))
        self.fixed_tokens = sum(map(self.meter, fixed))
        # left[i]: tokens of the units from i on; quoted[i]: tokens of the user messages of units before i, quoted.
        unit_tokens = [self.meter(unit) for unit in self.span.units]
        self.left = [*accumulate(reversed(unit_tokens), initial=0)][::-1]
        quotes = [self.meter(quote_user_messages(messages)) if messages else 0 for messages in self.span.unit_user_messages]
        self.quoted = [*accumulate(quotes, initial=0)]

    def fit(self, budget_tokens: int) -> Payload | None:
        for start in range(len(self.span.units) or 1):  # at least one unit is kept; with none, one try
            if self.fixed_tokens + self.left[start] + self.quoted[start] > budget_tokens:
                continue
            payload = self._payload(start)
            if payload.tokens <= budget_tokens:
                return payload
        return None

    def _payload(self, start: int) -> Payload:
        omitted = sum(self.span.unit_items[:start])
        messages = [text for unit in self.span.unit_user_messages[:start] for text in unit]
        note = omission_note(omitted, messages) if start else None
        user = f"{frame(self.span.units[start:], self.span.earlier_summary, note)}\n\n{self.task}"
        tokens = self.meter(SYSTEM_PROMPT) + self.meter.exact(user)
        system = Header(system=(Item("system", (Text(SYSTEM_PROMPT),)),))
        conversation = Conversation([Item("user", (Text(user),))], system)
        return Payload({"system": SYSTEM_PROMPT, "user": user}, conversation, tokens, omitted)


class RidingFitter:
    """The agent's own next request with the summary instruction appended as the last user message.

    Sent as the agent would send it (same system prompt, tools, messages and
    cache marks, rendered by the provider's adapter, tool use turned off the
    way :meth:`~contextfold.adapters.Adapter.for_summary` says), the request
    reads everything but the instruction from the prompt cache the agent's
    last request wrote. When it is over the budget, ``fitted`` (the
    separately rendered prompt) makes the request instead, with a note saying so.
    A trailing call still waiting for its result is left out (with what
    follows it), so the request stays valid.
    """

    def __init__(self, request: SummaryRequest, style: str, adapter: Adapter, cache_key: str | None,
                 fitted: PromptFitter) -> None:
        assert request.next_request is not None
        self.fitted = fitted
        conversation = _answered(request.next_request)
        span = {item.id for item in request.items}
        places = [n for n, item in enumerate(conversation) if item.id in span]
        before, after = (places[0], len(conversation) - places[-1] - 1) if places else (0, 0)
        instruction = riding_instruction(style, request.target_tokens, request.instructions, before, after,
                                         request.history_tools)
        self.conversation = conversation.with_items([*conversation, Item("user", (Text(instruction),))])
        self.tokens = request.next_request_tokens + fitted.meter.exact(instruction)
        self.body = adapter.for_summary(Renderer(adapter).render(self.conversation), cache_key)

    def fit(self, budget_tokens: int) -> Payload | None:
        if self.tokens <= budget_tokens:
            return Payload(self.body, self.conversation, self.tokens, rendered=True)
        return self._instead(budget_tokens, f"the agent's request ({self.tokens:,} tokens) is over the summarizer's "
                                            f"budget of {budget_tokens:,}")

    def refused(self, budget_tokens: int, reason: str) -> Payload | None:
        """The fitted prompt after the provider refused the agent's request (``reason``)."""
        return self._instead(budget_tokens, f"the agent's request was refused ({reason})")

    def _instead(self, budget_tokens: int, why: str) -> Payload | None:
        payload = self.fitted.fit(budget_tokens)
        note = f"{why}: the fitted prompt was sent instead, not read from the prompt cache"
        return replace(payload, note=note) if payload is not None else None


def _answered(conversation: Conversation) -> Conversation:
    """``conversation`` without its last call turn when a call of it has no result yet (all of it, usually)."""
    items = list(conversation)
    answered = {item.tool_result.call_id for item in items if item.tool_result is not None}
    last = next((n for n in range(len(items) - 1, -1, -1) if items[n].tool_calls), None)
    if last is None or all(call.id in answered for call in items[last].tool_calls):
        return conversation
    return conversation.with_items(items[:last])


@dataclass
class ModelSummarizer(LLMSummarizer):
    """The summary written by a provider's model: the summary prompt, sent through the provider's adapter.

    ``ModelSummarizer(provider="anthropic")`` calls the Messages API,
    ``"openai"`` Chat Completions on any compatible endpoint (``base_url``),
    and so on for every provider the registry knows; ``stream`` asks for the
    answer as events where the format streams it. The answer's ``<summary>``
    is the summary; anything else is rejected with the reason.
    """

    def _fitter(self, request: SummaryRequest) -> Fitter:
        fitted = PromptFitter(request, self.style)
        if not self.ride_cache or request.next_request is None:
            return fitted
        return RidingFitter(request, self.style, self.adapter, self.cache_key, fitted)

    def _request(self, payload: Payload) -> dict[str, Any]:
        return dict(payload.body) if payload.rendered else self.adapter.write(payload.conversation)

    def _send(self, client: Any, payload: Payload, timeout_s: float) -> Answer:
        reply = self.adapter.send(client, self._request(payload), model=self.model, max_tokens=self.reply_tokens,
                                  timeout_s=timeout_s, stream=self.stream)
        return _from_reply(reply)

    async def _asend(self, client: Any, payload: Payload, timeout_s: float) -> Answer:
        reply = await self.adapter.asend(client, self._request(payload), model=self.model,
                                         max_tokens=self.reply_tokens, timeout_s=timeout_s, stream=self.stream)
        return _from_reply(reply)

    def _accept(self, answer: Answer, payload: Payload, request: SummaryRequest) -> SummaryResult | str:
        if answer.stopped is not None:
            return f"answer rejected: {answer.stopped}"
        if not answer.text.strip():
            return "answer rejected: it is empty"
        summary = summary_from_answer(answer.text)
        if summary is None:
            return "answer rejected: no <summary> in it"
        state = {"summarizer": self.name, "model": self.model, "style": self.style, "omitted_items": payload.omitted_items}
        return SummaryResult(summary, state=state, request=payload.note)


def _from_reply(reply: Reply) -> Answer:
    return Answer(reply.text, reply.incomplete, reply.usage)
