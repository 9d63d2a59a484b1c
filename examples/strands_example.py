"""contextfold in Strands Agents: a ConversationManager, with a file session that restores the same history.

    python3 -m pip install -e '.[strands]'
    export OPENAI_API_KEY=...     # or, offline: contextfold serve-fake --provider openai, export OPENAI_BASE_URL=...
    python3 examples/strands_example.py [FOLDER]

The manager compacts ``agent.messages`` before each model call, so a long tool
loop inside one invocation stays inside the window; its state tells the
session manager which stored messages the compacted view stands for. The
session is kept in ``.contextfold/strands-sessions/``.
"""

from __future__ import annotations

import os

from project_tools import OUTPUTS, SYSTEM, TASK, list_files, model_access, read_file
from strands import Agent, tool
from strands.models.openai import OpenAIModel
from strands.session.file_session_manager import FileSessionManager

from contextfold.integrations.strands import ContextfoldConversationManager

MODEL = "gpt-4.1"


def main() -> None:
    model_access("openai")
    model = OpenAIModel(client_args={"api_key": os.environ["OPENAI_API_KEY"]}, model_id=MODEL)
    agent = Agent(
        model=model,
        system_prompt=SYSTEM,
        tools=[tool(list_files), tool(read_file)],
        conversation_manager=ContextfoldConversationManager(MODEL),
        session_manager=FileSessionManager(session_id="reader", storage_dir=str(OUTPUTS / "strands-sessions")),
    )
    print(agent(TASK))
    print(agent.conversation_manager.context.stats())
    print(agent("Which file would you read first to change the behaviour?"))


if __name__ == "__main__":
    main()
