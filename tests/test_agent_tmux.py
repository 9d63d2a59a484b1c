"""``contextfold chat`` tried as a new user would: in a real terminal (tmux), typing a task and the slash commands.

Skipped when tmux is not installed. The model is the scripted server; the
test types with ``send-keys`` and reads the screen with ``capture-pane``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from agent_session import SURVEY_ANSWER, PlannedSession, make_repository, survey_plan

from contextfold.testing.scripted import ScriptedModel

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)")

TIMEOUT_S = 180.0
"""A hang guard, not a speed claim: under a loaded machine the chat takes many seconds to start."""


class Terminal:
    """A tmux server of our own (its own socket), one session running ``command``."""

    def __init__(self, command: list[str]) -> None:
        self.socket = f"contextfold-test-{uuid.uuid4().hex[:8]}"
        self.tmux(["new-session", "-d", "-s", "chat", "-x", "200", "-y", "50", *command])

    def tmux(self, arguments: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-u", "-L", self.socket, *arguments], capture_output=True, text=True, timeout=10, check=False
        )

    def type(self, line: str) -> None:
        self.tmux(["send-keys", "-t", "chat", "-l", line])
        self.tmux(["send-keys", "-t", "chat", "Enter"])

    def screen(self) -> str:
        """Everything the session printed so far, with every run of white space (line ends too) as one space."""
        return " ".join(self.tmux(["capture-pane", "-p", "-J", "-t", "chat", "-S", "-"]).stdout.split())

    def wait_for(self, text: str, after: int = 0) -> str:
        """What appeared after position ``after`` once it holds ``text`` (fails after the timeout)."""
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            new = self.screen()[after:]
            if text in new:
                return new
            time.sleep(0.1)
        pytest.fail(f"{text!r} did not appear; the screen shows:\n{self.screen()[-3000:]}")

    def alive(self) -> bool:
        return self.tmux(["has-session", "-t", "chat"]).returncode == 0

    def close(self) -> None:
        self.tmux(["kill-server"])


def test_context_compact_and_cost_in_a_real_terminal(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    make_repository(root)
    script = PlannedSession(main=survey_plan(), final=SURVEY_ANSWER)
    with ScriptedModel(script) as server:
        # the size comes from the terminal: whatever COLUMNS the test process has is not passed on
        command = [
            "env",
            "-u",
            "COLUMNS",
            "-u",
            "LINES",
            "ANTHROPIC_API_KEY=test-key",
            "LANG=C.UTF-8",
            f"PYTHONPATH={os.pathsep.join(sys.path)}",
            sys.executable,
            "-m",
            "contextfold",
            "chat",
            "--model",
            "claude-sonnet-4-6",
            "--base-url",
            server.url,
            "--window",
            "60000",
            "--cwd",
            str(root),
            "--yes",
        ]
        terminal = Terminal(command)
        try:
            terminal.wait_for("/help for commands")
            terminal.type("Survey the modules and run the tests.")
            turn = terminal.wait_for("6 requests")
            assert SURVEY_ANSWER in turn and "● read_file" in turn and "last stage: none" in turn

            start = len(terminal.screen())
            terminal.type("/context")
            shown = terminal.wait_for("free", start)
            assert "of 60,000 tokens" in shown and "█" in shown and "by kind" in shown
            assert all(kind in shown for kind in ("header (system + tools)", "tool_result", "tool_call"))

            start = len(terminal.screen())
            terminal.type("/compact focus on the failing test")
            shown = terminal.wait_for("last stage: summarize", start)
            assert "summarize summarized:" in shown and "token summary" in shown
            assert "instructions: 'focus on the failing test'" in shown

            start = len(terminal.screen())
            terminal.type("/cost")
            shown = terminal.wait_for("without the prompt cache", start)
            assert "cost of 6 model calls" in shown and "cache reads" in shown and "cache writes" in shown
            assert "total $" in shown

            terminal.type("/exit")
            deadline = time.monotonic() + TIMEOUT_S
            while terminal.alive() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not terminal.alive()
        finally:
            terminal.close()
    assert server.problems == [] and script.failures == []
