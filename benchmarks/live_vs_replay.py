"""What the live path paid for a session beside what ``replay`` prices for the same session (issue 21, bar 1).

    python benchmarks/live_vs_replay.py [--window 60000] [--provider anthropic --provider openai ...]

For each provider (Anthropic Messages, OpenAI Chat Completions, Responses)
an agent reads a log chunk by chunk through the provider's real SDK client
against the scripted server, with ``Context.prepare()`` building every
request and the cache-riding :class:`~contextfold.summarizers.llm.ModelSummarizer`
writing the summary when the window fills; "live paid" is what the server's
prompt-cache model reported (cache reads, writes, output) at one price table.
The session's history is then replayed with contextfold's pipeline, the
same summary written offline, and priced by both of replay's rules:

  replay (live rule)     ``cost_live_usd``: the summary call reads the agent's cache
  replay (referee rule)  ``cost_llm_usd``: the summary call reads only its own earlier calls (an upper bound)

Both sides count tokens with contextfold's own counter (the server through
``content_tokens(Estimator().text)``), so the difference measures the pricing
rules, not two tokenizers. What remains is framing and the providers' own
cache rules, which replay's cache model leaves out (OpenAI reads in 128-token
steps, so the live path writes a little more on Chat and Responses). The
figures are token counts and prices, no timing, the same on every run.
Prints one line per provider and a JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the session driver the tests use

from cache_riding import live_vs_replay

PROVIDERS = ("anthropic", "openai", "responses")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--window", type=int, default=60_000, help="the agent's window in tokens")
    parser.add_argument("--provider", action="append", choices=PROVIDERS, help="repeatable; default: all three")
    args = parser.parse_args()
    rows = {}
    print(f"{'provider':<10} {'live paid':>10} {'replay live':>12} {'diff':>7} {'replay referee':>15} {'diff':>7}")
    for provider in args.provider or PROVIDERS:
        figures = live_vs_replay(provider, window_tokens=args.window)
        live_diff = figures.difference(figures.replay_live_usd)
        referee_diff = figures.difference(figures.replay_referee_usd)
        print(f"{provider:<10} {figures.live_usd:>10.4f} {figures.replay_live_usd:>12.4f} {live_diff:>+7.1%} "
              f"{figures.replay_referee_usd:>15.4f} {referee_diff:>+7.1%}", flush=True)
        rows[provider] = {"live_usd": figures.live_usd, "replay_live_usd": figures.replay_live_usd,
                          "replay_live_difference": live_diff, "replay_referee_usd": figures.replay_referee_usd,
                          "replay_referee_difference": referee_diff}
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
