"""The reference agent looks back: after compaction it searches its history and reads an earlier output.

``contextfold chat -p`` runs against the scripted model server through the
real SDK client. The script reads every module (the window is small, so the
early reads are compacted away), then calls ``search_history`` for a line
only the compacted-away read of ``pkg/alpha.py`` held, and ``read_history``
on that output by the ref the search gave; each answer must reach the next
request. (The agent's own tools cap an output below the size contextfold
offloads; reading an offloaded output back is tested in test_lookback.py and
in each framework integration.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from agent_session import MODULES, make_repository
from click.testing import CliRunner
from test_agent_e2e import KEYS, MODELS, WINDOW

from contextfold.cli import cli
from contextfold.summarizers.base import SUMMARY_PREAMBLE
from contextfold.testing.scripted import Call, ScriptedModel, Seen, Turn


class LookBack:
    """The script: the reads, then the two history tools; what each step must have received."""

    def __init__(self) -> None:
        self.failures: list[str] = []
        self.plan = [Call("read_file", {"path": f"pkg/{m}.py"}) for m in MODULES]

    def __call__(self, seen: Seen) -> Turn:
        if seen.step < len(self.plan):
            return Turn(calls=(self.plan[seen.step],))
        if seen.step == len(self.plan):
            if "alpha_helper_17(" in json.dumps(seen.body):
                self.failures.append("pkg/alpha.py was not compacted away: the search would prove nothing")
            return Turn(calls=(Call("search_history", {"query": "def alpha_helper_17("}),))
        if seen.step == len(self.plan) + 1:
            found = re.search(r"^--- (it_[0-9a-f]+) .*\(file pkg/alpha.py\) · line (\d+)", seen.results[0], re.MULTILINE)
            if found is None or "return value + 17" not in seen.results[0]:
                self.failures.append(f"search_history did not bring the line back: {seen.results[0][:500]!r}")
                return Turn(text="FAILED")
            line = int(found.group(2))
            return Turn(calls=(Call("read_history", {"ref": found.group(1), "lines": f"{line}-{line + 2}"}),))
        lines = [line.split("\t", 1)[-1] for line in seen.results[0].splitlines()[1:]]
        if lines != ["def alpha_helper_17(value):", '    """Return value shifted by 17 (alpha helper number 17)."""',
                     "    return value + 17"]:
            self.failures.append(f"read_history did not return the lines verbatim: {seen.results[0][:300]!r}")
        return Turn(text=f"DONE after {len(self.plan)} reads")


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_the_agent_searches_and_reads_what_compaction_took_out(tmp_path: Path, provider: str) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    make_repository(root)
    script = LookBack()
    with ScriptedModel(script) as server:
        result = CliRunner().invoke(cli, [
            "chat", "--provider", provider, "--model", MODELS[provider], "--base-url", server.base_url(provider),
            "--window", str(WINDOW), "--yes", "--cwd", str(root), "-p", "Survey pkg/.",
        ], env=KEYS)
    assert result.exit_code == 0, result.output
    assert server.problems == [] and script.failures == []
    assert result.stdout.strip() == f"DONE after {len(MODULES)} reads"
    tools = server.exchanges[0].body["tools"]
    names = {tool.get("name") or tool["function"]["name"] for tool in tools}
    assert {"search_history", "read_history"} <= names


class AsksToCompact:
    """The script: three reads, then ``compact_context``; the next request must be the compacted one."""

    FOCUS = "keep what pkg/alpha.py defines"

    def __init__(self) -> None:
        self.failures: list[str] = []
        self.plan = [Call("read_file", {"path": f"pkg/{m}.py"}) for m in MODULES[:3]]

    def __call__(self, seen: Seen) -> Turn:
        if seen.step < len(self.plan):
            return Turn(calls=(self.plan[seen.step],))
        if seen.step == len(self.plan):
            return Turn(calls=(Call("compact_context", {"focus": self.FOCUS}),))
        body = json.dumps(seen.body)
        if not seen.results or not seen.results[0].startswith("Compaction accepted"):
            self.failures.append(f"compact_context was not accepted: {seen.results!r:.300}")
        if SUMMARY_PREAMBLE[:40] not in body or "alpha_helper_17(" in body:
            self.failures.append("the request after compact_context is not the compacted one")
        return Turn(text="DONE")


def test_the_agent_asks_for_a_compaction_and_gets_it_on_its_next_request(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    make_repository(root)
    script = AsksToCompact()
    with ScriptedModel(script) as server:
        result = CliRunner().invoke(cli, [
            "chat", "--provider", "anthropic", "--model", MODELS["anthropic"], "--base-url",
            server.base_url("anthropic"), "--window", str(WINDOW), "--yes", "--cwd", str(root), "-p", "Survey pkg/.",
        ], env=KEYS)
    assert result.exit_code == 0, result.output
    assert server.problems == [] and script.failures == [] and result.stdout.strip() == "DONE"
