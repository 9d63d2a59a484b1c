"""The pipeline: which stages run, in which tier of a step, in which order.

A step has four places a stage can run, each a tier of :class:`Pipeline`:

* ``cheap``: on every request, on new items only (``budget.new_from`` on):
  what is already sent is the cached prefix.
* ``batch``: on the whole history, together, when the request grew enough to
  look; their combined result is kept only when it pays for rewriting the
  prefix (:mod:`~contextfold.pipeline.economics`).
* ``escalate``: when a summary is due (:func:`~contextfold.pipeline.escalate.compact`),
  in three rungs around the stage named ``summarize``: the stages before it
  run first, together, and are enough on their own when they bring the
  request well under the target (``Policy.clear_first_max_fraction``); then
  the summary, its tail chosen before it runs; then, if the request is still
  over, the stages after it, each working down to ``budget.target_tokens``.
  A pipeline without ``summarize`` has no summary rung (and no economic
  summary): its ``escalate`` stages are all the first rung.
* ``after``: on the result of a compaction (the first rung's, a summary's),
  with ``budget.compacted_from`` the request it started from.

Every stage has one signature, :data:`~contextfold.pipeline.base.Stage`. The
same stage may sit in two tiers (``snip`` and ``clear`` do: in ``batch`` when
they pay, in ``escalate`` before a summary); :meth:`Pipeline.remove` and
:meth:`Pipeline.replace` act on every tier that holds it, so a stage removed
never runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..errors import InvalidPipeline
from .base import TIERS, Stage, Tier, stage_name
from .running import AFTER_COMPACTION
from .stages.budget import budget_outputs
from .stages.clear import clear
from .stages.persist import persist
from .stages.put_back import put_back
from .stages.selective import selective
from .stages.snip import snip
from .stages.summarize import summarize
from .stages.truncate import truncate

ESCALATE: tuple[Stage, ...] = (snip, clear, summarize, selective)
"""The default ``escalate`` tier: clear old outputs first, else summarize, else the per-kind rules."""
SUMMARY_STAGE = "summarize"
"""The ``escalate`` stage the summary rung is: the stages before it are tried first, those after it last."""

_Change = Callable[[tuple[Stage, ...], int], tuple[Stage, ...]]
"""How :meth:`Pipeline.replace` and :meth:`Pipeline.remove` change one tier: its stages and the index found."""
_NOT_A_STAGE = "a stage is a function (Conversation, Budget) -> (Conversation, list[Event])"


@dataclass(frozen=True)
class Pipeline:
    """The stages of each tier, in order (see the module's docstring for where each tier runs).

    Built from :data:`DEFAULT_PIPELINE` with :meth:`add`, :meth:`replace` and
    :meth:`remove`, each returning a new pipeline; a stage is named by itself
    or by its function's name (``"truncate"``).
    """

    cheap: tuple[Stage, ...]
    batch: tuple[Stage, ...]
    escalate: tuple[Stage, ...] = ESCALATE  # a pipeline made with only the first two still summarizes, as before
    after: tuple[Stage, ...] = AFTER_COMPACTION

    def add(self, stage: Stage, *, after: Stage | str | None = None, before: Stage | str | None = None,
            tier: Tier | None = None) -> Pipeline:
        """This pipeline with ``stage`` right after ``after``, right before ``before`` (in ``tier``, else in the
        first tier that holds that stage), or last in ``tier`` (``cheap`` when none is given)."""
        name = stage_name(stage)
        if not callable(stage):
            raise InvalidPipeline(name, _NOT_A_STAGE)
        if tier is not None and tier not in TIERS:
            raise InvalidPipeline(name, f"tier {tier!r} is not one of {', '.join(TIERS)}")
        if after is not None and before is not None:
            raise InvalidPipeline(name, "give after= or before=, not both")
        anchor = after if after is not None else before
        if anchor is None:
            tier = tier or "cheap"
        else:
            tier, index = self._find(anchor, tier)
        stages = self.stages(tier)
        if any(stage_name(s) == name for s in stages):
            raise InvalidPipeline(name, f"already in the pipeline's {tier} tier: replace it, or give the new stage "
                                  "another name")
        at = len(stages) if anchor is None else index + (1 if after is not None else 0)
        return replace(self, **{tier: (*stages[:at], stage, *stages[at:])})

    def replace(self, old: Stage | str, new: Stage) -> Pipeline:
        """This pipeline with ``new`` in ``old``'s place, in every tier that holds ``old``."""
        if not callable(new):
            raise InvalidPipeline(stage_name(new), _NOT_A_STAGE)
        return self._each(old, lambda stages, index: (*stages[:index], new, *stages[index + 1:]))

    def remove(self, stage: Stage | str) -> Pipeline:
        """This pipeline without ``stage``, in any tier: it never runs."""
        return self._each(stage, lambda stages, index: (*stages[:index], *stages[index + 1:]))

    def stages(self, tier: Tier) -> tuple[Stage, ...]:
        """The stages of ``tier``, in order."""
        stages: tuple[Stage, ...] = getattr(self, tier)
        return stages

    def names(self) -> dict[Tier, list[str]]:
        """Each tier's stage names, in order: what this pipeline runs."""
        return {tier: [stage_name(s) for s in self.stages(tier)] for tier in TIERS}

    def _each(self, wanted: Stage | str, change: _Change) -> Pipeline:
        changed = {tier: change(self.stages(tier), index) for tier in TIERS
                   if (index := _index(self.stages(tier), wanted)) is not None}
        if not changed:
            raise InvalidPipeline(_name(wanted), f"not in this pipeline (it holds {self._held()})")
        return replace(self, **changed)

    def _find(self, wanted: Stage | str, tier: Tier | None) -> tuple[Tier, int]:
        for candidate in (tier,) if tier is not None else TIERS:
            index = _index(self.stages(candidate), wanted)
            if index is not None:
                return candidate, index
        where = f"the {tier} tier" if tier is not None else "this pipeline"
        raise InvalidPipeline(_name(wanted), f"not in {where} (it holds {self._held()})")

    def _held(self) -> str:
        return "; ".join(f"{tier}: {', '.join(names) or 'none'}" for tier, names in self.names().items())


def _name(wanted: Stage | str) -> str:
    return wanted if isinstance(wanted, str) else stage_name(wanted)


def _index(stages: tuple[Stage, ...], wanted: Stage | str) -> int | None:
    name = _name(wanted)
    return next((i for i, s in enumerate(stages) if s is wanted or stage_name(s) == name), None)


DEFAULT_PIPELINE = Pipeline(
    cheap=(persist, truncate, put_back),
    batch=(budget_outputs, snip, clear),
    escalate=ESCALATE,
    after=AFTER_COMPACTION,
)
"""The stages :class:`~contextfold.context.Context` runs unless given ``pipeline=``."""
