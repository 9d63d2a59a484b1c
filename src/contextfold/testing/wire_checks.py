"""What a real provider would refuse in a request, checked the way the fake model server checks it.

Each check reads one request (its headers and JSON body) in one format and
lists what the provider would reject: a missing header or field, a role or a
block out of place, a tool result that answers no call, a compaction block
sent where Anthropic takes none. :class:`~.fake_llm.FakeLLMServer` records
the list with the request (``Received.problems``), so a test asserts that
contextfold's requests break nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from .gemini_wire import check_gemini

CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
COMPACTION_BETA = "compact-2026-01-12"
ON_DEMAND_COMPACTION_BETA = "compact-2026-09-04"


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


CHECKS: dict[str, Callable[[Mapping[str, str], object], list[str]]] = {
    "messages": check_messages,
    "chat": check_chat,
    "responses": check_responses,
    "compact": check_responses,
    "gemini": check_gemini,
}
