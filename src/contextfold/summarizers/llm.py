"""Summaries written by a model, through the official ``anthropic`` and ``openai`` SDKs, as safe as the offline path.

:class:`AnthropicSummarizer` calls the Messages API; :class:`OpenAISummarizer`
calls Chat Completions on any OpenAI-compatible endpoint (OpenAI, vLLM,
Ollama, a LiteLLM proxy: give ``base_url``). Both are sync
(:meth:`~LLMSummarizer.summarize`) and async (:meth:`~LLMSummarizer.asummarize`),
and import their SDK only when constructed, so contextfold itself needs
neither. The prompts are in :mod:`.prompts`.

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
import email.utils
import logging
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import accumulate
from types import ModuleType
from typing import Any, Protocol

from ..adapters import Reply, adapter_for, prompt_too_long, reply_from_chunks
from ..conversation import Conversation, Header, Item, Text
from ..errors import ContextfoldError, SummarizerError, UnknownModel
from ..limits import model_limits
from ..sdk import SDKS, make_client, sdk_module
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
    section_titles,
    summary_from_answer,
    task_prompt,
)

DEFAULT_ANTHROPIC_MODEL = "claude-haiku-4-5"
DEFAULT_OPENAI_MODEL = "gpt-4.1-mini"
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

log = logging.getLogger(__name__)


class OutOfTime(Exception):
    """The summary's deadline passed before an answer came (the outcome the drivers hand the plan)."""


# --------------------------------------------------------------------------- what goes out, what comes back


@dataclass(frozen=True)
class Payload:
    """One request to the summarizing model: its wire body parts, its size, and its neutral form for accounting.

    ``body`` holds the provider-specific fields (``system``/``messages``, or
    ``input``); ``tokens`` is the estimated prompt size; ``omitted_items``
    counts the span items left out for room.
    """

    body: Mapping[str, Any]
    conversation: Conversation
    tokens: int
    omitted_items: int = 0


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

    Subclasses say how to build the request (:meth:`_fitter`), send it
    (:meth:`_send`, :meth:`_asend`) and read the answer (:meth:`_accept`).
    Units: tokens for sizes, seconds for times.
    """

    model: str = ""
    max_output_tokens: int = 16_000
    """Reply limit (analysis and summary together); lowered to the model's own limit when that is smaller."""
    timeout_s: float = 120.0
    """Socket timeout of one attempt (capped by the time left before ``deadline_s``)."""
    deadline_s: float = DEFAULT_DEADLINE_S
    """Wall-clock bound on one summary, every attempt and wait included; then ``fallback`` writes it."""
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
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
    name: str = "llm"

    package = ""
    """The SDK package this summarizer needs (its key comes from the package's first key variable by default)."""

    def __post_init__(self) -> None:
        section_titles(self.style)  # an unknown style or a missing key is an error now, not at the first compaction
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
            client = _limited(self.client, min(self.timeout_s, seconds))
            return _within(seconds, lambda: self._send(client, payload))

        async def attempt() -> Answer | BaseException:
            own: list[Any] = []  # the attempt's client, closed with its sockets whatever happened

            def fresh() -> Any:
                own.append(self._make_client(asynchronous=True))
                return own[0]

            try:
                return await self._abounded(fresh, payload, seconds)
            finally:
                if own:
                    await own[0].close()

        return _in_own_loop(attempt, seconds + CLOSE_GRACE_S)

    async def _abounded(self, client: Callable[[], Any], payload: Payload, seconds: float) -> Answer | BaseException:
        """The answer to ``payload`` from the client ``client()`` returns, cancelled after ``seconds``; errors returned."""
        try:
            return await asyncio.wait_for(self._asend(_limited(client(), min(self.timeout_s, seconds)), payload), seconds)
        except asyncio.TimeoutError:
            return OutOfTime()
        except Exception as error:  # noqa: BLE001 - classified by the plan; nothing escapes to the pipeline
            return error

    # ------------------------------------------------------------------ limits
    @property
    def reply_tokens(self) -> int:
        """``max_output_tokens``, capped by the model's reply limit when the model is known."""
        try:
            return min(self.max_output_tokens, model_limits(self.model).max_output_tokens)
        except UnknownModel:
            return self.max_output_tokens

    @property
    def input_budget_tokens(self) -> int:
        """Prompt tokens the request may take: the window less the reply and the margin."""
        window = self.window_tokens
        if window is None:
            try:
                window = model_limits(self.model).context_window
            except UnknownModel:
                window = DEFAULT_WINDOW_TOKENS
        return int(window * (1 - WINDOW_MARGIN)) - self.reply_tokens

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
        return min(self.backoff_s * 2**retries, self.max_backoff_s)

    def _fall_back(
        self, request: SummaryRequest, calls: list[tuple[Conversation, Usage | None]], reason: str
    ) -> SummaryResult:
        result = self.fallback.summarize(request)
        why = f"{self.name} summarizer ({self.model}): {reason}; {getattr(self.fallback, 'name', 'fallback')} used instead"
        return replace(result, calls=(*calls, *result.calls), fallback=why)

    def _classify(self, outcome: BaseException | None) -> Failure:
        if outcome is None:  # a driver bug; say so rather than loop
            return Failure(FATAL, "no outcome for the request")
        if isinstance(outcome, OutOfTime):
            log.warning("%s summarizer (%s): no answer within %g s; using the fallback", self.name, self.model,
                        self.deadline_s)
            return Failure(FATAL, f"no answer within the deadline of {self.deadline_s:g} s")
        return classify(outcome, self._sdk())

    # ------------------------------------------------------------------ clients
    def _sdk(self) -> ModuleType:
        try:
            return sdk_module(self.package)
        except ImportError:
            raise SummarizerError(
                f"the {self.name} summarizer needs the {self.package!r} package: pip install 'contextfold[{self.package}]'"
            ) from None

    def _async_client(self) -> Any:
        if self.async_client is None:
            self.async_client = self._make_client(asynchronous=True)
        return self.async_client

    @property
    def _key_variable(self) -> str:
        return SDKS[self.package].key_variables[0]

    @property
    def _base_url(self) -> str | None:
        return self.base_url

    def _credentials(self) -> str:
        """The API key: ``api_key``, else the environment variable; :class:`SummarizerError` when there is none."""
        key = self.api_key or os.environ.get(self._key_variable)
        if not key:
            variable = self._key_variable
            raise SummarizerError(f"no API key for the {self.name} summarizer: pass api_key= or set {variable}")
        return key

    def _make_client(self, *, asynchronous: bool) -> Any:
        """The SDK's client, without its own retries: the plan decides when to try again."""
        options = {"api_key": self._credentials(), "base_url": self._base_url, "timeout": self.timeout_s}
        return make_client(self.package, asynchronous=asynchronous, max_retries=0, **options)

    # ------------------------------------------------------------------ what subclasses define

    def _fitter(self, request: SummaryRequest) -> Fitter:
        raise NotImplementedError

    def _send(self, client: Any, payload: Payload) -> Answer:
        raise NotImplementedError

    async def _asend(self, client: Any, payload: Payload) -> Answer:
        raise NotImplementedError

    def _accept(self, answer: Answer, payload: Payload, request: SummaryRequest) -> SummaryResult | str:
        """The result an answer gives, or why it is rejected."""
        raise NotImplementedError


def _limited(client: Any, seconds: float) -> Any:
    """``client`` with its socket timeout capped at ``seconds`` (SDK clients have ``with_options``)."""
    with_options = getattr(client, "with_options", None)
    return with_options(timeout=seconds) if callable(with_options) else client


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


def classify(error: BaseException, sdk: ModuleType) -> Failure:
    """What an SDK exception means for the retry loop (both SDKs share the exception shapes)."""
    timeouts, transport = _httpx_errors()
    if isinstance(error, (getattr(sdk, "APITimeoutError", ()), TimeoutError, *timeouts)):
        return Failure(TRANSIENT, "timed out")
    if isinstance(error, (getattr(sdk, "APIConnectionError", ()), *transport)):
        return Failure(TRANSIENT, f"connection error: {error}")
    status = getattr(error, "status_code", None)
    if isinstance(error, getattr(sdk, "APIStatusError", ())) and isinstance(status, int):
        text = f"HTTP {status}: {_message(error)}"
        too_long = prompt_too_long(error)
        if too_long is not None:
            return Failure(TOO_LONG, text, fits_share=too_long.fits_share)
        if status in _RETRIED_STATUS or status >= 500:
            return Failure(TRANSIENT, text, retry_after_s=retry_after_s(error.response.headers))
        return Failure(FATAL, text)
    return Failure(FATAL, f"{type(error).__name__}: {error}")


def _httpx_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """httpx's timeout and transport errors, which a streamed body raises unwrapped (the SDKs wrap only
    what happens before the response starts); none when httpx was never imported."""
    httpx = sys.modules.get("httpx")
    return ((httpx.TimeoutException,), (httpx.TransportError,)) if httpx is not None else ((), ())


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """The wait a response asks for: ``retry-after-ms``, else ``retry-after`` in seconds or as an HTTP date."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(float(millis) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        moment = email.utils.parsedate_to_datetime(value) if email.utils.parsedate(value) else None
        return max(moment.timestamp() - time.time(), 0.0) if moment is not None else None


def _message(error: BaseException) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and inner.get("message"):
            return str(inner["message"])
    return str(error)


# --------------------------------------------------------------------------- the prompt-based summarizers


class PromptFitter:
    """The summary prompt for a budget: the oldest units are left out (their user messages quoted) until it fits.

    Sizes are summed from per-unit counts made once, so fitting again with a
    smaller budget costs no new counting but the final check.
    """

    def __init__(self, request: SummaryRequest, style: str) -> None:
        self.meter = Meter(request.count_text)
        self.span = render_span(request.items)
        self.task = task_prompt(style, request.target_tokens, request.instructions)
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


class _PromptSummarizer(LLMSummarizer):
    """A summarizer that sends the summary prompt and reads ``<summary>`` out of the answer."""

    def _fitter(self, request: SummaryRequest) -> Fitter:
        return PromptFitter(request, self.style)

    def _accept(self, answer: Answer, payload: Payload, request: SummaryRequest) -> SummaryResult | str:
        if answer.stopped is not None:
            return f"answer rejected: {answer.stopped}"
        if not answer.text.strip():
            return "answer rejected: it is empty"
        summary = summary_from_answer(answer.text)
        if summary is None:
            return "answer rejected: no <summary> in it"
        state = {"summarizer": self.name, "model": self.model, "style": self.style, "omitted_items": payload.omitted_items}
        return SummaryResult(summary, state=state)


@dataclass
class AnthropicSummarizer(_PromptSummarizer):
    """The summary written by a Claude model through the Messages API (``anthropic`` SDK).

    The key is ``api_key``, else ``ANTHROPIC_API_KEY``; ``base_url`` defaults
    to the SDK's (``ANTHROPIC_BASE_URL``, else the Anthropic API).
    """

    model: str = DEFAULT_ANTHROPIC_MODEL
    name: str = "anthropic"

    package = "anthropic"

    def _arguments(self, payload: Payload) -> dict[str, Any]:
        return {
            "model": self.model,
            "max_tokens": self.reply_tokens,
            "system": payload.body["system"],
            "messages": [{"role": "user", "content": payload.body["user"]}],
        }

    def _send(self, client: Any, payload: Payload) -> Answer:
        if self.stream:
            with client.messages.stream(**self._arguments(payload)) as stream:
                return _answer("anthropic", stream.get_final_message())
        return _answer("anthropic", client.messages.create(**self._arguments(payload)))

    async def _asend(self, client: Any, payload: Payload) -> Answer:
        if self.stream:
            async with client.messages.stream(**self._arguments(payload)) as stream:
                return _answer("anthropic", await stream.get_final_message())
        return _answer("anthropic", await client.messages.create(**self._arguments(payload)))


def _answer(provider: str, response: Any) -> Answer:
    """An SDK response read by the provider's adapter."""
    return _from_reply(adapter_for(provider).read_response(response))


def _from_reply(reply: Reply) -> Answer:
    return Answer(reply.text, reply.incomplete, reply.usage)


class OpenAIEndpoint(LLMSummarizer):
    """The client side every summarizer on an OpenAI-compatible endpoint shares: key, ``base_url``, SDK client.

    The key is ``api_key``, else ``OPENAI_API_KEY``; ``base_url`` defaults to
    ``OPENAI_BASE_URL``, else OpenAI. A server of one's own that needs no
    key (Ollama, vLLM) gets a placeholder when a ``base_url`` is given and
    no key is set.
    """

    package = "openai"

    @property
    def _base_url(self) -> str | None:
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or None

    def _credentials(self) -> str:
        if self._base_url and not (self.api_key or os.environ.get(self._key_variable)):
            return "unused"
        return super()._credentials()


@dataclass
class OpenAISummarizer(OpenAIEndpoint, _PromptSummarizer):
    """The summary written through Chat Completions on any OpenAI-compatible endpoint (``openai`` SDK).

    Keys and endpoint as :class:`OpenAIEndpoint` says. ``max_tokens_parameter``
    names the reply-limit field: OpenAI's current models want
    ``max_completion_tokens``, most compatible servers ``max_tokens``; by
    default the first when talking to OpenAI itself.
    """

    model: str = DEFAULT_OPENAI_MODEL
    name: str = "openai"
    max_tokens_parameter: str | None = None

    def _arguments(self, payload: Payload) -> dict[str, Any]:
        limit = self.max_tokens_parameter or ("max_tokens" if self._base_url else "max_completion_tokens")
        arguments: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": payload.body["system"]},
                {"role": "user", "content": payload.body["user"]},
            ],
            limit: self.reply_tokens,
        }
        if self.stream:
            arguments.update(stream=True, stream_options={"include_usage": True})
        return arguments

    def _send(self, client: Any, payload: Payload) -> Answer:
        response = client.chat.completions.create(**self._arguments(payload))
        return _from_reply(reply_from_chunks(response)) if self.stream else _answer("openai", response)

    async def _asend(self, client: Any, payload: Payload) -> Answer:
        response = await client.chat.completions.create(**self._arguments(payload))
        if not self.stream:
            return _answer("openai", response)
        return _from_reply(reply_from_chunks([chunk async for chunk in response]))
