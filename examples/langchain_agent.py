"""A LangChain v1 agent that reviews a Python project, its model calls kept within the window by contextfold.

    python3 -m pip install -e '.[langchain]' langchain-openai
    export OPENAI_API_KEY=...     # or, offline: contextfold serve-fake --provider openai, export OPENAI_BASE_URL=...
    python3 examples/langchain_agent.py [FOLDER]

``ContextfoldMiddleware`` compacts each request on its way to the model; the
checkpointed thread keeps the raw history (pass ``persist=True`` to write the
summaries into it instead). contextfold's events are printed as they happen.
"""

from __future__ import annotations

import sys
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from project_tools import model_access, project_files

from contextfold.integrations.langchain import ContextfoldMiddleware

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
MODEL = "gpt-4.1"


@tool
def list_files() -> str:
    """List the Python files of the project, one path per line."""
    return "\n".join(str(path.relative_to(ROOT)) for path in project_files(ROOT, "*.py")[:300])


@tool
def read_file(path: str) -> str:
    """Read one file of the project."""
    target = (ROOT / path).resolve()
    if not target.is_relative_to(ROOT) or not target.is_file():
        return f"error: {path} is not a file of the project"
    return target.read_text(errors="replace")


model_access("openai")
middleware = ContextfoldMiddleware(MODEL, on_event=lambda e: print(f"  [contextfold] {e.stage} {e.action}: {e.detail}"))
agent = create_agent(
    ChatOpenAI(model=MODEL),
    tools=[list_files, read_file],
    system_prompt="You review Python projects. Read the files you need, then answer.",
    middleware=[middleware],
    checkpointer=InMemorySaver(),
)
config = {"configurable": {"thread_id": "review"}, "recursion_limit": 200}
task = "Read every module of this project and list the three functions most in need of tests, with the reason."
result = agent.invoke({"messages": [{"role": "user", "content": task}]}, config)
print(result["messages"][-1].content)
context = middleware.context(result["messages"])
if context is not None:
    print(context.stats())
