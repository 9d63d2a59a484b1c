"""What the peer baselines share: the view they keep, and token counts anchored on what the provider reported.

Every baseline counts its requests the way contextfold's own pipeline does
(the block-aware estimate, anchored on the simulated usage the replayer
reports back), so that none of them wins or loses on how well it guesses the
size of a request; each sees only what an agent would see.
"""

from __future__ import annotations

from pathlib import Path

from ...conversation import Conversation, Header
from ...pipeline.base import Budget, Policy
from ...summarizers.base import Summarizer
from ...summarizers.extractive import ExtractiveSummarizer
from ...tokens import Estimator, TokenCounter
from ...usage import Usage
from ..base import Sent, Step, StrategyConfig


class Baseline:
    """A strategy that keeps ``view`` (every new item appended to it) and sends what :meth:`prepare` returns.

    ``new_from`` (given to :meth:`prepare`) is the index in ``view`` of the
    first item of this step. Subclasses that compact replace ``view``; those
    that trim send a projection of it and leave it whole.
    """

    name = "baseline"

    def __init__(self, config: StrategyConfig) -> None:
        self.config = config
        self.estimator = Estimator()
        self.counter = TokenCounter(self.estimator)
        # The run's summarizer when it names one (a field being added to StrategyConfig), else the extractive one.
        self.summarizer: Summarizer = getattr(config, "summarizer", None) or ExtractiveSummarizer()
        self.view = Conversation()
        self._sent: Conversation | None = None

    def start(self, header: Header) -> None:
        self.view = Conversation(header=header)

    def step(self, step: Step) -> Sent:
        new_from = len(self.view)
        # The view grows in place: the replayer has read the previous request before it asks for this one.
        self.view.extend(step.new_items)
        sent = self.prepare(step, new_from)
        self._sent = sent.request
        return sent

    def prepare(self, step: Step, new_from: int) -> Sent:
        raise NotImplementedError

    def record_usage(self, usage: Usage) -> None:
        self.counter.record_usage(usage, self._sent)

    def budget(self, policy: Policy, trigger_tokens: int, step: Step, new_from: int) -> Budget:
        """A budget for the pipeline's stage functions, with this strategy's counts and the recording's clock.

        ``idle_s`` stays unknown: a baseline clears on its own rule, not because the cache went cold.
        """
        results = self.config.results_dir
        return Budget(
            policy=policy,
            window_tokens=self.config.window_tokens,
            trigger_tokens=trigger_tokens,
            count=self.counter.count,
            count_item=self.estimator.item,
            new_from=new_from,
            now_s=step.time_s,
            results_dir=None if results is None else Path(results),
            summarizer=self.summarizer,
            count_text=self.estimator.text,
        )
