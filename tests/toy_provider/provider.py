"""The toy wire format: a minimal JSON of turns, with no SDK (contextfold renders requests, the caller sends them).

A request is ``{"rules": "...", "tools": [{"name", "about", "schema"}], "turns": [...]}``; a turn is
``{"who": "user" | "model" | "tool", "say": "...", "calls": [{"id", "tool", "args"}], "answers": "<call id>"}``.
A reply is ``{"id", "say", "calls", "end", "counted": {"prompt": n, "output": m}}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from contextfold.adapters.base import Adapter, WireHeader, present_fields
from contextfold.adapters.usage import usage_count, usage_data
from contextfold.conversation import Block, Conversation, Header, Item, Text, ToolCall, ToolResult, ToolSpec
from contextfold.errors import InvalidContent, UnknownRole
from contextfold.usage import Usage

ROLES = {"user": "user", "model": "assistant", "tool": "tool"}
WHO = {role: who for who, role in ROLES.items()}


class Toy(Adapter):
    """The toy format: the wire part only, no stub for the SDK it does not have."""

    name = "toy"
    title = "Toy JSON"
    messages_key = "turns"
    usage_field = "counted"
    system_messages = False

    def _read(self, messages: Any, system: Any, tools: Any, known_call_ids: Iterable[str]) -> Conversation:
        if not isinstance(messages, list):
            raise InvalidContent(None, "turns", f"expected a list, got {type(messages).__name__}")
        rules = (Item("system", (Text(_text(None, "rules", system)),)),) if system else ()
        specs = tuple(ToolSpec(_text(None, f"tools[{i}].name", t.get("name")), t.get("about"), t.get("schema") or {})
                      for i, t in enumerate(_objects(None, "tools", tools or [])))
        return Conversation([_item(i, turn) for i, turn in enumerate(messages)], Header(system=rules, tools=specs))

    def write(self, conversation: Conversation) -> dict[str, Any]:
        return {**self.write_header(conversation.header).fields, "turns": self.write_items(conversation.items)}

    def write_items(self, items: Iterable[Item]) -> list[dict[str, Any]]:
        return [_turn(i, item) for i, item in enumerate(items)]

    def write_header(self, header: Header) -> WireHeader:
        tools = [{"name": t.name, "about": t.description, "schema": dict(t.parameters)}
                 for t in header.tools if isinstance(t, ToolSpec)]
        return WireHeader(present_fields(rules=header.system_text, tools=tools), ())

    def _answer(self, data: Mapping[str, Any]) -> Conversation:
        return Conversation([_item(None, {**data, "who": "model"})])

    def _stop(self, data: Mapping[str, Any]) -> str | None:
        return data.get("end")

    def read_usage(self, usage: Any) -> Usage:
        data = usage_data(usage)
        return Usage(prompt_tokens=usage_count(data, "prompt"), output_tokens=usage_count(data, "output"))


def _objects(index: int | None, field: str, value: Any) -> list[Mapping[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise InvalidContent(index, field, "expected a list of objects")
    return value


def _text(index: int | None, field: str, value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidContent(index, field, f"expected a string, got {type(value).__name__}")
    return value


def _item(index: int | None, turn: Any) -> Item:
    if not isinstance(turn, Mapping):
        raise InvalidContent(index, "", f"expected an object, got {type(turn).__name__}")
    who = turn.get("who")
    if not isinstance(who, str) or who not in ROLES:
        raise UnknownRole(index, "who", f"expected one of {', '.join(ROLES)}, got {who!r}")
    say = _text(index, "say", turn.get("say", ""))
    if who == "tool":
        return Item("tool", (ToolResult(_text(index, "answers", turn.get("answers")), say),))
    calls = [ToolCall(_text(index, f"calls[{i}].id", c.get("id")), _text(index, f"calls[{i}].tool", c.get("tool")),
                      c.get("args") or {}) for i, c in enumerate(_objects(index, "calls", turn.get("calls", [])))]
    blocks: list[Block] = [Text(say)] if say else []
    return Item(ROLES[who], (*blocks, *calls))


def _turn(index: int, item: Item) -> dict[str, Any]:
    who = WHO.get(item.role)
    if who is None:
        raise InvalidContent(index, "role", f"the toy format has no {item.role} turn")
    result = item.tool_result
    if result is not None:
        return {"who": "tool", "say": item.text, "answers": result.call_id}
    for position, block in enumerate(item.blocks):
        if not isinstance(block, (Text, ToolCall)):
            raise InvalidContent(index, f"blocks[{position}]",
                                 f"the toy format carries text and calls, not {block.kind}")
    calls = [{"id": c.id, "tool": c.name, "args": dict(c.arguments)} for c in item.tool_calls]
    return {"who": who, "say": item.text, **({"calls": calls} if calls else {})}
