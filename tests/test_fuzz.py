"""The typed-error contract under fuzzing: hostile adapter inputs and mutated session files raise only
contextfold's typed errors (naming the message and field), accepted inputs round-trip, and
``contextfold inspect`` never prints a traceback. ``benchmarks/fuzz.py`` runs the same cases at full size."""

from __future__ import annotations

import json
import random
from functools import partial
from pathlib import Path
from typing import Any

import fuzzing
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import anthropic_requests, conversations, openai_chat_requests, responses_requests
from sweeps import Sweep

from contextfold import InvalidContent, InvalidEncoding, SessionFormatError, UnknownRole
from contextfold.adapters import MAX_NESTING, adapter_for
from contextfold.importers import load

FUZZ = Sweep(main=30, full=100, suppress_health_check=[HealthCheck.too_slow])
SEEDS = st.integers(0, 2**32 - 1)


def assert_good(outcome: fuzzing.Outcome, described: list[str]) -> None:
    assert outcome.good, f"{outcome.kind}: {outcome.detail} <- {'; '.join(described)}"


def fuzz_provider(provider: str, request: dict[str, Any], seed: int) -> None:
    rng = random.Random(seed)
    mutated, done = fuzzing.mutate_tree(request, rng)
    assert_good(fuzzing.judged(lambda: fuzzing.adapter_case(provider, mutated)), done)
    reply, done = fuzzing.mutate_tree(fuzzing.reply_of(provider, request), rng)
    assert_good(fuzzing.judged(lambda: fuzzing.reply_case(provider, reply)), done)


def mutated_anthropic_requests_and_replies(request: dict[str, Any], seed: int) -> None:
    fuzz_provider("anthropic", request, seed)


test_mutated_anthropic_requests_and_replies, test_mutated_anthropic_requests_and_replies_sweep = FUZZ.tests(
    mutated_anthropic_requests_and_replies, anthropic_requests(), SEEDS)


def mutated_openai_chat_requests_and_replies(request: dict[str, Any], seed: int) -> None:
    fuzz_provider("openai", request, seed)


test_mutated_openai_chat_requests_and_replies, test_mutated_openai_chat_requests_and_replies_sweep = FUZZ.tests(
    mutated_openai_chat_requests_and_replies, openai_chat_requests(), SEEDS)


def mutated_responses_requests_and_replies(request: dict[str, Any], seed: int) -> None:
    fuzz_provider("responses", request, seed)


test_mutated_responses_requests_and_replies, test_mutated_responses_requests_and_replies_sweep = FUZZ.tests(
    mutated_responses_requests_and_replies, responses_requests(), SEEDS)


@pytest.fixture(scope="module")
def bases(corpus_dir: Path) -> dict[str, bytes]:
    """The corpus recordings small enough to import many times in a test (the benchmark takes them all)."""
    return fuzzing.Files((name, data) for name, data in fuzzing.base_files(corpus_dir).items() if len(data) < 1_200_000)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), seed=SEEDS)
def test_mutated_session_files_import_or_raise_a_typed_error(
    bases: dict[str, bytes], tmp_path: Path, data: st.DataObject, seed: int
) -> None:
    name = data.draw(st.sampled_from(sorted(bases)))
    mutated, done = fuzzing.mutate_file(bases[name], random.Random(seed))
    path = tmp_path / name
    path.write_bytes(mutated)
    assert_good(fuzzing.judged(lambda: fuzzing.file_case(path)), [name, done])


FEW = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
PROVIDERS = {"anthropic": anthropic_requests(), "openai": openai_chat_requests(), "responses": responses_requests(),
             "gemini": conversations().map(fuzzing.gemini_request)}


@FEW
@given(data=st.data(), seed=SEEDS)
def test_mutated_requests_and_replies_through_the_context(data: st.DataObject, seed: int) -> None:
    provider = data.draw(st.sampled_from(sorted(PROVIDERS)))
    request = data.draw(PROVIDERS[provider])
    rng = random.Random(seed)
    mutated, done = fuzzing.mutate_tree(request, rng)
    assert_good(fuzzing.judged(lambda: fuzzing.context_add_case(provider, mutated)), [provider, *done])
    reply, done = fuzzing.mutate_tree(fuzzing.reply_of(provider, request), rng)
    assert_good(fuzzing.judged(lambda: fuzzing.context_response_case(provider, reply)), [provider, *done])


@FEW
@given(openai_chat_requests(), SEEDS)
def test_mutated_streams_of_chunks(request: dict[str, Any], seed: int) -> None:
    chunks, done = fuzzing.mutate_tree(fuzzing.chunks_of(fuzzing.reply_of("openai", request)), random.Random(seed))
    assert_good(fuzzing.judged(lambda: fuzzing.chunks_case(chunks)), done)


@FEW
@given(conversations(), SEEDS)
def test_mutated_framework_histories(conversation: Any, seed: int) -> None:
    rng = random.Random(seed)
    for framework in fuzzing.frameworks():
        tree, done = fuzzing.mutate_tree(fuzzing.framework_seed(framework, conversation), rng)
        assert_good(fuzzing.judged(partial(fuzzing.framework_case, framework, tree)), [framework.name, *done])


def test_a_mutation_naming_a_read_only_property_does_not_break_the_harness() -> None:
    """pydantic-ai's ``ModelResponse.tool_calls`` is a property: a hot key added under that name used to make
    :func:`fuzzing.from_tree` raise AttributeError itself, counted as the library's raw error."""
    messages = pytest.importorskip("pydantic_ai.messages")
    tree = fuzzing.as_tree(messages.ModelResponse(parts=[messages.TextPart("hi")]))
    tree["tool_calls"] = ["hostile"]
    built = fuzzing.from_tree(tree)
    assert isinstance(built, messages.ModelResponse) and built.tool_calls == []


def test_the_commands_that_read_files_exit_cleanly_on_damaged_ones(bases: dict[str, bytes], tmp_path: Path) -> None:
    rng = random.Random(5)
    runner = CliRunner()
    small = sorted(name for name, data in bases.items() if len(data) < 200_000)
    for number in range(6):
        name = rng.choice(small)
        mutated, done = fuzzing.mutate_file(bases[name], rng)
        path = tmp_path / f"{number}-{name}"
        path.write_bytes(mutated)
        for command, arguments in fuzzing.file_commands(path, tmp_path / "out.json").items():
            assert_good(fuzzing.command_case(runner, arguments), [command, name, done])


def test_the_commands_that_read_a_store_exit_cleanly_on_a_damaged_transcript(tmp_path: Path) -> None:
    rng = random.Random(7)
    runner = CliRunner()
    base = fuzzing.transcript_base(tmp_path / "base")
    for number in range(8):
        store = tmp_path / f"store-{number}"
        store.mkdir(mode=0o700)
        data, done = fuzzing.mutate_file(base, rng)
        (store / "base.jsonl").write_bytes(data)
        (store / "base.jsonl").chmod(0o600)
        for command, arguments in fuzzing.store_commands(store, "base").items():
            assert_good(fuzzing.command_case(runner, arguments), [command, done])


def test_inspect_gives_one_line_and_a_non_zero_exit_for_damaged_files(bases: dict[str, bytes], tmp_path: Path) -> None:
    rng = random.Random(11)
    runner = CliRunner()
    for number in range(12):
        name = rng.choice(sorted(bases))
        mutated, done = fuzzing.mutate_file(bases[name], rng)
        path = tmp_path / f"{number}-{name}"
        path.write_bytes(mutated)
        assert_good(fuzzing.inspect_case(runner, path, as_json=number % 2 == 0), [name, done])


# --------------------------------------------------------------------------- the holes the fuzzer found


CALL = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]}


@pytest.mark.parametrize("role", [["user"], {"r": "user"}, 5, None])
@pytest.mark.parametrize("provider", ["anthropic", "openai", "responses"])
def test_a_role_of_the_wrong_type_is_an_unknown_role(provider: str, role: Any) -> None:
    with pytest.raises(UnknownRole) as caught:
        adapter_for(provider).read([{"role": "user", "content": "hi"}, {"role": role, "content": "x"}])
    assert (caught.value.index, caught.value.field) == (1, "role")


@pytest.mark.parametrize(
    ("provider", "message", "field"),
    [
        ("anthropic", {"role": "user", "content": [{"type": ["text"], "text": "x"}]}, "content[0].type"),
        ("openai", {"role": "user", "content": [{"type": {"t": 1}, "text": "x"}]}, "content[0].type"),
        ("responses", {"type": ["message"], "role": "user", "content": "x"}, "type"),
        ("responses", {"role": "user", "content": [{"type": ["input_text"], "text": "x"}]}, "content[0].type"),
    ],
)
def test_a_type_of_the_wrong_type_names_its_field(provider: str, message: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidContent) as caught:
        adapter_for(provider).read([message])
    assert (caught.value.index, caught.value.field) == (0, field)


@pytest.mark.parametrize("kind", ["list", "dict"])
def test_nesting_past_the_limit_is_refused_where_it_starts_going_too_deep(kind: str) -> None:
    arguments = {"p": fuzzing.deep(5_000, kind)}
    message = {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": arguments}]}
    with pytest.raises(InvalidContent) as caught:
        adapter_for("anthropic").read([{"role": "user", "content": "hi"}, message])
    assert caught.value.index == 1 and caught.value.field.startswith("content[0].input.p")
    assert f"deeper than {MAX_NESTING}" in caught.value.reason


@pytest.mark.parametrize(
    ("extra", "field", "error"),
    [
        ({"name": "\ud800"}, "name", InvalidEncoding),
        ({"vendor": {"n": float("nan")}}, "vendor.n", InvalidContent),
        ({"vendor": {1: "a"}}, "vendor", InvalidContent),
        ({"vendor": object()}, "vendor", InvalidContent),
        ({"vendor": 10**5000}, "vendor", InvalidContent),
    ],
)
def test_fields_left_over_for_the_writer_are_checked_too(extra: dict[str, Any], field: str, error: type) -> None:
    """What the model has no slot for still goes into the transcript and back to the provider."""
    with pytest.raises(error) as caught:
        adapter_for("openai").read([{"role": "user", "content": "hi", **extra}])
    assert (caught.value.index, caught.value.field) == (0, field)


@pytest.mark.parametrize("usage", [{"input_tokens": "12"}, {"input_tokens": [1]}, {"output_tokens": -1}, ["x"]])
def test_a_usage_of_the_wrong_type_is_a_typed_error(usage: Any) -> None:
    reply = {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "usage": usage}
    with pytest.raises(InvalidContent) as caught:
        adapter_for("anthropic").read_response(reply)
    assert caught.value.field.startswith("usage")


def mini_swe_agent(messages: list[Any]) -> dict[str, Any]:
    return {"info": {}, "trajectory_format": "mini-swe-agent-1.1", "messages": messages}


@pytest.mark.parametrize(
    ("text", "location"),
    [
        (json.dumps(mini_swe_agent([{"role": "user", "content": "\ud800"}])), "$.messages[0].content"),
        ('{"info": {"x": ' + "[" * 5_000 + "]" * 5_000 + '}, "messages": []}', "$"),
        ('{"info": {"n": ' + "9" * 5_000 + '}, "messages": []}', "$"),
    ],
)
def test_session_files_the_model_cannot_hold_name_the_place(tmp_path: Path, text: str, location: str) -> None:
    path = tmp_path / "run.traj.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SessionFormatError) as caught:
        load(path)
    assert caught.value.location == location


def test_inspect_refuses_a_lone_surrogate_in_one_line(tmp_path: Path) -> None:
    """The reported case: the importers took a lone surrogate that printing could not encode."""
    path = tmp_path / "run.traj.json"
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "\ud83d"}]
    path.write_text(json.dumps(mini_swe_agent(messages)), encoding="utf-8")
    outcome = fuzzing.inspect_process(path, timeout=60)
    assert outcome.kind == "rejected" and "lone surrogate" in outcome.detail, outcome.detail
