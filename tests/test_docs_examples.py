"""The examples the docs mark as runnable run as written, each a complete program.

A fenced ``python`` block of ``docs/architecture.md`` or ``README.md`` whose
line before is :data:`MARK` is extracted and run in a fresh interpreter (so
what one registers, a provider or a model, is not seen by the next), in an
empty folder, with no provider key in its environment: it must exit 0. A block
that asserts what it shows (``assert``) is held to it. The README's loop and
framework blocks, which talk to a model, run against the scripted model in
``integrations/test_examples.py`` instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ("docs/architecture.md", "README.md")
MARK = "<!-- runs as written: tests/test_docs_examples.py -->"
_BLOCK = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
_KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY")


def marked(text: str) -> list[tuple[str, str]]:
    """``(heading, code)`` of every marked Python block of ``text``; a marked block in another language fails."""
    found = []
    for block in _BLOCK.finditer(text):
        before = text[:block.start()].rstrip("\n").rsplit("\n", 1)[-1]
        if before.strip() != MARK:
            continue
        assert block.group(1) == "python", f"a block marked to run is {block.group(1) or 'plain'}, not python"
        heading = re.findall(r"^#+ (.*)$", _BLOCK.sub("", text[:block.start()]), re.MULTILINE)[-1]  # not a comment
        found.append((heading, block.group(2)))
    return found


EXAMPLES = [pytest.param(code, id=f"{name}: {heading}") for name in DOCUMENTS
            for heading, code in marked((ROOT / name).read_text(encoding="utf-8"))]


@pytest.mark.parametrize("code", EXAMPLES)
def test_a_marked_example_runs_as_written(code: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in _KEYS}
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=180, check=False)
    assert run.returncode == 0, run.stderr[-3000:]


def test_every_extension_point_of_the_architecture_has_a_running_example() -> None:
    """The stage, the summarizer, the store, the token counter and the policy: each section of
    docs/architecture.md's extension points holds a marked block."""
    headings = {heading for heading, _ in marked((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))}
    assert {"How to add a stage", "A summarizer", "A store", "A token counter", "A policy"} <= headings


def test_the_harness_finds_a_marked_block_and_only_that(tmp_path: Path) -> None:
    text = (f"# Doc\n\n```python\nraise SystemExit(1)\n```\n\n## Run me\n\n```python\n# a comment\n```\n"
            f"{MARK}\n```python\nprint('ran')\n```\n")
    assert marked(text) == [("Run me", "print('ran')\n")]
    with pytest.raises(AssertionError, match="is bash, not python"):
        marked(f"# Doc\n{MARK}\n```bash\nls\n```\n")
