"""SWE-agent ``*.traj`` files (0.7 / 1.x).

One JSON object ``{environment, trajectory, history, info}``. ``history`` is
the chat as the model saw it, so it makes the items; ``trajectory`` (one entry
per step) supplies what the history lacks, and a file without it (or with an
empty one: a run saved before its first step was logged, a history exported on
its own) is read from the history alone:

- Function-calling runs have assistant ``tool_calls`` and ``role: "tool"``
  observations with ``tool_call_ids``: converted as they are.
- Older thought-action runs have no calls: the assistant message carries an
  ``action`` string (a command for SWE-agent's shell, special commands such
  as ``edit`` or ``submit`` included) and the next ``user`` message is its
  observation. The action becomes ``ToolCall(name="bash", arguments=
  {"command": action})`` with the id ``swe-step-<n>``, the observation its
  result.
- The last action's observation is not in the history (the run ended on it);
  it is taken from the matching ``trajectory`` step.
- Content may be a string or a list of parts (1.x writes text parts with
  cache marks for Claude, images for multimodal tasks): an observation or a
  thought is read from its parts either way.

``trajectory[n].execution_time`` (seconds), where present, goes into the n-th
result's ``meta["facts"]["execution_time_s"]``. The per-step ``messages`` copies of
the whole prompt (newer files) are redundant and ignored. A worked demonstration
in the history (a ``user`` message with ``is_demo``) is marked
``meta["is_demo"]``. There are no
wall-clock timestamps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..conversation import Conversation, JSONObject, JSONValue, ToolCall
from . import _openai_messages
from ._common import ConversationBuilder, Source, field_of, object_at, text_blocks

FORMAT = "swe-agent"
SHELL_TOOL = "bash"
OWN_KEYS = ("agent", "message_type", "thought", "action", "tool_call_ids", "is_demo")
"""History keys that are SWE-agent's, not the chat's."""


def matches(source: Source) -> bool:
    """A ``history`` of messages, with a ``trajectory`` list beside it or none."""
    doc = source.document
    if not isinstance(doc, dict) or not isinstance(doc.get("trajectory") or [], list):
        return False
    history = doc.get("history")
    return isinstance(history, list) and (not history or (isinstance(history[0], Mapping) and "role" in history[0]))


def load(source: Source) -> list[Conversation]:
    doc = source.require_document(dict)
    history = field_of(source, doc, "history", list, "$")
    steps = field_of(source, doc, "trajectory", list, "$") if doc.get("trajectory") is not None else []
    info = object_at(doc, "info")
    builder = ConversationBuilder(
        source, f"{source.name}:0", {"format": FORMAT, "exit_status": info.get("exit_status")}
    )
    actions = 0  # assistant actions seen so far: the index into ``trajectory``
    for index, message in enumerate(history):
        where = f"$.history[{index}]"
        if not isinstance(message, Mapping):
            raise source.error(where, "a message must be an object")
        role = message.get("role")
        open_calls = builder.open_calls()
        chat = _openai_messages.read_message(builder, message, where, OWN_KEYS) if role == "assistant" else []
        if isinstance(message.get("action"), str) and chat and not any(item.tool_calls for item in chat):
            _add_action(builder, message, actions, where)
        elif chat:
            for item in chat:
                builder.add_item(item, where)
        elif role == "tool" and isinstance(message.get("tool_call_ids"), list):
            _add_observation(builder, message, message["tool_call_ids"], _step_facts(steps, actions - 1), where)
        elif role == "user" and open_calls and open_calls[-1].startswith("swe-step-"):
            _add_observation(builder, message, open_calls[-1:], _step_facts(steps, actions - 1), where)
        else:
            demo = {"is_demo": True} if message.get("is_demo") is True else None
            _openai_messages.add_message(builder, message, where, meta=demo, own_keys=OWN_KEYS)
        actions += role == "assistant"
    _answer_last_step(builder, steps, actions)
    return [builder.build()]


def _add_action(builder: ConversationBuilder, message: JSONObject, step: int, where: str) -> None:
    content = _openai_messages.content_of(builder, message.get("content"), f"{where}.content")
    blocks = text_blocks(content) if isinstance(content, str) else list(content)
    call = ToolCall(f"swe-step-{step}", SHELL_TOOL, {"command": message["action"]})
    builder.add_assistant([*blocks, call], where)


def _add_observation(
    builder: ConversationBuilder, message: JSONObject, call_ids: list[str], facts: JSONObject, where: str
) -> None:
    content = _openai_messages.content_of(builder, message.get("content"), f"{where}.content")
    for call_id in call_ids:
        if not isinstance(call_id, str):
            raise builder.source.error(f"{where}.tool_call_ids", "tool call ids must be strings")
        builder.add_result(call_id, content, where, facts=facts)


def _step_facts(steps: Sequence[object], step: int) -> dict[str, JSONValue]:
    entry = steps[step] if 0 <= step < len(steps) else None
    seconds = entry.get("execution_time") if isinstance(entry, Mapping) else None
    return {"execution_time_s": seconds} if isinstance(seconds, (int, float)) else {}


def _answer_last_step(builder: ConversationBuilder, steps: list[object], actions: int) -> None:
    """The run's final observation lives only in ``trajectory``; answer the open call with it."""
    open_calls = builder.open_calls()
    if not open_calls or len(steps) != actions or not isinstance(steps[-1], Mapping):
        return
    observation = steps[-1].get("observation")
    if isinstance(observation, str):
        builder.add_result(
            open_calls[-1],
            observation,
            f"$.trajectory[{len(steps) - 1}].observation",
            facts=_step_facts(steps, len(steps) - 1),
        )
