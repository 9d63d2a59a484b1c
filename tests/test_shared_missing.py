"""Without ../shared, tests that need it skip with a message saying where it was looked for; under CI=true they fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

NEEDS_SHARED = '''
def test_needs_the_corpus(corpus_dir):
    assert corpus_dir.exists()


def test_needs_the_tokenizers(tokenizers_dir):
    assert tokenizers_dir.exists()
'''


def run_without_shared(folder: Path, ci: bool) -> subprocess.CompletedProcess[str]:
    """Pytest on a small test file asking for the corpus and tokenizers, ``CONTEXTFOLD_SHARED`` pointing nowhere."""
    shutil.copy(Path(__file__).with_name("conftest.py"), folder / "conftest.py")
    (folder / "test_needs_shared.py").write_text(NEEDS_SHARED)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["CONTEXTFOLD_SHARED"] = str(folder / "no-such-folder")
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # no framework's pytest plugin: they take seconds to import, unused here
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "pytest", "-rsf", "-p", "no:cacheprovider", "test_needs_shared.py"],
                          check=False, cwd=folder, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("ci", [False, True], ids=["locally", "under-ci"])
def test_a_missing_shared_folder_skips_locally_and_fails_under_ci(tmp_path: Path, ci: bool) -> None:
    result = run_without_shared(tmp_path, ci)
    output = result.stdout + result.stderr
    missing = str(tmp_path / "no-such-folder")
    assert f"the shared corpus not found at {missing}/corpus" in output
    assert f"the offline tokenizer files not found at {missing}/tokenizers" in output
    assert "set CONTEXTFOLD_SHARED" in output
    if ci:
        assert result.returncode == 1 and "2 errors" in output, output  # failed in setup
    else:
        assert result.returncode == 0 and "2 skipped" in output, output
