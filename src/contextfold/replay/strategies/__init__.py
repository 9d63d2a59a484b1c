"""The context strategies a replay can run, by name.

Each built-in strategy is a module of this package exposing
``create(config: StrategyConfig) -> Strategy``; adding one is writing that
module and adding one line to :data:`BUILTIN`. Modules are imported only
when their strategy is created. Strategies from elsewhere (a benchmark's own
baseline) join with :func:`register`.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from ..base import Strategy, StrategyConfig

Factory = Callable[[StrategyConfig], Strategy]

BUILTIN: dict[str, str] = {
    "none": "none",  # the full history, unchanged: the baseline
    "default": "default",  # contextfold's pipeline
    "window": "window",  # system, task and the newest rounds that fit
    "mask": "mask",  # observation masking: outputs older than the last 10 rounds become placeholders
    "openhands": "openhands",  # OpenHands' LLM-summarizing condenser (120 events, keep the first 4)
    "claude-code": "claude_code",  # clear at 20k saved, auto-compact at window - reserve - 13k
    "langchain": "langchain",  # langchain_core's trim_messages (needs the bench extra)
}
"""Strategy name -> module in this package."""

_registered: dict[str, Factory] = {}


def register(name: str, factory: Factory) -> None:
    """Make ``factory`` available as ``name`` (replacing a registered one of that name)."""
    _registered[name] = factory


def names() -> list[str]:
    """Every strategy that can be created, built-in first."""
    return [*BUILTIN, *(name for name in _registered if name not in BUILTIN)]


def create(name: str, config: StrategyConfig) -> Strategy:
    """A fresh strategy called ``name``; :class:`ValueError` listing the known names when there is none."""
    factory = _registered.get(name)
    if factory is None and name in BUILTIN:
        factory = import_module(f"{__name__}.{BUILTIN[name]}").create
    if factory is None:
        raise ValueError(f"unknown strategy {name!r}; expected one of {', '.join(names())}")
    return factory(config)
