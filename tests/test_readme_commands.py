"""Every shell command the README shows works as written: its subcommands and options exist, its extras
and scripts are there, its first screen has exactly the two set-up commands, shell completion answers.

(The README's Python blocks run against a scripted model in ``integrations/test_examples.py``.)
"""

from __future__ import annotations

import ast
import builtins
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from packaging.requirements import Requirement

from contextfold import Context
from contextfold.cli import cli

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
VENV = "python3 -m venv .venv && . .venv/bin/activate && "
SET_UP = [VENV + "python3 -m pip install -e '.[tiktoken]' && contextfold demo",
          VENV + "python3 -m pip install -e '.[dev]' && python3 -m pytest"]
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)
_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_ENV = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)+")
CAPPED = ("google-genai", "opentelemetry-api", "opentelemetry-sdk")  # what google-adk caps that other extras bring in


def shell_lines() -> list[str]:
    """The lines of every shell block (``bash``, or no language), comments dropped."""
    lines = [line.split("  #")[0].strip() for language, body in _BLOCK.findall(README)
             if language in ("bash", "sh", "") for line in body.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def commands() -> list[str]:
    """Every ``contextfold ...`` command the README shows: in shell blocks (after ``&&`` too) and in code spans."""
    text = _BLOCK.sub("", README)
    found = [segment.strip() for line in shell_lines() for segment in line.split("&&")]
    found += [span.replace("\\|", "|") for span in _SPAN.findall(text)]
    found = [_ENV.sub("", command) for command in found]
    return [command for command in found if command.startswith("contextfold ")]


def _option(command: click.Command, name: str) -> click.Parameter | None:
    return next((p for p in command.params if name in getattr(p, "opts", ()) + getattr(p, "secondary_opts", ())), None)


def _check(command_line: str) -> None:
    """Walk the words as click would: subcommands (``a|b`` alternatives), options and their values."""
    words = command_line.split()[1:]
    levels: list[click.Command] = [cli]
    position = 0
    while position < len(words):
        word = words[position].strip("[]")
        position += 1
        if word.startswith("-"):
            name = word.split("=")[0]
            found = [_option(level, name) for level in levels]
            assert all(found), f"{command_line!r}: {name} is not an option of {[c.name for c in levels]}"
            takes_value = not (found[0].is_flag or found[0].count)  # type: ignore[union-attr]
            value_follows = position < len(words) and not words[position].startswith("-")
            position += takes_value and "=" not in word and value_follows
        elif all(isinstance(level, click.Group) for level in levels) and re.fullmatch(r"[a-z][a-z|-]*", word):
            names = word.split("|")
            for level in levels:
                missing = [n for n in names if n not in level.commands]  # type: ignore[attr-defined]
                assert not missing, f"{command_line!r}: no subcommand {missing} in {level.name}"
            levels = [level.commands[n] for level in levels for n in names]  # type: ignore[attr-defined]
        # anything else is an argument or a placeholder (FILE, N, DIR|FILE..., COMMAND)


def _section(name: str) -> str:
    """A section of pyproject.toml, as text (tomllib is Python 3.11+; we support 3.10)."""
    text = (ROOT / "pyproject.toml").read_text()
    start = text.index(f"[{name}]\n")
    end = text.find("\n[", start + 1)
    return text[start:] if end == -1 else text[start:end]


def test_the_first_screen_has_exactly_the_two_set_up_commands() -> None:
    first = README[: README.index("\n## What it is")]
    blocks = _BLOCK.findall(first)
    assert [body.splitlines() for _, body in blocks] == [SET_UP]


def test_the_readme_shows_the_commands_it_should() -> None:
    shown = {command.split()[1] for command in commands()}
    assert set(cli.commands) <= shown | {"-v"}, set(cli.commands) - shown  # every command appears
    assert len(commands()) >= 15


@pytest.mark.parametrize("command", commands())
def test_every_contextfold_command_uses_real_subcommands_and_options(command: str) -> None:
    _check(command)


def test_every_extra_the_readme_installs_exists_and_every_script_it_runs_is_there() -> None:
    extras = set(re.findall(r"^([\w-]+) = \[", _section("project.optional-dependencies"), re.MULTILINE))
    named = re.findall(r"(?:contextfold|\.|\.whl)\[([\w,-]+)\]", README)
    assert named and {extra for group in named for extra in group.split(",")} <= extras
    scripts = re.findall(r"python3? ((?:benchmarks|examples)/[\w/]+\.py)", README)
    assert scripts and all((ROOT / script).is_file() for script in scripts)
    assert not re.search(r"(?<!python3 )-m pip install 'contextfold\[", README)  # not on PyPI: from the checkout
    assert "python3 -m pip wheel --no-deps . -w dist" in shell_lines()[2] or any(
        "python3 -m pip wheel --no-deps . -w dist" in line for line in shell_lines())


def test_the_bench_commands_write_where_git_ignores() -> None:
    ignored = (ROOT / ".gitignore").read_text().split()
    outs = [re.search(r"--out (\S+)", line).group(1) for line in shell_lines() if " bench " in f" {line} "]
    assert outs and all(out.split("/")[0] + "/" in ignored for out in outs)
    default = _option(cli.commands["bench"], "--out").default  # type: ignore[union-attr]
    assert f"{default}/" in ignored


def test_shell_completion_as_documented_answers() -> None:
    program = shutil.which("contextfold")
    if program is None:
        pytest.skip("the contextfold console script is not installed (pip install -e .)")
    assert "_CONTEXTFOLD_COMPLETE=bash_source contextfold" in README
    env = {**os.environ, "_CONTEXTFOLD_COMPLETE": "bash_complete", "COMP_WORDS": "contextfold mo", "COMP_CWORD": "1"}
    result = subprocess.run([program], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert "plain,models" in result.stdout.splitlines(), result.stdout + result.stderr
    script = subprocess.run([program], env={**os.environ, "_CONTEXTFOLD_COMPLETE": "bash_source"},
                            capture_output=True, text=True, timeout=60, check=False)
    assert "complete" in script.stdout and "_CONTEXTFOLD_COMPLETE" in script.stdout


def test_every_install_line_works_from_a_checkout() -> None:
    """contextfold is not on a package index: every ``pip install`` the README shows installs the checkout
    (editable, or the wheel built from it), through ``python3 -m pip``; other packages may follow it."""
    installs = re.findall(r"(\S*pip) install ((?:-e )?'[^']*'|\S+)", README)
    assert len(installs) >= 10
    for pip, target in installs:
        assert pip == "pip" and re.search(r"python3 -m pip install " + re.escape(target), README), target
        assert re.fullmatch(r"(-e )?'\.\[[\w,-]+\]'|'dist/[^']+\.whl\[[\w,-]+\]'", target), target


def _unbound_names(source: str) -> set[str]:
    """Names a Python block reads that it never binds (imports, assignments, definitions, parameters)."""
    tree = ast.parse(source)
    bound, read = set(dir(builtins)), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return read - bound


@pytest.mark.parametrize("block", [body for language, body in _BLOCK.findall(README) if language == "python"])
def test_every_python_block_imports_what_it_uses(block: str) -> None:
    assert not _unbound_names(block), block


def test_ci_runs_the_readme_test_line_exactly() -> None:
    """``.ci/run``'s first step is the Quick start's second line, character for character."""
    assert f'README_TEST_LINE="{SET_UP[1]}"' in (ROOT / ".ci" / "run").read_text()


def _python_block(heading: str) -> str:
    """The first Python block after ``heading``."""
    section = README[README.index(f"\n{heading}\n"):]
    return next(body for language, body in _BLOCK.findall(section) if language == "python")


def test_the_store_snippet_runs_twice_and_the_second_run_continues_the_first(tmp_path: Path) -> None:
    """A service runs the same lines for every request of a session: the first starts it, the next resume it."""
    script = tmp_path / "store_snippet.py"
    script.write_text(_python_block("## Sessions past one process"))
    for _ in range(2):
        run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                             timeout=120, check=False)
        assert run.returncode == 0, run.stderr[-3000:]
    resumed = Context.resume(f"sqlite:///{tmp_path / 'sessions.db'}", "user-42", "claude-sonnet-4-5")
    try:
        assert [item.role for item in resumed.history] == ["user", "user"]
    finally:
        resumed.close()


def _extras() -> dict[str, list[Requirement]]:
    """Each extra of pyproject.toml and its requirements."""
    lists = re.findall(r"^([\w-]+) = \[(.*?)\]$", _section("project.optional-dependencies"), re.MULTILINE | re.DOTALL)
    return {name: [Requirement(text) for text in re.findall(r'"([^"]+)"', body)] for name, body in lists}


def test_no_extra_installs_a_version_the_adk_extra_would_downgrade() -> None:
    """Extras installed one by one in the README's order leave ``pip check`` passing: google-adk (the last) caps
    google-genai and OpenTelemetry, so no extra installed before it may bring in a version above its caps (pip
    would downgrade it, under packages built against the newer one). strands-agents brings in the OpenTelemetry
    SDK with an instrumentation that follows the newest SDK: its extra caps the SDK itself."""
    try:
        adk = [Requirement(text) for text in importlib.metadata.requires("google-adk") or ()]
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("google-adk is not installed (python3 -m pip install -e '.[adk]')")
    caps = {r.name: r.specifier for r in adk if r.marker is None and r.name in CAPPED}
    assert set(caps) == set(CAPPED)
    extras = _extras()
    for extra, requirements in extras.items():
        for requirement in requirements:
            for spec in caps.get(requirement.name, ()):
                refused = {"<": spec.version, "<=": f"{spec.version}.1"}.get(spec.operator)
                if refused is not None:
                    assert not requirement.specifier.contains(refused, prereleases=True), (extra, str(requirement))
    for extra in ("strands", "integrations"):
        assert {"opentelemetry-api", "opentelemetry-sdk"} <= {r.name for r in extras[extra]}, extra
