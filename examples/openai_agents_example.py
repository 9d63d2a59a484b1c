"""contextfold in the OpenAI Agents SDK: per-call compaction and a compacting session.

    python3 -m pip install -e '.[openai-agents]'
    export OPENAI_API_KEY=...     # or, offline: contextfold serve-fake --provider openai, export OPENAI_BASE_URL=...
    python3 examples/openai_agents_example.py [FOLDER]

``ContextfoldInputFilter`` decides what each model call sees (the runner keeps
every raw item); ``ContextfoldSession`` compacts the stored history after
the run, so a second run on the same session starts from the task, a
summary and the recent tail. The session is kept in ``.contextfold/reader.sqlite``.
"""

from __future__ import annotations

import asyncio

from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool
from project_tools import OUTPUTS, SYSTEM, TASK, list_files, model_access, read_file

from contextfold.integrations.openai_agents import ContextfoldInputFilter, ContextfoldSession

MODEL = "gpt-4.1"


async def main() -> None:
    model_access("openai")
    agent = Agent(name="reader", instructions=SYSTEM, model=MODEL,
                  tools=[function_tool(list_files), function_tool(read_file)])
    compactor = ContextfoldInputFilter(MODEL)
    OUTPUTS.mkdir(exist_ok=True)  # SQLite makes the file, not its folder
    session = ContextfoldSession(SQLiteSession("reader", OUTPUTS / "reader.sqlite"), MODEL)
    run_config = RunConfig(call_model_input_filter=compactor)

    result = await Runner.run(agent, TASK, session=session, run_config=run_config, hooks=compactor.hooks, max_turns=200)
    print(result.final_output)
    print(compactor.mirror(agent.name).context.stats())

    follow_up = await Runner.run(agent, "Which file would you read first to change the behaviour?",
                                 session=session, run_config=run_config, hooks=compactor.hooks)
    print(follow_up.final_output)


if __name__ == "__main__":
    asyncio.run(main())
