"""Hypothesis strategies for realistic conversations, on the wire and neutral.

Wire strategies draw valid provider requests the way agents produce them:
parallel tool calls each answered right after their turn (results in shuffled
order), thinking with signatures, images and documents, error results, empty
outputs, CJK and emoji text, ``cache_control`` and unknown keys.

* :func:`anthropic_requests` -> ``{"system", "messages", "tools"}``
* :func:`openai_chat_requests` -> ``{"messages", "tools"}``
* :func:`responses_requests` -> ``{"items", "tools"}``
* :func:`conversations` -> a valid neutral :class:`Conversation` built in code
  (no wire origin), for pipeline property tests.

``portable=True`` keeps to what every format can express (no server tools or
provider file ids), for cross-format tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import count
from typing import Any

from hypothesis import strategies as st

from contextfold import Conversation, Header, Item, Summary, Text, Thinking, ToolCall, ToolResult, ToolSpec

Draw = Callable[[st.SearchStrategy[Any]], Any]

SAMPLES = [
    "你好，世界",
    "日本語のテキストです",
    "한국어 문장",
    "emoji 🙂🚀",
    "naïve café",
    "line\nbreak",
    "tab\tsep",
    "ok",
]
TEXT = st.one_of(st.text(min_size=1, max_size=30), st.sampled_from(SAMPLES))
"""Non-empty text (Anthropic rejects empty text blocks), often CJK or emoji."""

JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.floats(allow_nan=False, allow_infinity=False), TEXT
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
ARGUMENTS = st.dictionaries(
    st.sampled_from(["path", "command", "query", "n", "lines", "路径"]), JSON_VALUES, max_size=3
)
BASE64 = st.sampled_from(["iVBORw0KGgo=", "R0lGODlhAQABAAAAACw=", "/9j/4AAQSkZJRg=="])
PDF_BASE64 = "JVBERi0xLjQK"
CACHE = st.sampled_from([{"type": "ephemeral"}, {"type": "ephemeral", "ttl": "1h"}])
TOOL_NAMES = ["read_file", "bash", "search", "edit"]


def _maybe(draw: Draw, block: dict[str, Any], key: str, values: st.SearchStrategy[Any]) -> dict[str, Any]:
    """The block with ``key`` set from ``values`` about a third of the time."""
    if draw(st.integers(0, 2)) == 0:
        return {**block, key: draw(values)}
    return block


def _answer_order(draw: Draw, calls: list[Any]) -> list[Any]:
    return draw(st.permutations(calls)) if calls else []


# --------------------------------------------------------------------------- Anthropic


def _anthropic_image(draw: Draw, portable: bool) -> dict[str, Any]:
    sources = [
        st.builds(lambda d: {"type": "base64", "media_type": "image/png", "data": d}, BASE64),
        st.just({"type": "url", "url": "https://example.com/a.png"}),
    ]
    if not portable:
        sources.append(st.just({"type": "file", "file_id": "file_011abc"}))
    return _maybe(draw, {"type": "image", "source": draw(st.one_of(sources))}, "cache_control", CACHE)


def _anthropic_document(draw: Draw, portable: bool) -> dict[str, Any]:
    sources = [{"type": "base64", "media_type": "application/pdf", "data": PDF_BASE64}]
    if not portable:
        sources += [
            {"type": "text", "media_type": "text/plain", "data": "plain 文書"},
            {"type": "url", "url": "https://example.com/a.pdf"},
            {"type": "file", "file_id": "file_011pdf"},
            {"type": "content", "content": [{"type": "text", "text": "chunk"}]},
        ]
    block = {"type": "document", "source": draw(st.sampled_from(sources))}
    block = _maybe(draw, block, "title", TEXT)
    block = _maybe(draw, block, "context", TEXT)
    return _maybe(draw, block, "citations", st.just({"enabled": True}))


def _anthropic_text(draw: Draw) -> dict[str, Any]:
    return _maybe(draw, {"type": "text", "text": draw(TEXT)}, "cache_control", CACHE)


def _anthropic_user_content(draw: Draw, portable: bool) -> str | list[dict[str, Any]]:
    if draw(st.booleans()):
        return draw(TEXT)
    kinds = st.sampled_from(["text", "text", "image", "document"])
    makers = {"text": _anthropic_text, "image": _anthropic_image, "document": _anthropic_document}
    return [
        makers[k](draw) if k == "text" else makers[k](draw, portable)
        for k in draw(st.lists(kinds, min_size=1, max_size=3))
    ]


def _anthropic_result(draw: Draw, call_id: str, portable: bool) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
    shape = draw(st.sampled_from(["str", "empty", "empty-list", "list", "absent"]))
    if shape == "str":
        block["content"] = draw(TEXT)
    elif shape in ("empty", "empty-list"):
        block["content"] = "" if shape == "empty" else []
    elif shape == "list":
        images = [_anthropic_image(draw, portable)] if not portable and draw(st.booleans()) else []  # chat: text only
        parts = [_anthropic_text(draw), *images]
        block["content"] = parts
    block = _maybe(draw, block, "is_error", st.booleans())
    return _maybe(draw, block, "cache_control", CACHE)


def _anthropic_turn(draw: Draw, ids: count, portable: bool) -> tuple[dict[str, Any], list[str]]:
    blocks: list[dict[str, Any]] = []
    if draw(st.booleans()):
        blocks.append({"type": "thinking", "thinking": draw(TEXT), "signature": f"sig{next(ids)}=="})
    elif draw(st.integers(0, 5)) == 0:
        blocks.append({"type": "redacted_thinking", "data": f"enc{next(ids)}"})
    if draw(st.booleans()):
        blocks.append(_maybe(draw, _anthropic_text(draw), "citations", st.just([])))
    if not portable and draw(st.integers(0, 5)) == 0:
        server_id = f"srvtoolu_{next(ids):04d}"
        blocks.append({"type": "server_tool_use", "id": server_id, "name": "web_search", "input": {"query": "q"}})
        blocks.append({"type": "web_search_tool_result", "tool_use_id": server_id, "content": []})
    calls = []
    for _ in range(draw(st.integers(0, 3))):
        call = {"type": "tool_use", "id": f"toolu_{next(ids):04d}", "name": draw(st.sampled_from(TOOL_NAMES))}
        call["input"] = draw(ARGUMENTS)
        calls.append(_maybe(draw, call, "cache_control", CACHE))
    blocks.extend(calls)
    if not blocks:
        blocks.append(_anthropic_text(draw))
    return {"role": "assistant", "content": blocks}, [c["id"] for c in calls]


@st.composite
def anthropic_requests(draw: Draw, portable: bool = False) -> dict[str, Any]:
    """A valid Messages request: ``{"system", "messages", "tools"}`` as ``to_anthropic`` returns it."""
    ids = count()
    system = draw(
        st.one_of(
            st.none(), TEXT, st.lists(st.builds(lambda t: {"type": "text", "text": t}, TEXT), min_size=1, max_size=2)
        )
    )
    if isinstance(system, list) and draw(st.booleans()):
        system[-1]["cache_control"] = {"type": "ephemeral"}
    tools = [
        {"name": n, "description": f"{n} tool", "input_schema": {"type": "object", "properties": {}}}
        for n in TOOL_NAMES
    ]
    if not portable and draw(st.booleans()):
        tools.append({"type": "web_search_20250305", "name": "web_search", "max_uses": 3})
    messages: list[dict[str, Any]] = [{"role": "user", "content": _anthropic_user_content(draw, portable)}]
    for _ in range(draw(st.integers(0, 4))):
        turn, call_ids = _anthropic_turn(draw, ids, portable)
        messages.append(turn)
        if call_ids:
            content = [_anthropic_result(draw, cid, portable) for cid in _answer_order(draw, call_ids)]
            if draw(st.integers(0, 3)) == 0:
                content.append(_anthropic_text(draw))
            messages.append({"role": "user", "content": content})
        elif draw(st.booleans()):
            messages.append({"role": "user", "content": _anthropic_user_content(draw, portable)})
    return {"system": system, "messages": messages, "tools": tools if draw(st.booleans()) else []}


# --------------------------------------------------------------------------- OpenAI Chat


def _chat_part(draw: Draw, portable: bool) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(["text", "text", "image", "file", "audio"] if not portable else ["text", "image", "file"])
    )
    if kind == "text":
        return {"type": "text", "text": draw(TEXT)}
    if kind == "image":
        url = draw(
            st.one_of(st.just("https://example.com/cat.png"), BASE64.map(lambda d: f"data:image/png;base64,{d}"))
        )
        return {
            "type": "image_url",
            "image_url": _maybe(draw, {"url": url}, "detail", st.sampled_from(["low", "high", "auto"])),
        }
    if kind == "file":
        files = [{"file_data": f"data:application/pdf;base64,{PDF_BASE64}", "filename": "a.pdf"}]
        return {"type": "file", "file": draw(st.sampled_from(files + ([] if portable else [{"file_id": "file-abc"}])))}
    return {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}


def _chat_content(draw: Draw, portable: bool) -> str | list[dict[str, Any]]:
    if draw(st.booleans()):
        return draw(TEXT if portable else st.one_of(TEXT, st.just("")))  # Anthropic rejects empty messages
    return [_chat_part(draw, portable) for _ in range(draw(st.integers(1, 3)))]


def _chat_arguments(draw: Draw) -> str:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(["not json", '{"path": "a"', "[1, 2]", ""]))
    separators = draw(st.sampled_from([(",", ":"), (", ", ": ")]))
    return json.dumps(draw(ARGUMENTS), separators=separators, ensure_ascii=draw(st.booleans()))


def _chat_turn(draw: Draw, ids: count, portable: bool) -> tuple[dict[str, Any], list[str]]:
    message: dict[str, Any] = {"role": "assistant"}
    calls = []
    for _ in range(draw(st.integers(0, 3))):
        arguments = _chat_arguments(draw) if not portable else json.dumps(draw(ARGUMENTS))
        calls.append(
            {
                "id": f"call_{next(ids):04d}",
                "type": "function",
                "function": {"name": draw(st.sampled_from(TOOL_NAMES)), "arguments": arguments},
            }
        )
    content_kind = draw(st.sampled_from(["none", "empty", "str", "parts", "absent"] if calls else ["str", "parts"]))
    if content_kind != "absent":
        parts = [{"type": "text", "text": draw(TEXT)}]
        if not portable and draw(st.integers(0, 4)) == 0:
            parts.append({"type": "refusal", "refusal": "I can't"})
        message["content"] = {"none": None, "empty": "", "str": draw(TEXT), "parts": parts}[content_kind]
    if calls:
        message["tool_calls"] = calls
    if draw(st.booleans()):
        message["reasoning_content"] = draw(TEXT)
    message = _maybe(draw, message, "name", st.just("agent"))
    message = _maybe(draw, message, "refusal", st.none())
    if not portable:
        message = _maybe(draw, message, "function_call", st.none())
        message = _maybe(draw, message, "provider_specific_fields", st.just({"cost": 0.1}))
    return message, [c["id"] for c in calls]


def _chat_result(draw: Draw, call_id: str) -> dict[str, Any]:
    content = draw(
        st.one_of(
            TEXT, st.just(""), st.lists(st.builds(lambda t: {"type": "text", "text": t}, TEXT), min_size=1, max_size=2)
        )
    )
    return _maybe(
        draw, {"role": "tool", "tool_call_id": call_id, "content": content}, "name", st.sampled_from(TOOL_NAMES)
    )


@st.composite
def openai_chat_requests(draw: Draw, portable: bool = False) -> dict[str, Any]:
    """A valid Chat Completions request: ``{"messages", "tools"}``."""
    ids = count()
    messages: list[dict[str, Any]] = []
    for role in draw(st.lists(st.sampled_from(["system", "developer"]), max_size=2)):
        content = draw(
            st.one_of(TEXT, st.lists(st.builds(lambda t: {"type": "text", "text": t}, TEXT), min_size=1, max_size=2))
        )
        messages.append({"role": role, "content": content})
    messages.append(_maybe(draw, {"role": "user", "content": _chat_content(draw, portable)}, "name", st.just("alice")))
    for _ in range(draw(st.integers(0, 4))):
        turn, call_ids = _chat_turn(draw, ids, portable)
        messages.append(turn)
        messages.extend(_chat_result(draw, cid) for cid in _answer_order(draw, call_ids))
        if draw(st.integers(0, 5)) == 0:
            messages.append({"role": "system", "content": draw(TEXT)})
        if draw(st.booleans()):
            messages.append({"role": "user", "content": _chat_content(draw, portable)})
    tools = [
        {
            "type": "function",
            "function": _maybe(
                draw, {"name": n, "parameters": {"type": "object", "properties": {}}}, "description", TEXT
            ),
        }
        for n in TOOL_NAMES
    ]
    return {"messages": messages, "tools": tools if draw(st.booleans()) else []}


# --------------------------------------------------------------------------- OpenAI Responses


def _responses_part(draw: Draw, portable: bool) -> dict[str, Any]:
    kind = draw(st.sampled_from(["text", "text", "image", "file"]))
    if kind == "text":
        return {"type": "input_text", "text": draw(TEXT)}
    if kind == "image":
        url = draw(
            st.one_of(st.just("https://example.com/cat.png"), BASE64.map(lambda d: f"data:image/png;base64,{d}"))
        )
        part = {"type": "input_image", "detail": draw(st.sampled_from(["auto", "low", "high"])), "image_url": url}
        if not portable and draw(st.integers(0, 3)) == 0:
            part = {"type": "input_image", "detail": "auto", "file_id": "file-img"}
        return part
    files = [{"file_data": f"data:application/pdf;base64,{PDF_BASE64}", "filename": "a.pdf"}]
    if not portable:
        files += [{"file_id": "file-abc"}, {"file_url": "https://example.com/a.pdf"}]
    return {"type": "input_file", **draw(st.sampled_from(files))}


def _responses_message(draw: Draw, role: str, portable: bool) -> dict[str, Any]:
    if role != "user":  # instructions are text
        content: Any = draw(
            st.one_of(TEXT, st.lists(TEXT.map(lambda t: {"type": "input_text", "text": t}), min_size=1, max_size=2))
        )
    elif draw(st.booleans()):
        content = draw(TEXT)
    else:
        content = [_responses_part(draw, portable) for _ in range(draw(st.integers(1, 3)))]
    message = {"role": role, "content": content}
    return {"type": "message", **message} if draw(st.booleans()) else message


def _responses_turn(draw: Draw, ids: count, portable: bool) -> tuple[list[dict[str, Any]], list[str]]:
    items: list[dict[str, Any]] = []
    call_ids: list[str] = []
    for kind in draw(
        st.lists(st.sampled_from(["reasoning", "message", "call", "call", "web"]), min_size=1, max_size=5)
    ):
        n = next(ids)
        if kind == "reasoning":
            summary = [{"type": "summary_text", "text": draw(TEXT)} for _ in range(draw(st.integers(0, 2)))]
            item = {"type": "reasoning", "id": f"rs_{n:04d}", "summary": summary}
            items.append(_maybe(draw, item, "encrypted_content", st.just(f"gAAAA{n}")))
        elif kind == "message":
            parts = [
                {"type": "output_text", "text": draw(TEXT), "annotations": []} for _ in range(draw(st.integers(1, 2)))
            ]
            items.append(
                {"type": "message", "role": "assistant", "id": f"msg_{n:04d}", "status": "completed", "content": parts}
            )
        elif kind == "call":
            arguments = json.dumps(draw(ARGUMENTS), ensure_ascii=draw(st.booleans()))
            item = {
                "type": "function_call",
                "call_id": f"call_{n:04d}",
                "name": draw(st.sampled_from(TOOL_NAMES)),
                "arguments": arguments,
            }
            item = _maybe(draw, item, "id", st.just(f"fc_{n:04d}"))
            items.append(_maybe(draw, item, "status", st.just("completed")))
            call_ids.append(item["call_id"])
        elif not portable:
            items.append(
                {
                    "type": "web_search_call",
                    "id": f"ws_{n:04d}",
                    "status": "completed",
                    "action": {"type": "search", "query": "q"},
                }
            )
    if not items:
        items.append({"role": "assistant", "content": draw(TEXT)})
    return items, call_ids


def _responses_output(draw: Draw, call_id: str) -> dict[str, Any]:
    output = draw(
        st.one_of(
            TEXT,
            st.just(""),
            st.lists(st.builds(lambda t: {"type": "input_text", "text": t}, TEXT), min_size=1, max_size=2),
        )
    )
    return {"type": "function_call_output", "call_id": call_id, "output": output}


@st.composite
def responses_requests(draw: Draw, portable: bool = False) -> dict[str, Any]:
    """A valid Responses request: ``{"items", "tools"}`` (``items`` is the ``input`` list)."""
    ids = count()
    items = [
        _responses_message(draw, role, portable)
        for role in draw(st.lists(st.sampled_from(["system", "developer"]), max_size=2))
    ]
    items.append(_responses_message(draw, "user", portable))
    for _ in range(draw(st.integers(0, 4))):
        turn, call_ids = _responses_turn(draw, ids, portable)
        items.extend(turn)
        items.extend(_responses_output(draw, cid) for cid in _answer_order(draw, call_ids))
        if draw(st.booleans()):
            items.append(_responses_message(draw, "user", portable))
    tools = [
        {
            "type": "function",
            "name": n,
            "description": f"{n} tool",
            "parameters": {"type": "object", "properties": {}},
            "strict": False,
        }
        for n in TOOL_NAMES
    ]
    if not portable and draw(st.booleans()):
        tools.append({"type": "web_search"})
    return {"items": items, "tools": tools if draw(st.booleans()) else []}


# --------------------------------------------------------------------------- neutral


def _neutral_round(draw: Draw, ids: count) -> list[Item]:
    blocks: list[Any] = []
    if draw(st.booleans()):
        blocks.append(Thinking(draw(TEXT), signature=f"sig{next(ids)}"))
    if draw(st.booleans()):
        blocks.append(Text(draw(TEXT)))
    calls = [
        ToolCall(f"call_{next(ids):04d}", draw(st.sampled_from(TOOL_NAMES)), draw(ARGUMENTS))
        for _ in range(draw(st.integers(0, 3)))
    ]
    blocks.extend(calls)
    if not blocks:
        blocks.append(Text(draw(TEXT)))
    items = [Item("assistant", tuple(blocks))]
    for call in _answer_order(draw, calls):
        content = draw(st.one_of(TEXT, st.just(""), st.lists(TEXT.map(Text), min_size=1, max_size=2).map(tuple)))
        items.append(Item("tool", (ToolResult(call.id, content, draw(st.sampled_from([None, False, True]))),)))
    return items


@st.composite
def conversations(draw: Draw, max_rounds: int = 6) -> Conversation:
    """A valid neutral conversation (``validate() == []``) with rounds of parallel calls, as built in code."""
    ids = count()
    header = Header(
        system=(Item("system", (Text(draw(TEXT)),)),) if draw(st.booleans()) else (),
        tools=tuple(ToolSpec(n, f"{n} tool", {"type": "object", "properties": {}}) for n in TOOL_NAMES),
    )
    items = [Item("user", (Text(draw(TEXT)),))]
    if draw(st.integers(0, 4)) == 0:
        items.insert(0, Item("user", (Summary(draw(TEXT), covers=draw(st.integers(1, 20))),)))
    for _ in range(draw(st.integers(0, max_rounds))):
        items.extend(_neutral_round(draw, ids))
        if draw(st.booleans()):
            items.append(Item("user", (Text(draw(TEXT)),)))
    return Conversation(items, header)
