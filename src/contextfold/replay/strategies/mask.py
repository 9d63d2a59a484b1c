"""Observation masking: every tool output older than the last M rounds becomes a placeholder (M = 10).

The strategy of the observation-masking studies on SWE-bench agents: the
agent's own reasoning and calls stay, old observations go. Here it is the
pipeline's clear stage in masking mode, run before every request with no
economics gate: each request masks the outputs that just left the last M
rounds, so the cached prefix is rewritten from there each time (the
stage's placeholder keeps an output's last error line). Outputs that
are not tool results (an agent that feeds observations back as user
messages) are never masked; there is no summary, so a session whose recent
rounds outgrow the window overflows.
"""

from __future__ import annotations

from ...pipeline.base import Policy
from ...pipeline.stages.clear import clear
from ..base import Sent, Step, StrategyConfig
from ._baseline import Baseline

MASK_WINDOW_ROUNDS = 10
"""Rounds whose outputs are kept verbatim (the value the literature uses)."""


class ObservationMasking(Baseline):
    name = "mask"

    def __init__(self, config: StrategyConfig, window_rounds: int = MASK_WINDOW_ROUNDS) -> None:
        super().__init__(config)
        self.policy = Policy(mask_window_rounds=window_rounds)

    def prepare(self, step: Step, new_from: int) -> Sent:
        budget = self.budget(self.policy, self.config.window_tokens, step, new_from)
        self.view, events = clear(self.view, budget)
        return Sent(self.view, events=tuple(events))


def create(config: StrategyConfig) -> ObservationMasking:
    return ObservationMasking(config)
