"""Model registry lookups and the compaction threshold."""

from __future__ import annotations

import pytest

from contextfold import limits
from contextfold.errors import ContextfoldError, InvalidLimits
from contextfold.limits import ModelLimits, UnknownModel, compaction_threshold, model_limits, register_model


@pytest.mark.parametrize(
    ("name", "window", "output"),
    [
        ("claude-sonnet-4-5-20250929", 200_000, 64_000),
        ("claude-opus-4-5-20251101", 200_000, 64_000),
        ("claude-opus-4-1-20250805", 200_000, 32_000),
        ("claude-opus-4-20250514", 200_000, 32_000),
        ("claude-haiku-4-5-20251001", 200_000, 64_000),
        ("claude-opus-4-6", 1_000_000, 128_000),
        ("claude-3-7-sonnet-20250219", 200_000, 64_000),
        ("claude-3-5-haiku-latest", 200_000, 8_192),
        ("claude-sonnet-4-5@20250929", 200_000, 64_000),  # Vertex spelling
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", 200_000, 64_000),  # Bedrock spelling
        ("gpt-4o-2024-08-06", 128_000, 16_384),
        ("gpt-4o-mini", 128_000, 16_384),
        ("gpt-4.1-2025-04-14", 1_047_576, 32_768),
        ("openai/gpt-5-mini", 400_000, 128_000),
        ("o3-2025-04-16", 200_000, 100_000),
        ("gemini-2.5-pro", 1_048_576, 65_536),
        ("gemini-2.5-flash-preview-05-20", 1_048_576, 65_536),
        ("deepseek/deepseek-chat", 128_000, 8_192),
        ("deepseek-reasoner", 128_000, 65_536),
        ("deepseek-v4-flash", 1_048_576, 384_000),
        ("qwen3-max", 262_144, 65_536),
        ("Qwen-Plus", 1_000_000, 32_768),
    ],
)
def test_registry_resolves_exact_dated_and_routed_names(name: str, window: int, output: int) -> None:
    assert model_limits(name) == ModelLimits(window, output)


@pytest.mark.parametrize("name", ["claude-opus-4-9", "gpt-4o-audio-preview", "llama-3.1-70b", "claude-sonnet-4-5-beta"])
def test_unknown_models_raise_a_typed_error(name: str) -> None:
    with pytest.raises(UnknownModel) as caught:
        model_limits(name)
    assert caught.value.model == name
    assert isinstance(caught.value, ContextfoldError) and isinstance(caught.value, KeyError)
    assert name in str(caught.value)


def test_longest_registered_name_wins() -> None:
    assert model_limits("claude-opus-4-1") != model_limits("claude-opus-4-5")
    assert model_limits("gpt-4.1-mini-2025-04-14") == model_limits("gpt-4.1-mini")


def test_register_model_adds_a_model_and_its_dated_variants(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "_REGISTRY", dict(limits._REGISTRY))
    register_model("acme-coder", 64_000, 4_096)
    assert model_limits("acme-coder-20260101") == ModelLimits(64_000, 4_096)
    register_model("gpt-4o", 256_000, 16_384)  # replacing a known one
    assert model_limits("gpt-4o").context_window == 256_000


def test_overrides_take_precedence_and_can_add_models() -> None:
    overrides = {"claude-sonnet-4-5": ModelLimits(1_000_000, 64_000), "local-llama": ModelLimits(32_768, 2_048)}
    assert model_limits("claude-sonnet-4-5-20250929", overrides).context_window == 1_000_000
    assert model_limits("local-llama", overrides) == ModelLimits(32_768, 2_048)
    assert model_limits("claude-sonnet-4-5-20250929").context_window == 200_000  # registry untouched


@pytest.mark.parametrize(("window", "output", "field"), [(0, 100, "context_window"), (8_000, -1, "max_output_tokens"),
                                                      ("32k", 100, "context_window"), (8_000, True, "max_output_tokens")])
def test_limits_must_be_positive_whole_numbers_and_the_error_names_which(window: object, output: object, field: str) -> None:
    with pytest.raises(InvalidLimits) as raised:
        ModelLimits(window, output)  # type: ignore[arg-type]
    assert raised.value.field == field and isinstance(raised.value, ValueError) and field in str(raised.value)


@pytest.mark.parametrize(
    ("limits_", "threshold"),
    [
        (ModelLimits(200_000, 64_000), 200_000 - 20_000 - 13_000),  # reply reserve capped at 20k
        (ModelLimits(128_000, 8_192), 128_000 - 8_192 - 13_000),  # small max output reserved whole
        (ModelLimits(1_000_000, 128_000), 967_000),
        (ModelLimits(32_000, 4_096), 32_000 - 4_096 - 13_000),  # still over a third of the window
        (ModelLimits(16_000, 4_096), 16_000 - 4_000 - 1_600),  # small: a quarter for the reply, a tenth as margin
        (ModelLimits(8_000, 1_000), 8_000 - 1_000 - 800),
    ],
)
def test_threshold_formula(limits_: ModelLimits, threshold: int) -> None:
    assert compaction_threshold(limits_) == threshold


def test_threshold_by_name() -> None:
    assert compaction_threshold("claude-sonnet-4-5-20250929") == 167_000
    assert compaction_threshold("deepseek/deepseek-chat") == 106_808
    assert compaction_threshold("tiny", {"tiny": ModelLimits(50_000, 1_000)}) == 36_000


# --------------------------------------------------------------------------- prices


def test_the_price_table_covers_the_current_families_with_their_cache_billing() -> None:
    from contextfold import PRICES_AS_OF, Prices, model_prices

    assert PRICES_AS_OF == "2026-11-28"
    sonnet = model_prices("claude-sonnet-4-5-20250929")
    assert (sonnet.input_per_mtok, sonnet.output_per_mtok, sonnet.cache_read_per_mtok) == (3.0, 15.0, 0.30)
    assert sonnet.cache_write_per_mtok() == pytest.approx(3.75) and sonnet.cache_write_per_mtok("1h") == 6.0
    assert sonnet.ttl_options == ("5m", "1h")
    assert model_prices("us.anthropic.claude-haiku-4-5-20251001-v1:0").input_per_mtok == 1.0
    assert model_prices("gpt-4o-2024-08-06").cache_write_per_mtok() == 2.5  # OpenAI before gpt-5.6: plain input
    with pytest.raises(ValueError, match="1h"):
        model_prices("gpt-4o").cache_write_per_mtok("1h")  # a TTL the provider does not offer has no price
    for name in ("claude-opus-4-5", "claude-opus-4-6", "claude-opus-4-8", "claude-sonnet-4-6", "claude-haiku-4-5",
                 "gpt-4.1", "gpt-5", "gpt-5.1-codex-mini", "gpt-5.2", "o4-mini", "gemini-2.5-pro", "gemini-2.5-flash"):
        prices = model_prices(name)
        assert prices.cache_read_per_mtok < prices.input_per_mtok <= prices.output_per_mtok
    assert Prices.of("claude-sonnet-4-5") == Prices()  # the pipeline's defaults are Sonnet's list prices
    assert Prices.of("claude-opus-4-5", ttl="1h").cache_write_per_mtok == 10.0


@pytest.mark.parametrize("name", ["claude-sonnet-5", "claude-mythos-5", "gpt-5.5", "gpt-5.6-sol-2026-09-01",
                                  "gpt-6-luna"])
def test_a_model_whose_price_could_not_be_confirmed_says_so_rather_than_guess(name: str) -> None:
    from contextfold import Prices, UnknownPrice, model_prices

    with pytest.raises(UnknownPrice, match=rf"no list price is known for model '{name}'.*as of 2026-11-28.*Prices"):
        model_prices(name)
    with pytest.raises(UnknownModel):  # caught wherever an unknown model is
        Prices.of(name)


def test_the_newest_models_the_sdks_name_have_their_windows_or_ask_for_them() -> None:
    """gpt-5.4 and gpt-5.5 (in the openai SDK's model literals) resolve; a name whose window was not found asks."""
    assert model_limits("gpt-5.4") == ModelLimits(1_050_000, 128_000)
    assert model_limits("gpt-5.5-2026-04-23") == ModelLimits(1_000_000, 128_000)
    assert model_limits("openai/gpt-5.5-pro") == ModelLimits(1_000_000, 128_000)
    for name in ("gpt-5.4-mini", "gpt-5.6-sol", "claude-opus-5", "claude-sonnet-5-5"):
        with pytest.raises(UnknownModel):
            model_limits(name)
