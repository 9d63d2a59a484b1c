"""contextfold in pydantic-ai: a history processor as the ProcessHistory capability.

    python3 -m pip install -e '.[pydantic-ai]'
    export OPENAI_API_KEY=...     # or, offline: contextfold serve-fake --provider openai, export OPENAI_BASE_URL=...
    python3 examples/pydantic_ai_example.py [FOLDER]

pydantic-ai makes the processed messages the run's history, so
``result.all_messages()`` is contextfold's compacted view, ready to be the
next run's ``message_history``.
"""

from __future__ import annotations

from project_tools import SYSTEM, TASK, list_files, model_access, read_file
from pydantic_ai import Agent, UsageLimits

from contextfold.integrations.pydantic_ai import ContextfoldHistory

MODEL = "gpt-4.1"


def main() -> None:
    model_access("openai")
    history = ContextfoldHistory(MODEL)
    agent = Agent(f"openai:{MODEL}", instructions=SYSTEM, tools=[list_files, read_file],
                  capabilities=[history.capability()])
    result = agent.run_sync(TASK, usage_limits=UsageLimits(request_limit=200))
    print(result.output)
    print(history.context.stats())

    follow_up = agent.run_sync("Which file would you read first to change the behaviour?",
                               message_history=result.all_messages())
    print(follow_up.output)


if __name__ == "__main__":
    main()
