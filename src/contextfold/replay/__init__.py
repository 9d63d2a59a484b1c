"""Replaying recorded sessions through context strategies, and measuring what each costs and keeps.

>>> from contextfold.replay import StrategyConfig, replay, strategies
>>> config = StrategyConfig(window_tokens=200_000)
>>> result = replay(conversation, strategies.create("none", config), config)
>>> result.totals.cost_usd, result.totals.survival["mean"]

Modules: :mod:`.run` (the replayer), :mod:`.render` (a request as counted and
dumped), :mod:`.cost` (prompt-cache pricing), :mod:`.probes` (what
survived), :mod:`.recall` and :mod:`.strict` (what the replies went on to
use, and whether it was held with its context), :mod:`.invariants`, :mod:`.dump` (the ``--requests`` file),
:mod:`.check` (the recount from a dump), :mod:`.strategies` (the registry).
"""

from . import strategies
from .base import Sent, Step, Strategy, StrategyConfig
from .check import recount
from .result import ReplayResult, RequestRecord, Totals
from .run import replay

__all__ = [
    "ReplayResult",
    "RequestRecord",
    "Sent",
    "Step",
    "Strategy",
    "StrategyConfig",
    "Totals",
    "recount",
    "replay",
    "strategies",
]
