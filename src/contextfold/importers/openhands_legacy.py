"""OpenHands v0.x event streams: ``trajectory.json`` exports and the ``history`` of SWE-bench evaluation outputs.

Before the software-agent SDK (see :mod:`.openhands`), OpenHands serialised
its event stream as plain events, each ``{id, timestamp, source, message}``
plus either an ``action`` (``run``, ``read``, ``edit``, ``message``,
``finish``, ``think``...) with its ``args``, or an ``observation`` (``run``,
``read``, ``edit``, ``error``...) with its ``content``, ``extras`` and
``cause`` (the id of the action it answers). Three layouts hold them:

- a bare JSON array of events (the UI's trajectory export), or JSON Lines of
  them, one event a line;
- a JSON object with a ``history`` list (one evaluation instance);
- JSON Lines, one evaluation instance a line (``output.jsonl``): one
  conversation per line, ``meta["instance_id"]`` naming it.

Older evaluation outputs keep ``history`` as ``[action, observation]``
pairs; a pair is read as its two events (the observation answers the
action beside it).

- ``system`` action: the system prompt (``args.content``) and its ``tools``.
- ``message`` action: a user item (``source`` ``user``) or the agent's text.
- Any other agent action is one tool call. With function calling its
  ``tool_call_metadata`` names the call (``tool_call_id``, ``function_name``)
  and keeps the model's whole response, read by the OpenAI adapter for the
  call's arguments as the model wrote them and the response's usage; the
  actions of one response (``model_response.id``) make one assistant item.
  Without it (prompt-based CodeAct), the call is named after the event id,
  its arguments are the action's ``args``. ``args.thought`` is the text the
  model wrote before the call.
- An observation is the result of the call its ``cause`` (or its
  ``tool_call_id``) names; one that names neither (a pair's, or a log that
  records no causes) answers the latest call when it is of that call's kind
  (``run`` after ``run``) or its pair. An ``error`` observation is an error result, and
  an ``error`` that answers no call is a user item (OpenHands shows it to the
  model as such). ``extras.metadata.exit_code`` goes to the result's facts.
- ``finish`` is a call the recording never answers; it stays open, as every
  unanswered call does.
- A ``condensation`` action with a ``summary`` is OpenHands' own compaction:
  its summary is a user item marked ``meta["compact_summary"]`` (where the
  condenser put it in the history the model saw next).

Bookkeeping (``recall``, agent state changes, ``null`` observations,
condensation requests and condensations without a summary, actions a person ran in the terminal and what they
answered, any other observation that answers no call) is counted in
``meta["skipped"]``; an event that is neither an action nor an observation
in ``meta["unknown_records"]``. Timestamps are ISO without zone, read as UTC.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..conversation import Block, Conversation, Image, JSONObject, JSONValue, Text, ToolCall
from ..errors import SessionFormatError
from ._common import (
    ConversationBuilder,
    Source,
    call_arguments,
    kind_of,
    object_at,
    read_reply,
    text_blocks,
    tool_specs,
    unix_time,
)

FORMAT = "openhands-legacy"
BOOKKEEPING_ACTIONS = frozenset({"recall", "change_agent_state", "condensation", "condensation_request", "null"})
ACTION_BOOKKEEPING_ARGS = frozenset(
    {"thought", "blocking", "hidden", "confirmation_state", "security_risk", "is_confirmed", "impl_source",
     "kernel_init_code", "image_urls", "wait_for_response"}
)  # fmt: skip
"""What OpenHands adds to an action's ``args`` that the model never wrote."""
OPENAI = "openai"
"""The adapter that reads ``tool_call_metadata.model_response`` (a litellm Chat Completions response)."""


def matches(source: Source) -> bool:
    """Events (an ``action`` with ``args`` or an ``observation`` with ``content``): an array of them, one a line,
    or a ``history`` of them."""
    doc = source.document
    if isinstance(doc, list):
        return bool(doc) and _is_event(doc[0])
    record = doc if isinstance(doc, dict) else source.first_record if doc is None else None
    if record is not None and doc is None and _is_event(record):
        return True
    history = record.get("history") if isinstance(record, dict) else None
    if not isinstance(history, list) or not history:
        return False
    first = history[0]
    return _is_event(first[0] if isinstance(first, list) and first else first)


def _is_event(value: object) -> bool:
    if not isinstance(value, Mapping) or "kind" in value:  # ``kind``: the SDK's events
        return False
    action, observation = value.get("action"), value.get("observation")
    return (isinstance(action, str) and isinstance(value.get("args"), Mapping)) or (
        isinstance(observation, str) and "content" in value
    )


def load(source: Source) -> list[Conversation]:
    doc = source.document
    if isinstance(doc, list):
        return [_Trajectory(source, f"{source.name}:0", {}).run(_events(source, doc, "$"))]
    if doc is not None:
        instance = source.require_document(dict)
        return [_instance(source, instance, "$", 0)]
    if source.first_record is not None and _is_event(source.first_record):
        lines = ((f"line {number}", record, False) for number, record in source.records())
        return [_Trajectory(source, f"{source.name}:0", {}).run(lines)]
    return [_instance(source, record, f"line {number}", index) for index, (number, record) in
            enumerate(source.records())]


def _instance(source: Source, instance: JSONObject, where: str, index: int) -> Conversation:
    """One evaluation instance: its ``history``, and what it says of the run."""
    history = instance.get("history")
    if not isinstance(history, list):
        raise source.error(f"{where}.history", "expected a list of events")
    metadata = object_at(instance, "metadata")
    llm = object_at(metadata, "llm_config")
    facts = {"instance_id": instance.get("instance_id"), "agent_class": metadata.get("agent_class"),
             "model": llm.get("model"), "error": instance.get("error")}
    known = {key: value for key, value in facts.items() if isinstance(value, str)}
    return _Trajectory(source, f"{source.name}:{index}", known).run(_events(source, history, f"{where}.history"))


Event = tuple[str, JSONObject, bool]
"""An event, its place in the file, and whether it is the second of an ``[action, observation]`` pair."""


def _events(source: Source, history: Sequence[object], where: str) -> Iterator[Event]:
    """Each event with its place; an ``[action, observation]`` pair as its two events."""
    for index, entry in enumerate(history):
        place = f"{where}[{index}]"
        if isinstance(entry, list):
            for part, event in enumerate(entry):
                yield _event(source, event, f"{place}[{part}]", part == 1)
        else:
            yield _event(source, entry, place, False)


def _event(source: Source, event: object, where: str, second_of_pair: bool) -> Event:
    if not isinstance(event, Mapping):
        raise source.error(where, "an event must be an object")
    return where, event, second_of_pair


class _Trajectory:
    """One event stream read in order, remembering which event each call was made by."""

    def __init__(self, source: Source, key: str, meta: JSONObject) -> None:
        self.source = source
        self.builder = ConversationBuilder(source, key, {"format": FORMAT, **meta})
        self.calls: dict[int | str, str] = {}  # event id of an action -> the id of its call
        self.seen: set[int | str] = set()  # every event id so far
        self.last_call: tuple[str, str] | None = None  # the latest call and its action, for an observation that
        # names no cause (a pair's, or one of the same kind right after it in a log that records no causes)

    def run(self, events: Iterator[Event]) -> Conversation:
        for where, event, second_of_pair in events:
            timestamp = unix_time(event.get("timestamp"))
            if "action" in event:
                self._action(event, kind_of(self.source, event, "action", where) or "", where, timestamp)
            elif "observation" in event:
                name = kind_of(self.source, event, "observation", where) or ""
                self._observation(event, name, where, timestamp, second_of_pair)
            else:
                self.builder.skip_unknown("(neither action nor observation)")
            event_id = self._event_id(event, "id", where)
            if event_id is not None:
                self.seen.add(event_id)
        return self.builder.build()

    def _event_id(self, event: JSONObject, key: str, where: str) -> int | str | None:
        """An event's ``id`` or ``cause``: a number or a string (``None`` when absent)."""
        value = event.get(key)
        if value is None or (isinstance(value, (int, str)) and not isinstance(value, bool)):
            return value
        raise self.source.error(f"{where}.{key}", f"expected an event id, found a {type(value).__name__}")

    # -- actions
    def _action(self, event: JSONObject, name: str, where: str, timestamp: float | None) -> None:
        args = event.get("args", {})
        if not isinstance(args, Mapping):
            raise self.source.error(f"{where}.args", f"expected an object, found a {type(args).__name__}")
        origin = event.get("source")
        if name == "system":
            self._system(args, where, timestamp)
        elif name == "message":
            self._message(event, args, origin, where, timestamp)
        elif name == "condensation" and _string(args.get("summary")):
            self.builder.add_user([Text(str(args["summary"]))], timestamp, {"compact_summary": True})
        elif name in BOOKKEEPING_ACTIONS or origin not in ("agent", None):
            self.builder.skip(f"action/{name}" if name in BOOKKEEPING_ACTIONS else f"action/{name} by {origin}")
        else:
            self._call(event, name, args, where, timestamp)

    def _system(self, args: JSONObject, where: str, timestamp: float | None) -> None:
        content = args.get("content")
        if not isinstance(content, str):
            raise self.source.error(f"{where}.args.content", "expected the system prompt as a string")
        self.builder.add_system(content, timestamp)
        if args.get("tools") is not None:
            self.builder.tools = tool_specs(args["tools"])

    def _message(
        self, event: JSONObject, args: JSONObject, origin: object, where: str, timestamp: float | None
    ) -> None:
        content = args.get("content", event.get("message"))
        if not isinstance(content, str):
            raise self.source.error(f"{where}.args.content", "expected the message text as a string")
        blocks: list[Block] = text_blocks(content)
        urls = args.get("image_urls")
        blocks += [Image(url=url) for url in urls if isinstance(url, str)] if isinstance(urls, list) else []
        if origin == "user":
            self.builder.add_user(blocks, timestamp)
        else:
            self.builder.add_assistant(blocks, where, timestamp)

    def _call(self, event: JSONObject, name: str, args: JSONObject, where: str, timestamp: float | None) -> None:
        action = name
        metadata = event.get("tool_call_metadata")
        event_id = self._event_id(event, "id", where)
        key = event_id if event_id is not None else where
        call_id, response_id = f"event{key}", None
        meta: dict[str, Any] = {"action": name}
        call = None
        if isinstance(metadata, Mapping):
            call_id = _string(metadata.get("tool_call_id")) or call_id
            name = _string(metadata.get("function_name")) or name
            response = metadata.get("model_response")
            response_id = _string(response.get("id")) if isinstance(response, Mapping) else None
            call, usage, model = self._recorded_call(response, call_id, f"{where}.tool_call_metadata.model_response")
            meta.update({k: v for k, v in (("usage", usage), ("model", model)) if v is not None})
        if call is None:
            arguments, raw = call_arguments({k: v for k, v in args.items()
                                             if k not in ACTION_BOOKKEEPING_ARGS and v is not None})
            call = ToolCall(call_id, name, arguments, raw)
        thought = args.get("thought")
        blocks = [*text_blocks(thought if isinstance(thought, str) else None), call]
        self.builder.add_assistant(blocks, where, timestamp, meta, response_id=response_id)
        self.calls[key] = self.builder.open_calls()[-1]
        self.last_call = (self.calls[key], action)

    def _recorded_call(
        self, response: object, call_id: str, where: str
    ) -> tuple[ToolCall | None, JSONValue, str | None]:
        """The call as the model wrote it in the response OpenHands kept, the response's usage and model;
        a response the adapter cannot read leaves the action's own ``args`` to stand for the call."""
        if not isinstance(response, Mapping):
            return None, None, None
        try:
            reply = read_reply(self.builder, OPENAI, response, where)
        except SessionFormatError:
            self.builder.skip("tool_call_metadata/unreadable model_response")
            return None, None, None
        calls = [call for item in reply.conversation for call in item.tool_calls if call.id == call_id]
        model = response.get("model")
        usage = reply.usage.to_dict() if reply.usage is not None else None
        return (calls[0] if calls else None), usage, model if isinstance(model, str) else None

    # -- observations
    def _observation(
        self, event: JSONObject, name: str, where: str, timestamp: float | None, second_of_pair: bool
    ) -> None:
        content = event.get("content", "")
        if not isinstance(content, str):
            raise self.source.error(f"{where}.content", f"expected a string, found a {type(content).__name__}")
        call_id = self._answered_call(event, name, where, second_of_pair)
        if call_id is not None and call_id in self.builder.open_calls():
            facts = {"observation": name, **_exit_code(event)}
            self.builder.add_result(call_id, content, where, True if name == "error" else None, timestamp, facts)
        elif name == "error":
            self.builder.add_user(text_blocks(content), timestamp, {"observation": "error"})
        else:
            self.builder.skip(f"observation/{name}")

    def _answered_call(self, event: JSONObject, name: str, where: str, second_of_pair: bool) -> str | None:
        """The call an observation answers: by its ``cause``, its ``tool_call_id``, or else the latest call when
        the observation is its pair's or of its kind (``run`` after ``run``); an id no earlier event has is a
        broken file."""
        cause = self._event_id(event, "cause", where)
        if cause is not None:
            if cause not in self.seen:
                raise self.source.error(f"{where}.cause", f"answers event {cause!r}, which no earlier event is")
            return self.calls.get(cause)
        metadata = event.get("tool_call_metadata")
        if isinstance(metadata, Mapping) and isinstance(metadata.get("tool_call_id"), str):
            return str(metadata["tool_call_id"])
        if self.last_call is None:
            return None
        call_id, action = self.last_call
        return call_id if second_of_pair or action == name else None


def _string(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _exit_code(event: JSONObject) -> dict[str, JSONValue]:
    extras = object_at(event, "extras")
    code = object_at(extras, "metadata").get("exit_code", extras.get("exit_code"))
    return {"exit_code": code} if isinstance(code, int) and not isinstance(code, bool) else {}
