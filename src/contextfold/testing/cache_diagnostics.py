"""The providers' prompt-cache diagnostics, for the scripted servers: why a request missed the previous one's cache.

Both providers compare a request with an earlier one the caller names and say
where the prompt diverged, and how many of the earlier prompt's tokens that
cost:

* **Anthropic Messages**: ``diagnostics={"previous_message_id": id}`` in the
  request; the reply's ``diagnostics.cache_miss_reason`` is
  ``model_changed``, ``system_changed``, ``tools_changed`` or
  ``messages_changed`` (an earlier message differs, instead of messages only
  being appended), each with ``cache_missed_input_tokens``, or
  ``previous_message_not_found``; ``diagnostics`` is ``null`` when nothing
  diverged.
* **OpenAI Responses**: ``prompt_cache_options={"comparison_response_id": id}``;
  the reply's ``prompt_cache_diagnostics`` is ``cache_miss`` with a
  ``reason`` (``model_changed``, ``prompt_cache_key_changed``,
  ``tools_changed``, ``context_compacted``, ``input_changed``),
  ``cache_missed_tokens`` and ``comparison_reusable_tokens``, or
  ``cache_hit``, or ``comparison_response_not_found``.

Field names and reasons are the ``anthropic`` 2.14 and ``openai`` 3.57 SDK
types'. Tokens are counted per segment as :mod:`.prompt_cache` counts them
(tools, system, each block or item; cache marks left out): the missed
tokens are the earlier prompt's tokens after the first segment that differs.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ..conversation import JSONObject, JSONValue
from .prompt_cache import MARK, SEGMENTS, approximate_tokens

ROUTE_PROVIDER = {"messages": "anthropic", "responses": "responses"}
"""The routes with diagnostics, and the provider each is."""


class Diagnoser:
    """Remembers every request a reply answered (by the reply's id) and diagnoses the requests that ask. Thread-safe."""

    def __init__(self) -> None:
        self._sent: dict[str, Mapping[str, Any]] = {}
        self._lock = threading.Lock()

    def answer(self, route: str, body: Mapping[str, Any], reply: dict[str, Any]) -> dict[str, JSONValue]:
        """``reply`` (to ``body`` on ``route``) with the diagnostics the request asked for; the request remembered."""
        provider = ROUTE_PROVIDER.get(route)
        if provider is None:
            return reply
        with self._lock:
            if provider == "anthropic" and isinstance(body.get("diagnostics"), Mapping):
                reply = {**reply, "diagnostics": self._anthropic(body, body["diagnostics"].get("previous_message_id"))}
            options = body.get("prompt_cache_options")
            if provider == "responses" and isinstance(options, Mapping) and options.get("comparison_response_id"):
                reply = {**reply, "prompt_cache_diagnostics": self._responses(body, options["comparison_response_id"])}
            if isinstance(reply.get("id"), str):
                self._sent[reply["id"]] = body
        return reply

    def _anthropic(self, body: JSONObject, previous_id: Any) -> dict[str, Any] | None:
        if previous_id is None:
            return None  # opted in on a first turn: nothing to compare
        before = self._sent.get(previous_id)
        if before is None:
            return {"cache_miss_reason": {"type": "previous_message_not_found"}}
        missed, _ = _missed("anthropic", before, body)
        if before.get("model") != body.get("model"):
            reason = "model_changed"
        elif _unmarked(before.get("tools")) != _unmarked(body.get("tools")):
            reason = "tools_changed"
        elif _unmarked(before.get("system")) != _unmarked(body.get("system")):
            reason = "system_changed"
        elif missed:
            reason = "messages_changed"
        else:
            return None
        return {"cache_miss_reason": {"type": reason, "cache_missed_input_tokens": missed}}

    def _responses(self, body: JSONObject, comparison_id: str) -> dict[str, JSONValue]:
        before = self._sent.get(comparison_id)
        if before is None:
            return {"type": "comparison_response_not_found"}
        missed, reusable = _missed("responses", before, body)
        if before.get("model") != body.get("model"):
            reason = "model_changed"
        elif before.get("prompt_cache_key") != body.get("prompt_cache_key"):
            reason = "prompt_cache_key_changed"
        elif before.get("tools") != body.get("tools"):
            reason = "tools_changed"
        elif missed and _compactions(body) > _compactions(before):
            reason = "context_compacted"
        elif missed:
            reason = "input_changed"
        else:
            return {"type": "cache_hit"}
        return {"type": "cache_miss", "reason": reason, "cache_missed_tokens": missed,
                "comparison_reusable_tokens": reusable}


def _missed(provider: str, before: JSONObject, now: JSONObject) -> tuple[int, int]:
    """The earlier prompt's tokens after the first segment ``now`` does not repeat, and those before it."""
    old_segments = list(SEGMENTS[provider](before))
    new_segments = list(SEGMENTS[provider](now)) if before.get("model") == now.get("model") else []  # another cache
    shared = 0
    for a, b in zip(old_segments, new_segments):
        if a.text != b.text:
            break
        shared += 1
    tokens = [approximate_tokens(s.text) if s.counted else 0 for s in old_segments]
    return sum(tokens[shared:]), sum(tokens[:shared])


def _unmarked(value: object) -> Any:
    """``value`` without cache marks (they are not part of what the cache keys on)."""
    if isinstance(value, Mapping):
        return {k: _unmarked(v) for k, v in value.items() if k != MARK}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_unmarked(v) for v in value]
    return value


def _compactions(body: JSONObject) -> int:
    items = body.get("input")
    return sum(1 for item in items if isinstance(item, Mapping) and item.get("type") == "compaction") \
        if isinstance(items, list) else 0
