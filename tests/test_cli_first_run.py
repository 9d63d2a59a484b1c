"""What a new user meets on the command line: missing extras, silly windows, the model registry, quiet output.

Every mistake is one line on stderr with exit code 2, said before any long
work starts, and never a traceback.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from contextfold.agent.idle import chat_policy
from contextfold.cli import cli
from contextfold.cli.chat import new_context
from contextfold.codec import conversation_to_dict
from contextfold.limits import registered_models
from contextfold.pipeline.base import Policy
from contextfold.synthetic import generate_session
from contextfold.testing.scripted import ScriptedModel
from contextfold.testing.server import reading_script


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env)


def one_line_error(result: Result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture
def session_file(tmp_path: Path) -> Path:
    """A generated coding-agent session, written as a contextfold session file."""
    path = tmp_path / "session.json"
    path.write_text(json.dumps(conversation_to_dict(generate_session(rounds=30, seed=3))), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- extras that are not installed


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("with_key", [True, False])
def test_chat_without_its_sdk_names_the_extra_in_one_line(
    provider: str, with_key: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, provider, None)  # import anthropic / openai -> ImportError
    keys = {"ANTHROPIC_API_KEY": "k" if with_key else None, "ANTHROPIC_AUTH_TOKEN": None,
            "OPENAI_API_KEY": "k" if with_key else None}
    result = invoke("chat", "--provider", provider, "-p", "hello", "--cwd", str(tmp_path), env=keys)
    assert one_line_error(result) == (f"contextfold: {provider} is not installed (the SDK of the {provider} provider): "
                                      f"python3 -m pip install -e '.[{provider}]' in contextfold's checkout")
    assert not (tmp_path / ".contextfold").exists()  # nothing started


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_model_summarizer_without_its_sdk_is_refused_before_the_work(
    provider: str, session_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, provider, None)
    result = invoke("compact", str(session_file), "--window", "20000", "--summarizer", provider,
                    env={"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"})
    assert one_line_error(result).endswith(f"python3 -m pip install -e '.[{provider}]' in contextfold's checkout")


def test_bench_names_the_extra_of_a_strategy_it_leaves_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_bench import write_tau_bench

    monkeypatch.setitem(sys.modules, "langchain_core.messages", None)
    write_tau_bench(tmp_path / "chats.json", 1)
    result = invoke("bench", str(tmp_path / "chats.json"), "--window", "8000", "--jobs", "1", "--no-charts",
                    "--tokenizer", "estimate", "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    left_out = " ".join(result.output[result.output.index("langchain left out"):].split())
    assert "pip install -e '.[bench]'" in left_out  # the brackets are not taken for markup


# --------------------------------------------------------------------------- windows with no room for a prompt


@pytest.mark.parametrize(("command", "window"), [
    (["compact"], "4096"), (["replay", "--max-output", "8000", "--tokenizer", "estimate"], "8000"),
    (["bench", "--no-charts", "--tokenizer", "estimate"], "1000"),
])
def test_a_window_no_larger_than_the_reply_reserve_is_refused(
    command: list[str], window: str, session_file: Path, tmp_path: Path
) -> None:
    result = invoke(command[0], str(session_file), "--window", window, *command[1:])
    assert result.exit_code == 2 and "leave no room for a prompt beside the" in result.output
    assert "Traceback" not in result.output


def test_chat_refuses_a_window_smaller_than_the_reply_it_asks_for(tmp_path: Path) -> None:
    result = invoke("chat", "--model", "claude-sonnet-4-5", "--window", "5000", "-p", "hi", "--cwd", str(tmp_path),
                    env={"ANTHROPIC_API_KEY": "k"})
    assert result.exit_code == 2 and "beside the 8,192 tokens kept for each reply" in result.output


@pytest.mark.parametrize("command", [["chat", "-p", "hi"], ["bench", ".", "--window", "32000"],
                                     ["replay", "README.md", "--window", "32000"]])
def test_every_command_that_runs_the_pipeline_takes_a_preset_and_names_them_when_it_is_wrong(command: list[str]) -> None:
    result = invoke(*command, "--preset", "frugal")
    assert result.exit_code == 2 and "'frugal' is not one of 'lean', 'balanced', 'thorough'" in result.output


def test_chat_runs_its_context_at_the_preset_it_is_given(tmp_path: Path) -> None:
    context = new_context("claude-sonnet-4-5", None, "anthropic", tmp_path, Policy.preset("lean"))
    try:
        # priced for its model and its output limits scaled to its window, as any Context's policy; at its model's
        # cache lifetime, as chat runs it (idle compaction off unless asked)
        lean = chat_policy("claude-sonnet-4-5", Policy.preset("lean")).for_model("claude-sonnet-4-5") \
            .for_window(context.window_tokens)
        assert context.policy == lean != Policy().for_model("claude-sonnet-4-5").for_window(context.window_tokens)
        assert not context.policy.idle_compaction  # off unless asked: it costs recall (the README's figures)
    finally:
        context.close()
    asked = new_context("claude-sonnet-4-5", None, "anthropic", tmp_path / "asked", Policy.preset("lean"), True)
    try:
        assert asked.policy.idle_compaction and asked.policy.cache_ttl_s == 300.0
    finally:
        asked.close()


# --------------------------------------------------------------------------- the model registry


def test_models_lists_the_registry() -> None:
    result = invoke("models")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in invoke("models", "--json").output.splitlines()]
    assert [row["model"] for row in rows] == list(registered_models())
    assert {"model": "claude-sonnet-4-5", "context_window": 200_000, "max_output_tokens": 64_000,
            "provider": "anthropic", "usd_per_mtok": {"input": 3.0, "output": 15.0, "cache_read": 0.3}} in rows
    assert {"model": "gpt-5.5", "context_window": 1_000_000, "max_output_tokens": 128_000, "provider": "openai",
            "usd_per_mtok": None} in rows
    assert all(row["provider"] in ("anthropic", "openai", "responses", "gemini") for row in rows)
    assert "claude-sonnet-4-5" in result.output and "200,000" in result.output
    assert "3, 15" in result.output and "unknown" in result.output


def test_models_resolves_dated_names_and_refuses_unknown_ones_in_one_line() -> None:
    [row] = [json.loads(line) for line in invoke("models", "gpt-4o-2024-08-06", "--json").output.splitlines()]
    assert row == {"model": "gpt-4o-2024-08-06", "context_window": 128_000, "max_output_tokens": 16_384,
                   "provider": "openai", "usd_per_mtok": {"input": 2.5, "output": 10.0, "cache_read": 1.25}}
    line = one_line_error(invoke("models", "gpt4o"))
    assert line.startswith("contextfold: unknown model 'gpt4o' (did you mean gpt-4o")
    assert line.endswith("`contextfold models` lists the known ones")


def test_chat_with_an_unknown_model_says_what_to_do(tmp_path: Path) -> None:
    result = invoke("chat", "--model", "claude-sonet-4-5", "-p", "hi", "--cwd", str(tmp_path),
                    env={"ANTHROPIC_API_KEY": "k"})
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "did you mean claude-sonnet-4-5" in result.output and "pass --window N" in result.output


# --------------------------------------------------------------------------- what the commands say


def test_replay_says_which_stages_fired_and_how_many_summaries_it_wrote(session_file: Path) -> None:
    result = invoke("replay", str(session_file), "--window", "6000", "--max-output", "1000", "--tokenizer", "estimate")
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if line.startswith("stages fired: "))
    written = int(line.rsplit("; ", 1)[1].split()[0])
    assert written > 0 and f"summarize {written}×" in line
    quiet = invoke("replay", str(session_file), "--window", "12000", "--strategy", "none", "--tokenizer", "estimate")
    assert "stages fired: none recorded; 0 summaries written" in quiet.output


def test_bench_on_a_folder_with_nothing_usable_says_why_each_file_was_rejected(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "notes.txt").write_text("not a session\n")
    (tmp_path / "runs" / "config.json").write_text('{"model": "x"}')
    result = invoke("bench", str(tmp_path / "runs"), "--window", "32000", "--tokenizer", "estimate", "--no-charts",
                    "--out", str(tmp_path / "out"))
    assert result.exit_code == 2 and not (tmp_path / "out").exists()
    lines = result.output.splitlines()
    assert any(line.strip().startswith("notes.txt: ") and "no known session format" in line for line in lines)
    assert any(line.strip().startswith("config.json: ") and "no known session format" in line for line in lines)


def test_tokens_says_once_that_conversations_carry_no_usage(tmp_path: Path) -> None:
    from test_bench import write_tau_bench

    write_tau_bench(tmp_path / "chats.json", 1, 2, 3)
    result = invoke("tokens", str(tmp_path / "chats.json"), "--tokenizer", "estimate")
    assert result.exit_code == 0, result.output
    assert "conversation 0" not in result.output  # no empty table per conversation
    assert " ".join(result.output.split()) == ("none of the 3 conversations has recorded usage (the prompt tokens the "
                                               "provider reported): nothing to compare")


def test_inspect_json_names_the_counter_it_used(session_file: Path, tmp_path: Path, tokenizers_dir: Path) -> None:
    estimated = invoke("inspect", str(session_file), "--json", env={"CONTEXTFOLD_TOKENIZERS_DIR": str(tmp_path)})
    exact = invoke("inspect", str(session_file), "--json", env={"CONTEXTFOLD_TOKENIZERS_DIR": str(tokenizers_dir)})
    assert json.loads(estimated.stdout)["tokenizer"] == "heuristic" and "estimate" in estimated.stderr
    assert json.loads(exact.stdout)["tokenizer"] == "tiktoken:o200k_base" and exact.stderr == ""


def test_log_level_sets_what_reaches_stderr(session_file: Path, tmp_path: Path) -> None:
    env = {"CONTEXTFOLD_TOKENIZERS_DIR": str(tmp_path)}  # no tokenizer file there: auto warns and estimates
    loud = invoke("inspect", str(session_file), env=env)
    quiet = invoke("--log-level", "error", "inspect", str(session_file), env=env)
    assert loud.exit_code == quiet.exit_code == 0
    assert loud.stderr.startswith("contextfold: warning: counting tokens with the block-aware estimate")
    assert quiet.stderr == ""
    logger = logging.getLogger("contextfold")  # an in-process run leaves logging as it found it
    assert logger.level == logging.NOTSET and logger.handlers == []


# --------------------------------------------------------------------------- one meaning per option name


def test_input_and_output_formats_have_their_own_names_and_the_old_one_still_works(session_file: Path) -> None:
    for command in ("inspect", "tokens", "replay", "compact"):
        shown = invoke(command, "--help").output
        assert "--input-format" in shown and "--format " not in shown, command
    assert "--output-format" in invoke("compact", "--help").output
    new = invoke("compact", str(session_file), "--window", "20000", "--output-format", "openai")
    old = invoke("compact", str(session_file), "--window", "20000", "--format", "openai")  # deprecated: output
    assert new.exit_code == old.exit_code == 0
    assert new.stdout == old.stdout and json.loads(new.stdout)["messages"]
    assert "deprecated" in old.stderr and "--output-format" in old.stderr
    legacy = invoke("inspect", str(session_file), "--format", "contextfold-session-1", "--tokenizer", "estimate")
    assert legacy.exit_code == 0 and "deprecated" in legacy.stderr and "--input-format" in legacy.stderr
    wrong = invoke("inspect", str(session_file), "--input-format", "tau-bench", "--tokenizer", "estimate")
    assert wrong.exit_code == 2 and "Traceback" not in wrong.output  # the format is really used


NO_KEYS = {name: None for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "GOOGLE_API_KEY",
                                   "GEMINI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL")}


@pytest.mark.parametrize(("provider", "sdk"), [("anthropic", "anthropic"), ("openai", "openai"), ("gemini", "google.genai")])
def test_chat_against_a_server_on_this_machine_needs_no_key(tmp_path: Path, provider: str, sdk: str) -> None:
    pytest.importorskip(sdk)
    (tmp_path / "README.md").write_text("# a project of one line\n")
    with ScriptedModel(reading_script) as server:
        result = CliRunner().invoke(cli, ["chat", "--provider", provider, "--base-url", server.base_url(provider),
                                          "--cwd", str(tmp_path), "-p", "What is the first line of the README?"],
                                    env=NO_KEYS)
    assert result.exit_code == 0, result.output
    assert server.problems == [] and "# a project of one line" in result.stdout
    elsewhere = CliRunner().invoke(cli, ["chat", "--provider", provider, "--base-url", "https://models.example.com",
                                         "-p", "hi"], env=NO_KEYS)
    assert elsewhere.exit_code != 0 and "no API key" in elsewhere.output  # a server elsewhere still needs one
