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

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from typing import Any

from ..conversation import JSONObject, JSONValue
from .cache_diagnostics import Diagnoser
from .gemini_wire import check_gemini, is_gemini_path
from .prompt_cache import CacheUse, PromptCache, anthropic_usage, chat_usage, responses_usage

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
CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
COMPACTION_BETA = "compact-2026-01-12"
ON_DEMAND_COMPACTION_BETA = "compact-2026-09-04"


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
    blocks: tuple[Mapping[str, Any], ...] = ()
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


# --------------------------------------------------------------------------- checks of each format


def check_messages(headers: Mapping[str, str], body: object) -> list[str]:
    """What a Messages API request breaks: headers, model, max_tokens, roles, blocks, tool_use/tool_result pairing."""
    problems = []
    if not (headers.get("x-api-key") or headers.get("authorization")):
        problems.append("no x-api-key header")
    if not headers.get("anthropic-version"):
        problems.append("no anthropic-version header")
    if not isinstance(body, dict):
        return [*problems, "body is not a JSON object"]
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model: required")
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        problems.append("max_tokens: required, a positive integer")
    system = body.get("system")
    text_blocks = isinstance(system, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in system)
    if system is not None and not isinstance(system, str) and not text_blocks:
        problems.append("system: a string or a list of text blocks")
    for index, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict) or not tool.get("name") or ("type" not in tool and "input_schema" not in tool):
            problems.append(f"tools.{index}: a name and an input_schema are required")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, "messages: a non-empty list is required"]
    open_calls: set[str] = set()
    for index, message in enumerate(messages):
        where = f"messages.{index}"
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            problems.append(f"{where}.role: must be user or assistant")
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list) or not blocks:
            problems.append(f"{where}.content: a string or a non-empty list of blocks")
            continue
        results = [b.get("tool_use_id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        if open_calls and (message["role"] != "user" or set(results) != open_calls):
            missing = sorted(open_calls - set(results))
            problems.append(f"{where}: tool_use ids {missing} were not answered by tool_result blocks in this message")
        if message["role"] == "user":
            for block_index, result in enumerate(results):
                if result not in open_calls:
                    problems.append(f"{where}.content.{block_index}: tool_result {result!r} has no tool_use just before")
            if results and any(b.get("type") != "tool_result" for b in blocks[: len(results)]):
                problems.append(f"{where}.content: tool_result blocks must come first")
        for block_index, block in enumerate(blocks):
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                problems.append(f"{where}.content.{block_index}: a block needs a type")
            elif block["type"] == "text" and not block.get("text"):
                problems.append(f"{where}.content.{block_index}: text content blocks must be non-empty")
            elif block["type"] == "tool_use" and not isinstance(block.get("id"), str):
                problems.append(f"{where}.content.{block_index}.id: Field required")
        open_calls = {b["id"] for b in blocks
                      if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)}
        if open_calls and message["role"] != "assistant":
            problems.append(f"{where}: tool_use blocks in a user message")
    uses_tools = any(isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result")
                     for m in messages if isinstance(m, dict) and isinstance(m.get("content"), list) for b in m["content"])
    if uses_tools and not body.get("tools"):
        problems.append("requests which include tool_use or tool_result blocks must define tools")
    return problems + _check_context_management(headers, body) + _check_compaction(headers, body)


def compaction_signature(content: str) -> str:
    """The signature this server puts on a ``compaction`` block: it checks the block comes back unchanged."""
    return "sig-" + hashlib.sha256(content.encode()).hexdigest()[:24]


def _check_compaction(headers: Mapping[str, str], body: Mapping[str, Any]) -> list[str]:
    """Anthropic's rules for compaction: the on-demand request's beta and exclusions, and where a block goes back.

    A ``compaction`` block with content must be the first block of the
    conversation, only one may carry content, and its content must be what
    its signature recorded (the API's ``compaction_block_misplaced``,
    ``compaction_block_ambiguous``, ``compaction_content_mismatch``).
    """
    problems = []
    if body.get("compaction") is not None:
        if ON_DEMAND_COMPACTION_BETA not in {b.strip() for b in headers.get("anthropic-beta", "").split(",")}:
            problems.append(f"compaction: needs the anthropic-beta header {ON_DEMAND_COMPACTION_BETA}")
        if body.get("context_management") is not None:
            problems.append("compaction: cannot be combined with context_management")
        if (body["compaction"] or {}).get("type") != "summarize":
            problems.append("compaction.type: must be summarize")
    found = [(m, b, block) for m, message in enumerate(body.get("messages") or [])
             if isinstance(message, dict) and isinstance(message.get("content"), list)
             for b, block in enumerate(message["content"]) if isinstance(block, dict) and block.get("type") == "compaction"
             and block.get("content")]
    if len(found) > 1:
        problems.append("compaction_block_ambiguous: more than one compaction block with content")
    for m, b, block in found:
        if (m, b) != (0, 0):
            problems.append(f"messages.{m}.content.{b}: compaction_block_misplaced: not the first block of the conversation")
        if block.get("signature") != compaction_signature(str(block["content"])):
            problems.append(f"messages.{m}.content.{b}: compaction_content_mismatch: content differs from its signature")
    return problems


def _check_context_management(headers: Mapping[str, str], body: Mapping[str, Any]) -> list[str]:
    management = body.get("context_management")
    if management is None:
        return []
    betas = {b.strip() for b in headers.get("anthropic-beta", "").split(",")}
    problems = []
    known = {"clear_tool_uses_20250919": CONTEXT_MANAGEMENT_BETA, "clear_thinking_20251015": CONTEXT_MANAGEMENT_BETA,
             "compact_20260112": COMPACTION_BETA}
    for index, edit in enumerate(management.get("edits") or []):
        beta = known.get(edit.get("type"))
        if beta is None:
            problems.append(f"context_management.edits.{index}.type: unknown edit {edit.get('type')!r}")
        elif beta not in betas:
            problems.append(f"context_management.edits.{index}: needs the anthropic-beta header {beta}")
    return problems


def _openai_basics(headers: Mapping[str, str], body: object) -> list[str]:
    """The key and the model, which every OpenAI request needs."""
    problems = [] if headers.get("authorization", "").startswith("Bearer ") else ["no Authorization: Bearer header"]
    if not isinstance(body, dict):
        return [*problems, "body is not a JSON object"]
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model: required")
    return problems


def check_chat(headers: Mapping[str, str], body: object) -> list[str]:
    """What a Chat Completions request breaks: the key, model, message shapes, every tool call answered in order."""
    problems = _openai_basics(headers, body)
    if not isinstance(body, dict):
        return problems
    for name in ("max_tokens", "max_completion_tokens"):
        if name in body and (not isinstance(body[name], int) or body[name] < 1):
            problems.append(f"{name}: a positive integer")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, "messages: a non-empty list is required"]
    waiting: set[str] = set()
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            problems.append(f"{where}.role: unknown role {role!r}")
            continue
        if role == "tool":
            if message.get("tool_call_id") not in waiting:
                problems.append(f"{where}: tool message answers no pending tool call")
            waiting.discard(message.get("tool_call_id"))
            continue
        if waiting:
            problems.append(f"{where}: tool calls {sorted(waiting)} have no tool message before it")
            waiting = set()
        content = message.get("content")
        calls = message.get("tool_calls") or []
        if role == "assistant" and content is None and calls:
            pass
        elif not isinstance(content, (str, list)):
            problems.append(f"{where}.content: a string or a list of parts")
        elif isinstance(content, list) and any(not isinstance(p, dict) or "type" not in p for p in content):
            problems.append(f"{where}.content: every part needs a type")
        for call in calls:
            function = call.get("function") or {}
            if call.get("type") != "function" or not call.get("id") or not isinstance(function.get("arguments"), str):
                problems.append(f"{where}.tool_calls: id, type function and string arguments are required")
            waiting.add(call.get("id"))
    if waiting:
        problems.append(f"tool calls {sorted(waiting)} are never answered")
    return problems


def check_responses(headers: Mapping[str, str], body: object) -> list[str]:
    """What a Responses (or compact) request breaks: the key, model, input items, every function call answered."""
    problems = _openai_basics(headers, body)
    if not isinstance(body, dict):
        return problems
    items = body.get("input")
    if isinstance(items, str):
        return problems
    if not isinstance(items, list) or not items:
        return [*problems, "input: a string or a non-empty list of items"]
    calls: set[str] = set()
    for index, item in enumerate(items):
        kind = item.get("type", "message") if isinstance(item, dict) else None
        if kind == "message" and item.get("role") not in ("system", "developer", "user", "assistant"):
            problems.append(f"input[{index}].role: unknown role {item.get('role')!r}")
        elif kind == "function_call":
            calls.add(item.get("call_id"))
        elif kind == "function_call_output":
            if item.get("call_id") not in calls:
                problems.append(f"input[{index}]: no function call found for output {item.get('call_id')!r}")
            calls.discard(item.get("call_id"))
        elif kind is None:
            problems.append(f"input[{index}]: an item is an object")
        elif kind == "compaction_trigger" and index != len(items) - 1:
            problems.append(f"input[{index}]: a compaction_trigger must be the last input item")
        elif kind == "compaction" and not isinstance(item.get("encrypted_content"), str):
            problems.append(f"input[{index}].encrypted_content: required for a compaction item")
    if calls:
        problems.append(f"no tool output found for function calls {sorted(calls)}")
    return problems


CHECKS: dict[str, Callable[[Mapping[str, str], Any], list[str]]] = {
    "messages": check_messages,
    "chat": check_chat,
    "responses": check_responses,
    "compact": check_responses,
    "gemini": check_gemini,
}


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


def gemini_error_body(fault: Fault) -> tuple[int, dict[str, Any]]:
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


def error_response(route: str, fault: Fault) -> tuple[int, dict[str, str], dict[str, Any]]:
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


def _handler(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
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
            answer = server._take(route, Received(route, path, headers, body, problems))
            if isinstance(answer, Reply) and route in CACHED_ROUTES and isinstance(body, dict):
                use = server.cache.use(CACHED_ROUTES[route], body)  # every request leaves its prompt in the cache
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
                    self._json(200, {}, server.diagnoser.answer(route, body, reply) if isinstance(body, dict) else reply)
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
            while not server.stopping.wait(stall.every_s):
                self.wfile.write(beat)
                self.wfile.flush()
            self.close_connection = True

        def _events(self, events: Iterator[tuple[str | None, Any]]) -> None:
            write_events(self, events)

    return Handler
