"""Every script in ``examples/`` and every Python block of the README's loop and framework sections runs as written.

Each runs in a subprocess whose SDK clients find a scripted model through
the environment (base URLs, keys, no trace export), in a folder holding a
README.md: the model reads it with the script's ``read_file`` tool, then
answers (a follow-up run on the same history gets the answer at once). Every
request is checked by the server; the script must print the answer and exit 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import require, run_script

from contextfold.testing.scripted import Call, ScriptedModel, Seen, Turn

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
ANSWER = "A library that keeps agents inside their context window."
SCRIPTS = {  # examples/ script -> (module it needs, the extra that installs it)
    "anthropic_loop.py": ("anthropic", "anthropic"),
    "openai_loop.py": ("openai", "openai"),
    "openai_agents_example.py": ("agents", "openai-agents"),
    "pydantic_ai_example.py": ("pydantic_ai", "pydantic-ai"),
    "strands_example.py": ("strands", "strands"),
    "langchain_agent.py": ("langchain_openai", "langchain"),
    "adk_agent.py": ("google.adk", "adk"),
}
SECTIONS = {  # README heading -> the same
    "## In an agent loop": ("anthropic", "anthropic"),
    "### OpenAI Agents SDK": ("agents", "openai-agents"),
    "### pydantic-ai": ("pydantic_ai", "pydantic-ai"),
    "### Strands Agents": ("strands", "strands"),
    "### LangChain v1": ("langchain_openai", "langchain"),
    "### Google ADK": ("google.adk", "adk"),
}


def _script(seen: Seen) -> Turn:
    if seen.step == 0:
        return Turn("", (Call("read_file", {"path": "README.md"}),))
    if seen.step == 1:
        assert "keeps agents small" in seen.results[0], seen.results
    return Turn(ANSWER)


@pytest.fixture
def server() -> Iterator[ScriptedModel]:
    with ScriptedModel(_script) as model:
        yield model


def _project(folder: Path) -> Path:
    (folder / "README.md").write_text("# demo\n\nThis project keeps agents small.\n")
    return folder


def _assert_answered(run: object, server: ScriptedModel) -> None:
    assert run.returncode == 0, run.stderr[-3000:]
    assert server.problems == []
    assert ANSWER in run.stdout


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_example_script_runs(script: str, server: ScriptedModel, tmp_path: Path) -> None:
    require(*SCRIPTS[script])
    _assert_answered(run_script(ROOT / "examples" / script, server, tmp_path, str(_project(tmp_path))), server)


@pytest.mark.parametrize("heading", list(SECTIONS))
def test_readme_example_runs(heading: str, server: ScriptedModel, tmp_path: Path) -> None:
    require(*SECTIONS[heading])
    text = README.read_text()
    block = re.search(r"```python\n(.*?)```", text[text.index(f"\n{heading}\n"):], re.DOTALL).group(1)
    (tmp_path / "example.py").write_text(block)
    _assert_answered(run_script(tmp_path / "example.py", server, _project(tmp_path)), server)
