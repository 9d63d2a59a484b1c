"""A missing framework skips a test locally and fails it under CI=true (CI installs every integration extra)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import require


def test_missing_framework_skips_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"pip install -e '\.\[x\]'"):
        require("no_such_framework_module", "x")


def test_missing_framework_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        require("no_such_framework_module", "x")


def test_a_module_that_requires_a_missing_framework_is_skipped_whole(tmp_path) -> None:
    """The README's test line in a venv with only ``.[dev]``: a test module calling ``require`` at its top is
    collected as one skip naming the extra, not a collection error."""
    here = Path(__file__).resolve().parent
    (tmp_path / "test_needs_framework.py").write_text(
        "from support import require\n\nrequire('no_such_framework_module', 'x')\n\n\ndef test_never_runs():\n"
        "    raise AssertionError('collected although the framework is missing')\n")
    (tmp_path / "test_other.py").write_text("def test_runs():\n    pass\n")
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    env["PYTHONPATH"] = os.pathsep.join([str(here), str(here.parent), env.get("PYTHONPATH", "")])
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # as with .[dev] alone: no framework's pytest plugin (seconds)
    run = subprocess.run([sys.executable, "-m", "pytest", "-rs", "-p", "no:cacheprovider", "-q", str(tmp_path)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed, 1 skipped" in run.stdout and "pip install -e '.[x]'" in run.stdout, run.stdout
