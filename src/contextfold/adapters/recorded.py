"""Chat messages as programs record them: which API's shape a list of messages is in, and that shape made exact.

Logs of agents and chat front-ends keep the messages of a chat API as they were
sent or received, in one of three shapes: OpenAI Chat Completions
(``tool_calls``, ``role: "tool"``), Anthropic Messages (content blocks
``tool_use`` / ``tool_result`` / ``thinking``) or OpenAI Responses (typed
items such as ``function_call`` and ``input_text`` parts). Telling them apart
and mending the liberties recorders take with a shape is knowledge of the wire
formats, so it lives here beside their adapters; the importer that reads such
logs (:mod:`contextfold.importers.chat_messages`) only reads the layout around
the messages. Gemini parts recorded in the REST API's camelCase (Gemini CLI's
chats) are put in the form the Gemini adapter reads here too (:func:`genai_parts`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

RESPONSES_ITEMS = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "reasoning",
        "local_shell_call",
        "local_shell_call_output",
    }
)
"""Responses ``input`` item types: a record with one of these and no role is a Responses item."""
RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file", "refusal"})
ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use", "document", "search_result"}
)
OPENAI_PARTS = frozenset({"image_url", "input_audio", "file"})


def is_message(value: object) -> bool:
    """A chat message (a string role) or a Responses item (a known type)."""
    if not isinstance(value, Mapping):
        return False
    return isinstance(value.get("role"), str) or type_of(value) in RESPONSES_ITEMS


def type_of(value: object) -> str | None:
    """A message's or a part's ``type`` when it is a string (anything else is for the adapter to refuse)."""
    kind = value.get("type") if isinstance(value, Mapping) else None
    return kind if isinstance(kind, str) else None


def as_sent(message: dict[str, object]) -> dict[str, object]:
    """An OpenAI Chat message as recorders write it, in the shape the API took: each call wrapped in
    ``function`` with its arguments as JSON text, a tool output that is not text (absent, an object) as text
    and answering the call its ``id`` names when it has no ``tool_call_id`` (tau2-bench's tool messages), and the
    part types chat exporters invent (``tool_output``, ``reasoning``, a copy of each call) as the API's own."""
    if message.get("role") == "tool" and "tool_call_id" not in message and isinstance(message.get("id"), str):
        message = {**{k: v for k, v in message.items() if k != "id"}, "tool_call_id": message["id"]}
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        message = {**message, "tool_calls": [_call_as_sent(call) for call in calls]}
    content = message.get("content")
    if message.get("role") == "tool" and not isinstance(content, (str, list)):
        message = {**message, "content": "" if content is None else json.dumps(content, ensure_ascii=False)}
    if isinstance(content, list) and any(_exported_part(part) for part in content):
        message = _parts_as_sent(message, content)
    return message


CHAT_PARTS = frozenset({"text", "refusal"}) | OPENAI_PARTS
"""The content part types OpenAI Chat defines."""
EXPORTED_CALL_PARTS = frozenset({"tool_call", "tool_use"})
"""Part types chat exports use for a copy, in the content, of a call the message also makes in ``tool_calls``."""


def _exported_part(part: object) -> bool:
    """A part whose type OpenAI Chat does not define, written by an exporter that keeps everything as parts."""
    return isinstance(part, Mapping) and type_of(part) not in CHAT_PARTS and type_of(part) is not None


def _parts_as_sent(message: dict[str, object], content: list[object]) -> dict[str, object]:
    """``message`` with the parts a chat exporter invented put in the API's shape: a tool's output or any other part
    holding ``text`` is a text part (a list there is the output's own parts: its text parts read as text, the
    others, such as a ``tool_reference``, kept as they are); ``reasoning`` parts are the message's
    ``reasoning_content`` (which the adapter reads as thinking); a copy of a call ``tool_calls`` already makes is
    dropped. Any other part stays for the adapter (kept whole, as it keeps what it does not know)."""
    calls = message.get("tool_calls")
    made = {call.get("id") for call in calls if isinstance(call, Mapping)} if isinstance(calls, list) else set()
    parts: list[object] = []
    reasoning: list[str] = []
    for part in content:
        if not isinstance(part, Mapping) or not _exported_part(part):
            parts.append(part)
            continue
        kind, text = type_of(part), part.get("text")
        if kind in EXPORTED_CALL_PARTS and part.get("tool_call_id", part.get("id")) in made:
            continue
        if kind == "reasoning" and message.get("role") == "assistant" and isinstance(text, str):
            reasoning.append(text)
        elif isinstance(text, str):
            parts.append({"type": "text", "text": text})
        elif isinstance(text, list):  # the parts of the output itself: its text, and what else it held, in order
            parts.extend(_output_part(inner) for inner in text)
        else:
            parts.append(part)
    mended: dict[str, object] = {**message, "content": parts}
    if reasoning and not message.get("reasoning_content"):
        mended["reasoning_content"] = "\n".join(reasoning)
    return mended


def _output_part(part: object) -> object:
    """One part of an exported tool output: a text part in the API's shape, anything else as it is."""
    if isinstance(part, Mapping) and type_of(part) == "text" and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    return part


def _call_as_sent(call: object) -> object:
    if not isinstance(call, Mapping):
        return call  # the adapter names it
    if "function" not in call and isinstance(call.get("name"), str):  # flat: {id, name, arguments}
        own = {key: value for key, value in call.items() if key not in ("name", "arguments")}
        wrapped = {"name": call["name"], "arguments": call.get("arguments")}
        call = {**own, "type": call.get("type", "function"), "function": wrapped}
    function = call.get("function")
    if isinstance(function, Mapping) and isinstance(function.get("arguments"), (dict, list)):
        call = {**call, "function": {**function, "arguments": json.dumps(function["arguments"], ensure_ascii=False)}}
    return call


@dataclass(frozen=True)
class Shape:
    """One API's messages as a chat log holds them."""

    adapter: str
    """The name of the adapter that reads them."""
    message_keys: frozenset[str] | None
    """The keys of a message the API defines, the rest being the recorder's; ``None``: every key is handed to the
    adapter (a Responses item's keys depend on its type)."""
    item_per_part: bool = False
    """A response is one item per part (Responses): consecutive assistant items are one response."""
    as_sent: Callable[[dict[str, object]], dict[str, object]] = dict
    """A message as recorders write it, in the API's own shape."""
    calls_made: Callable[[Mapping[str, object]], list[str]] = lambda message: []
    """The ids of the tool calls a message makes (a log written out of order is put back by them)."""
    call_answered: Callable[[Mapping[str, object]], str | None] = lambda message: None
    """The id of the call a message holds the result of, if it is one result."""


def _chat_calls_made(message: Mapping[str, object]) -> list[str]:
    calls = message.get("tool_calls") if message.get("role") == "assistant" else None
    if not isinstance(calls, list):
        return []
    return [call["id"] for call in calls if isinstance(call, Mapping) and isinstance(call.get("id"), str)]


def _chat_call_answered(message: Mapping[str, object]) -> str | None:
    if message.get("role") != "tool":
        return None
    call_id = message.get("tool_call_id", message.get("id"))
    return call_id if isinstance(call_id, str) else None


def result_call_id(block: object) -> str | None:
    """The call an Anthropic content block answers, when it is a ``tool_result`` naming one by a string id."""
    if not isinstance(block, Mapping) or block.get("type") != "tool_result":
        return None
    call_id = block.get("tool_use_id")
    return call_id if isinstance(call_id, str) else None


CHAT = Shape(
    "openai",
    frozenset({"role", "content", "name", "tool_calls", "tool_call_id", "refusal", "audio", "function_call",
               "reasoning_content"}),  # reasoning_content: DeepSeek's, which the adapter reads as thinking
    as_sent=as_sent,
    calls_made=_chat_calls_made,
    call_answered=_chat_call_answered,
)
MESSAGES = Shape("anthropic", frozenset({"role", "content"}))
RESPONSES = Shape("responses", None, item_per_part=True)


def shape_of(messages: Iterable[object]) -> Shape:
    """The provider shape of a file's messages: the first message that shows one decides (default OpenAI Chat)."""
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        if "tool_calls" in message or "tool_call_id" in message or message.get("role") == "tool":
            return CHAT
        if "role" not in message and type_of(message) in RESPONSES_ITEMS:
            return RESPONSES
        content = message.get("content")
        for part in content if isinstance(content, list) else ():
            kind = type_of(part)
            if kind in ANTHROPIC_BLOCKS or (kind == "image" and isinstance(part, Mapping) and "source" in part):
                return MESSAGES
            if kind in RESPONSES_PARTS:
                return RESPONSES
            if kind in OPENAI_PARTS:
                return CHAT
    return CHAT


_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def genai_parts(parts: Iterable[object]) -> list[object]:
    """Gemini parts as the REST API's JSON has them (camelCase: ``functionCall``, ``inlineData.mimeType``, what
    Gemini CLI records) in the snake_case form google-genai dumps to, which the Gemini adapter reads.

    Only the names Gemini gives are renamed: a part's fields and the fields of the objects in it; what they
    carry (a call's ``args``, a function's ``response``) is the caller's data and stays as it was. A bare
    string is a text part, as the SDKs take one."""
    return [{"text": part} if isinstance(part, str) else _snake_keys(part, depth=2) for part in parts]


def _snake_keys(value: object, depth: int) -> object:
    if not isinstance(value, Mapping) or depth == 0:
        return value
    return {_CAMEL.sub(r"_\1", key).lower() if isinstance(key, str) else key: _snake_keys(item, depth - 1)
            for key, item in value.items()}
