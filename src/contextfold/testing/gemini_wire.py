"""Gemini's ``generateContent`` wire format for the scripted server: the rules a request must keep, and the answer.

google-genai (ADK's default model client) posts camelCase JSON to
``/v1beta/models/{model}:generateContent``. Tool calls carry no ids on this
wire (ADK strips its own): a function response answers the call of the turn
right before it, by name. The rules checked are the ones the real API
enforces with a 400 ``INVALID_ARGUMENT`` (quoted in :data:`CALL_AFTER` and
the two after it): a function call turn comes right after a user turn or a
function response turn (so never first); a function response turn
comes right after a function call turn, with one response per call, by name;
and a call is answered before anything else is said.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any
from ..conversation import JSONObject, JSONValue

PATH = re.compile(r"^/v1(?:beta)?/models/(?P<model>[^/:]+):generateContent$")
"""google-genai 1.x and 2.x post to the v1beta API, 3.x to v1: the real service answers both."""
PART_KINDS = (
    "text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode", "codeExecutionResult"
)


CALL_AFTER = (
    "Please ensure that function call turn comes immediately after a user turn or after a function response turn."
)
RESPONSE_AFTER = "Please ensure that function response turn comes immediately after a function call turn."
RESPONSE_COUNT = (
    "Please ensure that the number of function response parts is equal to the number of function call parts of the "
    "function call turn."
)
"""The API's own words for the three rules (what its 400 ``INVALID_ARGUMENT`` says)."""


def is_gemini_path(path: str) -> bool:
    return PATH.match(path.split("?", 1)[0]) is not None


def _names(content: Mapping[str, Any], kind: str) -> Counter[str]:
    return Counter(p[kind].get("name") for p in content.get("parts") or [] if isinstance(p, dict) and kind in p)


def check_gemini(headers: Mapping[str, str], body: object) -> list[str]:
    """What a ``generateContent`` request breaks (empty when the real API would take it)."""
    problems = [] if headers.get("x-goog-api-key") else ["x-goog-api-key: an API key is required"]
    if not isinstance(body, dict):
        return [*problems, "the body must be a JSON object"]
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        return [*problems, "contents: a non-empty list is required"]
    previous: JSONObject = {}
    for index, content in enumerate(contents):
        where = f"contents[{index}]"
        if not isinstance(content, dict) or content.get("role", "user") not in ("user", "model"):
            problems.append(f"{where}.role: 'user' or 'model'")
            continue
        parts = content.get("parts")
        if not isinstance(parts, list) or not parts:
            problems.append(f"{where}.parts: must not be empty")
            continue
        for k, part in enumerate(parts):
            kinds = [kind for kind in PART_KINDS if isinstance(part, dict) and kind in part]
            if len(kinds) != 1:
                problems.append(f"{where}.parts[{k}]: exactly one of {', '.join(PART_KINDS)} is required, got {kinds}")
        calls, responses = _names(content, "functionCall"), _names(content, "functionResponse")
        before_calls = _names(previous, "functionCall")
        if calls and (not previous or previous.get("role") == "model"):
            problems.append(f"{where}: {CALL_AFTER}")
        if responses and not before_calls:
            problems.append(f"{where}: {RESPONSE_AFTER}")
        elif responses and responses != before_calls:
            problems.append(f"{where}: {RESPONSE_COUNT} (calls {dict(before_calls)}, responses {dict(responses)})")
        if before_calls and not responses:
            problems.append(f"{where}: the function calls {dict(before_calls)} of the turn before are not answered")
        previous = content
    if _names(previous, "functionCall"):
        problems.append("the last turn's function calls are never answered")
    return problems


def _text(content: Mapping[str, Any] | None) -> str:
    return "\n".join(p["text"] for p in (content or {}).get("parts") or [] if isinstance(p, dict) and "text" in p)


def response_text(response: object) -> str:
    """What a function response says: ADK's ``{"result": text}``, else the JSON of the object."""
    if isinstance(response, dict) and set(response) == {"result"} and isinstance(response["result"], str):
        return response["result"]
    return json.dumps(response)


def seen_gemini(body: Mapping[str, Any]) -> tuple[str, str, list[tuple[str, bool]]]:
    """(system prompt, task: the first user text, the function responses the request ends with)."""
    contents = body["contents"]
    task = next((_text(c) for c in contents if c.get("role", "user") == "user" and _text(c)), "")
    last = contents[-1]
    results = [
        (response_text(p["functionResponse"].get("response")), "error" in (p["functionResponse"].get("response") or {}))
        for p in last.get("parts") or []
        if "functionResponse" in p
    ]
    return _text(body.get("systemInstruction")), task, results


def calls_in_gemini(body: Mapping[str, Any]) -> list[tuple[str | None, str, Any]]:
    """(id or None, name, arguments) of every function call in a request."""
    return [
        (p["functionCall"].get("id"), p["functionCall"].get("name"), p["functionCall"].get("args") or {})
        for c in body["contents"]
        for p in c.get("parts") or []
        if "functionCall" in p
    ]


def gemini_reply(
    body: JSONObject, turn: Any, ids: Sequence[str], prompt: int, cached: int, output: int
) -> dict[str, JSONValue]:
    """A ``GenerateContentResponse`` for a scripted turn: its text, then one ``functionCall`` part per call.

    The ids stay on the server (Gemini's API sends none); usage is reported
    the way Gemini does, cached tokens as part of the prompt.
    """
    parts: list[dict[str, JSONValue]] = [{"text": turn.text}] if turn.text else []
    parts += [{"functionCall": {"name": call.name, "args": dict(call.arguments)}} for call in turn.calls]
    usage = {"promptTokenCount": prompt, "candidatesTokenCount": output, "totalTokenCount": prompt + output}
    if cached:
        usage["cachedContentTokenCount"] = cached
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": usage,
        "modelVersion": "gemini-scripted",
    }


def gemini_error(message: str) -> dict[str, JSONValue]:
    return {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}
