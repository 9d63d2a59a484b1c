"""Running a tier's stages in order, and handing a compaction's result to the ``after`` tier.

Every tier of :class:`~contextfold.pipeline.tiers.Pipeline` is run here, so
every stage, built in or a user's, is called one way and held to one
contract: it returns ``(Conversation, list[Event])`` or the step stops with
an :class:`~contextfold.errors.InvalidPipeline` naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ..conversation import Conversation
from ..errors import InvalidPipeline
from ..events import Event
from .base import Budget, Stage, stage_name
from .stages.survival import survival

if TYPE_CHECKING:
    from ..summarizers._facts import Facts

AFTER_COMPACTION: tuple[Stage, ...] = (survival,)
"""The default ``after`` tier: what a compaction lost and the agent still needs is put back."""


def run_stages(conversation: Conversation, budget: Budget, stages: Sequence[Stage]) -> tuple[Conversation, list[Event]]:
    """Each stage in turn on the previous one's output; all their events."""
    events: list[Event] = []
    for stage in stages:
        result = stage(conversation, budget)
        if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], Conversation)
                and isinstance(result[1], list) and all(isinstance(e, Event) for e in result[1])):
            raise InvalidPipeline(stage_name(stage), f"returned {_shape(result)}, not (Conversation, list[Event])")
        conversation, produced = result
        events.extend(produced)
    return conversation, events


def after_compaction(before: Conversation, compacted: Conversation, budget: Budget,
                     facts: Facts | None = None) -> tuple[Conversation, list[Event]]:
    """``compacted`` through the ``after`` tier (``budget.after``, else :data:`AFTER_COMPACTION`), each stage
    told the request it was made from (``budget.compacted_from``) and, when known, that request's facts."""
    stages = budget.after if budget.after is not None else AFTER_COMPACTION
    return run_stages(compacted, replace(budget, compacted_from=before, compacted_facts=facts), stages)


def _shape(value: object) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(type(v).__name__ for v in value) + ")"
    return type(value).__name__
