"""A scripted model for whole agent sessions, on 127.0.0.1, in the Anthropic Messages and OpenAI Chat formats.

The agent tests point the real ``anthropic`` and ``openai`` SDK clients at
it. Unlike a queue of canned replies, each answer is a function of the
request (a *script*), because an agent's next step depends on what its tools
returned and because compaction rewrites the history the model sees: the
script gets a :class:`Seen` with a stable step counter per session (a
session is its system prompt plus its first user message, which
compaction never touches), the texts of the tool results that answer the
previous turn, and the raw body; it returns a :class:`Turn`.

Every request is checked with the rules of its format (the checks of
:mod:`fake_llm_server`: every ``tool_use`` answered by a ``tool_result`` in the
next message, no orphan results, roles, ``max_tokens``; every OpenAI tool call
answered by tool messages) plus what a whole session adds: at most four
Anthropic cache breakpoints, and every tool call in a request is one this
server issued, with the same name and arguments. A request that breaks a rule
is recorded with its problems and answered 400, as the real API would.

Usage is reported realistically enough to drive the context's accounting:
prompt tokens are a quarter of the request's characters, and the part shared
with the session's previous request is reported as a cache read.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from typing import Any

from fake_llm_server import check_chat, check_messages

ROUTES = {"/v1/messages": "anthropic", "/v1/chat/completions": "openai"}
CHARS_PER_TOKEN = 4
MAX_CACHE_BREAKPOINTS = 4


@dataclass(frozen=True)
class Call:
    """A tool call the script makes."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


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
    step: int  # requests this session made before this one
    results: tuple[str, ...]  # tool results answering the previous turn, in order
    errors: tuple[bool, ...]  # which of them are marked as errors
    body: Mapping[str, Any]


Script = Callable[[Seen], Turn]


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


def _calls_in(provider: str, body: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    """(id, name, arguments) of every tool call in a request."""
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


def _prompt_chars(body: Mapping[str, Any]) -> str:
    """The request as the provider caches it: tools, system, messages, without the breakpoint markers."""
    parts = [body.get(key) for key in ("tools", "system", "messages")]
    return json.dumps(parts).replace(', "cache_control": {"type": "ephemeral"}', "")


class ScriptedModel:
    """The server; a context manager. ``exchanges`` records every request, ``problems`` every rule broken."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.exchanges: list[Exchange] = []
        self.issued: dict[str, tuple[str, Any]] = {}  # call id -> (name, arguments)
        self._steps: dict[tuple[str, str], int] = {}
        self._previous: dict[tuple[str, str], str] = {}
        self._ids = count(1)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True

    def __enter__(self) -> ScriptedModel:
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def base_url(self, provider: str) -> str:
        """What the provider's SDK takes as ``base_url``."""
        return self.url if provider == "anthropic" else f"{self.url}/v1"

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
            problems = (check_messages if provider == "anthropic" else check_chat)(headers, body)
            session: tuple[str, str] = ("?", "?")
            if not problems:
                problems += self._session_checks(provider, body)
                system, task, results = (_seen_anthropic if provider == "anthropic" else _seen_openai)(body)
                session = (system, task)
            exchange = Exchange(provider, session, body, problems)
            self.exchanges.append(exchange)
            if problems:
                return 400, _error(provider, "; ".join(problems))
            step = self._steps.get(session, 0)
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
            prompt = _prompt_chars(body)
            cached = _common_prefix(self._previous.get(session, ""), prompt)
            self._previous[session] = prompt
            usage = (len(prompt) // CHARS_PER_TOKEN, cached // CHARS_PER_TOKEN, len(turn.text) // CHARS_PER_TOKEN + 20)
            render = _anthropic_reply if provider == "anthropic" else _openai_reply
            return 200, render(body, turn, ids, *usage)

    def _session_checks(self, provider: str, body: Mapping[str, Any]) -> list[str]:
        problems = []
        if provider == "anthropic":
            marks = json.dumps(body).count('"cache_control"')
            if marks > MAX_CACHE_BREAKPOINTS:
                problems.append(f"{marks} cache_control blocks, at most {MAX_CACHE_BREAKPOINTS} are allowed")
        for call_id, name, arguments in _calls_in(provider, body):
            if self.issued.get(call_id) != (name, arguments):
                problems.append(f"tool call {call_id} ({name}) is not one this server issued with these arguments")
        return problems


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _anthropic_reply(
    body: Mapping[str, Any], turn: Turn, ids: tuple[str, ...], prompt: int, cached: int, output: int
) -> dict[str, Any]:
    content = ([{"type": "text", "text": turn.text}] if turn.text else []) + [
        {"type": "tool_use", "id": i, "name": c.name, "input": dict(c.arguments)} for i, c in zip(ids, turn.calls)
    ]
    usage = {
        "input_tokens": 0,
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": prompt - cached,
        "output_tokens": output,
    }
    return {
        "id": f"msg_{ids[0] if ids else len(content)}",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": content,
        "stop_reason": "tool_use" if ids else "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }


def _openai_reply(
    body: Mapping[str, Any], turn: Turn, ids: tuple[str, ...], prompt: int, cached: int, output: int
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None, "refusal": None}
    if ids:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))}}
            for i, c in zip(ids, turn.calls)
        ]
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "total_tokens": prompt + output,
        "prompt_tokens_details": {"cached_tokens": cached},
    }
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if ids else "stop", "logprobs": None}
        ],
        "usage": usage,
    }


def _error(provider: str, message: str) -> dict[str, Any]:
    if provider == "anthropic":
        return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}


def _handler(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the tests assert on what was recorded."""

        def do_POST(self) -> None:
            provider = ROUTES.get(self.path.split("?", 1)[0])
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
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
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
