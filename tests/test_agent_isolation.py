"""Nothing the model writes into the working folder runs unless the user approved it, and no credential in
this process's environment reaches a tool: the search helper runs isolated from the folder, and the tools get
an environment of named variables only."""

# ruff: noqa: F811 - ``root`` is the fixture of test_agent_tools, imported so both files share one working folder setup
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_agent_tools import agent_in, root, run  # noqa: F401 - root is a fixture

from contextfold.agent import tools

PLANTED_PACKAGE = ("contextfold/__init__.py", "contextfold/agent/__init__.py", "contextfold/agent/search.py",
                   "contextfold/agent/tools.py")
"""The helper's own module path and the packages above it, as a model would write them with ``write_file``."""
STARTUP_HOOKS = ("sitecustomize.py", "usercustomize.py")
"""Modules Python imports at start when it finds them on its path."""


def planted_names() -> list[str]:
    """Every module the helper could import: its package, the start-up hooks and every standard-library name
    (``json.py``, ``re.py``, ``os.py``, ``pathlib.py``...), each shadowed in the working folder."""
    stdlib = sorted(name for name in sys.stdlib_module_names if not name.startswith("_") or name == "__future__")
    return [*PLANTED_PACKAGE, *STARTUP_HOOKS, *(f"{name}.py" for name in stdlib)]


def plant(root: Path, marker: Path) -> None:
    for name in planted_names():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n")


def test_no_module_planted_in_the_working_folder_runs(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = root.parent / "planted-code-ran"
    plant(root, marker)
    monkeypatch.setenv("PYTHONPATH", str(root))  # ignored by the helper, and not passed on to it anyway
    monkeypatch.setenv("PYTHONSTARTUP", str(root / "os.py"))
    monkeypatch.setenv("BASH_ENV", str(root / "os.py"))  # bash -c would source it (and fail: it is Python)
    agent = agent_in(root)
    text, error = run(agent, "grep", pattern=r"x = 1")
    assert not error and "a.py:1: x = 1" in text and "a.py:2: x = 1" in text
    for tool, arguments in [("grep", {"pattern": "open", "glob": "*.py", "path": "contextfold"}),
                            ("list_files", {}), ("read_file", {"path": "a.py"}),
                            ("write_file", {"path": "b.py", "content": "y = 1\n"}),
                            ("edit_file", {"path": "b.py", "old_string": "y", "new_string": "z"}),
                            ("bash", {"command": "echo ran"}),
                            ("todo", {"todos": [{"content": "x", "status": "pending"}]})]:
        text, error = run(agent, tool, **arguments)
        assert not error, (tool, text)
    assert "contextfold/agent/search.py:1: open(" in run(agent, "grep", pattern="open", path="contextfold")[0]
    assert not marker.exists(), f"planted modules ran: {marker.read_text()}"


CREDENTIALS = {
    "CONTEXTFOLD_STORE": "postgresql://app:pg-secret-1@db.internal/contextfold",
    "DATABASE_URL": "postgresql://db.internal/app?password=pg-secret-2",
    "REDIS_URL": "redis://:redis-secret-3@cache.internal:6379/0",
    "ANTHROPIC_API_KEY": "sk-ant-api03-secret-4", "MY_SERVICE_API_KEY": "secret-5", "GITHUB_TOKEN": "ghp_secret6",
    "SMTP_PASSWORD": "secret-7", "AWS_SECRET_ACCESS_KEY": "secret-8", "PGPASSWORD": "secret-9",
    "SENTRY_DSN": "https://public-secret-10@sentry.example/1", "VAULT_ADDR_AND_AUTH": "secret-11",
}


def test_no_credential_reaches_a_tool(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    monkeypatch.setenv("TZ", "UTC")
    text, error = run(agent_in(root), "bash", command="env")
    assert not error
    assert not [name for name in CREDENTIALS if name in text]
    assert not [value for value in CREDENTIALS.values() if value in text]
    assert "LC_ALL=C.UTF-8" in text and "TZ=UTC" in text and f"PWD={root.resolve()}" in text and "PATH=" in text
    names = {line.partition("=")[0] for line in text.splitlines() if "=" in line and not line.startswith("[")}
    assert names <= tools.TOOL_ENVIRONMENT | {"PWD", "LC_ALL", "SHLVL", "_", "OLDPWD"}  # bash sets SHLVL and _ itself


def test_the_tool_environment_is_the_allow_list_only(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    environment = tools.tool_environment(root)
    assert set(environment) <= tools.TOOL_ENVIRONMENT | {"PWD"} | {n for n in environment if n.startswith("LC_")}
    assert environment["PWD"] == str(root)


def test_python_m_contextfold_imports_nothing_from_the_current_folder(tmp_path: Path) -> None:
    """``python -m`` puts the current folder on the import path; the command takes it off before importing its
    own dependencies, so a ``click.py`` an agent wrote in the folder it works in is never run."""
    import subprocess

    marker = tmp_path / "planted-code-ran"
    work = tmp_path / "work"
    work.mkdir()
    for name in ("click.py", "rich.py", "tiktoken.py"):
        (work / name).write_text(f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n")
    done = subprocess.run([sys.executable, "-m", "contextfold", "--help"], cwd=work, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0 and "chat" in done.stdout, done.stderr
    assert not marker.exists(), f"planted modules ran: {marker.read_text()}"


CHECKOUT_RUN = """
import sys, pathlib, contextfold
root, marker = pathlib.Path(sys.argv[1]), sys.argv[2]
assert contextfold.__file__.startswith(str(root)), contextfold.__file__  # this copy, through PYTHONPATH
from contextfold.agent.tools import Workspace
workspace = Workspace(root, lambda command: True)
print(workspace.write_file("src/contextfold/agent/search.py", f"open({marker!r}, 'a').write('ran')\\n"))
print(workspace.grep("SEARCH_PROGRAM =", path="src/contextfold/agent"))
"""


def test_an_agent_working_on_its_own_source_checkout_never_runs_the_helper_it_changed(tmp_path: Path) -> None:
    """contextfold reached through PYTHONPATH from a checkout that is also the working folder: the model rewrites
    the helper's own file, and ``grep`` still runs the helper as the agent read it at start."""
    import shutil
    import subprocess

    import contextfold

    root = tmp_path / "checkout"
    shutil.copytree(Path(contextfold.__file__).parent, root / "src" / "contextfold",
                    ignore=shutil.ignore_patterns("__pycache__"))
    marker = tmp_path / "planted-code-ran"
    done = subprocess.run([sys.executable, "-c", CHECKOUT_RUN, str(root), str(marker)], cwd=root, capture_output=True,
                          text=True, timeout=120, check=False, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root / "src")})
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stdout and "src/contextfold/agent/tools.py:" in done.stdout and "SEARCH_PROGRAM =" in done.stdout
    assert not marker.exists()
