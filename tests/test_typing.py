"""A downstream project type-checks against the installed package: ``mypy --strict`` passes on
``tests/typing/downstream.py``, and fails on misuses it can only see if the package's types are real.

The package checked is the one this test imports (the installed checkout in CI), found through
``MYPYPATH``; the mypy cache lives in pytest's cache, so only the first run checks the whole package.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import contextfold

pytest.importorskip("mypy", reason="mypy is in the dev extra: python3 -m pip install -e '.[dev]'")

DOWNSTREAM = Path(__file__).parent / "typing" / "downstream.py"
MISUSES = '''
from contextfold import Block, Context, Policy, Text, ToolCall

Text(1)
ToolCall("call_1")
Context(window_tokens="50k")
Policy(trigger_tokens="100k")


def name_of(block: Block) -> str:
    if block.kind == "text":
        return block.name
    return ""
'''
"""Each line of the function calls and the ``block.name`` read is an error a checker must report."""


def mypy(tmp: Path, cache: Path, *files: Path) -> dict[str, list[int]]:
    """The lines mypy --strict reports an error on, per file name."""
    environment = {**os.environ, "MYPYPATH": str(Path(contextfold.__file__).resolve().parent.parent)}
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file=", "--cache-dir", str(cache), *map(str, files)],
        cwd=tmp, env=environment, capture_output=True, text=True, check=False,
    )
    assert run.returncode in (0, 1), run.stdout + run.stderr  # 2: mypy itself failed
    errors: dict[str, list[int]] = {}
    for file, line in re.findall(r"^(.+?\.py):(\d+): error:", run.stdout, re.MULTILINE):
        errors.setdefault(Path(file).name, []).append(int(line))
    return errors


def test_a_downstream_file_type_checks_strictly_and_runs(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    misuses = tmp_path / "misuses.py"
    misuses.write_text(MISUSES, encoding="utf-8")
    cached = getattr(request.config, "cache", None)  # absent under -p no:cacheprovider
    cache = cached.mkdir("mypy") if cached is not None else tmp_path / "cache"
    errors = mypy(tmp_path, cache, DOWNSTREAM, misuses)
    assert "downstream.py" not in errors, errors
    assert sorted(set(errors["misuses.py"])) == [4, 5, 6, 7, 12]
    run = subprocess.run([sys.executable, str(DOWNSTREAM)], capture_output=True, text=True, check=False,
                         env={**os.environ, "PYTHONPATH": str(Path(contextfold.__file__).resolve().parent.parent)})
    assert run.returncode == 0, run.stderr
    assert "read_file({'path': 'src/app.py'})" in run.stdout
