"""``contextfold compact``: a recorded session compacted once, by the extractive summarizer or by a model.

The model runs use a server written here, independent of the project's
fake server: a few lines of stdlib that record what arrives and return one
canned answer, so the bar does not rest on the project's own reading of
the wire formats.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from contextfold import importers
from contextfold.cli import cli
from contextfold.codec import conversation_to_dict
from contextfold.conversation import Conversation
from contextfold.errors import SessionFormatError
from contextfold.summarizers import SECTION_TITLES, summary_preamble
from contextfold.synthetic import generate_session
from contextfold.testing.wire_checks import check_chat, check_messages, check_responses
from contextfold.testing.gemini_wire import check_gemini

CANNED = ("<analysis>CANNED-ANALYSIS: going through the session.</analysis>\n"
          "<summary>\n## 1. Primary Request and Intent\nCANNED-SUMMARY: round half-even in src/shop.\n</summary>")
WINDOW = "16000"  # the kept tail (35 % of the trigger) starts inside the last task: a file read before it is
# restored, and the tail holds no task boundary (two assistant turns in a row, which Gemini refuses)


class Canned(BaseHTTPRequestHandler):
    """Records each POST and answers it with CANNED in the format its path asks for."""

    seen: list[tuple[str, dict[str, str], Any]]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.server.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))  # type: ignore[attr-defined]
        usage_a = {"input_tokens": 5000, "output_tokens": 400}
        usage_o = {"prompt_tokens": 5000, "completion_tokens": 400, "total_tokens": 5400}
        if self.path == "/v1/messages":
            answer = {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                      "content": [{"type": "text", "text": CANNED}], "stop_reason": "end_turn",
                      "stop_sequence": None, "usage": usage_a}
        else:
            answer = {"id": "c1", "object": "chat.completion", "created": 0, "model": body["model"], "usage": usage_o,
                      "choices": [{"index": 0, "finish_reason": "stop",
                                   "message": {"role": "assistant", "content": CANNED}}]}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def canned() -> Iterator[HTTPServer]:
    server = HTTPServer(("127.0.0.1", 0), Canned)
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Conversation]:
    """A generated coding session, written as a contextfold session file, and as the importer reads it back."""
    path = tmp_path_factory.mktemp("sessions") / "session.json"
    path.write_text(json.dumps(conversation_to_dict(generate_session(rounds=30))), encoding="utf-8")
    return path, importers.load(path)[0]


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, ["compact", *args], env=env or {}, catch_exceptions=False)


def compacted(result: Result, out: Path, original: Conversation) -> tuple[Conversation, list, int]:
    """The written session, and where its verbatim tail starts in the original."""
    assert result.exit_code == 0, result.output
    (conversation,) = importers.load(out)
    added = 3 + sum(1 for item in conversation.items[3:4] if item.provenance.survival)  # the survival check's note
    tail = conversation.items[added:]
    start = len(original) - len(tail)
    assert list(tail) == list(original.items[start:])  # the recent tail, verbatim
    return conversation, list(original.items[1:start]), start


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_compact_with_a_model_writes_its_summary_after_the_boundary(
    canned: HTTPServer, recording: tuple[Path, Conversation], tmp_path: Path, provider: str
) -> None:
    path, original = recording
    port = canned.server_address[1]
    base = f"http://127.0.0.1:{port}" + ("/v1" if provider == "openai" else "")
    out = tmp_path / "out.json"
    env = {"ANTHROPIC_API_KEY": "test-key", "OPENAI_API_KEY": "test-key"}
    result = invoke(str(path), "--window", WINDOW, "--summarizer", provider, "--base-url", base, "-o", str(out), env=env)
    conversation, span, _ = compacted(result, out, original)

    ((route, headers, body),) = canned.seen  # one request, and a valid one
    if provider == "anthropic":
        assert route == "/v1/messages" and headers["anthropic-version"]
        assert check_messages(headers, body) == [] and body["model"] == "claude-haiku-4-5"
        (message,) = body["messages"]
        text = message["content"]
    else:
        assert route == "/v1/chat/completions" and headers["authorization"] == "Bearer test-key"
        assert check_chat(headers, body) == [] and [m["role"] for m in body["messages"]] == ["system", "user"]
        text = body["messages"][1]["content"]
    assert "tools" not in body
    assert all(f". {title}\n" in text for title in SECTION_TITLES)
    calls = [call for item in span for call in item.tool_calls]
    assert len(calls) > 10 and all(f"call {call.name} ({call.id})" in text for call in calls)  # the whole span
    results = [item.tool_result for item in span if item.tool_result is not None]
    assert all(f"for {result.call_id}" in text for result in results)

    task, summary, restored = conversation.items[:3]
    assert task == original.items[0]
    assert summary.provenance.summary and summary.text.startswith(summary_preamble())
    assert "CANNED-SUMMARY: round half-even in src/shop." in summary.text and "CANNED-ANALYSIS" not in summary.text
    assert restored.provenance.restored and "files and state restored" in restored.text
    assert "->" in result.output and "warning" not in result.output


def test_compact_extractive_is_offline_and_writes_request_bodies(
    recording: tuple[Path, Conversation], tmp_path: Path
) -> None:
    path, original = recording
    out = tmp_path / "out.json"
    conversation, _, _ = compacted(invoke(str(path), "--window", WINDOW, "-o", str(out),
                                             "--instructions", "keep the rounding details"), out, original)
    assert conversation.items[1].provenance.summarizer == "extractive"
    assert "Focus requested by the user: keep the rounding details" in conversation.items[1].text

    anthropic = json.loads(invoke(str(path), "--window", WINDOW, "--output-format", "anthropic").output.splitlines()[0])
    assert set(anthropic) == {"system", "messages", "tools"}
    assert check_messages({"x-api-key": "k", "anthropic-version": "v"}, {**anthropic, "model": "m", "max_tokens": 9}) == []
    assert anthropic["messages"][1]["content"][0]["text"].startswith(summary_preamble())
    openai = json.loads(invoke(str(path), "--window", WINDOW, "--output-format", "openai").output.splitlines()[0])
    assert check_chat({"authorization": "Bearer k"}, {**openai, "model": "m"}) == []
    assert openai["messages"][0]["role"] == "system" and openai["messages"][1]["content"] == original.items[0].text
    responses = json.loads(invoke(str(path), "--window", WINDOW, "--output-format", "responses").output.splitlines()[0])
    assert check_responses({"authorization": "Bearer k"}, {**responses, "model": "m"}) == []
    gemini = json.loads(invoke(str(path), "--window", WINDOW, "--output-format", "gemini").output.splitlines()[0])
    assert set(gemini) == {"contents", "system_instruction", "tools"}
    genai_types = pytest.importorskip("google.genai.types")
    camel = [genai_types.Content.model_validate(c).model_dump(mode="json", exclude_none=True, by_alias=True)
             for c in gemini["contents"]]
    assert check_gemini({"x-goog-api-key": "k"}, {"contents": camel}) == []


def test_command_line_mistakes_are_one_line_errors(recording: tuple[Path, Conversation], tmp_path: Path) -> None:
    path, _ = recording
    missing_key = CliRunner().invoke(cli, ["compact", str(path), "--window", WINDOW, "--summarizer", "anthropic"],
                                     env={"ANTHROPIC_API_KEY": ""})
    assert missing_key.exit_code == 2 and "ANTHROPIC_API_KEY" in missing_key.output
    assert "Traceback" not in missing_key.output
    model_without_summarizer = invoke(str(path), "--window", WINDOW, "--model", "gpt-4o")
    assert model_without_summarizer.exit_code == 2 and "--summarizer anthropic|openai" in model_without_summarizer.output


def test_a_session_file_reads_back_exactly_and_a_damaged_one_is_named(tmp_path: Path) -> None:
    conversation = generate_session(rounds=5)
    path = tmp_path / "s.json"
    data = conversation_to_dict(conversation)
    path.write_text(json.dumps(data), encoding="utf-8")
    assert importers.detect(path) == "contextfold-session-1"
    assert importers.load(path) == [conversation]
    data["items"][3]["blocks"][0]["kind"] = "hologram"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SessionFormatError, match=r"\$\.items\[3\].*hologram"):
        importers.load(path)
