"""OpenHands software-agent-sdk event lists (a JSON array of events, ``kind`` tells which).

- ``SystemPromptEvent``: ``system_prompt`` and ``tools`` go to the header.
- ``MessageEvent``: ``llm_message`` (role and text parts) plus ``extended_content``
  parts; a user or an assistant item.
- ``ActionEvent``: one tool call (``tool_call{id, name, arguments}``) with the
  model's ``thought`` (parts, or a string) and ``reasoning_content``. Consecutive actions
  sharing ``llm_response_id`` are the parallel calls of one response and make
  one assistant item (``meta["response_id"]``).
- ``ObservationEvent``: the result, paired by ``tool_call_id``; the text is
  ``observation.output`` (or, when that is absent or empty, its ``content``
  parts, as newer SDKs write it), ``is_error`` when ``observation.error`` is
  set (the error text is appended) or ``observation.is_error`` is true, a
  ``screenshot_data`` image is kept as an image block.
- ``AgentErrorEvent`` / ``UserRejectObservation``: an error result for the call.

Bookkeeping events (:data:`BOOKKEEPING`: state updates, pauses, condensation
requests and markers, streamed tokens, completion logs, hook runs) are counted
in ``meta["skipped"]``; a kind
not listed here (a newer SDK) is skipped and counted in
``meta["unknown_records"]`` with a warning, never a refusal of the file, and
is no obstacle to detection while a known kind follows it; if it names an
open call (``tool_call_id``) it is also that call's result.
Timestamps are ISO without zone, read as UTC.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..conversation import Block, Conversation, Image, JSONObject, Opaque, Text, Thinking, ToolCall
from ._common import ConversationBuilder, Source, call_arguments, field_of, kind_of, text_blocks, tool_specs, unix_time

FORMAT = "openhands"
EVENT_KINDS = frozenset(
    {"SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent", "AgentErrorEvent", "UserRejectObservation"}
)
BOOKKEEPING = frozenset(
    {"ConversationStateUpdateEvent", "PauseEvent", "Condensation", "CondensationRequest", "CondensationSummaryEvent",
     "InterruptEvent", "TokenEvent", "StreamingDeltaEvent", "LLMCompletionLogEvent", "HookExecutionEvent",
     "ConversationErrorEvent"}
)
"""Events beside the chat: state, pauses and interrupts, condensation markers, streamed tokens and deltas, raw
completion logs, hook runs, a conversation's own error (no call's outcome)."""


LEADING_EVENTS = 10
"""How far detection looks for a known kind past leading events of kinds not known yet."""


def matches(source: Source) -> bool:
    """An array of events (a string ``kind`` and a ``source``), one of the leading ones of a known kind."""
    doc = source.document
    first = doc[0] if isinstance(doc, list) and doc else None
    if not isinstance(first, dict) or not isinstance(first.get("kind"), str) or "source" not in first:
        return False
    return any(isinstance(event, dict) and _known(event.get("kind")) for event in doc[:LEADING_EVENTS])


def _known(kind: object) -> bool:
    return isinstance(kind, str) and kind in EVENT_KINDS | BOOKKEEPING


def load(source: Source) -> list[Conversation]:
    builder = ConversationBuilder(source, f"{source.name}:0", {"format": FORMAT})
    for index, event in enumerate(source.require_document(list)):
        where = f"$[{index}]"
        if not isinstance(event, Mapping):
            raise source.error(where, "an event must be an object")
        kind = kind_of(source, event, "kind", where)
        timestamp = unix_time(event.get("timestamp"))
        if kind == "SystemPromptEvent":
            prompt = event.get("system_prompt")
            builder.add_system(prompt.get("text", "") if isinstance(prompt, Mapping) else str(prompt or ""), timestamp)
            builder.tools = tool_specs(event.get("tools"))
        elif kind == "MessageEvent":
            _add_message(builder, event, where, timestamp)
        elif kind == "ActionEvent":
            _add_action(builder, event, where, timestamp)
        elif kind == "ObservationEvent":
            _add_observation(builder, event, where, timestamp)
        elif kind in ("AgentErrorEvent", "UserRejectObservation"):
            reason = event.get("error") or event.get("rejection_reason") or kind
            call_id = field_of(source, event, "tool_call_id", str, where)
            builder.add_result(call_id, str(reason), where, True, timestamp, {"event": kind})
        elif kind in BOOKKEEPING:
            builder.skip(kind)
        else:
            builder.skip_unknown(kind or "(no kind)")
            _answer_from_unknown(builder, event, where, timestamp)
    return [builder.build()]


def _answer_from_unknown(builder: ConversationBuilder, event: JSONObject, where: str, timestamp: float | None) -> None:
    """An event of a kind not known yet that names an open call (``tool_call_id``) is its result: read as an
    observation when it carries one, else its ``error`` or ``reason`` as an error; the call is not left unanswered
    for a newer SDK's name of an outcome."""
    call_id = event.get("tool_call_id")
    if not isinstance(call_id, str) or call_id not in builder.open_calls():
        return
    if isinstance(event.get("observation"), Mapping):
        _add_observation(builder, event, where, timestamp)
        return
    reason = event.get("error") or event.get("reason") or event.get("kind")
    builder.add_result(call_id, str(reason), where, True, timestamp, {"event": str(event.get("kind"))})


def _add_message(builder: ConversationBuilder, event: JSONObject, where: str, timestamp: float | None) -> None:
    message = field_of(builder.source, event, "llm_message", Mapping, where)
    blocks = _content(builder, message.get("content"), f"{where}.llm_message.content")
    blocks += _content(builder, event.get("extended_content") or [], f"{where}.extended_content")
    if message.get("role") == "assistant":
        builder.add_assistant(blocks, where, timestamp)
    else:
        builder.add_user(blocks, timestamp)


def _add_action(builder: ConversationBuilder, event: JSONObject, where: str, timestamp: float | None) -> None:
    call = field_of(builder.source, event, "tool_call", Mapping, where)
    call_id = field_of(builder.source, call, "id", str, f"{where}.tool_call")
    name = field_of(builder.source, call, "name", str, f"{where}.tool_call")
    arguments, raw = call_arguments(call.get("arguments"))
    blocks: list[Block] = []
    reasoning = event.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        blocks.append(Thinking(reasoning))
    thought = event.get("thought")
    for part in thought if isinstance(thought, list) else [{"text": thought}]:
        text = part.get("text") if isinstance(part, Mapping) else None
        if isinstance(text, str):
            blocks.extend(text_blocks(text))
    blocks.append(ToolCall(call_id, name, arguments, raw))
    response_id = event.get("llm_response_id")
    builder.add_assistant(blocks, where, timestamp, response_id=response_id if isinstance(response_id, str) else None)


def _add_observation(
    builder: ConversationBuilder, event: JSONObject, where: str, timestamp: float | None
) -> None:
    call_id = field_of(builder.source, event, "tool_call_id", str, where)
    observation = field_of(builder.source, event, "observation", Mapping, where)
    output = observation.get("output")
    if isinstance(output, str) and output:
        blocks: list[Block] = text_blocks(output)
    else:
        blocks = _content(builder, observation.get("content"), f"{where}.observation.content")
    error = observation.get("error")
    if error and error is not True:
        blocks.append(Text(str(error)))
    error = error or observation.get("is_error") is True
    screenshot = observation.get("screenshot_data")
    if isinstance(screenshot, str) and screenshot:
        blocks.append(Image(data=screenshot, media_type="image/png"))
    only_text = all(isinstance(b, Text) for b in blocks)
    content = "\n".join(b.text for b in blocks if isinstance(b, Text)) if only_text else tuple(blocks)
    builder.add_result(
        call_id,
        content,
        where,
        True if error else None,
        timestamp,
        {"observation": observation["kind"]} if isinstance(observation.get("kind"), str) else {},
    )


def _content(builder: ConversationBuilder, content: object, where: str) -> list[Block]:
    """OpenHands content: a string, or its own parts (``TextContent``, ``ImageContent`` with ``image_urls``)."""
    if content is None or isinstance(content, str):
        return text_blocks(content)
    if not isinstance(content, list) or not all(isinstance(part, Mapping) for part in content):
        raise builder.source.error(where, "content must be a string or a list of parts")
    blocks: list[Block] = []
    for part in content:
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            blocks.extend(text_blocks(part["text"]))
        elif part.get("type") == "image" and isinstance(part.get("image_urls"), list):
            blocks.extend(Image(url=url) for url in part["image_urls"] if isinstance(url, str))
        else:
            blocks.append(Opaque(part))
    return blocks
