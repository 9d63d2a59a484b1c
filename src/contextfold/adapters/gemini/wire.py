"""google-genai ``Content`` lists (Gemini, Google ADK) <-> :class:`~contextfold.conversation.Conversation`, lossless.

``to_genai(from_genai(contents))`` gives back the same contents, as the plain
dicts the SDK's models dump to (``Content.model_dump(mode="json",
exclude_none=True)``: snake_case keys, bytes in base64); ``types.Content.model_validate``
turns each into the SDK object again. Reading accepts the SDK objects or those dicts,
so this module never imports ``google.genai``.

How Gemini's shapes map onto the neutral model:

* A ``model`` content is one assistant item: text parts are Text blocks,
  ``thought`` text parts Thinking, ``function_call`` parts ToolCalls (their
  ``args`` are the arguments), any other part (inline data, files, code
  execution...) an Opaque block. Part fields with no slot (``thought_signature``,
  ``will_continue``) ride in the block's ``extra``.
* A ``user`` content holding ``function_response`` parts becomes one tool item
  per response, then a user item with its other parts, if any. Each item
  keeps the content it came from and its parts' positions
  (``meta["content"]``, ``meta["parts"]``) so the writer groups them back in
  order; tool items with no such record (a synthetic result) join the
  responses before them, which is where Gemini wants every response to a
  turn: in the one user content after it.
* A response is a ToolResult: ADK's ``{"result": text}`` becomes that text;
  any other object its JSON text (written back as the object while the text
  still parses to one, else as ``{"result": text}``, which is how a stage's
  shortened output reaches the model).
* Gemini's own API leaves call ids out (ADK strips its ``adk-`` ids before
  sending); a call without an id gets a fresh one, marked so it is not
  written, and a response without an id answers the oldest open call of its
  name, as Gemini pairs them.
* Tools are ``function_declarations`` (each a ToolSpec; its schema from
  ``parameters_json_schema``, else ``parameters``) and built-in tools
  (``google_search``, ``code_execution``...), carried as they are
  (:func:`tools_from_genai`, :func:`tools_to_genai`).

ADK events are read with :func:`from_adk_events`: each event's content, with
the event's timestamp and id on every item it gave.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...conversation import (
    Block,
    Conversation,
    Header,
    Item,
    JSONValue,
    Opaque,
    Summary,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    ToolSpec,
    as_role,
    new_id,
)
from ...errors import InvalidContent, UnknownRole
from .._reading import CallIds, WireObject, as_list, read_object, shown, word
from .._tools import read_spec, read_tools, spec_fields, write_tools
from .._writing import foreign_block, merged, without_nones

ORIGIN = "genai"
TARGET = "Gemini (google-genai)"
_ROLES = {"user": "user", "model": "assistant"}
_RESULT = "result"
"""The key ADK wraps a tool's non-object return value in."""


def _dump(value: object, index: int | None, field: str) -> Mapping[str, Any]:
    dump = getattr(value, "model_dump", None)
    dumped = dump(mode="json", exclude_none=True) if callable(dump) and not isinstance(value, Mapping) else None
    if isinstance(dumped, Mapping):
        return dumped
    return read_object(value, index, field).data


# --------------------------------------------------------------------------- reading


def from_genai(
    contents: Sequence[object], *, system_instruction: object = None, tools: object = None, known_call_ids: Iterable[str] = ()
) -> Conversation:
    """Read a list of ``Content`` (objects or their dicts); ``system_instruction`` is the header's system prompt,
    ``tools`` its tools.

    Errors name the content index and field: :class:`UnknownRole`,
    :class:`InvalidContent` (wrong types, a response to no call).
    """
    reader = _Reader(known_call_ids)
    raws = as_list(contents, None, "contents")
    items = [item for index, raw in enumerate(raws) for item in reader.content(raw, index)]
    system = (reader.system(system_instruction),) if system_instruction is not None else ()
    header = Header(system=system, tools=tools_from_genai(tools), meta={"origin": ORIGIN})
    return Conversation(items, header)


_DECLARATIONS = "function_declarations"
_JSON_SCHEMA = "parameters_json_schema"


def tools_from_genai(tools: object) -> tuple[ToolSpec | Opaque, ...]:
    """A request's ``tools``: every function declaration a ToolSpec, any other tool (search, code execution)
    kept as it is."""
    if tools is None:
        return ()
    specs: list[ToolSpec | Opaque] = []
    for position, tool in enumerate(as_list(tools, None, "tools")):
        data = _dump(tool, None, f"tools[{position}]")
        declarations = data.get(_DECLARATIONS)
        if declarations is None or set(data) != {_DECLARATIONS}:
            specs.append(Opaque(dict(data), ORIGIN))
            continue
        raws = [_dump(d, None, f"tools[{position}].{_DECLARATIONS}") for d in as_list(declarations, None, "tools")]
        specs.extend(read_tools(raws, ORIGIN, _declaration))
    return tuple(specs)


def _declaration(wire: WireObject) -> ToolSpec:
    """One function declaration; a schema in Gemini's own ``parameters`` form is remembered as such."""
    if _JSON_SCHEMA in wire.rest or "parameters" not in wire.rest:
        return read_spec(wire, _JSON_SCHEMA)
    spec = read_spec(wire, "parameters")
    return ToolSpec(spec.name, spec.description, spec.parameters, {**spec.extra, "schema_field": "parameters"})


def tools_to_genai(conversation: Conversation) -> list[dict[str, JSONValue]]:
    """The header's tools: its function declarations in one tool, then the other tools as they came."""
    written = write_tools(conversation, ORIGIN, TARGET, _write_declaration)
    declarations = [tool for tool in written if _DECLARATIONS not in tool and "name" in tool]
    others = [tool for tool in written if tool not in declarations]
    return [{_DECLARATIONS: declarations}, *others] if declarations else others


def _write_declaration(spec: ToolSpec, same: bool) -> dict[str, JSONValue]:
    extra = dict(spec.extra) if same else {}
    schema_field = extra.pop("schema_field", _JSON_SCHEMA)
    if not isinstance(schema_field, str):
        raise InvalidContent(None, f"tools.{spec.name}.extra.schema_field", "expected the name of the schema field")
    return {**spec_fields(spec, schema_field, same), **extra}


def from_adk_events(events: Sequence[Any], *, known_call_ids: Iterable[str] = ()) -> Conversation:
    """The conversation an ADK session's events hold: every event with content, in order.

    Each item carries its event's ``timestamp`` and ``meta["event"]`` (the event
    id), so a span of items maps back to a range of events; events without
    content (state changes, compaction records) give no item.
    """
    reader = _Reader(known_call_ids)
    items: list[Item] = []
    for index, event in enumerate(events):
        content = getattr(event, "content", None)
        if content is None or not getattr(content, "parts", None):
            continue
        for item in reader.content(content, index):
            meta = {**item.meta, "event": event.id, "author": event.author}
            items.append(Item(item.role, item.blocks, id=item.id, timestamp=event.timestamp, meta=meta))
    return Conversation(items, Header(meta={"origin": ORIGIN}))


def adk_event_id(item: Item) -> str:
    """The id of the ADK event an item of :func:`from_adk_events` came from (``""`` for any other item)."""
    return str(item.meta.get("event", ""))


class _Reader:
    """Reads contents in order, remembering which calls are still open (to pair responses without ids)."""

    def __init__(self, known_call_ids: Iterable[str]) -> None:
        self.calls = CallIds(known_call_ids)
        self.open: list[ToolCall] = []  # calls of the last model turn not answered yet
        self.started = False  # a user or model content was read: a system content can no longer open the list

    def system(self, raw: object, index: int | None = None) -> Item:
        """A system instruction (a string or a content); or a content with role ``system`` that opens the list,
        as those used to OpenAI's formats write one (:class:`~contextfold.Context` moves it to the header)."""
        if isinstance(raw, str):
            return Item("system", (Text(raw),), meta={"origin": ORIGIN, "shape": "str"})
        if index is None:  # the system_instruction itself: read as it came, to be written back so
            item = self.content(raw, None)[0]
        else:  # a content of the list: read as a user content, which opens nothing
            data = {key: value for key, value in _dump(raw, index, "").items() if key != "role"}
            started, item = self.started, self.content(data, index)[0]
            self.started = started
            if item.role != "user":
                raise InvalidContent(index, "parts", "a system content holds text, not function calls or responses")
        return Item("system", item.blocks, id=item.id, meta=item.meta)

    def content(self, raw: object, index: int | None) -> list[Item]:
        data = _dump(raw, index, "")
        rest = dict(data)
        role = rest.pop("role") if rest.get("role") is not None else None  # a null role rides in the extra
        if role is not None and word(role) == "system" and index is not None:
            if self.started:
                raise UnknownRole(index, "role", "Gemini has no system content after the conversation started: give "
                                                 "it as system_instruction, or as a user content")
            return [self.system(raw, index)]
        if role is not None and word(role) not in _ROLES:
            raise UnknownRole(index, "role", f"unknown role {shown(role)}; expected 'user' or 'model'")
        self.started = True
        group = new_id("content")  # unique, so contents read in separate batches never merge
        meta: dict[str, JSONValue] = {"origin": ORIGIN, "content": group}
        if "parts" not in rest:  # a content the SDK dumps without parts (a reply cut off before any)
            meta["no_parts"] = True
        parts = as_list(rest.pop("parts", []), index, "parts")
        if role is None:
            meta["role"] = None
        if rest:
            meta["extra"] = rest
        if role == "model":
            self.open = []
        items: list[Item] = []
        kept: list[Block] = []
        positions: list[int] = []
        for position, part in enumerate(parts):
            field = f"parts[{position}]"
            wire = read_object(part, index, field)
            if "function_response" in wire.rest:
                result = self._response(wire, index, field)
                items.append(Item("tool", (result,), meta={"origin": ORIGIN, "content": group, "parts": [position]}))
            elif "function_call" in wire.rest:
                if role != "model":
                    reason = "a function call can only come from the model"
                    raise InvalidContent(index, f"{field}.function_call", reason)
                kept.append(self._call(wire, index, position))
                positions.append(position)
            else:
                kept.append(_block(wire))
                positions.append(position)
        if kept or not items:
            items.append(Item(as_role(_ROLES.get(role or "user", "user")), tuple(kept), meta={**meta, "parts": positions}))
        else:  # a content of responses only: its own fields ride on the first
            items[0] = Item("tool", items[0].blocks, meta={**meta, "parts": items[0].meta["parts"]})
        return items
    def _call(self, wire: WireObject, index: int | None, position: int) -> ToolCall:
        name = wire.take("function_call.name", str)
        args = wire.take("function_call.args", Mapping, required=False)
        call_id = wire.take("function_call.id", str, required=False)
        if call_id is None:
            call_id = new_id("genai")  # unique across replies read one at a time
            wire.rest["no_id"] = True
        if args is None:
            wire.rest["no_args"] = True
        call = ToolCall(call_id, name, args or {}, extra=wire.rest)
        self.calls.add(call_id)
        self.open.append(call)
        return call

    def _response(self, wire: WireObject, index: int | None, field: str) -> ToolResult:
        name = wire.take("function_response.name", str, required=False)
        call_id = wire.take("function_response.id", str, required=False)
        response = wire.take("function_response.response", Mapping, required=False)
        if call_id is None:
            call = next((c for c in self.open if c.name == name), None)
            if call is None:
                raise InvalidContent(index, f"{field}.function_response", f"no open call named {name!r} to answer")
            call_id = call.id
            wire.rest["no_id"] = True
        elif call_id not in self.calls:
            raise InvalidContent(index, f"{field}.function_response.id", f"no earlier function call has id {call_id!r}")
        self.open = [c for c in self.open if c.id != call_id]
        if name is not None:
            wire.rest["name"] = name
        else:  # written back without one, as it came (not with the call's name)
            wire.rest["no_name"] = True
        if response is None:
            wire.rest["no_response"] = True
            return ToolResult(call_id, "", extra=wire.rest)
        if set(response) == {_RESULT} and isinstance(response[_RESULT], str):
            return ToolResult(call_id, response[_RESULT], extra=wire.rest)
        wire.rest["json"] = True
        return ToolResult(call_id, json.dumps(response, ensure_ascii=False), extra=wire.rest)


def _block(wire: WireObject) -> Block:
    """A part that is neither a call nor a response: text, thought, or something carried as it is."""
    thought = wire.rest.get("thought") is True
    text = wire.take("text", str, required=False)
    if text is None:
        return Opaque(wire.data, ORIGIN)
    if thought:
        wire.take_if("thought", True)
        return Thinking(text, extra=wire.rest)
    return Text(text, extra=wire.rest)


# --------------------------------------------------------------------------- writing


def to_genai(conversation: Conversation) -> list[dict[str, JSONValue]]:
    """The contents for ``conversation`` (header excluded: see :func:`system_instruction_to_genai`)."""
    groups: list[tuple[object, list[tuple[int, Item]]]] = []
    for index, item in enumerate(conversation.items):
        key = _group_key(item, index)
        after_results = key is None and item.role == "tool" and bool(groups) and groups[-1][1][-1][1].role == "tool"
        if groups and (groups[-1][0] == key or after_results):
            groups[-1][1].append((index, item))
        else:
            groups.append((key, [(index, item)]))
    unsent = frozenset(b.id for item in conversation.items for b in item.tool_calls if b.extra.get("no_id"))
    return [_write_content(members, unsent) for _, members in groups]


def system_instruction_to_genai(conversation: Conversation) -> dict[str, JSONValue] | str | None:
    """The header's system prompt as a ``system_instruction`` (the string or content it was read from)."""
    system = conversation.header.system
    if not system:
        return None
    if len(system) == 1 and system[0].meta.get("shape") == "str":
        return system[0].text
    return _write_content([(None, item) for item in system], frozenset())


def _group_key(item: Item, index: int) -> object:
    """Items read from one content share its key; anything else is its own content (tool items: see to_genai)."""
    if item.meta.get("origin") == ORIGIN and "content" in item.meta:
        return item.meta["content"]
    return None if item.role == "tool" else ("item", index)


def _write_content(members: Sequence[tuple[int | None, Item]], unsent: frozenset[str]) -> dict[str, JSONValue]:
    """One content; ``unsent`` are the ids of calls written without one (so their responses go without too)."""
    placed: list[tuple[int | None, dict[str, JSONValue]]] = []
    for index, item in members:
        same = item.meta.get("origin") == ORIGIN
        positions = item.meta.get("parts") if same else None
        for k, block in enumerate(item.blocks):
            position = positions[k] if positions is not None and k < len(positions) else None
            placed.append((position, _write_part(block, same, index, f"blocks[{k}]", unsent)))
    if all(position is not None for position, _ in placed) and len({p for p, _ in placed}) == len(placed):
        placed.sort(key=lambda pair: pair[0])  # type: ignore[arg-type, return-value]
    first = members[0][1]
    own = next((item.meta for _, item in members if item.meta.get("origin") == ORIGIN and "content" in item.meta), {})
    parts: list[JSONValue] = [part for _, part in placed]
    content: dict[str, JSONValue] = {} if own.get("no_parts") and not placed else {"parts": parts}
    if not ("role" in own and own["role"] is None):
        content["role"] = "model" if first.role == "assistant" else "user"
    return merged(content, own.get("extra", {}))


def _write_part(block: Block, same: bool, index: int | None, field: str, unsent: frozenset[str]) -> dict[str, JSONValue]:
    own = dict(block.extra) if same else {}
    if isinstance(block, Summary):
        return {"text": block.text}
    if isinstance(block, Text):
        return {"text": block.text, **own}
    if isinstance(block, Thinking):
        return {"text": block.thinking, "thought": True, **own}
    if isinstance(block, ToolCall):
        no_id, no_args = own.pop("no_id", False), own.pop("no_args", False)
        args = None if no_args and not block.arguments else dict(block.arguments)
        call = without_nones(id=None if no_id else block.id, name=block.name, args=args)
        return merged({"function_call": call}, own)
    if isinstance(block, ToolResult):
        if block.call_id in unsent:
            own["no_id"] = True
        return merged({"function_response": _response(block, own)}, own)
    if isinstance(block, Opaque) and block.provider == ORIGIN:
        return dict(block.data)
    raise foreign_block(block, index, field, TARGET)


def _response(result: ToolResult, own: dict[str, JSONValue]) -> dict[str, JSONValue]:
    """A function response; ``own`` (the block's extra, when read from this format) loses the flags it holds."""
    no_id, is_json, no_response = own.pop("no_id", False), own.pop("json", False), own.pop("no_response", False)
    name = None if own.pop("no_name", False) else own.pop("name", result.tool_name)
    text = result.text
    response: dict[str, JSONValue] | None = {_RESULT: text}
    if no_response and not text:
        response = None
    elif is_json:
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            response = parsed
    if result.is_error and response is not None and "error" not in response:
        response = {"error": text}
    return without_nones(id=None if no_id else result.call_id, name=name, response=response)
