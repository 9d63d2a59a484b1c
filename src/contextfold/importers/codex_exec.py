"""Codex CLI ``codex exec --json`` events: raw JSON Lines, or embedded in a hive-mind log.

Each ``thread.started`` starts a conversation (``meta["thread_id"]``). Items
are taken in their ``item.completed`` (final) state; ``item.started`` only
dates a tool call. Within a turn, consecutive reasoning, message and call
items are one model response and share an assistant item.

- ``reasoning`` -> thinking block; ``agent_message`` -> text block.
- ``command_execution`` -> ``ToolCall(name="shell", arguments={"command"})``
  and a result with ``aggregated_output``; ``is_error`` when the status is
  ``failed``; ``exit_code`` and ``status`` in ``extra``.
- ``file_change`` -> ``ToolCall(name="apply_patch", arguments={"changes"})``
  (paths and kinds only: the stream has no diff), result ``"<kind> <path>"``.
- ``mcp_tool_call`` / ``web_search`` -> a call and its recorded result.
- ``todo_list`` (the plan tool's display) -> the plan as an assistant text
  block (``extra["plan"]``) each time it changes.
- ``turn.completed`` usage covers all model calls of the turn, so it is not
  one response's usage: it goes to ``Header.meta["turn_usage"]``. ``error``
  events and items go to ``Header.meta["errors"]``.

A command started but never completed (the log ends) is kept as a call
without result. An item type not listed here (a newer Codex) is skipped and
counted in ``Header.meta["unknown_records"]`` (``item/<type>``) with a
warning, never a refusal of the log.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..conversation import Conversation, JSONObject, Text, Thinking, ToolCall
from ..usage import Usage, token_count
from . import hive_mind_log
from ._common import ConversationBuilder, Source, field_of, kind_of
from .hive_mind_log import Entry

FORMAT = "codex-exec"
TOOL_ITEMS = frozenset({"command_execution", "file_change", "web_search", "mcp_tool_call"})
"""Item types that are a tool call and its result."""


class _Threads(hive_mind_log.AgentLog):
    """Each ``thread.started`` closes the conversation in progress and opens the next."""

    def __init__(self, source: Source) -> None:
        super().__init__(source)
        self.done: list[Conversation] = []
        self.builder: ConversationBuilder | None = None
        self.started: dict[str, tuple[JSONObject, float | None, str]] = {}
        self.plans: dict[str, str] = {}

    @staticmethod
    def is_event(value: object) -> bool:
        kind = value.get("type") if isinstance(value, dict) else None
        return isinstance(kind, str) and (kind.startswith(("thread.", "turn.", "item.")) or kind == "error")

    def event(self, entry: Entry) -> None:
        event, where = entry.value, f"line {entry.line}"
        kind = event["type"]
        if kind == "thread.started":
            self._close()
            self._open({"thread_id": event.get("thread_id")})
        elif kind == "turn.completed" and isinstance(event.get("usage"), Mapping):
            self.current().meta.setdefault("turn_usage", []).append(codex_usage(event["usage"]).to_dict())
        elif kind in ("error", "turn.failed"):
            self.current().meta.setdefault("errors", []).append(event.get("message") or event.get("error"))
        elif kind.startswith("item."):
            self._item(kind, field_of(self.source, event, "item", Mapping, where), entry.timestamp, where)
        else:
            self.current().skip(kind)

    def finish(self) -> list[Conversation]:
        self._close()
        return self.done

    def _open(self, meta: JSONObject) -> ConversationBuilder:
        self.builder = ConversationBuilder(
            self.source, f"{self.source.name}:{len(self.done)}", {"format": FORMAT, **meta}
        )
        self.started, self.plans = {}, {}
        hive_mind_log.add_prompts(self.builder, self.prompts)
        return self.builder

    def current(self) -> ConversationBuilder:
        return self.builder if self.builder is not None else self._open({})

    def _close(self) -> None:
        if self.builder is None:
            return
        for item, timestamp, where in self.started.values():  # started, never completed: a dangling call
            self.builder.add_assistant([self._call(item, where)], where, timestamp, merge=True)
        self.done.append(self.builder.build())
        self.builder = None

    def _item(self, phase: str, item: JSONObject, timestamp: float | None, where: str) -> None:
        builder = self.current()
        item_id = field_of(self.source, item, "id", str, f"{where}.item")
        kind = kind_of(self.source, item, "type", f"{where}.item")
        if kind == "todo_list":
            tasks = [] if item.get("items") is None else field_of(self.source, item, "items", list, f"{where}.item")
            plan = "\n".join(
                f"[{'x' if t.get('completed') else ' '}] {t.get('text', '')}" for t in tasks if isinstance(t, Mapping)
            )
            if self.plans.get(item_id) != plan:
                self.plans[item_id] = plan
                builder.add_assistant([Text(plan, extra={"plan": True})], where, timestamp, merge=True)
        elif phase == "item.started" and kind in TOOL_ITEMS:
            self.started[item_id] = (item, timestamp, where)
        elif phase != "item.completed":
            builder.skip(f"{phase}/{kind}")
        elif kind == "reasoning":
            builder.add_assistant([Thinking(str(item.get("text", "")))], where, timestamp, merge=True)
        elif kind == "agent_message":
            builder.add_assistant([Text(str(item.get("text", "")))], where, timestamp, merge=True)
        elif kind == "error":
            builder.meta.setdefault("errors", []).append(item.get("message"))
        elif kind in TOOL_ITEMS:
            start = self.started.pop(item_id, (item, timestamp, where))
            builder.add_assistant([self._call(item, where)], where, start[1], merge=True)
            extra = {k: item[k] for k in ("exit_code", "status") if item.get(k) is not None}
            builder.add_result(
                item_id, _output(item), where, True if item.get("status") == "failed" else None, timestamp, extra
            )
        else:
            builder.skip_unknown(f"item/{kind}")

    def _call(self, item: Mapping[str, Any], where: str) -> ToolCall:
        kind = item.get("type")
        if kind == "command_execution":
            return ToolCall(
                item["id"], "shell", {"command": field_of(self.source, item, "command", str, f"{where}.item")}
            )
        if kind == "file_change":  # the changes are validated here, before _output lists them
            changes = [] if item.get("changes") is None else field_of(self.source, item, "changes", list, f"{where}.item")
            return ToolCall(item["id"], "apply_patch", {"changes": changes})
        if kind == "web_search":
            return ToolCall(item["id"], "web_search", {"query": item.get("query")})
        name = ".".join(str(item[k]) for k in ("server", "tool") if item.get(k))
        arguments = item.get("arguments")
        return ToolCall(item["id"], name or "mcp_tool_call", dict(arguments) if isinstance(arguments, Mapping) else {})


def _output(item: Mapping[str, Any]) -> str:
    kind = item.get("type")
    if kind == "command_execution":
        return str(item.get("aggregated_output") or "")
    if kind == "file_change":
        return "\n".join(
            f"{c.get('kind')} {c.get('path')}" for c in item.get("changes") or () if isinstance(c, Mapping)
        )
    result = item.get("result", item.get("error"))
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False) if result is not None else ""


def codex_usage(usage: JSONObject) -> Usage:
    """Codex reports ``cached_input_tokens`` beside ``input_tokens``, which includes them."""
    return Usage(
        prompt_tokens=token_count(usage.get("input_tokens"), "usage.input_tokens"),
        output_tokens=token_count(usage.get("output_tokens"), "usage.output_tokens"),
        cache_read_tokens=token_count(usage.get("cached_input_tokens"), "usage.cached_input_tokens"),
    )


matches, load = _Threads.matches, _Threads.load
