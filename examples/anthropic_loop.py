"""contextfold in a hand-written agent loop on the Anthropic Messages API.

    python3 -m pip install -e '.[anthropic]'
    export ANTHROPIC_API_KEY=...     # or, offline: contextfold serve-fake --provider anthropic, export ANTHROPIC_BASE_URL=...
    python3 examples/anthropic_loop.py [FOLDER]

Every request goes through ``context.prepare()``: the history stays inside the
model's window, every tool call keeps its result, the task is never cut. The
transcript of the session is written to ``.contextfold/``.
"""

from __future__ import annotations

import anthropic
from project_tools import DESCRIPTIONS, SCHEMAS, SYSTEM, TASK, call_tool, model_access

from contextfold import Context, Storage

MODEL = "claude-sonnet-4-6"
TOOLS = [{"name": name, "description": DESCRIPTIONS[name], "input_schema": SCHEMAS[name]} for name in SCHEMAS]


def run_tools(response: anthropic.types.Message) -> list[dict]:
    """The tool_result blocks answering every tool_use block of ``response``."""
    return [
        {"type": "tool_result", "tool_use_id": block.id, "content": call_tool(block.name, block.input)}
        for block in response.content
        if block.type == "tool_use"
    ]


def main() -> None:
    model_access("anthropic")
    client = anthropic.Anthropic()
    context = Context(MODEL, storage=Storage(transcript=".contextfold"))  # window and reply limit from the registry
    context.add([{"role": "user", "content": TASK}], system=SYSTEM, tools=TOOLS)
    while True:
        request = context.prepare()  # {"system", "messages", "tools"}, cache breakpoints placed
        try:
            response = client.messages.create(model=MODEL, max_tokens=8192, **request)
        except anthropic.BadRequestError as error:
            retry = context.retry_request(error)  # "prompt is too long": compact once and retry
            if retry is None:
                raise
            response = client.messages.create(model=MODEL, max_tokens=8192, **retry)
        context.add_response(response)  # the reply, and the usage that anchors the count
        if response.stop_reason != "tool_use":
            break
        context.add([{"role": "user", "content": run_tools(response)}])
    print("".join(block.text for block in response.content if block.type == "text"))
    print(context.stats())


if __name__ == "__main__":
    main()
