"""A Google ADK agent that reviews a Python project; contextfold writes the summaries of ADK's event compaction.

    python3 -m pip install -e '.[adk]'
    export GOOGLE_API_KEY=...     # or, offline: contextfold serve-fake --provider gemini, export GOOGLE_GEMINI_BASE_URL=...
    python3 examples/adk_agent.py [FOLDER]

ADK checks the prompt size before every model call; past contextfold's
trigger for the model's window it hands the session's events to
``ContextfoldSummarizer``, and appends the compaction event it returns (the
raw events stay in the session; requests read the summary in their place).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from project_tools import model_access, project_files

from contextfold.integrations.adk import ContextfoldSummarizer, compaction_config

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
MODEL = "gemini-2.5-flash"


def list_files() -> str:
    """List the Python files of the project, one path per line."""
    return "\n".join(str(path.relative_to(ROOT)) for path in project_files(ROOT, "*.py")[:300])


def read_file(path: str) -> str:
    """Read one file of the project."""
    target = (ROOT / path).resolve()
    if not target.is_relative_to(ROOT) or not target.is_file():
        return f"error: {path} is not a file of the project"
    return target.read_text(errors="replace")


async def main() -> None:
    model_access("gemini")
    summarizer = ContextfoldSummarizer(MODEL, on_event=lambda e: print(f"  [contextfold] {e.stage} {e.action}: {e.detail}"))
    agent = LlmAgent(
        name="reviewer",
        model=MODEL,
        instruction="You review Python projects. Read the files you need, then answer.",
        tools=[list_files, read_file],
    )
    app = App(name="review", root_agent=agent, events_compaction_config=compaction_config(summarizer))
    sessions = InMemorySessionService()
    runner = Runner(app=app, session_service=sessions)
    session = await sessions.create_session(app_name="review", user_id="me")
    task = "Read every module of this project and list the three functions most in need of tests, with the reason."
    message = types.Content(role="user", parts=[types.Part(text=task)])
    async for event in runner.run_async(user_id="me", session_id=session.id, new_message=message):
        if event.is_final_response() and event.content and event.content.parts:
            print(event.content.parts[0].text)
    print(f"{summarizer.compactions} compaction(s)")


asyncio.run(main())
