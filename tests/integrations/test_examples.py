"""Every script in ``examples/`` runs to the end against a scripted model (the SDKs read their base URL from the env).

The model lists the folder, reads one file, then answers; a follow-up run on
the same history gets the answer at once. Each request is checked by the
server; the script must print the answer and exit 0.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_model_server import Call, ScriptedModel, Seen, Turn
from support import require

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ANSWER = "This project greets people."
FRAMEWORKS = {
    "anthropic_loop.py": ("anthropic", "anthropic"),
    "openai_loop.py": ("openai", "openai"),
    "openai_agents_example.py": ("agents", "openai-agents"),
    "pydantic_ai_example.py": ("pydantic_ai", "pydantic-ai"),
    "strands_example.py": ("strands", "strands"),
}


def _script(seen: Seen) -> Turn:
    if seen.step == 0:
        return Turn("Listing.", (Call("list_files", {"folder": "."}),))
    if seen.step == 1:
        assert "hello.py" in seen.results[0], seen.results
        return Turn("Reading.", (Call("read_file", {"path": "hello.py"}),))
    if seen.step == 2:
        assert "def greet" in seen.results[0], seen.results
    return Turn(ANSWER)


@pytest.fixture
def server() -> Iterator[ScriptedModel]:
    with ScriptedModel(_script) as model:
        yield model


@pytest.mark.parametrize("script", sorted(FRAMEWORKS))
def test_example_runs_to_its_answer(script: str, server: ScriptedModel, tmp_path: Path) -> None:
    require(*FRAMEWORKS[script])
    project = tmp_path / "project"
    project.mkdir()
    (project / "hello.py").write_text('def greet(name):\n    return f"hello {name}"\n')
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": "test", "ANTHROPIC_BASE_URL": server.base_url("anthropic"),
        "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": server.base_url("openai"),
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
    }
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / script), str(project)], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert server.problems == []
    assert ANSWER in run.stdout
    assert len(server.valid) >= 3
