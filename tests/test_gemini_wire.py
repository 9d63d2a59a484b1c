"""The scripted server's Gemini rules reject what the API rejects, and take what it takes."""

from __future__ import annotations

from typing import Any

from contextfold.testing.gemini_wire import CALL_AFTER, RESPONSE_AFTER, RESPONSE_COUNT, check_gemini

KEY = {"x-goog-api-key": "test"}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def calls(*names: str) -> dict[str, Any]:
    return {"role": "model", "parts": [{"functionCall": {"name": n, "args": {}}} for n in names]}


def responses(*names: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"functionResponse": {"name": n, "response": {"result": "ok"}}} for n in names]}


def problems(*contents: dict[str, Any]) -> str:
    return " ".join(check_gemini(KEY, {"contents": list(contents)}))


def test_a_whole_tool_loop_is_taken() -> None:
    assert problems(user("task"), calls("a", "b"), responses("b", "a"), calls("a"), responses("a"),
                    {"role": "model", "parts": [{"text": "done"}]}, user("more")) == ""


def test_each_rule_is_enforced() -> None:
    assert CALL_AFTER in problems(calls("a"), responses("a"))
    assert CALL_AFTER in problems(user("task"), {"role": "model", "parts": [{"text": "summary"}]}, calls("a"), responses("a"))
    assert RESPONSE_AFTER in problems(user("task"), responses("a"))
    assert RESPONSE_COUNT in problems(user("task"), calls("a", "b"), responses("a"))
    assert "not answered" in problems(user("task"), calls("a"), user("next"))
    assert "never answered" in problems(user("task"), calls("a"))
    assert "API key" in " ".join(check_gemini({}, {"contents": [user("task")]}))
