"""Hypothesis strategies for the histories agent frameworks keep: google-genai contents and LangChain messages.

Like :mod:`strategies`, each draws what the framework really produces: a task,
then model turns with text, thoughts and parallel calls, each answered in the
next user turn (genai) or by tool messages (LangChain), with the framework's
own ids, metadata and odd parts.

* :func:`genai_contents` -> a list of ``Content`` dicts as the SDK dumps them
  (``model_dump(mode="json", exclude_none=True)``); calls with ADK's ids or,
  as on Gemini's wire, with none.
* :func:`langchain_messages` -> a list of ``langchain_core`` messages.
"""

from __future__ import annotations

from itertools import count
from typing import Any

from hypothesis import strategies as st
from strategies import ARGUMENTS, BASE64, TEXT, TOOL_NAMES, Draw, _answer_order, _maybe

NAMES = st.sampled_from(TOOL_NAMES)


# --------------------------------------------------------------------------- google-genai


def _genai_call(draw: Draw, ids: count, with_ids: bool) -> dict[str, Any]:
    call: dict[str, Any] = {"name": draw(NAMES), "args": draw(ARGUMENTS)}
    if with_ids:
        call["id"] = f"adk-{next(ids):04d}"
    return _maybe(draw, {"function_call": call}, "thought_signature", BASE64)


def _genai_response(draw: Draw, call: dict[str, Any]) -> dict[str, Any]:
    response = draw(st.one_of(TEXT.map(lambda t: {"result": t}), st.just({"result": ""}), ARGUMENTS))
    answer = {"name": call["name"], "response": response}
    if "id" in call:
        answer["id"] = call["id"]
    return {"function_response": answer}


def _genai_user(draw: Draw) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": draw(TEXT)}]
    if draw(st.integers(0, 3)) == 0:
        parts.append({"inline_data": {"mime_type": "image/png", "data": draw(BASE64)}})
    content: dict[str, Any] = {"parts": parts}
    return content if draw(st.integers(0, 5)) == 0 else {"role": "user", **content}


@st.composite
def genai_contents(draw: Draw, max_turns: int = 6) -> list[dict[str, Any]]:
    """A valid Gemini history: the task, then model turns, every call answered in the user turn after it."""
    ids = count()
    with_ids = draw(st.booleans())
    contents = [_genai_user(draw)]
    for _ in range(draw(st.integers(0, max_turns))):
        parts: list[dict[str, Any]] = []
        if draw(st.booleans()):
            parts.append(_maybe(draw, {"text": draw(TEXT), "thought": True}, "thought_signature", BASE64))
        if draw(st.booleans()):
            parts.append({"text": draw(TEXT)})
        calls = [_genai_call(draw, ids, with_ids) for _ in range(draw(st.integers(0, 3)))]
        parts.extend(calls)
        if not parts:
            parts.append({"text": draw(TEXT)})
        contents.append({"role": "model", "parts": parts})
        order = _answer_order(draw, calls) if with_ids else calls
        answers = [_genai_response(draw, call["function_call"]) for call in order]
        if answers:
            if draw(st.integers(0, 4)) == 0:
                answers.append({"text": draw(TEXT)})
            contents.append({"role": "user", "parts": answers})
        elif draw(st.booleans()):
            contents.append(_genai_user(draw))
    return contents


# --------------------------------------------------------------------------- LangChain


def _lc_content(draw: Draw) -> str | list[Any]:
    part = st.one_of(
        TEXT.map(lambda t: {"type": "text", "text": t}),
        TEXT.map(lambda t: {"type": "text", "text": t, "id": "lc_1"}),
        TEXT,
        BASE64.map(lambda d: {"type": "image", "base64": d, "mime_type": "image/png"}),
    )
    return draw(st.one_of(TEXT, st.just(""), st.lists(part, min_size=1, max_size=3)))


def _lc_ai(draw: Draw, ids: count) -> tuple[Any, list[str]]:
    from langchain_core.messages import AIMessage

    content = draw(st.one_of(st.just(""), TEXT, st.lists(
        st.one_of(
            TEXT.map(lambda t: {"type": "text", "text": t}),
            TEXT.map(lambda t: {"type": "thinking", "thinking": t, "signature": "sig"}),
            st.just({"type": "reasoning", "reasoning": "hidden"}),
        ),
        min_size=1, max_size=2,
    )))
    calls = [
        {"name": draw(NAMES), "args": draw(ARGUMENTS), "id": f"call_{next(ids):04d}", "type": "tool_call"}
        for _ in range(draw(st.integers(0, 3)))
    ]
    fields: dict[str, Any] = {"content": content, "tool_calls": calls}
    fields = _maybe(draw, fields, "id", st.just(f"lc_run--{next(ids)}"))
    fields = _maybe(draw, fields, "response_metadata", st.just({"model_name": "gpt-4.1", "finish_reason": "stop"}))
    usage = {"input_tokens": 12, "output_tokens": 3, "total_tokens": 15}
    fields = _maybe(draw, fields, "usage_metadata", st.just(usage))
    fields = _maybe(draw, fields, "additional_kwargs", st.just({"refusal": None}))
    return AIMessage(**fields), [c["id"] for c in calls]


@st.composite
def langchain_messages(draw: Draw, max_turns: int = 6) -> list[Any]:
    """A valid agent state: maybe a system prompt, the task, AI turns each followed by a tool message per call."""
    from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

    ids = count()
    messages: list[Any] = [SystemMessage(draw(TEXT))] if draw(st.booleans()) else []
    messages.append(HumanMessage(_lc_content(draw), **_maybe(draw, {}, "id", st.just("human-1"))))
    for _ in range(draw(st.integers(0, max_turns))):
        ai, calls = _lc_ai(draw, ids)
        messages.append(ai)
        for call_id in _answer_order(draw, calls):
            fields: dict[str, Any] = {"content": _lc_content(draw), "tool_call_id": call_id}
            fields = _maybe(draw, fields, "status", st.sampled_from(["success", "error"]))
            fields = _maybe(draw, fields, "name", NAMES)
            fields = _maybe(draw, fields, "artifact", ARGUMENTS)
            messages.append(ToolMessage(**fields))
        if not calls and draw(st.booleans()):
            messages.append(HumanMessage(_lc_content(draw)))
    return messages
