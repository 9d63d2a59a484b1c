"""The adapters against the APIs' own words, not against each other's inverse.

A round trip (read, write, compare) cannot see a key spelt wrong the same way
in both directions. Here the expectations come from outside the adapters:
requests written out by hand from each API's documentation, conversations
built in code and the exact request each API expects for them, and the
request parameter types the official SDKs publish (every key an adapter
writes for a conversation built in code must be one the SDK declares).
"""

from __future__ import annotations

import typing
from functools import cache
from typing import Any

import anthropic.types as anthropic_types
import openai.types.chat as chat_types
import pytest
from anthropic.types import message_create_params as anthropic_create_params
from openai.types.responses import response_input_param as responses_types
from strategies import conversations
from sweeps import Sweep

from contextfold import Conversation, Header, Item, Text, Thinking, ToolCall, ToolResult, ToolSpec
from contextfold.adapters import from_anthropic, to_anthropic
from contextfold.adapters.openai_chat import from_openai, to_openai
from contextfold.adapters.openai_responses import from_responses, to_responses

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
HEADER = Header(system=(Item("system", (Text("Be brief."),)),), tools=(ToolSpec("read_file", "Read a file", SCHEMA),))


def built_in_code(thinking: Thinking | None = None) -> Conversation:
    """Two parallel calls, one failing, and a final answer: a conversation with no wire origin."""
    opening = (thinking,) if thinking is not None else ()
    return Conversation([
        Item("user", (Text("Fix tax.py"),)),
        Item("assistant", (*opening, Text("Reading."), ToolCall("call_a", "read_file", {"path": "tax.py"}),
                           ToolCall("call_b", "read_file", {"path": "gone.py"}))),
        Item("tool", (ToolResult("call_a", "x = 1"),)),
        Item("tool", (ToolResult("call_b", "No such file", is_error=True),)),
        Item("assistant", (Text("Done."),)),
    ], HEADER)


def test_anthropic_request_is_the_documented_messages_shape() -> None:
    assert to_anthropic(built_in_code(Thinking("look first", signature="sig1"))) == {
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": "Fix tax.py"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "look first", "signature": "sig1"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "call_a", "name": "read_file", "input": {"path": "tax.py"}},
                {"type": "tool_use", "id": "call_b", "name": "read_file", "input": {"path": "gone.py"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_a", "content": "x = 1"},
                {"type": "tool_result", "tool_use_id": "call_b", "content": "No such file", "is_error": True},
            ]},
            {"role": "assistant", "content": "Done."},
        ],
        "tools": [{"name": "read_file", "description": "Read a file", "input_schema": SCHEMA}],
    }


def test_chat_completions_request_is_the_documented_messages_shape() -> None:
    assert to_openai(built_in_code()) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Fix tax.py"},
        {"role": "assistant", "content": "Reading.", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "tax.py"}'}},
            {"id": "call_b", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "gone.py"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_a", "content": "x = 1"},
        {"role": "tool", "tool_call_id": "call_b", "content": "[tool error] No such file"},
        {"role": "assistant", "content": "Done."},
    ]


def test_responses_input_is_the_documented_items_shape() -> None:
    assert to_responses(built_in_code()) == [
        {"type": "message", "role": "system", "content": "Be brief."},
        {"type": "message", "role": "user", "content": "Fix tax.py"},
        {"type": "message", "role": "assistant", "content": "Reading."},
        {"type": "function_call", "call_id": "call_a", "name": "read_file", "arguments": '{"path": "tax.py"}'},
        {"type": "function_call", "call_id": "call_b", "name": "read_file", "arguments": '{"path": "gone.py"}'},
        {"type": "function_call_output", "call_id": "call_a", "output": "x = 1"},
        {"type": "function_call_output", "call_id": "call_b", "output": "[tool error] No such file"},
        {"type": "message", "role": "assistant", "content": "Done."},
    ]


def neutral(conversation: Conversation) -> list[tuple[str, Any]]:
    """What the model holds, block by block, in plain values (no wire extras)."""
    out: list[tuple[str, Any]] = []
    for item in conversation.items:
        for block in item.blocks:
            if isinstance(block, Text):
                out.append((item.role, block.text))
            elif isinstance(block, Thinking):
                out.append(("thinking", (block.thinking, block.signature)))
            elif isinstance(block, ToolCall):
                out.append(("call", (block.id, block.name, block.arguments)))
            elif isinstance(block, ToolResult):
                out.append(("result", (block.call_id, block.text, bool(block.is_error))))
    return out


EXPECTED = [
    ("user", "Fix tax.py"),
    ("thinking", ("look first", "sig1")),
    ("assistant", "Reading."),
    ("call", ("call_a", "read_file", {"path": "tax.py"})),
    ("call", ("call_b", "read_file", {"path": "gone.py"})),
    ("result", ("call_a", "x = 1", False)),
    ("result", ("call_b", "No such file", True)),
    ("assistant", "Done."),
]


def test_a_hand_written_anthropic_request_reads_as_the_api_means_it() -> None:
    conversation = from_anthropic([
        {"role": "user", "content": "Fix tax.py"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "look first", "signature": "sig1"},
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "call_a", "name": "read_file", "input": {"path": "tax.py"}},
            {"type": "tool_use", "id": "call_b", "name": "read_file", "input": {"path": "gone.py"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_a", "content": [{"type": "text", "text": "x = 1"}]},
            {"type": "tool_result", "tool_use_id": "call_b", "content": "No such file", "is_error": True},
        ]},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ], system="Be brief.", tools=[{"name": "read_file", "description": "Read a file", "input_schema": SCHEMA}])
    assert neutral(conversation) == EXPECTED
    assert conversation.header.system_text == "Be brief." and conversation.header.tools[0].parameters == SCHEMA


def test_a_hand_written_chat_completions_request_reads_as_the_api_means_it() -> None:
    conversation = from_openai([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Fix tax.py"},
        {"role": "assistant", "content": "Reading.", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "tax.py"}'}},
            {"id": "call_b", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"gone.py"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_a", "content": "x = 1"},
        {"role": "tool", "tool_call_id": "call_b", "content": [{"type": "text", "text": "No such file"}]},
        {"role": "assistant", "content": "Done."},
    ])
    expected = [entry for entry in EXPECTED if entry[0] != "thinking"]
    expected[5] = ("result", ("call_b", "No such file", False))  # Chat Completions has no error flag
    assert neutral(conversation) == expected and conversation.header.system_text == "Be brief."


def test_a_hand_written_responses_input_reads_as_the_api_means_it() -> None:
    conversation = from_responses([
        {"type": "message", "role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "input_text", "text": "Fix tax.py"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "look first"}],
         "encrypted_content": "sig1"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]},
        {"type": "function_call", "call_id": "call_a", "name": "read_file", "arguments": '{"path": "tax.py"}'},
        {"type": "function_call", "call_id": "call_b", "name": "read_file", "arguments": '{"path": "gone.py"}'},
        {"type": "function_call_output", "call_id": "call_a", "output": "x = 1"},
        {"type": "function_call_output", "call_id": "call_b", "output": "No such file"},
        {"type": "message", "role": "assistant", "content": "Done."},
    ])
    expected = list(EXPECTED)
    expected[6] = ("result", ("call_b", "No such file", False))  # Responses has no error flag either
    assert neutral(conversation) == expected and conversation.header.system_text == "Be brief."


# ---------------------------------------------------------------------- the SDKs' declared keys


@cache  # resolving an SDK type's hints takes milliseconds; the property asks for the same few types thousands of times
def declared(typed_dict: Any) -> frozenset[str]:
    """The keys a request parameter type of an SDK declares (of any member, for a union)."""
    members = typing.get_args(typed_dict)
    if members:
        return frozenset().union(*map(declared, members))
    return frozenset(typing.get_type_hints(typed_dict))


ANTHROPIC_BLOCKS = {
    "text": anthropic_types.TextBlockParam, "image": anthropic_types.ImageBlockParam,
    "tool_use": anthropic_types.ToolUseBlockParam, "tool_result": anthropic_types.ToolResultBlockParam,
    "thinking": anthropic_types.ThinkingBlockParam, "redacted_thinking": anthropic_types.RedactedThinkingBlockParam,
}
CHAT_MESSAGES = {
    "system": chat_types.ChatCompletionSystemMessageParam, "user": chat_types.ChatCompletionUserMessageParam,
    "assistant": chat_types.ChatCompletionAssistantMessageParam, "tool": chat_types.ChatCompletionToolMessageParam,
}
CHAT_EXTENSIONS = {"reasoning_content"}
"""Keys beyond the OpenAI SDK's that the adapter writes on purpose (the reasoning of DeepSeek-style servers)."""
RESPONSES_ITEMS = {
    "message": responses_types.EasyInputMessageParam, "function_call": responses_types.ResponseFunctionToolCallParam,
    "function_call_output": responses_types.FunctionCallOutput, "reasoning": responses_types.ResponseReasoningItemParam,
}


def undeclared(data: dict[str, Any], declared_keys: frozenset[str], where: str) -> list[str]:
    return [f"{where}: {key!r}" for key in data if key not in declared_keys]


@pytest.mark.filterwarnings("ignore::contextfold.LossyConversion")
def every_key_written_for_a_conversation_built_in_code_is_one_the_sdks_declare(conversation: Conversation) -> None:
    wrong: list[str] = []
    request = to_anthropic(conversation)
    wrong += undeclared(request, declared(anthropic_create_params.MessageCreateParamsBase), "anthropic request")
    for m, message in enumerate(request["messages"]):
        wrong += undeclared(message, declared(anthropic_types.MessageParam), f"anthropic messages[{m}]")
        for block in message["content"] if isinstance(message["content"], list) else []:
            wrong += undeclared(block, declared(ANTHROPIC_BLOCKS[block["type"]]), f"anthropic {block['type']}")
            for part in block.get("content") if isinstance(block.get("content"), list) else []:
                wrong += undeclared(part, declared(ANTHROPIC_BLOCKS[part["type"]]), f"anthropic result {part['type']}")
    for m, message in enumerate(to_openai(conversation)):
        keys = declared(CHAT_MESSAGES[message["role"]]) | CHAT_EXTENSIONS
        wrong += undeclared(message, keys, f"chat messages[{m}]")
        for call in message.get("tool_calls", []):
            wrong += undeclared(call, declared(chat_types.ChatCompletionMessageFunctionToolCallParam), "chat tool call")
    for k, item in enumerate(to_responses(conversation)):
        wrong += undeclared(item, declared(RESPONSES_ITEMS[item.get("type", "message")]), f"responses input[{k}]")
    assert wrong == []


(test_every_key_written_for_a_conversation_built_in_code_is_one_the_sdks_declare,
 test_every_key_written_for_a_conversation_built_in_code_is_one_the_sdks_declare_sweep) = Sweep(main=25, full=100).tests(
    every_key_written_for_a_conversation_built_in_code_is_one_the_sdks_declare, conversations())
