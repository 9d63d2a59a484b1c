"""The LangChain and ADK examples (``examples/`` and the README's) run as written, against the scripted server.

Each runs in its own process with the SDKs pointed at 127.0.0.1 through
their environment variables (``OPENAI_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL``)
and a scripted model that reads a file with the script's own tools, then
answers: proof that the code has no undefined name and drives the real
framework to the end.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_model_server import Call, ScriptedModel, Seen, Turn
from support import require

ROOT = Path(__file__).resolve().parents[2]
ANSWER = "The project is fine."


def _tools(seen: Seen) -> set[str]:
    if seen.provider == "gemini":
        return {d["name"] for tool in seen.body.get("tools", []) for d in tool.get("functionDeclarations", [])}
    return {tool["function"]["name"] for tool in seen.body.get("tools", [])}


def script(seen: Seen) -> Turn:
    """List the files when the script can, read one, answer."""
    plan = [Call("list_files")] if "list_files" in _tools(seen) else []
    plan.append(Call("read_file", {"path": "README.md"}))
    if seen.step < len(plan):
        return Turn("", (plan[seen.step],))
    return Turn(ANSWER)


@pytest.fixture
def server() -> Iterator[ScriptedModel]:
    with ScriptedModel(script) as model:
        yield model


def readme_block(heading: str) -> str:
    """The first Python block after ``heading`` in the README."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index(f"\n{heading}\n"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


def run(code: str, server: ScriptedModel, folder: Path) -> str:
    (folder / "README.md").write_text("# demo\nA tiny project.\n")
    (folder / "app.py").write_text("def main():\n    return 1\n")
    (folder / "script.py").write_text(code)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": server.base_url("openai"),
        "GOOGLE_API_KEY": "test", "GOOGLE_GEMINI_BASE_URL": server.base_url("gemini"),
    }
    done = subprocess.run([sys.executable, "script.py", str(folder)], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize(
    ("framework", "extra", "code"),
    [
        ("langchain.agents", "langchain", lambda: (ROOT / "examples" / "langchain_agent.py").read_text()),
        ("langchain.agents", "langchain", lambda: readme_block("### LangChain v1")),
        ("google.adk", "adk", lambda: (ROOT / "examples" / "adk_agent.py").read_text()),
        ("google.adk", "adk", lambda: readme_block("### Google ADK")),
    ],
    ids=["langchain-example", "langchain-readme", "adk-example", "adk-readme"],
)
def test_example_runs_to_the_answer(server: ScriptedModel, tmp_path: Path, framework: str, extra: str, code) -> None:
    require(framework, extra)
    if extra == "langchain":
        require("langchain_openai", "langchain")
    out = run(code(), server, tmp_path)
    assert ANSWER in out
    assert server.problems == []
    assert any(r.startswith("# demo") for e in server.exchanges for r in e.results)  # the file was read and sent
