"""Replay prices a session as the live path paid for it, within 2 % (issue 21, bar 1), on each provider.

The agent runs against the scripted server through the provider's SDK with
the cache-riding model summarizer; its history is then replayed with the
same summary and priced. Both sides count tokens with contextfold's own
counter, so what is compared is the pricing rules: replay's live rule (the
summary call reads the agent's cache) agrees with what the server reported,
and the reference scorer's rule (the call reads only its own cache) does not.
Token counts and prices only, no timing.
"""

from __future__ import annotations

import pytest
from cache_riding import live_vs_replay


@pytest.mark.parametrize("provider", ["anthropic", "openai", "responses"])
def test_replay_prices_what_the_live_path_paid_within_two_percent(provider: str) -> None:
    figures = live_vs_replay(provider)
    assert abs(figures.difference(figures.replay_live_usd)) <= 0.02, figures
    # the reference scorer's upper bound prices the summary as if written anew: it does not agree
    assert figures.difference(figures.replay_referee_usd) > 0.2, figures
