"""The commands of an agent that calls no tools, read as calls: the block a reply runs, and the output answering it.

mini-swe-agent (and agents built like it) end each reply with one fenced
``bash`` block, which the harness runs; the next user message is its output
(``<returncode>1</returncode><output>…``), or the notice that it timed out.
Read as a call and its result, such a run shows a summary what it shows for
an agent that calls tools: the files its commands changed, the command that
failed last with its frame, the last test run. A reply with no block or with
more than one is answered by a format error, not an output: it ran nothing.
"""

from __future__ import annotations

import re

from ..conversation import Item, ToolCall, ToolResult
from ..readings import Key
from .harness import Speaker
from .speaker import agent_words, reading_of

TEXT_TOOL = "bash"
"""The tool a text-mode reply's command is read as a call of."""
_COMMAND_BLOCK = re.compile(r"^```(?:bash|sh|shell)[ \t]*\n(.*?)\n```[ \t]*$", re.DOTALL | re.MULTILINE)
_ANSWERS = frozenset({"timeout"})
"""Harness rules (besides an observation) whose message answers the command: it timed out and was killed."""
_REJECTS = frozenset({"format error"})
"""Harness rules whose message answers a reply that ran nothing (no block or more than one; no tool call)."""
_CALL: Key[ToolCall | None] = Key("text_call")
_RESULT: Key[Item] = Key("text_result")


def text_call(item: Item) -> ToolCall | None:
    """The command an assistant ``item`` of a text-mode agent runs, as a call of :data:`TEXT_TOOL` (its id made
    from the item's); None for a reply that calls tools, or holds no fenced shell block or more than one."""
    if item.role != "assistant" or item.tool_calls:
        return None
    return item.readings.setdefault(_CALL, lambda: _call(item))


def _call(item: Item) -> ToolCall | None:
    blocks = _COMMAND_BLOCK.findall(agent_words(item))
    return ToolCall(f"text-{item.id}", TEXT_TOOL, {"command": blocks[0].strip()}) if len(blocks) == 1 else None


def answers_reply(item: Item) -> bool:
    """Whether the user ``item`` is what a text-mode harness sent back for the command of the reply before it: its
    output, or the notice that it timed out (not the person, nor a notice of the harness's own)."""
    reading = reading_of(item)
    return reading.speaker is Speaker.OBSERVATION or (reading.rule is not None and reading.rule.name in _ANSWERS)


def rejects_reply(item: Item) -> bool:
    """Whether the user ``item`` is a harness's notice that the reply before it ran nothing (a format error:
    mini-swe-agent's "provide EXACTLY ONE action", live-swe-agent's "No tool calls found"): the loop goes on, no
    turn ends or begins there."""
    rule = reading_of(item).rule
    return rule is not None and rule.name in _REJECTS


def text_result(item: Item, call: ToolCall) -> Item | None:
    """The user ``item`` as the tool item answering ``call`` (made once per item: what is read of it is kept), when
    it is the output a text-mode harness sent back (or its notice that the command timed out); None otherwise."""
    if not answers_reply(item):
        return None
    known = item.readings.get(_RESULT)
    result = known.tool_result if known is not None else None
    if known is not None and result is not None and result.call_id == call.id:
        return known
    answer = ToolResult(call.id, item.text, tool_name=call.name, arguments=dict(call.arguments))
    return item.readings.set(_RESULT, Item("tool", (answer,), id=item.id, timestamp=item.timestamp,
                                           provenance=item.provenance))
