"""Every script in ``examples/`` runs offline against the shipped scripted model, and so does every Python block
of the README's loop and framework sections.

Each runs in a subprocess whose SDK clients find contextfold's scripted model
(:func:`contextfold.testing.server.reading_script`, what ``contextfold
serve-fake`` serves) through the base-URL variables the SDKs read, in a
folder holding a README.md and an app.py: the model lists the folder when it
may, reads one file, and answers with that file's first line, so the answer
shows that the tool call went out and its result came back. The examples get
no key: they set a dummy one themselves when the base URL is local, and
without one exit with a line saying how to run offline. Every request is
checked by the server; the script must print the answer and exit 0.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import require, run_script

from contextfold.testing.scripted import ScriptedModel
from contextfold.testing.server import BASE_URL_VARIABLES, reading_script

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
README_LINE = "# demo project: it keeps agents small"
APP_LINE = '"""app.py: adds two numbers."""'
ANSWER = "contextfold's scripted model read a file; its first line is: "
SCRIPTS = {  # examples/ script -> (module it needs, the extra that installs it, its provider, the file it reads)
    "anthropic_loop.py": ("anthropic", "anthropic", "anthropic", README_LINE),
    "lookback_loop.py": ("anthropic", "anthropic", "anthropic", README_LINE),
    "openai_loop.py": ("openai", "openai", "openai", README_LINE),
    "openai_agents_example.py": ("agents", "openai-agents", "openai", README_LINE),
    "pydantic_ai_example.py": ("pydantic_ai", "pydantic-ai", "openai", README_LINE),
    "strands_example.py": ("strands", "strands", "openai", README_LINE),
    "langchain_agent.py": ("langchain_openai", "langchain", "openai", APP_LINE),  # it lists only *.py
    "adk_agent.py": ("google.adk", "adk", "gemini", APP_LINE),
    "gemini_loop.py": ("google.genai", "gemini", "gemini", README_LINE),
}
SECTIONS = {  # README heading -> (module it needs, the extra that installs it)
    "## In an agent loop": ("anthropic", "anthropic"),
    "### OpenAI Agents SDK": ("agents", "openai-agents"),
    "### pydantic-ai": ("pydantic_ai", "pydantic-ai"),
    "### Strands Agents": ("strands", "strands"),
    "### LangChain v1": ("langchain_openai", "langchain"),
    "### Google ADK": ("google.adk", "adk"),
}
KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY")


@pytest.fixture
def server() -> Iterator[ScriptedModel]:
    with ScriptedModel(reading_script) as model:
        yield model


PROJECT = {"README.md", "app.py", ".venv", "venv", ".git"}
"""What :func:`_project` holds: after a run, anything else but ``.contextfold/`` (which git ignores) is litter."""


def _project(folder: Path) -> Path:
    """A project with its README and one module, and what a checkout also holds: a virtual environment (hidden or
    not) and ``.git``, which no example lists (they sort before ``app.py``: a model reading the first file listed
    would read them)."""
    (folder / "README.md").write_text(f"{README_LINE}\n\nIt keeps agents inside their context window.\n")
    (folder / "app.py").write_text(f"{APP_LINE}\n\n\ndef add(a, b):\n    return a + b\n")
    for environment in (".venv", "venv"):
        (folder / environment / "lib").mkdir(parents=True)
        (folder / environment / "pyvenv.cfg").write_text("home = /usr/bin\n")
        (folder / environment / "lib" / "a_module.py").write_text('"""a module of a virtual environment."""\n')
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return folder


def _offline_env(**variables: str) -> dict[str, str]:
    """This environment without any provider key or base URL, plus ``variables``."""
    dropped = set(KEYS) | set(BASE_URL_VARIABLES.values()) | {"OPENAI_AGENTS_DISABLE_TRACING"}
    return {**{k: v for k, v in os.environ.items() if k not in dropped}, **variables}


def _run_example(script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "examples" / script), str(cwd)], check=False, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_example_runs_offline_against_the_scripted_model(script: str, server: ScriptedModel, tmp_path: Path) -> None:
    module, extra, provider, line = SCRIPTS[script]
    require(module, extra)
    env = _offline_env(**{BASE_URL_VARIABLES[provider]: server.base_url(provider)})
    run = _run_example(script, env, _project(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    assert server.problems == []
    assert ANSWER + line in run.stdout, run.stdout[-3000:]
    assert len(server.valid) >= 3  # listed, read, answered: each request went through contextfold and was valid
    assert {path.name for path in tmp_path.iterdir()} <= PROJECT | {".contextfold"}  # what it writes, git ignores


def test_the_examples_list_the_project_not_its_virtual_environments_or_hidden_folders(tmp_path: Path) -> None:
    listing = subprocess.run([sys.executable, "-c", "import project_tools; print(project_tools.list_files())",
                              str(_project(tmp_path))], cwd=ROOT / "examples", capture_output=True, text=True,
                             check=True, timeout=60)
    assert listing.stdout.split() == ["README.md", "app.py"]


def test_the_lookback_example_finds_the_compacted_line_in_its_history(server: ScriptedModel, tmp_path: Path) -> None:
    require("anthropic", "anthropic")
    env = _offline_env(ANTHROPIC_BASE_URL=server.base_url("anthropic"))
    run = _run_example("lookback_loop.py", env, _project(tmp_path))
    assert run.returncode == 0 and server.problems == [], run.stderr[-3000:]
    assert f"looked back in its history: {README_LINE}" in run.stdout, run.stdout[-3000:]
    searches = [e for e in server.exchanges if e.turn is not None and any(c.name == "search_history" for c in e.turn.calls)]
    assert len(searches) == 1


def test_every_example_is_tested() -> None:
    shipped = {path.name for path in (ROOT / "examples").glob("*.py")} - {"project_tools.py"}
    assert shipped == set(SCRIPTS)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_example_without_a_key_says_how_to_run_offline(script: str, tmp_path: Path) -> None:
    module, extra, provider, _ = SCRIPTS[script]
    require(module, extra)
    run = _run_example(script, _offline_env(), _project(tmp_path))
    assert run.returncode == 1
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr[-3000:]
    assert f"contextfold serve-fake --provider {provider}" in run.stderr and BASE_URL_VARIABLES[provider] in run.stderr


def test_serve_fake_runs_an_example(tmp_path: Path) -> None:
    """The command the README documents, as a process: its printed line points the example at it."""
    require("anthropic", "anthropic")
    command = [sys.executable, "-m", "contextfold", "serve-fake", "--provider", "anthropic"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as served:
        try:
            assert served.stdout is not None
            banner, export = served.stdout.readline(), served.stdout.readline()
            assert "scripted model" in banner
            name, _, url = export.strip().removeprefix("export ").partition("=")
            assert name == "ANTHROPIC_BASE_URL" and url.startswith("http://127.0.0.1:")
            run = _run_example("anthropic_loop.py", _offline_env(ANTHROPIC_BASE_URL=url), _project(tmp_path))
        finally:
            served.terminate()
    assert run.returncode == 0, run.stderr[-3000:]
    assert ANSWER + README_LINE in run.stdout


@pytest.mark.parametrize("heading", list(SECTIONS))
def test_readme_example_runs(heading: str, server: ScriptedModel, tmp_path: Path) -> None:
    require(*SECTIONS[heading])
    text = README.read_text()
    block = re.search(r"```python\n(.*?)```", text[text.index(f"\n{heading}\n"):], re.DOTALL).group(1)
    (tmp_path / "example.py").write_text(block)
    run = run_script(tmp_path / "example.py", server, _project(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    assert server.problems == []
    assert ANSWER + README_LINE in run.stdout, run.stdout[-3000:]


def test_an_example_run_twice_against_one_server_uses_its_tools_both_times(server: ScriptedModel, tmp_path: Path) -> None:
    """``serve-fake`` stays up between runs: a second run of the same example is a new conversation (same system
    prompt, same task), which starts over at step 0 instead of being answered at once from a finished one."""
    require("anthropic", "anthropic")
    env = _offline_env(ANTHROPIC_BASE_URL=server.base_url("anthropic"))
    project = _project(tmp_path)
    for run_number in (1, 2):
        before = len(server.exchanges)
        run = _run_example("anthropic_loop.py", env, project)
        assert run.returncode == 0 and server.problems == [], run.stderr[-3000:]
        assert ANSWER + README_LINE in run.stdout, (run_number, run.stdout[-3000:])
        called = [call.name for e in server.exchanges[before:] if e.turn is not None for call in e.turn.calls]
        assert called[:2] == ["list_files", "read_file"], (run_number, called)
