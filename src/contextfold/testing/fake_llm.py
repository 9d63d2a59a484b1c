"""A local HTTP server that speaks the Anthropic Messages and OpenAI Chat Completions / Responses wire formats.

Tests point the official ``anthropic`` and ``openai`` SDK clients at it
(``base_url``, any key) and script what it answers, so that the real client
code runs, request and response, with no network and no mocking:

>>> with FakeLLMServer() as server:
...     server.script("messages", Reply("<summary>done</summary>"), Fault.rate_limited(2))
...     client = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)

Routes and their names: ``POST /v1/messages`` is ``"messages"``,
``/v1/chat/completions`` ``"chat"``, ``/v1/responses`` ``"responses"``,
``/v1/responses/compact`` ``"compact"``, and Gemini's
``/v1beta/models/{model}:generateContent`` ``"gemini"`` (point google-genai's
``http_options.base_url`` at :attr:`FakeLLMServer.url`). Each route answers from its own
queue of scripted :class:`Reply` and :class:`Fault` objects, in order; a
route with nothing left answers 400 saying so. A reply is written in the
route's format, streamed as server-sent events when the request asks for
``stream``. Faults carry the status codes, headers and error bodies the
real APIs send (400 prompt too long, 429 with ``retry-after``, 500, 529
overloaded; OpenAI's 400 ``context_length_exceeded``). ``delay_s`` holds
the answer back, to make a client time out. A :class:`Stall` is a hostile
server: it answers 200 and then trickles a byte every few seconds, or
streams pings, until the client hangs up or the server stops.

Usage is the scripted reply's ``input_tokens`` with nothing cached, or,
with ``Reply(input_tokens=None)``, what the server's prompt cache
(:attr:`FakeLLMServer.cache`, :mod:`.prompt_cache`) counted, read and wrote.

Every request is recorded (:attr:`FakeLLMServer.requests`: path, headers,
JSON body) and checked against the rules of its format (every Anthropic
``tool_use`` answered in the next message, roles, ``max_tokens`` present,
OpenAI message shapes, calls answered...); a request that breaks one is
answered 400 like the real API would, and its ``problems`` say why.

The providers' own compaction is answered as they answer it: an Anthropic
request with ``compaction`` gets only a signed ``compaction`` block (stop
reason ``compaction``; the reply's text is its summary), a Responses request
ending with a ``compaction_trigger`` item gets one ``compaction`` item (the
reply's text is its encrypted content). A block sent back anywhere but first,
or changed, is refused as Anthropic refuses it. A request asking for cache
diagnostics (Anthropic's ``diagnostics``, OpenAI's ``prompt_cache_options``
with ``comparison_response_id``) gets them in its JSON reply
(:mod:`.cache_diagnostics`).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from typing import Any, ClassVar

from ..conversation import JSONObject, JSONValue
from .cache_diagnostics import Diagnoser
from .gemini_wire import is_gemini_path
from .prompt_cache import CacheUse, PromptCache, anthropic_usage, chat_usage, responses_usage
from .wire_checks import CHECKS, compaction_signature

ROUTES = {
    "/v1/messages": "messages",
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
    "/v1/responses/compact": "compact",
}
CACHED_ROUTES = {"messages": "anthropic", "chat": "openai", "responses": "responses"}
"""The routes whose prompts go through the server's prompt cache, and the provider each is."""
ANTHROPIC_STOPS = {"end": "end_turn", "max_tokens": "max_tokens", "refusal": "refusal", "tool_use": "tool_use",
                   "compaction": "compaction"}
OPENAI_FINISH = {"end": "stop", "max_tokens": "length", "refusal": "content_filter", "tool_use": "tool_calls"}


@dataclass(frozen=True)
class Reply:
    """A scripted answer: the model's text and why it stopped (``end``, ``max_tokens``, ``refusal``).

    ``blocks`` are raw Anthropic content blocks sent after the text (a
    ``compaction`` block goes before it, as the API sends it); ``extra`` are top-level fields added to the
    body (Anthropic's ``context_management``). ``output`` replaces the output
    items of a ``compact`` answer.

    ``input_tokens`` is the prompt size reported, nothing read from or
    written to the cache; ``None`` reports what the server's prompt cache
    (:class:`~contextfold.testing.prompt_cache.PromptCache`) counted, read and
    wrote, and the server fills in ``cache``.
    """

    text: str = ""
    stop: str = "end"
    input_tokens: int | None = 120
    output_tokens: int = 60
    delay_s: float = 0.0
    blocks: tuple[JSONObject, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    cache: CacheUse | None = None

    @property
    def usage(self) -> CacheUse:
        """The prompt's cache use as reported: the server's, or the scripted size with nothing cached."""
        return self.cache or CacheUse(self.input_tokens or 0)


@dataclass(frozen=True)
class Fault:
    """A scripted error, rendered as the route's provider sends it."""

    kind: str
    status: int
    detail: Mapping[str, Any] = field(default_factory=dict)
    delay_s: float = 0.0

    @classmethod
    def prompt_too_long(cls, tokens: int = 210_000, maximum: int = 200_000) -> Fault:
        return cls("prompt_too_long", 400, {"tokens": tokens, "maximum": maximum})

    @classmethod
    def rate_limited(cls, retry_after_s: float = 2) -> Fault:
        return cls("rate_limited", 429, {"retry_after": retry_after_s})

    @classmethod
    def server_error(cls) -> Fault:
        return cls("server_error", 500)

    @classmethod
    def overloaded(cls) -> Fault:
        return cls("overloaded", 529)

    @classmethod
    def invalid(cls, message: str) -> Fault:
        return cls("invalid", 400, {"message": message})


@dataclass
class Received:
    """One request as it arrived: its route, path, headers (lower-case names), JSON body and what was wrong with it."""

    route: str
    path: str
    headers: dict[str, str]
    body: Any
    problems: list[str]

    @property
    def valid(self) -> bool:
        return not self.problems


# --------------------------------------------------------------------------- answers in each format

_ids = count(1)


def _id(prefix: str) -> str:
    return f"{prefix}_{next(_ids):06d}"


def _anthropic_usage(reply: Reply) -> dict[str, JSONValue]:
    return anthropic_usage(reply.usage, reply.output_tokens)


def anthropic_message(reply: Reply, body: JSONObject) -> dict[str, Any]:
    # A compaction block opens the reply (what came before it is replaced), the text follows, then other blocks.
    opening = [dict(b) for b in reply.blocks if b.get("type") == "compaction"]
    closing = [dict(b) for b in reply.blocks if b.get("type") != "compaction"]
    content = [*opening, *([{"type": "text", "text": reply.text}] if reply.text else []), *closing]
    stop = ANTHROPIC_STOPS[reply.stop]
    if body.get("compaction") is not None:  # an on-demand compaction: the reply holds only the block
        summary = reply.text or "(summary)"
        content, stop = [{"type": "compaction", "content": summary, "signature": compaction_signature(summary)}], "compaction"
    return {"id": _id("msg"), "type": "message", "role": "assistant", "model": body.get("model"), "content": content,
            "stop_reason": stop, "stop_sequence": None, "usage": _anthropic_usage(reply), **reply.extra}


def anthropic_events(reply: Reply, body: JSONObject) -> Iterator[tuple[str, dict[str, Any]]]:
    message = anthropic_message(reply, body)
    start = {**message, "content": [], "stop_reason": None, "usage": {**message["usage"], "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "text", "text": ""}}
            for piece in _pieces(block["text"]):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "text_delta", "text": piece}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    delta = {"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
             "usage": {"output_tokens": reply.output_tokens}}
    if reply.extra.get("context_management"):
        delta["context_management"] = reply.extra["context_management"]
    yield "message_delta", delta
    yield "message_stop", {"type": "message_stop"}


def _openai_usage(reply: Reply) -> dict[str, JSONValue]:
    return chat_usage(reply.usage, reply.output_tokens)


def chat_completion(reply: Reply, body: JSONObject) -> dict[str, JSONValue]:
    message = {"role": "assistant", "content": reply.text, "refusal": None}
    return {"id": _id("chatcmpl"), "object": "chat.completion", "created": int(time.time()), "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": OPENAI_FINISH[reply.stop], "logprobs": None}],
            "usage": _openai_usage(reply)}


def chat_events(reply: Reply, body: Mapping[str, Any]) -> Iterator[tuple[str | None, Any]]:
    head = {"id": _id("chatcmpl"), "object": "chat.completion.chunk", "created": int(time.time()), "model": body.get("model")}

    def chunk(delta: JSONObject, finish: str | None = None) -> dict[str, JSONValue]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    yield None, chunk({"role": "assistant", "content": ""})
    for piece in _pieces(reply.text):
        yield None, chunk({"content": piece})
    yield None, chunk({}, OPENAI_FINISH[reply.stop])
    if (body.get("stream_options") or {}).get("include_usage"):
        yield None, {**head, "choices": [], "usage": _openai_usage(reply)}
    yield None, "[DONE]"


def _responses_usage(reply: Reply) -> dict[str, JSONValue]:
    return responses_usage(reply.usage, reply.output_tokens)


def _output_message(reply: Reply, item_id: str) -> dict[str, JSONValue]:
    return {"type": "message", "id": item_id, "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": reply.text, "annotations": []}]}


def _triggered(body: JSONObject) -> bool:
    """Whether a Responses request ends with a ``compaction_trigger`` item (its answer is one compaction item)."""
    items = body.get("input")
    return isinstance(items, list) and bool(items) and isinstance(items[-1], dict) and items[-1].get("type") == "compaction_trigger"


def _compaction_item(reply: Reply) -> dict[str, JSONValue]:
    return {"type": "compaction", "id": _id("cmp"), "encrypted_content": reply.text or "opaque-blob"}


def responses_body(reply: Reply, body: JSONObject, *, status: str | None = None) -> dict[str, Any]:
    if _triggered(body) and not status:
        return {**responses_body(replace(reply, stop="end"), body, status="completed"), "output": [_compaction_item(reply)],
                "usage": _responses_usage(reply)}
    truncated = reply.stop == "max_tokens"
    return {"id": _id("resp"), "object": "response", "created_at": int(time.time()), "model": body.get("model"),
            "status": status or ("incomplete" if truncated else "completed"),
            "incomplete_details": {"reason": "max_output_tokens"} if truncated else None,
            "output": [] if status else [_output_message(reply, _id("msg"))], "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [], "usage": None if status else _responses_usage(reply), "error": None}


def responses_events(reply: Reply, body: JSONObject) -> Iterator[tuple[str, dict[str, Any]]]:
    numbers = count()
    final = responses_body(reply, body)
    item = final["output"][0]
    part = item["content"][0]
    where = {"item_id": item["id"], "output_index": 0, "content_index": 0}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**responses_body(reply, body, status="in_progress"), "id": final["id"]}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "status": "in_progress", "content": []}},
        {"type": "response.content_part.added", **where, "part": {**part, "text": ""}},
        *({"type": "response.output_text.delta", **where, "delta": piece, "logprobs": []} for piece in _pieces(reply.text)),
        {"type": "response.output_text.done", **where, "text": reply.text, "logprobs": []},
        {"type": "response.content_part.done", **where, "part": part},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed" if final["status"] == "completed" else "response.incomplete", "response": final},
    ]
    for event in events:
        yield event["type"], {**event, "sequence_number": next(numbers)}


def compact_body(reply: Reply, body: JSONObject) -> dict[str, JSONValue]:
    """The compact endpoint's answer: the input's user messages, then one compaction item (``reply.text`` as its blob)."""
    given = body.get("input")
    items = given if isinstance(given, list) else [{"role": "user", "content": given}]
    users = [{"type": "message", "role": "user", "content": _input_parts(i.get("content"))} for i in items
             if isinstance(i, dict) and i.get("type", "message") == "message" and i.get("role") == "user"]
    return {"id": _id("resp"), "object": "response.compaction", "created_at": int(time.time()),
            "output": [*users, _compaction_item(reply)], "usage": _responses_usage(reply)}


def _input_parts(content: Any) -> list[Any]:
    return [{"type": "input_text", "text": content}] if isinstance(content, str) else list(content or [])


def _pieces(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


# --------------------------------------------------------------------------- errors in each format

_ANTHROPIC_ERRORS = {
    "rate_limited": ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
    "server_error": ("api_error", "Internal server error"),
    "overloaded": ("overloaded_error", "Overloaded"),
}
_OPENAI_ERRORS = {
    "rate_limited": ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."),
    "server_error": ("server_error", None, "The server had an error while processing your request. Sorry about that!"),
    "overloaded": ("server_error", None, "The engine is currently overloaded, please try again later"),
}


_GEMINI_ERRORS = {
    "rate_limited": (429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    "server_error": (500, "INTERNAL", "An internal error has occurred."),
    "overloaded": (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
}


def gemini_error_body(fault: Fault) -> tuple[int, dict[str, JSONValue]]:
    """Gemini's status and error body for ``fault`` (``{"error": {code, message, status}}``)."""
    detail = fault.detail
    if fault.kind == "prompt_too_long":
        status, kind = 400, "INVALID_ARGUMENT"
        message = (f"The input token count ({detail['tokens']}) exceeds the maximum number of tokens allowed "
                   f"({detail['maximum']}).")
    elif fault.kind == "invalid":
        status, kind, message = 400, "INVALID_ARGUMENT", detail["message"]
    else:
        status, kind, message = _GEMINI_ERRORS[fault.kind]
    return status, {"error": {"code": status, "message": message, "status": kind}}


def error_response(route: str, fault: Fault) -> tuple[int, dict[str, str], dict[str, JSONValue]]:
    """Status, headers and body of ``fault`` as the route's provider writes it."""
    headers = {"retry-after": f"{fault.detail['retry_after']:g}"} if fault.kind == "rate_limited" else {}
    detail = fault.detail
    if route == "gemini":
        status, body = gemini_error_body(fault)
        return status, headers, body
    if route == "messages":
        if fault.kind == "prompt_too_long":
            kind, message = "invalid_request_error", f"prompt is too long: {detail['tokens']} tokens > {detail['maximum']} maximum"
        elif fault.kind == "invalid":
            kind, message = "invalid_request_error", detail["message"]
        else:
            kind, message = _ANTHROPIC_ERRORS[fault.kind]
        body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": _id("req")}
        return fault.status, headers, body
    status = 503 if fault.kind == "overloaded" else fault.status
    error: dict[str, str | None]
    if fault.kind == "prompt_too_long":
        message = (f"This model's maximum context length is {detail['maximum']} tokens. However, your messages "
                   f"resulted in {detail['tokens']} tokens. Please reduce the length of the messages.")
        error = {"message": message, "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}
    elif fault.kind == "invalid":
        error = {"message": detail["message"], "type": "invalid_request_error", "param": None, "code": None}
    else:
        kind, code, message = _OPENAI_ERRORS[fault.kind]
        error = {"message": message, "type": kind, "param": None, "code": code}
    return status, headers, {"error": error}


@dataclass(frozen=True)
class Stall:
    """A server that never finishes: ``trickle`` sends one byte every ``every_s`` (whitespace before a JSON
    body, or a server-sent event that never ends); ``ping`` sends a complete ``ping`` event every ``every_s``.
    Either resets every socket timeout a client may have."""

    kind: str = "trickle"
    every_s: float = 2.0
    delay_s: float = 0.0


# --------------------------------------------------------------------------- the server

GEMINI_FINISH = {"end": "STOP", "max_tokens": "MAX_TOKENS", "refusal": "SAFETY", "tool_use": "STOP"}


def gemini_body(reply: Reply, body: JSONObject) -> dict[str, Any]:
    """A ``GenerateContentResponse``: the text as one part, the finish reason, usage as Gemini counts it."""
    prompt = reply.usage.prompt
    usage = {"promptTokenCount": prompt, "candidatesTokenCount": reply.output_tokens,
             "totalTokenCount": prompt + reply.output_tokens}
    content = {"role": "model", "parts": [{"text": reply.text}] if reply.text else []}
    candidate = {"content": content, "finishReason": GEMINI_FINISH[reply.stop], "index": 0}
    return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "fake"}


_BODIES = {"messages": anthropic_message, "chat": chat_completion, "responses": responses_body, "compact": compact_body,
           "gemini": gemini_body}
_EVENTS = {"messages": anthropic_events, "chat": chat_events, "responses": responses_events}


class FakeLLMServer:
    """The server (see the module docstring); a context manager, or :meth:`start` and :meth:`stop`."""

    def __init__(self) -> None:
        self._queues: dict[str, deque[Reply | Fault | Stall]] = {
            route: deque() for route in (*ROUTES.values(), "gemini")}
        self._lock = threading.Condition()
        self.requests: list[Received] = []
        self.diagnoser = Diagnoser()
        """Remembers what each reply answered, for the cache diagnostics a later request asks for."""
        self.cache = PromptCache()
        """The server's prompt cache: what each Messages, Chat and Responses request reads and writes."""
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.stopping = threading.Event()  # ends the loops of stalled answers

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> FakeLLMServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The Anthropic SDK's ``base_url``; the OpenAI SDK's is :attr:`openai_url`."""
        assert self._server is not None, "the server is not started"
        return f"http://127.0.0.1:{self._server.server_port}"  # where start() bound it

    @property
    def openai_url(self) -> str:
        return f"{self.url}/v1"

    # ------------------------------------------------------------------ script and record
    def script(self, route: str, *answers: Reply | Fault | Stall) -> None:
        """Queue ``answers`` for ``route`` (one of ``messages``, ``chat``, ``responses``, ``compact``)."""
        with self._lock:
            self._queues[route].extend(answers)

    def pending(self, route: str) -> int:
        """Scripted answers not yet used."""
        with self._lock:
            return len(self._queues[route])

    def received(self, route: str) -> list[Received]:
        with self._lock:
            return [r for r in self.requests if r.route == route]

    def wait_received(self, route: str, count: int = 1, limit_s: float = 120.0) -> list[Received]:
        """The requests on ``route`` once there are ``count`` of them (or what came within ``limit_s``).

        A client that gave up at its deadline may still be on its way to the
        server (its thread was left to finish on a loaded machine): this waits
        for the server's side instead of assuming when it got there.
        """
        with self._lock:
            self._lock.wait_for(lambda: sum(r.route == route for r in self.requests) >= count, limit_s)
            return [r for r in self.requests if r.route == route]

    @property
    def problems(self) -> list[str]:
        """Every problem found in any request so far (empty when every request was valid)."""
        with self._lock:
            return [f"{r.route} #{n}: {p}" for n, r in enumerate(self.requests) for p in r.problems]

    def _take(self, route: str, received: Received) -> Reply | Fault | Stall:
        with self._lock:
            self.requests.append(received)
            self._lock.notify_all()
            if received.problems:
                return Fault.invalid("; ".join(received.problems))
            if not self._queues[route]:
                return Fault.invalid(f"fake LLM server: nothing scripted is left for {route}")
            return self._queues[route].popleft()


def write_events(handler: BaseHTTPRequestHandler, events: Iterable[tuple[str | None, Any]]) -> None:
    """Answer 200 with ``events`` as server-sent events (``event:`` line when named; a string is sent as is), then close."""
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream")
    handler.send_header("cache-control", "no-cache")
    handler.end_headers()
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        handler.wfile.write(((f"event: {name}\n" if name else "") + f"data: {payload}\n\n").encode())
        handler.wfile.flush()
    handler.close_connection = True


class _Handler(BaseHTTPRequestHandler):
    """One request to a :class:`FakeLLMServer`: checked, recorded, and answered from its script."""

    fake: ClassVar[FakeLLMServer]

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the tests assert on what was recorded."""

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        route = ROUTES.get(path) or ("gemini" if is_gemini_path(path) else None)
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        if route is None:
            self._json(404, {}, {"error": {"message": f"no route {path}", "type": "not_found_error"}})
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        try:
            body = json.loads(raw or b"null")
        except json.JSONDecodeError as error:
            body, problems = None, [f"body is not JSON: {error}"]
        else:
            problems = CHECKS[route](headers, body)
        answer = self.fake._take(route, Received(route, path, headers, body, problems))
        if isinstance(answer, Reply) and route in CACHED_ROUTES and isinstance(body, dict):
            use = self.fake.cache.use(CACHED_ROUTES[route], body)  # every request leaves its prompt in the cache
            answer = replace(answer, cache=use) if answer.input_tokens is None else answer
        time.sleep(answer.delay_s)
        try:
            if isinstance(answer, Stall):
                self._stall(answer, isinstance(body, dict) and bool(body.get("stream")))
            elif isinstance(answer, Fault):
                self._json(*error_response(route, answer))
            elif isinstance(body, dict) and body.get("stream") and route in _EVENTS:
                self._events(_EVENTS[route](answer, body))
            else:
                reply = _BODIES[route](answer, body)
                self._json(200, {}, self.fake.diagnoser.answer(route, body, reply) if isinstance(body, dict) else reply)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test): nothing to answer

    def _json(self, status: int, headers: Mapping[str, str], body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stall(self, stall: Stall, streaming: bool) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream" if streaming else "application/json")
        if not streaming:
            self.send_header("content-length", "1000000")
        self.end_headers()
        self.wfile.flush()
        beat = b" "  # whitespace before a JSON body that never comes
        if streaming:  # a complete ping event, or an SSE comment line that never ends
            beat = b"event: ping\ndata: {\"type\": \"ping\"}\n\n" if stall.kind == "ping" else b":"
        while not self.fake.stopping.wait(stall.every_s):
            self.wfile.write(beat)
            self.wfile.flush()
        self.close_connection = True

    def _events(self, events: Iterator[tuple[str | None, Any]]) -> None:
        write_events(self, events)


def _handler(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    """The handler class of ``server`` (the HTTP server makes one handler per request, from its class)."""
    return type("Handler", (_Handler,), {"fake": server})
