"""A Claude Code-style context manager, built from the pipeline's own stages with Claude Code's rules.

The rules (from Claude Code's public behaviour, as the design seeds describe it):

* oversized tool outputs are saved to disk with a preview kept, and any
  output is capped (the pipeline's persist and truncate stages, on new items);
* clearing: every tool output but those of the 3 most recent rounds becomes
  a placeholder, whenever that saves at least 20,000 tokens, whatever it
  does to the prompt cache (no economics gate, no cold-cache trigger) and
  whichever turn it belongs to (the current one is not spared);
* auto-compact: once the request is over ``window - min(max_output, 20k) - 13k``
  tokens, everything but the newest round is summarized (a full summary, no
  kept tail), and up to 5 recently read files are restored after it.

What differs from contextfold's ``default`` is exactly what the pipeline adds
on top: the economics gate, the escalation when one summary is not enough,
the verbatim tail, the dynamic floor on the trigger and the current turn's
outputs kept whole under it. Where the stages are
kinder than Claude Code it is said here: the summary is our extractive
summarizer's, as for every strategy here; the task stays verbatim before it,
as the summarize stage keeps it; clearing keeps whole rounds (so a round of
parallel calls keeps all its outputs) and a cleared output's last error line.
"""

from __future__ import annotations

from dataclasses import replace

from ...limits import OUTPUT_RESERVE_CAP_TOKENS, SAFETY_MARGIN_TOKENS
from ...pipeline import DEFAULT_PIPELINE, run_stages
from ...pipeline.base import Policy
from ...pipeline.stages.clear import clear
from ...pipeline.stages.summarize import summarize
from ..base import Sent, Step, StrategyConfig
from ._baseline import Baseline

POLICY = Policy(clear_keep_recent_rounds=3, clear_keep_rounds_window_tokens=None, clear_min_savings_tokens=20_000,
                restore_max_files=5, spare_current_turn=False, persist_max_chars=30_000)
"""``history_tools`` stays ``"auto"``: Claude Code has no ``search_history``, so its summaries do not name it;
a tool output is saved to disk past Claude Code's own 30,000 characters, whatever contextfold's default is."""


def auto_compact_tokens(config: StrategyConfig) -> int:
    """``window - min(max_output, 20k) - 13k``; a quarter of the window for windows too small for that formula."""
    reserve = min(config.max_output_tokens, OUTPUT_RESERVE_CAP_TOKENS)
    return max(config.window_tokens - reserve - SAFETY_MARGIN_TOKENS, config.window_tokens // 4)


class ClaudeCode(Baseline):
    name = "claude-code"

    def prepare(self, step: Step, new_from: int) -> Sent:
        trigger = auto_compact_tokens(self.config)
        budget = self.budget(POLICY, trigger, step, new_from)
        view, events = run_stages(self.view, budget, (*DEFAULT_PIPELINE.cheap, clear))
        if self.counter.count(view) > trigger:
            view, summarized = summarize(view, replace(budget, tail_tokens=0))
            events.extend(summarized)
        self.view = view
        calls = tuple(call for event in events for call in event.calls)
        return Sent(view, calls, tuple(events))


def create(config: StrategyConfig) -> ClaudeCode:
    return ClaudeCode(config)
