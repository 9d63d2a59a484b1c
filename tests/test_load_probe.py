"""The load probe (``benchmarks/reliability.py``) at a size the suite can afford: hostile agent loops at 8k
and 16k stay under the window after at most one reactive retry, keep every pairing rule, and hold 1 MB
outputs on disk rather than in memory.

The probe's server counts requests with tiktoken, independently of the estimator the context uses,
so these tests fail if compaction trusts a count that the provider would not.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from contextfold.synthetic import png_header

PROBE = Path(__file__).resolve().parents[1] / "benchmarks" / "reliability.py"


@pytest.fixture(scope="module")
def probe():
    pytest.importorskip("tiktoken")
    spec = importlib.util.spec_from_file_location("reliability_probe", PROBE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("provider", "window", "steps"),
                         [("anthropic", 8_000, 30), ("openai", 8_000, 30), ("responses", 8_000, 30), ("anthropic", 16_000, 50)])
@pytest.mark.slow  # a long probe: CI runs it in its own step (-m slow)
def test_hostile_loops_stay_under_the_window_after_one_retry(probe, tokenizers_dir, tmp_path, provider, window, steps) -> None:
    figures = probe.run_loop(provider, window, steps, tmp_path, tokenizers_dir)
    assert figures["requests"] == steps + 1
    assert figures["over_after_retry"] == 0, figures
    assert figures["invalid"] == 0, figures
    assert figures["retried"] <= figures["requests"] // 10, figures  # the window is kept up front, not by retries
    assert 0.3 < figures["largest_share"] <= 1.0, figures  # the loop did fill the window: compaction was needed
    assert {"persist", "summarize"} <= set(figures["stages"]), figures
    # Memory stays flat while 1 MB outputs arrive: they are on disk, not in the history.
    assert figures["large_mib_second_half"] > 3, figures
    # Kept in memory they would add all of their size; the history of ordinary items grows a little.
    assert figures["held_mib_end"] - figures["held_mib_half"] < figures["large_mib_second_half"] / 2, figures


def test_the_server_refuses_what_is_over_the_window(probe, tokenizers_dir) -> None:
    """The judge itself: a request over the window is counted as such (or the tests above could not fail)."""
    server = probe.Server("anthropic", 1_000, tokenizers_dir)
    small = {"system": "be brief", "messages": [{"role": "user", "content": "hello there"}]}
    large = {"system": "be brief", "messages": [{"role": "user", "content": "word " * 2_000}]}
    image = {"messages": [{"role": "user", "content": [{"type": "image", "source": {
        "type": "base64", "media_type": "image/png", "data": png_header(1000, 750)}}]}]}
    assert server.count(small) < 20
    assert server.count(large) > 1_000
    assert 1_000 < server.count(image) < 1_020  # 1000 x 750 pixels, plus the block's few words
