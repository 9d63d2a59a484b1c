"""A streamed Chat Completion put back together: its chunks' deltas joined into the completion they stand for."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ...conversation import JSONObject, JSONValue
from ...errors import InvalidContent
from .._reading import as_list, as_object, shown, type_of
from ..base import as_data


def completion_from_chunks(chunks: Iterable[object]) -> dict[str, JSONValue]:
    """A streamed completion (SDK chunks or their dicts) put back together as the completion's dict.

    The deltas' text, their tool calls (fragments joined by their ``index``:
    the id and name as first given, the argument text in order), the finish
    reason and the usage chunk are kept, so a streamed reply that calls tools
    reads as the same reply unstreamed
    (:func:`~.provider.reply_from_chunks`). A malformed chunk is an
    :class:`InvalidContent` whose index is the chunk's position in the stream
    and whose field is the path inside it.
    """
    if isinstance(chunks, (str, bytes, Mapping)) or not isinstance(chunks, Iterable):
        raise InvalidContent(None, "chunks", f"expected a stream of chunks, got {type(chunks).__name__}")
    parts: list[str] = []
    calls: dict[int, dict[str, JSONValue]] = {}  # the tool calls so far, by their index in the stream
    finish: str | None = None
    usage: JSONObject | None = None
    for number, chunk in enumerate(chunks):
        data = as_object(as_data(chunk) if hasattr(chunk, "model_dump") else chunk, number, "chunk")
        for position, raw in enumerate(as_list(data.get("choices") or (), number, "choices")):
            choice = as_object(raw, number, f"choices[{position}]")
            field = f"choices[{position}].delta"
            delta = as_object(choice.get("delta") or {}, number, field)
            parts.append(type_of(delta, number, field, "content") or "")
            for slot, fragment in enumerate(as_list(delta.get("tool_calls") or (), number, f"{field}.tool_calls")):
                _add_call_fragment(calls, fragment, number, f"{field}.tool_calls[{slot}]")
            finish = type_of(choice, number, f"choices[{position}]", "finish_reason") or finish
        usage = as_object(data["usage"], number, "usage") if data.get("usage") else usage
    message = {"role": "assistant", "content": "".join(parts) or (None if calls else ""),
               **({"tool_calls": [calls[index] for index in sorted(calls)]} if calls else {})}
    return {"choices": [{"message": message, "finish_reason": finish}], **({"usage": usage} if usage else {})}


def _add_call_fragment(calls: dict[int, dict[str, Any]], raw: object, number: int, field: str) -> None:
    """One streamed piece of a tool call folded into ``calls``: the first fragment of an index gives its id
    and name, every fragment may add argument text."""
    fragment = as_object(raw, number, field)
    index = fragment.get("index", 0)
    if not isinstance(index, int) or isinstance(index, bool):
        raise InvalidContent(number, f"{field}.index", f"expected an integer, got {shown(index)}")
    function = as_object(fragment.get("function") or {}, number, f"{field}.function")
    call = calls.setdefault(index, {"id": None, "type": "function", "function": {"name": None, "arguments": ""}})
    call["id"] = call["id"] or type_of(fragment, number, field, "id")
    call["function"]["name"] = call["function"]["name"] or type_of(function, number, f"{field}.function", "name")
    call["function"]["arguments"] += type_of(function, number, f"{field}.function", "arguments") or ""
