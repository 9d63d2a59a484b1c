"""Right by default: a model name alone gives the request format, the prices and the window it is served with.

``Context(model)`` with nothing else must write the request the model's own
API takes, price every cache decision at that model's list prices, and check
its window the same way whatever else is given. Each provider's request goes
through its real SDK to the scripted server (:mod:`contextfold.testing.scripted`),
which answers a request its API would refuse with a 400.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import openai
import pytest

from contextfold import (
    Context,
    InvalidLimits,
    InvalidPolicy,
    Policy,
    Prices,
    ProviderRequired,
    UnknownPriceWarning,
    UnknownRole,
    model_prices,
    model_provider,
    register_model,
)
from contextfold import limits as limits_module
from contextfold.pipeline.base import DEFAULT_PRICES
from contextfold.testing.scripted import ScriptedModel, Seen, Turn

genai = pytest.importorskip("google.genai")

SYSTEM = "You answer in one word."
TASK = "Which colour is the sky?"


def answer(seen: Seen) -> Turn:
    return Turn(text="Blue.")


@pytest.fixture
def server() -> Iterator[ScriptedModel]:
    with ScriptedModel(answer) as model:
        yield model


def _send_anthropic(server: ScriptedModel, model: str, request: dict[str, Any]) -> Any:
    client = anthropic.Anthropic(base_url=server.base_url("anthropic"), api_key="test", max_retries=0)
    return client.messages.create(model=model, max_tokens=256, **request)


def _send_chat(server: ScriptedModel, model: str, request: dict[str, Any]) -> Any:
    client = openai.OpenAI(base_url=server.base_url("openai"), api_key="test", max_retries=0)
    return client.chat.completions.create(model=model, **request)


def _send_responses(server: ScriptedModel, model: str, request: dict[str, Any]) -> Any:
    client = openai.OpenAI(base_url=server.base_url("responses"), api_key="test", max_retries=0)
    return client.responses.create(model=model, **request)


def _send_gemini(server: ScriptedModel, model: str, request: dict[str, Any]) -> Any:
    client = genai.Client(api_key="test", http_options={"base_url": server.base_url("gemini")})
    config = genai.types.GenerateContentConfig(system_instruction=request.get("system_instruction"),
                                               max_output_tokens=256)
    return client.models.generate_content(model=model, contents=request["contents"], config=config)


Send = Callable[[ScriptedModel, str, dict[str, Any]], Any]
USER_MESSAGE: dict[str, dict[str, Any]] = {
    "anthropic": {"role": "user", "content": TASK},
    "openai": {"role": "user", "content": TASK},
    "responses": {"role": "user", "content": TASK},
    "gemini": {"role": "user", "parts": [{"text": TASK}]},
}
ONE_PER_PROVIDER: list[tuple[str, str, Send]] = [
    ("claude-sonnet-4-6", "anthropic", _send_anthropic),
    ("gpt-4.1", "openai", _send_chat),
    ("gpt-5.1-codex-mini", "responses", _send_responses),  # served by the Responses API alone
    ("gemini-2.5-flash", "gemini", _send_gemini),
]


# --------------------------------------------------------------------------- the provider follows from the model


@pytest.mark.parametrize(("model", "provider", "send"), ONE_PER_PROVIDER, ids=[p for _, p, _ in ONE_PER_PROVIDER])
def test_a_model_alone_writes_its_own_apis_request_and_prices_at_its_list_prices(
    server: ScriptedModel, model: str, provider: str, send: Send
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the model's price is known: nothing to warn about
        context = Context(model)
    assert context.provider == provider
    context.add([USER_MESSAGE[provider]], system=SYSTEM if provider in ("anthropic", "gemini") else None)
    request = context.prepare()
    if provider != "anthropic":
        assert "cache_control" not in repr(request)  # Anthropic's cache marks are for Anthropic alone
    reply = context.add_response(send(server, model, request))
    assert server.problems == [] and [e.provider for e in server.valid] == [provider]
    assert [item.text for item in reply] == ["Blue."]
    listed = model_prices(model)
    assert context.policy.prices == Prices.of(model)
    assert (context.policy.prices.input_per_mtok, context.policy.prices.output_per_mtok,
            context.policy.prices.cache_read_per_mtok) == (listed.input_per_mtok, listed.output_per_mtok,
                                                           listed.cache_read_per_mtok)


def test_gpt_4_1_is_an_openai_chat_request_priced_as_contextfold_models_lists_it(server: ScriptedModel) -> None:
    """The figures ``contextfold models gpt-4.1`` prints: 2 in, 8 out, 0.5 for a cache read; OpenAI bills a
    cache write as plain input."""
    for context in (Context("gpt-4.1"), Context("gpt-4.1", provider="openai")):
        assert context.provider == "openai"
        assert context.policy.prices == Prices(input_per_mtok=2.0, cache_write_per_mtok=2.0, cache_read_per_mtok=0.5,
                                               output_per_mtok=8.0)
        context.add([{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}])
        _send_chat(server, "gpt-4.1", context.prepare())
    assert server.problems == [] and len(server.valid) == 2


@pytest.mark.parametrize(("model", "provider"), [
    ("claude-opus-4-5-20251101", "anthropic"), ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic"),
    ("gpt-4o-2024-08-06", "openai"), ("openai/gpt-5-mini", "openai"), ("o3", "openai"), ("o4-mini", "openai"),
    ("o3-pro", "responses"), ("gpt-5-pro", "responses"), ("gpt-5-codex", "responses"),
    ("gemini-2.5-pro", "gemini"), ("deepseek/deepseek-chat", "openai"), ("qwen3-max", "openai"),
])
def test_the_provider_rule_by_model_name(model: str, provider: str) -> None:
    assert model_provider(model) == provider


def test_a_model_whose_api_the_name_does_not_tell_needs_a_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits_module, "_REGISTRY", dict(limits_module._REGISTRY))
    monkeypatch.setattr(limits_module, "_PROVIDER_OF", dict(limits_module._PROVIDER_OF))
    register_model("acme-coder", 64_000, 4_096)
    with pytest.raises(ProviderRequired, match="acme-coder.*provider=") as raised:
        Context("acme-coder", policy=Policy(prices=DEFAULT_PRICES))
    assert isinstance(raised.value, ValueError)
    assert Context("acme-coder", provider="openai", policy=Policy(prices=DEFAULT_PRICES)).provider == "openai"
    register_model("acme-chat", 64_000, 4_096, provider="gemini")
    assert Context("acme-chat-20260101", policy=Policy(prices=DEFAULT_PRICES)).provider == "gemini"
    assert Context(window_tokens=50_000).provider == "anthropic"  # no model named: the reference format


# --------------------------------------------------------------------------- prices


def test_an_unknown_price_is_a_typed_warning_and_the_documented_default() -> None:
    with pytest.warns(UnknownPriceWarning, match=r"'gpt-5\.5'.*default prices.*3.*3\.75.*0\.3.*15"):
        context = Context("gpt-5.5")
    assert context.policy.prices is None and context.policy.prices_in_effect == DEFAULT_PRICES
    given = Prices(1.0, 1.0, 0.1, 4.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Context("gpt-5.5", policy=Policy(prices=given)).policy.prices == given  # given prices win, quietly
        assert Context("gpt-4.1", policy=Policy(prices=given)).policy.prices == given
    with pytest.raises(InvalidPolicy, match="Policy.prices"):
        Policy(prices={"input": 2.0})  # type: ignore[arg-type]


def test_every_cache_decision_uses_the_models_prices() -> None:
    """Whether clearing an old output pays weighs the cache reads it saves against rewriting the prefix: both at
    the model's prices (gpt-4.1: reads at 0.5, writes at plain input), not at the Sonnet defaults."""
    from contextfold.conversation import Conversation, Item, Text
    from contextfold.pipeline.economics import verdict

    before = Conversation([Item("user", (Text("x" * 40_000),)), Item("assistant", (Text("Read."),)),
                           Item("user", (Text("Go on."),))])
    after = Conversation([Item("user", (Text("[cleared]"),)), *before.items[1:]])
    for model, prices in (("gpt-4.1", Prices.of("gpt-4.1")), ("gemini-2.5-flash", Prices.of("gemini-2.5-flash")),
                          (None, DEFAULT_PRICES)):
        budget = Context(model, window_tokens=100_000)._step.budget()
        decided = verdict(before, after, budget)
        saved = decided.saved_tokens * prices.cache_read_per_mtok * decided.horizon_requests / 1e6
        assert decided.saved_tokens > 0 and decided.benefit_usd == pytest.approx(saved)
        rewrite = decided.rewritten_tokens * (prices.cache_write_per_mtok - prices.cache_read_per_mtok) / 1e6
        assert decided.cost_usd == pytest.approx(rewrite + decided.summary_call_usd + decided.re_read_usd)
    assert Prices.of("gpt-4.1") != DEFAULT_PRICES


# --------------------------------------------------------------------------- one window check


@pytest.mark.parametrize("model", [None, "gpt-4.1", "claude-sonnet-4-6"])
@pytest.mark.parametrize(("options", "field"), [
    ({"window_tokens": 0}, "context_window"), ({"window_tokens": -5}, "context_window"),
    ({"window_tokens": "32k"}, "context_window"), ({"window_tokens": 50_000, "max_output_tokens": 0},
                                                   "max_output_tokens"),
])
def test_a_bad_window_is_the_same_typed_error_with_or_without_a_model(model: str | None, options: dict[str, Any],
                                                                      field: str) -> None:
    with pytest.raises(InvalidLimits) as raised:
        Context(model, **options)
    assert raised.value.field == field


def test_a_reply_limit_given_that_leaves_no_room_is_refused_naming_both_figures() -> None:
    for model in (None, "gpt-4.1"):
        with pytest.raises(InvalidLimits, match=r"32,768 tokens kept for the reply.*100-token window") as raised:
            Context(model, window_tokens=100, max_output_tokens=32_768)
        assert raised.value.field == "max_output_tokens"


def test_a_models_reply_limit_that_a_smaller_window_cannot_hold_is_scaled_to_half_of_it() -> None:
    """gpt-4.1 may write 32,768 tokens; in a 100-token window half is kept for the reply, as with no model."""
    assert Context("gpt-4.1", window_tokens=100).limits == Context(window_tokens=100).limits
    assert Context("gpt-4.1", window_tokens=100).limits.max_output_tokens == 50
    scaled = Context("gpt-4.1", window_tokens=32_000)
    # the trigger is unchanged by the scaling: 90% of the window short of the reply's room, a quarter of it either way
    assert scaled.limits.max_output_tokens == 16_000 and scaled.trigger_tokens == 32_000 - 8_000
    assert Context("gpt-4.1", window_tokens=200_000).limits.max_output_tokens == 32_768  # it fits: the model's own


def test_the_summarizers_window_is_checked_the_same_way() -> None:
    from contextfold.summarizers import ModelSummarizer

    for options, field in (({"window_tokens": 0}, "context_window"), ({"max_output_tokens": 0}, "max_output_tokens")):
        with pytest.raises(InvalidLimits) as raised:
            ModelSummarizer(provider="openai", model="gpt-4.1", api_key="test", **options)
        assert raised.value.field == field
    small = ModelSummarizer(provider="openai", model="gpt-4.1", api_key="test", window_tokens=8_000)
    assert small.reply_tokens == 4_000 and small.input_budget_tokens > 0  # 16,000 asked: half the window is left


def test_a_zero_reply_reserve_on_the_command_line_is_refused_not_read_as_the_default(tmp_path: Any) -> None:
    from click.testing import CliRunner

    from contextfold.cli import cli

    recording = tmp_path / "chat.json"
    recording.write_text('[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]')
    for command in ("replay", "bench", "demo"):
        args = [command] + ([] if command == "demo" else [str(recording)]) + ["--window", "8000", "--max-output", "0"]
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2 and "--max-output" in result.output, (command, result.output)


# --------------------------------------------------------------------------- a system message among the messages


def test_an_opening_system_message_goes_to_the_anthropic_header_and_the_server_accepts_it(
    server: ScriptedModel,
) -> None:
    context = Context("claude-sonnet-4-6")
    context.add([{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}])
    request = context.prepare()
    assert [m["role"] for m in request["messages"]] == ["user"]
    assert [block["text"] for block in request["system"]] == [SYSTEM]
    context.add_response(_send_anthropic(server, "claude-sonnet-4-6", request))
    assert server.problems == [] and server.valid[0].session[0] == SYSTEM
    context.add([{"role": "system", "content": SYSTEM}, {"role": "user", "content": "And at night?"}])
    assert [m["role"] for m in context.prepare()["messages"]] == ["user", "assistant", "user"]  # the prompt, again
    context.add([{"role": "assistant", "content": "Black."}])
    # once the session has started, a system message is an instruction at that point: Anthropic carries it there
    context.add([{"role": "system", "content": "Now answer in French."}, {"role": "user", "content": TASK}])
    request = context.prepare()
    assert [block["text"] for block in request["system"]] == [SYSTEM]
    assert [m["role"] for m in request["messages"]] == ["user", "assistant", "user", "assistant", "system", "user"]


def test_an_opening_system_content_goes_to_geminis_system_instruction_and_a_late_one_is_refused(
    server: ScriptedModel,
) -> None:
    context = Context("gemini-2.5-flash")
    context.add([{"role": "system", "parts": [{"text": SYSTEM}]}, {"role": "system", "parts": [{"text": "Be kind."}]},
                 USER_MESSAGE["gemini"]])
    request = context.prepare()
    assert [c["role"] for c in request["contents"]] == ["user"]
    context.add_response(_send_gemini(server, "gemini-2.5-flash", request))
    instruction = server.valid[0].body["systemInstruction"]["parts"]
    assert server.problems == [] and [part["text"] for part in instruction] == [SYSTEM, "Be kind."]
    with pytest.raises(UnknownRole) as raised:  # Gemini has no system content; the header is every request's prefix
        context.add([{"role": "system", "parts": [{"text": "Now answer in French."}]}])
    assert (raised.value.index, raised.value.field) == (0, "role")
    with pytest.raises(UnknownRole) as raised:
        context.add([USER_MESSAGE["gemini"], {"role": "system", "parts": [{"text": "late"}]}])
    assert (raised.value.index, raised.value.field) == (1, "role")


# --------------------------------------------------------------------------- the reference agent


def test_chat_talks_to_the_api_serving_the_model_and_prices_at_its_list_prices(server: ScriptedModel,
                                                                                tmp_path: Any) -> None:
    from click.testing import CliRunner

    from contextfold.cli import cli

    env = {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": None, "OPENAI_MODEL": None, "COLUMNS": "200"}
    base = ["chat", "--model", "gpt-4.1", "--base-url", server.base_url("openai"), "--cwd", str(tmp_path)]
    answered = CliRunner().invoke(cli, [*base, "-p", TASK], env=env)  # no --provider: gpt-4.1's is OpenAI Chat
    assert answered.exit_code == 0, answered.output
    assert "Blue." in answered.output and [e.provider for e in server.valid] == ["openai"]
    costed = CliRunner().invoke(cli, [*base, "--provider", "openai"], input=f"{TASK}\n/cost\n/exit\n", env=env)
    assert costed.exit_code == 0, costed.output
    for row, usd in (("input, uncached", "2"), ("cache reads", "0.5"), ("cache writes", "2"), ("output", "8")):
        assert re.search(rf"{row}\s+[\d,]+\s+{re.escape(usd)}\s", costed.output), costed.output
    refused = CliRunner().invoke(cli, ["chat", "--model", "acme-coder", "--window", "60000", "-p", TASK], env=env)
    assert refused.exit_code == 2 and "acme-coder" in refused.output
    unpriced = CliRunner().invoke(cli, [*base[:2], "gpt-5.5", *base[3:], "-p", TASK], env=env)
    assert unpriced.exit_code == 0, unpriced.output
    assert "no list price is known for 'gpt-5.5'" in unpriced.output and "Warning" not in unpriced.output


def test_a_model_summarizer_writes_for_the_api_serving_its_model() -> None:
    from contextfold import SummarizerError
    from contextfold.summarizers import ModelSummarizer

    assert ModelSummarizer(model="gpt-4.1", api_key="test").provider == "openai"
    assert ModelSummarizer(model="gemini-2.5-flash", api_key="test").provider == "gemini"
    assert ModelSummarizer(api_key="test").provider == "anthropic"  # no model named: its default small model
    with pytest.raises(SummarizerError, match="my-llama.*provider="):
        ModelSummarizer(model="my-llama", api_key="test")
    assert ModelSummarizer(model="my-llama", provider="openai", api_key="test").provider == "openai"


def test_a_system_message_in_a_started_openai_session_is_an_instruction_there_not_a_new_system_prompt(
    server: ScriptedModel,
) -> None:
    """It was read as the system prompt: the first message of every request changed (and its cache went)."""
    context = Context("gpt-4.1")
    context.add([{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}])
    context.add_response(_send_chat(server, "gpt-4.1", context.prepare()))
    context.add([{"role": "system", "content": SYSTEM}, {"role": "user", "content": "And at night?"}])  # again
    context.add_response(_send_chat(server, "gpt-4.1", context.prepare()))
    context.add([{"role": "system", "content": "Now answer in French."}, {"role": "user", "content": TASK}])
    request = context.prepare()
    assert [(m["role"], m["content"]) for m in request["messages"] if m["role"] == "system"] == [
        ("system", SYSTEM), ("system", "Now answer in French.")]
    assert request["messages"][0] == {"role": "system", "content": SYSTEM}
    assert [m["role"] for m in request["messages"]] == ["system", "user", "assistant", "user", "assistant", "system",
                                                          "user"]
    _send_chat(server, "gpt-4.1", request)
    assert server.problems == [] and len(server.valid) == 3
