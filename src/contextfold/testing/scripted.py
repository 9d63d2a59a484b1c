"""A scripted model for whole agent sessions, on 127.0.0.1: Anthropic Messages, OpenAI Chat and Responses, Gemini.

The agent tests point the real ``anthropic`` and ``openai`` SDK clients at
it, the integration tests the agent frameworks' own model classes, and
``contextfold serve-fake`` runs it as a process for the examples (see
:mod:`contextfold.testing.server`). Unlike a queue of canned replies, each answer is a function of the
request (a *script*), because an agent's next step depends on what its tools
returned and because compaction rewrites the history the model sees: the
script gets a :class:`Seen` with a stable step counter per session (a
session is its system prompt plus its first user message, which
compaction never touches; a conversation's first request, the task alone,
starts the session over at step 0, so a program run twice against one
server gets the same answers both times), the texts of the tool results that answer the
previous turn, and the raw body; it returns a :class:`Turn`.

Every request is checked with the rules of its format (the checks of
:mod:`contextfold.testing.fake_llm`: every ``tool_use`` answered by a ``tool_result`` in the
next message, no orphan results, roles, ``max_tokens``; every OpenAI tool call
answered by tool messages) plus what a whole session adds: at most four
Anthropic cache breakpoints, and every tool call in a request is one this
server issued, with the same name and arguments; and whatever ``checks`` the
caller adds (a check is a function of the provider and body that returns
problems). A request that breaks a rule is recorded with its problems and
answered 400 in the provider's error shape, as the real API would. A request
that asks for ``stream`` gets its answer as the provider's server-sent events.

Usage is reported as the provider would: the prompt cache of each provider
is modelled by :class:`~contextfold.testing.prompt_cache.PromptCache`
(:attr:`ScriptedModel.cache`), which says how much of each request was read
from cache and written to it, in the provider's usage fields; prompt tokens
are its deterministic count (or what ``count_prompt`` says, reads and writes
capped to it).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from typing import Any

from ..conversation import JSONObject, JSONValue
from .fake_llm import Fault, error_response, write_events
from .gemini_wire import (
    calls_in_gemini,
    check_gemini,
    gemini_error,
    gemini_reply,
    is_gemini_path,
    seen_gemini,
)
from .prompt_cache import USAGE, CacheUse, PromptCache
from .wire_checks import check_chat, check_messages, check_responses

ROUTES = {"/v1/messages": "anthropic", "/v1/chat/completions": "openai", "/v1/responses": "responses"}
CHECKS = {"anthropic": check_messages, "openai": check_chat, "responses": check_responses, "gemini": check_gemini}
_FAULT_ROUTES = {"anthropic": "messages", "openai": "chat", "responses": "responses"}
CHARS_PER_TOKEN = 4
MAX_CACHE_BREAKPOINTS = 4


@dataclass(frozen=True)
class Call:
    """A tool call the script makes."""

    name: str
    arguments: JSONObject = field(default_factory=dict)


@dataclass(frozen=True)
class Turn:
    """The model's answer: text, then tool calls (none: the agent's turn is over)."""

    text: str = ""
    calls: tuple[Call, ...] = ()


@dataclass(frozen=True)
class Seen:
    """A request as the script sees it, the same for both formats."""

    provider: str
    system: str
    task: str  # the first user message
    step: int  # requests this session made before this one (0: its first request, the task alone)
    results: tuple[str, ...]  # tool results answering the previous turn, in order
    errors: tuple[bool, ...]  # which of them are marked as errors
    body: JSONObject


Script = Callable[[Seen], Turn]
Check = Callable[[str, JSONObject], list[str]]
"""An extra rule for every request: (provider, body) -> problems (empty when the request is fine)."""


@dataclass
class Exchange:
    """One request: its session, its problems, the tool results it ended with, and the answer (ids of its calls)."""

    provider: str
    session: tuple[str, str]
    body: Any
    problems: list[str]
    turn: Turn | None = None
    call_ids: tuple[str, ...] = ()
    results: tuple[str, ...] = ()  # the tool results this request ends with
    cache: CacheUse | None = None  # what the request read from and wrote to the prompt cache


def _text(content: Any) -> str:
    """The text of a message content (a string, or blocks/parts with text)."""
    if isinstance(content, str):
        return content
    return "\n".join(
        _text(b.get("content", "")) if b.get("type") == "tool_result" else b.get("text", "")
        for b in content or []
        if isinstance(b, dict)
    )


def _seen_anthropic(body: Mapping[str, Any]) -> tuple[str, str, list[tuple[str, bool]]]:
    messages = body["messages"]
    system = body.get("system") or ""
    system = system if isinstance(system, str) else _text(system)
    last = messages[-1]
    blocks = last["content"] if last["role"] == "user" and isinstance(last["content"], list) else []
    results = [(_text(b.get("content", "")), bool(b.get("is_error"))) for b in blocks if b.get("type") == "tool_result"]
    return system, _text(messages[0]["content"]), results


def _seen_openai(body: Mapping[str, Any]) -> tuple[str, str, list[tuple[str, bool]]]:
    messages = body["messages"]
    system = "\n".join(_text(m["content"]) for m in messages if m["role"] in ("system", "developer"))
    task = next(_text(m["content"]) for m in messages if m["role"] == "user")
    tail = []
    for message in reversed(messages):
        if message["role"] != "tool":
            break
        tail.append((_text(message["content"]), False))  # Chat Completions has no error flag
    return system, task, tail[::-1]


def _seen_responses(body: Mapping[str, Any]) -> tuple[str, str, list[tuple[str, bool]]]:
    items = [{"role": "user", "content": body["input"]}] if isinstance(body["input"], str) else body["input"]
    messages = [i for i in items if i.get("type", "message") == "message"]
    system = "\n".join([body.get("instructions") or ""] + [_text(m["content"]) for m in messages
                                                          if m["role"] in ("system", "developer")]).strip()
    task = next(_text(m["content"]) for m in messages if m["role"] == "user")
    tail = []
    for item in reversed(items):
        if item.get("type") != "function_call_output":
            break
        output = item.get("output")
        tail.append((output if isinstance(output, str) else _text(output), False))
    return system, task, tail[::-1]


SEEN = {"anthropic": _seen_anthropic, "openai": _seen_openai, "responses": _seen_responses, "gemini": seen_gemini}


def _first_request(provider: str, body: Mapping[str, Any]) -> bool:
    """Whether the request is a conversation's first: the task alone after the system prompt. (A later request
    always holds more: the model's turns and their results, or a summary of them; one that lost its model turns
    to a bug is still the old conversation, so the server goes on checking it.)"""
    if provider == "gemini":
        return len(body["contents"]) == 1
    if provider == "responses":
        items = body["input"]
        return not isinstance(items, list) or len([i for i in items if i.get("role") not in SYSTEM_ROLES]) == 1
    if provider == "anthropic":
        return len(body["messages"]) == 1
    return len([m for m in body["messages"] if m["role"] not in SYSTEM_ROLES]) == 1


SYSTEM_ROLES = ("system", "developer")


def _calls_in(provider: str, body: Mapping[str, Any]) -> list[tuple[str | None, str, Any]]:
    """(id, name, arguments) of every tool call in a request (Gemini's have no id: ``None``)."""
    if provider == "gemini":
        return calls_in_gemini(body)
    if provider == "responses":
        items = body["input"] if isinstance(body["input"], list) else []
        return [(i["call_id"], i["name"], json.loads(i["arguments"])) for i in items if i.get("type") == "function_call"]
    if provider == "anthropic":
        return [
            (b["id"], b["name"], b["input"])
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_use"
        ]
    return [
        (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
        for m in body["messages"]
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or []
    ]


class ScriptedModel:
    """The server; a context manager. ``exchanges`` records every request, ``problems`` every rule broken."""

    def __init__(
        self, script: Script, *, checks: tuple[Check, ...] = (), count_prompt: Callable[[str, JSONObject], int] | None = None,
        port: int = 0,
    ) -> None:
        """``port`` 0 takes a free one (:attr:`url` says which). :attr:`cache` is the server's prompt cache."""
        self.script = script
        self.checks = checks
        self.count_prompt = count_prompt
        self.exchanges: list[Exchange] = []
        self.issued: dict[str, tuple[str, JSONValue]] = {}  # call id -> (name, arguments)
        self._steps: dict[tuple[str, str], int] = {}
        self.cache = PromptCache()
        self._ids = count(1)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True

    def __enter__(self) -> ScriptedModel:
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"  # where __init__ bound it

    def base_url(self, provider: str) -> str:
        """What the provider's SDK takes as ``base_url``."""
        return self.url if provider in ("anthropic", "gemini") else f"{self.url}/v1"

    @property
    def valid(self) -> list[Exchange]:
        """The requests that were answered 200."""
        return [e for e in self.exchanges if not e.problems]

    @property
    def problems(self) -> list[str]:
        return [f"request {n} ({e.provider}): {p}" for n, e in enumerate(self.exchanges) for p in e.problems]

    def sessions(self) -> dict[tuple[str, str], list[Exchange]]:
        out: dict[tuple[str, str], list[Exchange]] = {}
        for exchange in self.exchanges:
            out.setdefault(exchange.session, []).append(exchange)
        return out

    # ------------------------------------------------------------------ one request
    def answer(self, provider: str, headers: Mapping[str, str], body: Any) -> tuple[int, dict[str, Any]]:
        with self._lock:
            problems = CHECKS[provider](headers, body)
            session: tuple[str, str] = ("?", "?")
            if not problems:
                problems += self._session_checks(provider, body)
                problems += [problem for check in self.checks for problem in check(provider, body)]
                system, task, results = SEEN[provider](body)
                session = (system, task)
            exchange = Exchange(provider, session, body, problems)
            self.exchanges.append(exchange)
            if problems:
                return 400, _error(provider, "; ".join(problems))
            step = 0 if _first_request(provider, body) else self._steps.get(session, 0)
            self._steps[session] = step + 1
            seen = Seen(provider, system, task, step, tuple(r for r, _ in results), tuple(e for _, e in results), body)
            try:
                turn = self.script(seen)
            except Exception as error:  # noqa: BLE001 - a script bug is reported as a problem, not a dead socket
                exchange.problems.append(f"the script failed at step {step}: {type(error).__name__}: {error}")
                return 400, _error(provider, exchange.problems[-1])
            ids = tuple(f"{'toolu' if provider == 'anthropic' else 'call'}_{next(self._ids):05d}" for _ in turn.calls)
            self.issued.update({i: (c.name, dict(c.arguments)) for i, c in zip(ids, turn.calls)})
            exchange.turn, exchange.call_ids, exchange.results = turn, ids, seen.results
            use = self.cache.use(provider, body)
            if self.count_prompt:
                use = use.capped(self.count_prompt(provider, body))
            exchange.cache = use
            return 200, REPLIES[provider](body, turn, ids, use, len(turn.text) // CHARS_PER_TOKEN + 20)

    def _session_checks(self, provider: str, body: JSONObject) -> list[str]:
        problems = []
        if provider == "anthropic":
            marks = json.dumps(body).count('"cache_control"')
            if marks > MAX_CACHE_BREAKPOINTS:
                problems.append(f"{marks} cache_control blocks, at most {MAX_CACHE_BREAKPOINTS} are allowed")
        for call_id, name, arguments in _calls_in(provider, body):
            issued = self.issued.get(call_id) == (name, arguments) if call_id else (name, arguments) in self.issued.values()
            if not issued:
                problems.append(f"tool call {call_id} ({name}) is not one this server issued with these arguments")
        return problems


def _anthropic_reply(
    body: JSONObject, turn: Turn, ids: tuple[str, ...], use: CacheUse, output: int
) -> dict[str, Any]:
    content = ([{"type": "text", "text": turn.text}] if turn.text else []) + [
        {"type": "tool_use", "id": i, "name": c.name, "input": dict(c.arguments)} for i, c in zip(ids, turn.calls)
    ]
    return {
        "id": f"msg_{ids[0] if ids else len(content)}",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": content,
        "stop_reason": "tool_use" if ids else "end_turn",
        "stop_sequence": None,
        "usage": USAGE["anthropic"](use, output),
    }


def _openai_reply(
    body: JSONObject, turn: Turn, ids: tuple[str, ...], use: CacheUse, output: int
) -> dict[str, JSONValue]:
    message: dict[str, JSONValue] = {"role": "assistant", "content": turn.text or None, "refusal": None}
    if ids:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))}}
            for i, c in zip(ids, turn.calls)
        ]
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if ids else "stop", "logprobs": None}
        ],
        "usage": USAGE["openai"](use, output),
    }


def _responses_reply(
    body: JSONObject, turn: Turn, ids: tuple[str, ...], use: CacheUse, output: int
) -> dict[str, Any]:
    text = [{"type": "output_text", "text": turn.text, "annotations": []}]
    message = {"type": "message", "id": f"msg_{len(ids)}", "status": "completed", "role": "assistant", "content": text}
    calls = [
        {"type": "function_call", "id": f"fc_{i}", "call_id": i, "name": c.name,
         "arguments": json.dumps(dict(c.arguments)), "status": "completed"}
        for i, c in zip(ids, turn.calls)
    ]
    return {
        "id": f"resp_{ids[0] if ids else 'final'}",
        "object": "response",
        "created_at": 0,
        "model": body["model"],
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "output": ([message] if turn.text else []) + calls,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": USAGE["responses"](use, output),
    }


def _gemini_reply(body: JSONObject, turn: Turn, ids: tuple[str, ...], use: CacheUse, output: int) -> dict[str, JSONValue]:
    return gemini_reply(body, turn, ids, use.prompt, use.read, output)


REPLIES = {"anthropic": _anthropic_reply, "openai": _openai_reply, "responses": _responses_reply, "gemini": _gemini_reply}


# --------------------------------------------------------------------------- the same answers, streamed
# Each function turns a finished reply into the server-sent events (name or None, data) the provider streams.


def _anthropic_events(message: Mapping[str, Any], body: JSONObject) -> Iterator[tuple[str | None, Any]]:
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(message["content"]):
        opening: dict[str, Any]
        delta: dict[str, Any]
        if block["type"] == "text":
            opening, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            opening, delta = {**block, "input": {}}, {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": opening}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    yield "message_delta", {"type": "message_delta", "delta": stop, "usage": {"output_tokens": usage["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}


def _chat_events(completion: Mapping[str, Any], body: Mapping[str, Any]) -> Iterator[tuple[str | None, Any]]:
    head = {"id": completion["id"], "object": "chat.completion.chunk", "created": 0, "model": completion["model"]}
    choice = completion["choices"][0]

    def chunk(delta: JSONObject, finish: str | None = None) -> dict[str, JSONValue]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    yield None, chunk({"role": "assistant", "content": ""})
    if choice["message"]["content"]:
        yield None, chunk({"content": choice["message"]["content"]})
    for index, call in enumerate(choice["message"].get("tool_calls") or []):
        function = call["function"]
        opening = {"index": index, "id": call["id"], "type": "function", "function": {"name": function["name"], "arguments": ""}}
        yield None, chunk({"tool_calls": [opening]})
        yield None, chunk({"tool_calls": [{"index": index, "function": {"arguments": function["arguments"]}}]})
    yield None, chunk({}, choice["finish_reason"])
    if (body.get("stream_options") or {}).get("include_usage"):
        yield None, {**head, "choices": [], "usage": completion["usage"]}
    yield None, "[DONE]"


def _responses_events(response: Mapping[str, Any], body: JSONObject) -> Iterator[tuple[str | None, Any]]:
    numbers = count()
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**response, "status": "in_progress", "output": [], "usage": None}}
    ]
    for index, item in enumerate(response["output"]):
        where = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            part = item["content"][0]
            events += [
                {"type": "response.output_item.added", "output_index": index,
                 "item": {**item, "status": "in_progress", "content": []}},
                {"type": "response.content_part.added", **where, "content_index": 0, "part": {**part, "text": ""}},
                {"type": "response.output_text.delta", **where, "content_index": 0, "delta": part["text"], "logprobs": []},
                {"type": "response.output_text.done", **where, "content_index": 0, "text": part["text"], "logprobs": []},
                {"type": "response.content_part.done", **where, "content_index": 0, "part": part},
            ]
        else:
            events += [
                {"type": "response.output_item.added", "output_index": index,
                 "item": {**item, "status": "in_progress", "arguments": ""}},
                {"type": "response.function_call_arguments.delta", **where, "delta": item["arguments"]},
                {"type": "response.function_call_arguments.done", **where, "arguments": item["arguments"],
                 "name": item["name"]},
            ]
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": response})
    for event in events:
        yield event["type"], {**event, "sequence_number": next(numbers)}


STREAMS = {"anthropic": _anthropic_events, "openai": _chat_events, "responses": _responses_events}


def _error(provider: str, message: str) -> dict[str, Any]:
    """The provider's 400 body for an invalid request."""
    if provider == "gemini":
        return gemini_error(message)
    return error_response(_FAULT_ROUTES[provider], Fault.invalid(message))[2]


def _handler(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            """Quiet: the tests assert on what was recorded."""

        def do_POST(self) -> None:
            provider = ROUTES.get(self.path.split("?", 1)[0]) or ("gemini" if is_gemini_path(self.path) else None)
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            body: Any = None
            if provider is None:
                status, answer = 404, {"error": {"message": f"no route {self.path}", "type": "not_found_error"}}
            else:
                headers = {name.lower(): value for name, value in self.headers.items()}
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError as error:
                    status, answer = 400, _error(provider, f"body is not JSON: {error}")
                else:
                    status, answer = model.answer(provider, headers, body)
            if provider is not None and status == 200 and isinstance(body, dict) and body.get("stream"):
                write_events(self, STREAMS[provider](answer, body))
                return
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
