"""The presets: measured points on the frontier of cost against usable context (``Policy.preset``).

Each is the knobs it sets on :class:`~contextfold.pipeline.base.Policy`; the figures behind each choice are in
the README ("Presets") and in the comments here.
"""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    # lean compacts early and keeps little after a summary: a tenth of the trigger verbatim, 800 tokens of lines
    "lean": {"trigger_min_fraction": 0.0, "economic_summaries": True, "tail_fraction": 0.25,
             "tail_max_trigger_fraction": 0.1, "survival_max_tokens": 800},
    "balanced": {},
    # thorough spends where the agent quotes next: outputs to disk only past a character per token of the window
    # (32,000 characters at 32k: a file read of 20,000 stays whole), longer summaries, more files restored; and,
    # since balanced sends a newest oversized output whole, more of the window kept: half of the trigger verbatim
    # after a summary, clearing alone enough down to 85 % of it, sub-agents' reports whole up to a tenth of the
    # window, 2,400 tokens of lines put back. At 32k on 59 sessions, held out by session: strict 0.905 to 0.910
    # against balanced's 0.902 for about 5.5 points more of the full history's cost riding the cache (README)
    "thorough": {"summary_target_tokens": 8_000, "restore_max_files": 8, "restore_file_tokens": 8_000,
                 "persist_chars_per_window_token": 1.0, "tail_fraction": 0.5, "tail_max_trigger_fraction": 0.5,
                 "clear_first_max_fraction": 0.85, "report_whole_fraction": 0.1, "survival_max_tokens": 2_400},
}
"""Points on the measured frontier of cost against usable context (README, "Presets"), each the knobs it sets;
``balanced`` sets none: it is the defaults. Each was chosen by cross-validation by session on sessions nobody had
tuned on and reported on others held back. ``balanced``'s tail (35 % of the trigger after a summary, a tenth
before) and its 1,600 tokens of lines put back (800 before), at 32k on 43 sessions (15 + 18 outside the corpus,
10 of it; five folds, four draws): chosen in 17 of 20 folds at a budget of 3.5 points of cost, held out strict
0.873 to 0.891, kwic far 0.866 to 0.891, outcome 0.686 to 0.725 for 0.515x to 0.544x the full history's cost
riding the cache."""
