"""Secret redaction: recognisable keys never reach the transcript, the persisted outputs or a request."""

from __future__ import annotations

from pathlib import Path

from contextfold import Context, Storage
from contextfold.conversation import Item, Text, ToolCall, ToolResult
from contextfold.pipeline.base import Policy
from contextfold.stores.transcript import Transcript, transcript_path

SECRETS = {
    "anthropic key": "sk-ant-api03-" + "A1b2C3d4" * 6,
    "openai key": "sk-proj-" + "Zz9Yy8Xx" * 5,
    "aws access key id": "AKIAIOSFODNN7EXAMPLE",
    "aws secret key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "bearer token": "eyJhbGciOiJIUzI1NiJ9.payload.signature",
    "github token": "ghp_" + "a" * 36,
}
ENV_DUMP = (f"ANTHROPIC_API_KEY={SECRETS['anthropic key']}\nOPENAI_API_KEY={SECRETS['openai key']}\n"
            f"AWS_ACCESS_KEY_ID={SECRETS['aws access key id']}\naws_secret_access_key = {SECRETS['aws secret key']}\n"
            f"GH={SECRETS['github token']}\nPATH=/usr/bin\n" + "filler line\n" * 20_000)


def session() -> list[Item]:
    call = ToolCall("c1", "bash", {"command": f"curl -H 'Authorization: Bearer {SECRETS['bearer token']}' x"})
    return [Item("user", (Text("show me the environment"),), id="u1"),
            Item("assistant", (call,), id="a1"),
            Item("tool", (ToolResult("c1", ENV_DUMP),), id="t1")]


def everything_written(folder: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file())


def test_secrets_are_redacted_before_the_transcript_and_the_results_folder(tmp_path: Path) -> None:
    context = Context(window_tokens=200_000, storage=Storage(transcript=tmp_path, session_id="s1"),
                      policy=Policy(redact_secrets=True, persist_whole_tail_fraction=0))  # the output to disk
    context.add(session())
    request = repr(context.prepare())
    context.close()
    written = everything_written(tmp_path).decode()
    assert any(p.parent.name == "s1-results" for p in tmp_path.rglob("*.txt"))  # the output was persisted too
    for kind, secret in SECRETS.items():
        assert secret not in written and secret not in request, kind
        assert f"[REDACTED {kind}]" in written
    assert "PATH=/usr/bin" in written and "aws_secret_access_key = [REDACTED" in written
    events = [e for e in context.events if e.stage == "redact"]
    assert [e.items for e in events] == [("a1",), ("t1",)]
    assert dict(events[1].data) == {"anthropic key": 1, "openai key": 1, "aws access key id": 1,
                                    "aws secret key": 1, "github token": 1}
    assert not any(secret in e.detail for e in events for secret in SECRETS.values())
    resumed = Transcript.load(transcript_path(tmp_path, "s1")).conversation
    assert resumed[1].tool_calls[0].arguments["command"].count("[REDACTED bearer token]") == 1


def test_without_the_policy_nothing_is_changed(tmp_path: Path) -> None:
    context = Context(window_tokens=200_000, storage=Storage(transcript=tmp_path, session_id="s1"))
    context.add(session())
    context.close()
    assert SECRETS["anthropic key"] in transcript_path(tmp_path, "s1").read_text()
    assert not [e for e in context.events if e.stage == "redact"]


def test_ordinary_text_is_left_alone() -> None:
    from contextfold.redaction import redact_item

    item = Item("user", (Text("risk-assessment skeleton; task-ant-colony; bearer of news; AKIA is short"),))
    assert redact_item(item) == (item, {})
