"""contextfold in a hand-written agent loop on OpenAI Chat Completions.

    python3 -m pip install -e '.[openai]'
    export OPENAI_API_KEY=...     # or, offline: contextfold serve-fake --provider openai, export OPENAI_BASE_URL=...
    python3 examples/openai_loop.py [FOLDER]

The same loop as ``anthropic_loop.py`` in the Chat Completions format
(``provider="openai"``); for the Responses API use ``provider="responses"``,
``client.responses.create(model=MODEL, **context.prepare())`` and
``function_call_output`` items.
"""

from __future__ import annotations

import json

import openai
from project_tools import DESCRIPTIONS, SCHEMAS, SYSTEM, TASK, call_tool, model_access

from contextfold import Context, Storage

MODEL = "gpt-4.1"
TOOLS = [
    {"type": "function", "function": {"name": name, "description": DESCRIPTIONS[name], "parameters": SCHEMAS[name]}}
    for name in SCHEMAS
]


def run_tools(message: openai.types.chat.ChatCompletionMessage) -> list[dict]:
    """One tool message per tool call of ``message``."""
    return [
        {"role": "tool", "tool_call_id": call.id, "content": call_tool(call.function.name, json.loads(call.function.arguments))}
        for call in message.tool_calls or []
    ]


def main() -> None:
    model_access("openai")
    client = openai.OpenAI()
    context = Context(MODEL, provider="openai", storage=Storage(transcript=".contextfold"))
    context.add([{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}], tools=TOOLS)
    while True:
        request = context.prepare()  # {"messages", "tools"}
        try:
            response = client.chat.completions.create(model=MODEL, **request)
        except openai.BadRequestError as error:
            retry = context.retry_request(error)  # context_length_exceeded: compact once and retry
            if retry is None:
                raise
            response = client.chat.completions.create(model=MODEL, **retry)
        context.add_response(response)
        message = response.choices[0].message
        if not message.tool_calls:
            break
        context.add(run_tools(message))
    print(message.content)
    print(context.stats())


if __name__ == "__main__":
    main()
