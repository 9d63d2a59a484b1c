"""Each raw Python exception a hostile input reached (issue 18) is now one of contextfold's typed errors,
naming where the fault is, or for the command line one line and a non-zero exit."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click._textwrap  # noqa: F401 - loaded now: as nobody, the interpreter's own folder may be out of reach
import pytest
from click.testing import CliRunner

from contextfold import Context, InvalidContent, ToolCall, Storage
from contextfold.adapters import reply_from_chunks
from contextfold.cli.main import cli
from contextfold.errors import TranscriptError
from contextfold.importers import load

NOBODY = 65534


@pytest.mark.parametrize(
    ("chunks", "index", "field"),
    [
        ([{"choices": ["x"]}], 0, "choices[0]"),
        ([{"choices": [{"delta": {"content": "a"}}]}, {"choices": [{"delta": ["b"]}]}], 1, "choices[0].delta"),
        ([{"choices": [{"delta": {"content": 5}}]}], 0, "choices[0].delta.content"),
        ([{"choices": [{"delta": {}, "finish_reason": ["stop"]}]}], 0, "choices[0].finish_reason"),
        ([{"choices": "abc"}], 0, "choices"),
        (["chunk"], 0, "chunk"),
        ([{"choices": [], "usage": "lots"}], 0, "usage"),
    ],
)
def test_a_malformed_stream_chunk_is_a_typed_error_naming_chunk_and_field(chunks: Any, index: int, field: str) -> None:
    with pytest.raises(InvalidContent) as caught:
        reply_from_chunks(chunks)
    assert (caught.value.index, caught.value.field) == (index, field)


def test_a_well_formed_stream_still_reads() -> None:
    chunks = [{"choices": [{"delta": {"content": "Hel"}}]}, {"choices": [{"delta": {"content": "lo"},
                                                                         "finish_reason": "stop"}]},
              {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}]
    reply = reply_from_chunks(chunks)
    assert reply.conversation.items[0].blocks[0].text == "Hello" and reply.usage is not None


@pytest.mark.parametrize("messages", [None, 5, "hello", {"role": "user", "content": "hi"}, b"x"])
def test_adding_something_that_is_not_a_list_of_messages_is_a_typed_error(messages: Any) -> None:
    context = Context(window_tokens=10_000)
    with pytest.raises(InvalidContent) as caught:
        context.add(messages)
    assert caught.value.field == "messages"
    assert context.add([{"role": "user", "content": "hi"}])  # and the context goes on


@pytest.mark.parametrize("session_id", ["../evil", "a/b", ".", "..", "x" * 129, "é", "a\nb", "\x00", 5])
def test_a_hostile_session_id_for_a_transcript_folder_is_refused_up_front(tmp_path: Path, session_id: Any) -> None:
    with pytest.raises(TranscriptError, match="invalid session id"):
        Context(window_tokens=10_000, storage=Storage(transcript=tmp_path, session_id=session_id))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("timestamp", [10**400, -(10**400), 1e300, -1e300, "99999-01-01T00:00:00"])
def test_a_timestamp_out_of_range_is_read_as_unknown(tmp_path: Path, timestamp: Any) -> None:
    record = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", "timestamp": timestamp,
              "message": {"role": "user", "content": "hi"}}
    path = tmp_path / "transcript.jsonl"
    path.write_text(json.dumps(record) + "\n")
    (conversation,) = load(path)
    assert [item.blocks[0].text for item in conversation.items] == ["hi"]
    result = CliRunner().invoke(cli, ["inspect", str(path), "--tokenizer", "estimate", "--json"])
    assert result.exit_code == 0 and result.exception is None, result.output
    assert json.loads(result.stdout.splitlines()[0])["items"] == 1


@contextmanager
def unable_to_read() -> Iterator[None]:
    """As a user the permissions apply to: ``nobody`` when the tests run as root (its effective id only,
    restored after), else the user itself."""
    if os.geteuid() != 0:
        yield
        return
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)


@pytest.mark.parametrize("argument", ["folder/s1.jsonl", "folder#s1", "folder"])
def test_inspect_on_an_unreadable_folder_says_so_in_one_line(tmp_path: Path, argument: str) -> None:
    folder = tmp_path / "folder"
    context = Context(window_tokens=10_000, storage=Storage(transcript=folder, session_id="s1"))
    context.add([{"role": "user", "content": "hi"}])
    context.close()
    runner = CliRunner()
    readable = runner.invoke(cli, ["inspect", str(tmp_path / argument), "--tokenizer", "estimate"])  # loads the code
    tmp_path.chmod(0o755)
    folder.chmod(0o000)
    try:
        with unable_to_read():
            result = runner.invoke(cli, ["inspect", str(tmp_path / argument), "--tokenizer", "estimate"])
    finally:
        folder.chmod(0o700)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.stderr.strip().splitlines()
    assert result.exit_code != 0 and len(lines) == 1, (readable.output, result.output)
    assert "ermission denied" in lines[0] and "Traceback" not in result.output


# --------------------------------------------------------------------------- found by benchmarks/fuzz.py


@pytest.mark.parametrize(("role", "reader"), [({"r": 1}, "gemini"), ([["model"]], "gemini"), ({"x": 1}, "strands"),
                                              (10**5000, "strands")],
                         ids=["gemini-object", "gemini-list", "strands-object", "strands-5000-digits"])
def test_a_role_no_one_can_look_up_is_an_unknown_role(role: Any, reader: str) -> None:
    from contextfold import UnknownRole
    from contextfold.adapters.gemini import from_genai
    from contextfold.adapters.strands import from_strands

    message = {"role": role, "parts": [{"text": "x"}]} if reader == "gemini" else {"role": role, "content": []}
    with pytest.raises(UnknownRole) as caught:
        (from_genai if reader == "gemini" else from_strands)([message])
    assert (caught.value.index, caught.value.field) == (0, "role")


@pytest.mark.parametrize(
    ("block", "field"),
    [
        ({"toolUse": {"toolUseId": {"id": 1}, "name": "f", "input": {}}}, "content[0].toolUse.toolUseId"),
        ({"toolUse": {"toolUseId": "t", "name": "f", "input": "x"}}, "content[0].toolUse.input"),
        ({"toolResult": {"toolUseId": "t0", "status": {"s": 1}, "content": []}}, "content[0].toolResult.status"),
    ],
)
def test_strands_blocks_of_the_wrong_types_name_their_field(block: dict[str, Any], field: str) -> None:
    from contextfold.adapters.strands import from_strands

    call = {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t0", "name": "f", "input": {}}}]}
    messages = [call, {"role": "user", "content": [block]}]
    with pytest.raises(InvalidContent) as caught:
        from_strands(messages)
    assert (caught.value.index, caught.value.field) == (1, field)


def test_langchain_messages_built_without_validation_are_typed_errors() -> None:
    messages = pytest.importorskip("langchain_core.messages")
    from contextfold import UnknownRole
    from contextfold.adapters.langchain import from_langchain

    cases = [
        (messages.HumanMessage.model_construct(type=["human"], content="x"), UnknownRole, "type"),
        (messages.HumanMessage.model_construct(type=10**5000, content="x"), UnknownRole, "type"),
        (messages.HumanMessage.model_construct(type="human"), InvalidContent, "content"),
        (messages.AIMessage.model_construct(type="ai", content="x", tool_calls=7), InvalidContent, "tool_calls"),
        (messages.ToolMessage.model_construct(type="tool", content="x", tool_call_id={"id": 1}), InvalidContent,
         "tool_call_id"),
    ]
    for message, error, field in cases:
        with pytest.raises(error) as caught:
            from_langchain([message])
        assert (caught.value.index, caught.value.field) == (0, field)


@pytest.mark.parametrize(("message", "field"), [({"kind": "request", "parts": 5}, "parts"),
                                                ({"kind": "response", "parts": ["x"]}, "parts[0]")])
def test_pydantic_ai_messages_of_the_wrong_shape_are_typed_errors(message: dict[str, Any], field: str) -> None:
    pytest.importorskip("pydantic_ai", reason="pydantic_ai is not installed: python3 -m pip install -e '.[pydantic-ai]'")
    from pydantic_ai.messages import ModelRequest

    from contextfold.adapters.pydantic_ai import from_pydantic_ai

    hostile = object.__new__(ModelRequest)
    for name, value in message.items():
        object.__setattr__(hostile, name, value)
    with pytest.raises(InvalidContent) as caught:
        from_pydantic_ai([hostile])
    assert (caught.value.index, caught.value.field) == (0, field)


@pytest.mark.parametrize(("line", "expected"), [(b'{"seq": "one", "type": "item"}', "integer seq"),
                                                (b'{"seq": 1, "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", None)],
                         ids=["string-seq", "too-deep"])
def test_sessions_export_of_a_damaged_transcript_exits_with_one_line(tmp_path: Path, line: bytes,
                                                                     expected: str | None) -> None:
    context = Context(window_tokens=10_000, storage=Storage(transcript=tmp_path / "store", session_id="s1"))
    context.add([{"role": "user", "content": "hi"}])
    context.close()
    path = tmp_path / "store" / "s1.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([lines[0], line + b"\n", *lines[1:]]))
    result = CliRunner().invoke(cli, ["sessions", "export", "s1", "--store", str(tmp_path / "store")])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    errors = [line for line in result.stderr.splitlines() if not line.startswith("contextfold: warning:")]
    if expected is None:  # too deep to read: a damaged line, left out with everything after it, said so
        assert result.exit_code == 0 and "nested too deep" in result.stderr
    else:
        assert result.exit_code == 2 and len(errors) == 1 and expected in errors[0]


def test_inspect_on_a_file_nested_too_deep_to_parse_says_so_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"info": ' + "[" * 100_000 + "]" * 100_000 + ', "messages": []}')
    result = CliRunner().invoke(cli, ["inspect", str(path), "--tokenizer", "estimate"])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("created", [["x"], "noon", 10**400], ids=["list", "string", "huge"])
def test_sessions_list_shows_a_session_whose_header_time_is_damaged(tmp_path: Path, created: Any) -> None:
    context = Context(window_tokens=10_000, storage=Storage(transcript=tmp_path / "store", session_id="s1"))
    context.add([{"role": "user", "content": "hi"}])
    context.close()
    path = tmp_path / "store" / "s1.jsonl"
    header, *rest = path.read_bytes().splitlines(keepends=True)
    damaged = {**json.loads(header), "created": created}  # the checksum no longer matches: only listing reads it
    path.write_bytes(b"".join([json.dumps(damaged).encode() + b"\n", *rest]))
    result = CliRunner().invoke(cli, ["sessions", "list", "--store", str(tmp_path / "store"), "--json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 0 and "s1" in result.stdout


def test_a_streamed_reply_keeps_its_tool_calls_with_their_arguments_joined() -> None:
    """OpenAI streams a tool call as deltas: the id and name first, then argument fragments, by index."""
    def delta(**fields: Any) -> dict[str, Any]:
        return {"choices": [{"delta": fields}]}

    chunks = [delta(role="assistant", content=None),
              delta(tool_calls=[{"index": 0, "id": "call_a", "type": "function",
                                 "function": {"name": "read_file", "arguments": ""}}]),
              delta(tool_calls=[{"index": 0, "function": {"arguments": '{"pa'}}]),
              delta(tool_calls=[{"index": 1, "id": "call_b", "type": "function",
                                 "function": {"name": "list_files", "arguments": "{}"}}]),
              delta(tool_calls=[{"index": 0, "function": {"arguments": 'th": "a.py"}'}}]),
              {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}]
    reply = reply_from_chunks(chunks)
    calls = [block for block in reply.conversation.items[0].blocks if isinstance(block, ToolCall)]
    assert [(call.id, call.name, call.arguments) for call in calls] == [
        ("call_a", "read_file", {"path": "a.py"}), ("call_b", "list_files", {})]


def test_a_malformed_streamed_tool_call_is_a_typed_error_naming_chunk_and_field() -> None:
    chunks = [{"choices": [{"delta": {"tool_calls": [{"index": "zero", "function": {"name": "f"}}]}}]}]
    with pytest.raises(InvalidContent) as caught:
        reply_from_chunks(chunks)
    assert (caught.value.index, caught.value.field) == (0, "choices[0].delta.tool_calls[0].index")


class _ListReply:
    """An SDK-like object (a pydantic root model of a list, say) whose dump is not an object."""

    def model_dump(self, **options: Any) -> list[Any]:
        return [{"candidates": []}]


@pytest.mark.parametrize("provider", ["gemini", "anthropic", "openai", "responses"])
def test_a_reply_whose_dump_is_not_an_object_is_a_typed_error_naming_the_field(provider: str) -> None:
    from contextfold.adapters import adapter_for

    with pytest.raises(InvalidContent) as caught:
        adapter_for(provider).read_response(_ListReply())
    assert caught.value.field == "response" and "list" in str(caught.value)
