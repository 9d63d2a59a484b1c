"""An integration imported without its framework is an ImportError naming the extra to install, not a bare
``ModuleNotFoundError`` from deep inside; and contextfold's use of ADK does not print ADK's experimental warning."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
from conftest import skip_or_fail

INTEGRATIONS = [  # module of contextfold.integrations, the framework's top module, the extra
    ("openai_agents", "agents", "openai-agents"),
    ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
    ("strands", "strands", "strands"),
    ("langchain", "langchain", "langchain"),
    ("adk", "google.adk", "adk"),
]
HIDE = "import sys\nsys.modules[{framework!r}] = None  # as if it were not installed\n"


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True, text=True, timeout=120,
                          check=False)


@pytest.mark.parametrize(("integration", "framework", "extra"), INTEGRATIONS)
def test_importing_an_integration_without_its_framework_names_the_extra(integration: str, framework: str,
                                                                       extra: str) -> None:
    run = _python(HIDE.format(framework=framework) + "try:\n"
                  f"    import contextfold.integrations.{integration}\n"
                  "except ImportError as error:\n"
                  "    print(type(error).__name__, '|', error)\n"
                  "else:\n"
                  "    print('imported')\n")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("MissingDependency |"), run.stdout
    assert f"[{extra}]" in run.stdout and framework in run.stdout


def test_the_adk_compaction_config_prints_no_experimental_warning() -> None:
    if importlib.util.find_spec("google.adk") is None:
        skip_or_fail("google-adk is not installed: python3 -m pip install -e '.[adk]'")
    run = _python("from contextfold.integrations.adk import ContextfoldSummarizer, compaction_config\n"
                  "config = compaction_config(ContextfoldSummarizer('gemini-2.5-flash'))\n"
                  "print(config.token_threshold)\n")
    assert run.returncode == 0, run.stderr
    assert int(run.stdout) > 0
    assert "EXPERIMENTAL" not in run.stderr, run.stderr
