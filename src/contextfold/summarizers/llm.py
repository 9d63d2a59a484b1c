"""Summaries written by a model, through a provider's official SDK, as safe as the offline path.

:class:`ModelSummarizer` (``ModelSummarizer(provider="anthropic")``, or
``"openai"`` for Chat Completions on any OpenAI-compatible endpoint: OpenAI,
vLLM, Ollama, a LiteLLM proxy, given ``base_url``; or any other provider
:func:`contextfold.adapters.adapter_for` knows) sends the summary prompt
through the provider's SDK half (its adapter's ``client``), which builds the
client, sends the request and says what an error means; the adapter reads the
answer. It is sync
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
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..adapters import PROVIDERS, Adapter, ProviderClient, Reply, adapter_for
from ..conversation import Conversation
from ..errors import ContextfoldError, SummarizerError, UnknownModel, install_hint
from ..limits import check_tokens, model_limits, reply_within, require_provider
from ..redaction import redact_credentials
from ..sdk import ClientOptions
from ..usage import Usage
from ._failures import FATAL, TOO_LONG, TRANSIENT, Failure, classify
from ._payload import Fitter, Payload, PromptFitter, RidingFitter
from .base import Summarizer, SummaryRequest, SummaryResult
from .extractive import ExtractiveSummarizer
from .prompts import STRUCTURED, section_titles, summary_from_answer

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

log = logging.getLogger(__name__)


class OutOfTime(Exception):
    """The summary's deadline passed before an answer came (the outcome the drivers hand the plan)."""


# --------------------------------------------------------------------------- what comes back


@dataclass(frozen=True)
class Answer:
    """What the model sent back: its text, why it stopped if that was not a normal end, its usage, raw output items."""

    text: str
    stopped: str | None = None
    usage: Usage | None = None
    output: Sequence[Mapping[str, Any]] = ()


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

    ``provider`` names the adapter (the wire) whose SDK half
    (:attr:`~contextfold.adapters.Adapter.client`) builds the client, sends the
    request and says what an error means; ``model`` defaults to its small
    summary model. A wire-only provider (no SDK) is
    :class:`~contextfold.errors.WireOnlyProvider`. Subclasses say
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
        self.provider_client: ProviderClient = self.adapter.require_client("a model summarizer")
        self.model = self.model or self.provider_client.summary_model
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
                    await self.provider_client.aclose(own[0])

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
            known=[self.provider_client.sdk.api_key(self.api_key)])
        log.warning("%s", why)
        return replace(result, calls=(*calls, *result.calls), fallback=why)

    def _classify(self, outcome: BaseException | None) -> Failure:
        if outcome is None:  # a driver bug; say so rather than loop
            return Failure(FATAL, "no outcome for the request")
        if isinstance(outcome, OutOfTime):
            log.warning("%s summarizer (%s): no answer within %g s; using the fallback", self.name, self.model,
                        self.deadline_s)
            return Failure(FATAL, f"no answer within the deadline of {self.deadline_s:g} s")
        return classify(outcome, self.provider_client)

    # ------------------------------------------------------------------ clients
    def _sdk(self) -> None:
        try:
            self.provider_client.sdk.module()
        except ImportError:
            sdk = self.provider_client.sdk
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
        sdk = self.provider_client.sdk
        key = sdk.api_key(self.api_key)
        if not key and not sdk.base_url(self.base_url):
            variable = sdk.key_variables[0]
            raise SummarizerError(f"no API key for the {self.name} summarizer: pass api_key= or set {variable}")
        return key

    def _make_client(self, *, asynchronous: bool) -> Any:
        """The SDK's client, without its own retries: the plan decides when to try again."""
        options = ClientOptions(self._credentials(), self.base_url, self.timeout_s, max_retries=0)
        return self.provider_client.make_client(options, asynchronous=asynchronous)

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


# --------------------------------------------------------------------------- the prompt-based summarizer


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
        reply = self.provider_client.send(client, self._request(payload), model=self.model,
                                          max_tokens=self.reply_tokens, timeout_s=timeout_s, stream=self.stream)
        return _from_reply(reply)

    async def _asend(self, client: Any, payload: Payload, timeout_s: float) -> Answer:
        reply = await self.provider_client.asend(client, self._request(payload), model=self.model,
                                                 max_tokens=self.reply_tokens, timeout_s=timeout_s,
                                                 stream=self.stream)
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
