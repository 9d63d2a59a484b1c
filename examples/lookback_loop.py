"""The agent looks back: after a compaction it searches its own history for a line it no longer sees.

    python3 -m pip install -e '.[anthropic]'
    export ANTHROPIC_API_KEY=...     # or, offline: contextfold serve-fake --provider anthropic, export ANTHROPIC_BASE_URL=...
    python3 examples/lookback_loop.py [FOLDER]

The loop of ``anthropic_loop.py``, offering the model two more tools,
``search_history`` and ``read_history`` (``context.history_tools()``),
answered by the context (``context.answer_tool_call``). After the first
answer the session is compacted (on a real project the file the model read
leaves the request; a session too small for a summary to pay is kept as it
is), and a follow-up question makes the model look the line up in its own
history, with the call it came from, instead of reading the file again.
"""

from __future__ import annotations

import anthropic
from project_tools import DESCRIPTIONS, SCHEMAS, SYSTEM, TASK, call_tool, model_access

from contextfold import Context, ToolCall, Storage

MODEL = "claude-sonnet-4-6"
TOOLS = [{"name": name, "description": DESCRIPTIONS[name], "input_schema": SCHEMAS[name]} for name in SCHEMAS]
FOLLOW_UP = "Where exactly did that first line come from? Look it up in your history rather than reading again."


def run_tools(context: Context, response: anthropic.types.Message) -> list[dict]:
    """The tool_result blocks answering every tool_use block: the history tools by the context, the rest here."""
    results = []
    for block in response.content:
        if block.type != "tool_use":
            continue
        answered = context.answer_tool_call(ToolCall(block.id, block.name, block.input))
        text = answered.text if answered is not None else call_tool(block.name, block.input)
        results.append({"type": "tool_result", "tool_use_id": block.id, "content": text})
    return results


def ask(client: anthropic.Anthropic, context: Context, question: str) -> str:
    """One user turn: the question in, the model's final text out, its tool calls answered on the way."""
    context.add([{"role": "user", "content": question}])
    while True:
        response = client.messages.create(model=MODEL, max_tokens=8192, **context.prepare())
        context.add_response(response)
        if response.stop_reason != "tool_use":
            return "".join(block.text for block in response.content if block.type == "text")
        context.add([{"role": "user", "content": run_tools(context, response)}])


def main() -> None:
    model_access("anthropic")
    client = anthropic.Anthropic()
    context = Context(MODEL, storage=Storage(transcript=".contextfold"))
    context.add([], system=SYSTEM, tools=TOOLS + context.history_tools())
    print(ask(client, context, TASK))
    context.compact("the files read are summarized; their lines stay searchable")
    print(ask(client, context, FOLLOW_UP))
    print(context.stats())


if __name__ == "__main__":
    main()
