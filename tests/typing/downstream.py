"""A downstream project's use of contextfold, type-checked strictly against the installed package.

``tests/test_typing.py`` runs ``mypy --strict`` on this file: every name it uses must be
typed well enough that a user's own checker sees what it is (not ``Any``). It is also run
as a script by that test, so what it claims also holds at run time.
"""

from __future__ import annotations

from dataclasses import replace

from contextfold import (
    DEFAULT_PIPELINE,
    Block,
    Budget,
    Context,
    Conversation,
    Event,
    Header,
    InvalidPolicy,
    Item,
    Pipeline,
    Policy,
    Summary,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
)


def conversation() -> Conversation:
    """A task, one tool call and its result, built from the model's own types."""
    call = ToolCall("call_1", "read_file", {"path": "src/app.py"})
    items = [
        Item("user", (Text("Fix the failing test in src/app.py"),)),
        Item("assistant", (Text("Reading the file."), call)),
        Item("tool", (ToolResult(call.id, "def total(x):\n    return x + 1\n"),)),
    ]
    header = Header(system=(Item("system", (Text("You are a coding agent."),)),),
                    tools=(ToolSpec("read_file", "read a file", {"type": "object"}),))
    return Conversation(items, header)


def describe(block: Block) -> str:
    """Narrowing on ``kind`` (a Literal per block type) reaches each block's own fields."""
    if block.kind == "text":
        return block.text
    if block.kind == "tool_call":
        return f"{block.name}({dict(block.arguments)})"
    if block.kind == "tool_result":
        return f"{block.call_id}: {block.text}"
    if isinstance(block, Summary):
        return block.body
    return block.kind


def shorten_outputs(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
    """A user stage with the documented signature: new tool outputs over 100 characters are cut."""
    items = list(conversation.items)
    events: list[Event] = []
    for index in range(budget.new_from, len(items)):
        result = items[index].tool_result
        if result is not None and isinstance(result.content, str) and len(result.content) > 100:
            items[index] = items[index].with_blocks([replace(result, content=result.content[:100])])
            events.append(Event("shorten", "cut", (items[index].id,)))
    return conversation.with_items(items), events


def run() -> list[str]:
    pipeline: Pipeline = DEFAULT_PIPELINE.add(shorten_outputs, after="truncate").remove("snip")
    context = Context(window_tokens=50_000, policy=Policy(trigger_fraction=0.8), pipeline=pipeline)
    stored: list[Item] = context.add(conversation().items)
    request = context.prepare()
    messages: object = request["messages"]
    context.record_usage(Usage(prompt_tokens=1_200, output_tokens=80))
    try:
        Policy(trigger_tokens=10_000, trigger_fraction=0.5)
    except InvalidPolicy as error:
        assert error.field == "trigger_fraction"
    view: Conversation = context.view()
    lines = [describe(block) for item in view.items for block in item.blocks]
    assert isinstance(messages, list) and len(stored) == 3
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
