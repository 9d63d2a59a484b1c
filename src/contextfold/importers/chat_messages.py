"""Plain chat logs: the messages of a chat API, as a program or a person saved them.

Three layouts, one conversation per file:

- a JSON object holding the list, as a request body has it: ``messages``
  (beside it, optionally, ``system`` and ``tools``) or an OpenAI Responses
  ``input`` list (beside it ``instructions`` and ``tools``);
- a bare JSON array of messages (Cline's ``api_conversation_history.json``);
- JSON Lines, one message per line.

The messages are in one provider's shape, decided per file from the messages
themselves (:func:`contextfold.adapters.recorded.shape_of`): ``tool_calls`` / ``role: "tool"`` are OpenAI
Chat Completions, content blocks ``tool_use`` / ``tool_result`` / ``thinking``
are Anthropic Messages, typed items (``function_call``, ``input_text`` parts)
are OpenAI Responses; plain text messages fit every shape and are read as
OpenAI Chat. Each message is read by that provider's adapter, the one reader
of its format; this module reads only the layout around them, and the few
liberties recorders take with the OpenAI Chat shape (:func:`contextfold.adapters.recorded.as_sent`: a call
without its ``function`` wrapper, arguments kept as an object, a tool output
that is not text or names its call by ``id``) are put back into the wire's
shape first. A ``tool`` message listed before the assistant message whose call
it answers (an export of a Claude Code transcript written out of order) is
read right after that message (:func:`~._order.after_calls`; how many in
``Header.meta["reordered"]``).

A message's time, where a recorder added one (``timestamp``, ``created_at``,
``ts``, ``time``: ISO 8601, unix seconds or milliseconds), becomes
``Item.timestamp``. Other keys a recorder adds to a Chat Completions or
Messages message (a turn index, a cost, a copy of the raw response) are not
the API's, so they are not handed to the adapter, which would write them back
into every request: their short scalar values are kept in
``meta["recorded"]``, the rest left out. A message whose role is
not a chat role (``exit``, a recorder's own bookkeeping) is skipped and counted
in ``Header.meta["unknown_records"]``. ``Header.meta["wire"]`` names the shape
read, ``meta["model"]`` the request's ``model`` where there is one.

This importer is the last JSON one tried, so every format with keys of its own
(mini-swe-agent's ``trajectory_format``, tau-bench's ``traj``...) is read by
its own importer first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace

from ..adapters.recorded import MESSAGES, RESPONSES, Shape, is_message, shape_of
from ..conversation import Conversation, JSONObject, JSONValue
from ._common import CHAT_ROLES, ConversationBuilder, Source, kind_of, read_wire, small_scalars, tool_specs, unix_time
from ._order import after_calls

FORMAT = "chat-messages"
TIME_KEYS = ("timestamp", "created_at", "ts", "time")
"""Keys recorders add to a message for when it was written: not the provider's, never passed to the adapter."""

_MILLISECONDS = 10**11
"""A number of seconds past this is a year after 5000: a recorder that counts milliseconds (Cline's ``ts``)."""


def matches(source: Source) -> bool:
    doc = source.document
    if isinstance(doc, dict):
        if "messages" in doc or "input" in doc:
            return _starts_like_messages(doc.get("messages", doc.get("input")))
        return is_message(doc)  # one line of JSON Lines
    if isinstance(doc, list):
        return _starts_like_messages(doc)
    return doc is None and source.json_error is not None and is_message(source.first_record)


def _starts_like_messages(value: object) -> bool:
    return isinstance(value, list) and bool(value) and is_message(value[0])


def load(source: Source) -> list[Conversation]:
    doc = source.document
    if isinstance(doc, list) or (isinstance(doc, dict) and ("messages" in doc or "input" in doc)):
        return [_load_document(source, source.require_document(list if isinstance(doc, list) else dict))]
    messages = [(f"line {number}", record) for number, record in source.records()]
    return [_read(source, messages, shape_of(record for _, record in messages), {})]


def _load_document(source: Source, doc: list[object] | dict[str, object]) -> Conversation:
    if isinstance(doc, list):
        return _read(source, [(f"$[{i}]", m) for i, m in enumerate(doc)], shape_of(doc), {})
    key = "messages" if "messages" in doc else "input"
    listed = doc[key]
    if not isinstance(listed, list):
        raise source.error(f"$.{key}", f"expected a list of messages, found a {type(listed).__name__}")
    shape = RESPONSES if key == "input" else shape_of(listed)
    return _read(source, [(f"$.{key}[{i}]", m) for i, m in enumerate(listed)], shape, doc)


def _read(source: Source, messages: Sequence[tuple[str, object]], shape: Shape, request: Mapping[str, object]) -> Conversation:
    model = request.get("model")
    facts = {"format": FORMAT, "wire": shape.adapter, "model": model if isinstance(model, str) else None}
    builder = ConversationBuilder(source, f"{source.name}:0", facts)
    _read_request_fields(builder, request)
    messages, reordered = after_calls(messages, shape)
    if reordered:
        builder.meta["reordered"] = reordered
    responses = 0  # Responses items of one response arrive one by one: consecutive assistant ones are one item
    for where, message in messages:
        if not isinstance(message, Mapping):
            raise source.error(where, "a message must be an object")
        role = kind_of(source, message, "role", where)
        if role is not None and role not in CHAT_ROLES:
            builder.skip_unknown(f"role {role}")
            continue
        timestamp = next((t for t in _times(message) if t is not None), None)
        wire_message = shape.as_sent({key: value for key, value in message.items() if key not in TIME_KEYS})
        recorded: dict[str, JSONValue] = {}
        if shape.message_keys is not None:
            recorded = small_scalars({k: v for k, v in wire_message.items() if k not in shape.message_keys})
            wire_message = {k: v for k, v in wire_message.items() if k in shape.message_keys}
        meta = {"recorded": recorded} if recorded else None
        for item in read_wire(builder, shape.adapter, [wire_message], where):
            response_id = None
            if shape.item_per_part and item.role == "assistant":  # the writer derives one response's segments itself
                item = replace(item, meta={k: v for k, v in item.meta.items() if k != "segments"})
                response_id = f"response{responses}"
            responses += item.role != "assistant"
            builder.add_item(item, where, timestamp, meta, response_id=response_id)
    return builder.build()


def _read_request_fields(builder: ConversationBuilder, request: Mapping[str, object]) -> None:
    """What a request body holds beside its messages: the system prompt (``system``, Responses'
    ``instructions``) and the tool definitions."""
    for key in ("system", "instructions"):
        prompt = request.get(key)
        if isinstance(prompt, str):
            builder.add_system(prompt)
        elif prompt is not None:  # Anthropic's list of text blocks, read by its adapter
            for item in read_wire(builder, MESSAGES.adapter, [], f"$.{key}", system=prompt):
                builder.add_item(item, f"$.{key}")
    if request.get("tools") is not None:
        builder.tools = tool_specs(request["tools"])


def _times(message: JSONObject) -> Iterator[float | None]:
    """The message's recorded times, in :data:`TIME_KEYS` order (milliseconds read as such)."""
    for key in TIME_KEYS:
        value = message.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and _MILLISECONDS < abs(value) < 1e300:
            value = value / 1000  # bounded: an integer of 400 digits has no float quotient
        yield unix_time(value)
