"""Tuning the policy on one's own recorded sessions: the frontier sweep, kept on disk, bounded in time.

``contextfold tune`` replays the user's sessions with the full history and
every policy of the frontier's grid (:data:`~.frontier.GRID`: the trigger, the
verbatim tail, the clearing thresholds, the summary's size, the files restored,
the presets; with :func:`paired`, every two of its changes together), scores them as ``bench --frontier`` does
(:func:`~.frontier.frontier`: cost relative to the full history, strict recall,
a choice cross-validated by session) and writes the policy chosen against the
default by the rule that holds up best on the user's sessions
(:func:`~.frontier.choose_rule`), as a policy file
(:meth:`Policy.save <contextfold.pipeline.base.Policy.save>`).

Each finished (session, strategy) run is kept in the output folder under a key
of everything its figures depend on (the session's bytes, the strategy's
policy, the window, the tokenizer, the prices, contextfold's version), so an
interrupted or time-bounded sweep picks up where it stopped, and a run whose
inputs changed is made again. A session enters the frontier only once every
strategy has run on it: all points are then measured on the same sessions.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import __version__
from ..codec import conversation_to_dict
from ..conversation import JSONObject, JSONValue
from ..pipeline.base import Policy
from ..private_files import replace_file
from ..replay.lint import SummaryLint
from ..replay.result import Totals
from ..replay.strict import SessionStrict
from .frontier import BASELINE, GRID, Frontier, HeldOut, choose_by_rule, frontier, grid_policies, inert
from .run import BenchRun, Progress, ReplayFailed, Session, Settings, run_bench

log = logging.getLogger(__name__)

RUNS_FOLDER = "runs"
"""Where in the output folder the finished runs are kept, one JSON file each."""
CACHE_VERSION = 1
"""Part of every run's key: a change to what a kept run holds makes every earlier one stale."""
PER_JOB = 4
"""Policies a worker replays a session with in one job: what an interruption or the budget abandons is at most
this many runs per worker (a session's runs land, and are kept, a few at a time)."""
DEFAULT_ANCHOR = "balanced"
"""The policy the tuned one is chosen against: the defaults (``Policy()``)."""


Grid = Mapping[str, tuple[str, JSONObject]]
"""Policies by name, each a preset and the knobs it changes (:data:`~.frontier.GRID`'s form)."""


def paired(grid: Grid = GRID) -> dict[str, tuple[str, JSONObject]]:
    """``grid`` and, for every two of its points that change different knobs of the same preset, both changes at
    once (``clear-early+summary-2.5k``): two small changes may gain together what neither gains alone. The pairs
    are fixed before anything is measured, so the cross-validation holds for them as for the grid."""
    changes = [(name, preset, knobs) for name, (preset, knobs) in grid.items() if knobs]
    pairs = {f"{a}+{b}": (preset, {**knobs, **other})
             for i, (a, preset, knobs) in enumerate(changes) for b, other_preset, other in changes[i + 1:]
             if preset == other_preset and not knobs.keys() & other.keys()}
    return {**grid, **pairs}


def sweep_names(grid: Grid = GRID) -> list[str]:
    """The strategies a tune replays every session with: the full history (every cost is relative to it), then
    the grid."""
    return [BASELINE, *grid]


def tune_settings(settings: Settings, grid: Grid = GRID) -> Settings:
    """``settings`` with the grid's policies as the variants each grid point runs at."""
    return replace(settings, requests_dir=None, variants=grid_policies(grid))


# --------------------------------------------------------------------------- runs kept on disk


def session_fingerprint(session: Session) -> str:
    """What a session's runs depend on: the bytes of the file it was read from (and its place in it), or, for a
    session made in memory, its conversation as contextfold writes it."""
    digest = hashlib.sha256()
    if session.path is not None:
        digest.update(Path(session.path).read_bytes())
        digest.update(f"#{session.index}".encode())
    else:
        digest.update(json.dumps(conversation_to_dict(session.conversation), sort_keys=True).encode())
    return digest.hexdigest()


def run_key(fingerprint: str, label: str, name: str, settings: Settings) -> str:
    """The key of one (session, strategy) run: everything its figures depend on."""
    policy = settings.variants.get(name)
    described = {
        "cache": CACHE_VERSION, "contextfold": __version__, "session": label, "fingerprint": fingerprint,
        "strategy": name, "policy": None if policy is None else policy.to_json(),
        "window": settings.window_tokens, "max_output": settings.max_output_tokens, "tokenizer": settings.tokenizer,
        "prices": asdict(settings.prices), "cache_ttl_s": settings.cache_ttl_s,
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


def run_to_json(run: BenchRun) -> dict[str, JSONValue]:
    return asdict(run)


def run_from_json(data: Mapping[str, Any]) -> BenchRun:
    """The run :func:`run_to_json` wrote (a ``KeyError``, ``TypeError`` or ``ValueError`` if it is not one)."""
    totals = dict(data["totals"])
    totals["strict"] = SessionStrict(**totals["strict"])
    totals["lint"] = SummaryLint(**totals["lint"])
    return BenchRun(data["session"], data["strategy"], Totals(**totals), tuple(data["context_tokens"]),
                    tuple(data["step_cost_usd"]), dict(data["survival_requests"]), int(data["empty_requests"]))


class RunCache:
    """The finished runs of a tune, one owner-only JSON file per (session, strategy) under ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, key: str) -> Path:
        return self.folder / f"{key[:32]}.json"

    def get(self, key: str) -> BenchRun | None:
        """The run kept under ``key``; ``None`` when there is none, or it cannot be read (it is made again, with a
        warning: a file cut short by a crash must not stop the sweep)."""
        path = self.path(key)
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("key") != key:
                return None
            return run_from_json(data["run"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            log.warning("%s cannot be read back (%s: %s): the run is made again", path, type(error).__name__, error)
            return None

    def put(self, key: str, run: BenchRun) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        with replace_file(self.path(key)) as file:
            file.write(json.dumps({"key": key, "run": run_to_json(run)}).encode())


# --------------------------------------------------------------------------- the sweep


@dataclass(frozen=True)
class Sweep:
    """What a tune measured: the runs of the sessions every strategy ran on (``complete``), the sessions left
    unmeasured or part-measured when the budget ran out (``incomplete``), those that could not be replayed, and
    how many runs were read back from the folder and how many made now."""

    policies: dict[str, Policy]
    """The grid swept, by name."""
    runs: tuple[BenchRun, ...]
    complete: tuple[str, ...]
    incomplete: tuple[str, ...]
    failed: dict[str, str]
    """Sessions whose replay raised, and the error: left out, the others measured."""
    cached: int
    measured: int
    planned: int
    stopped: bool
    """The budget ran out before every run was made."""
    seconds: float


def sweep(sessions: Sequence[Session], settings: Settings, out: Path, *, grid: Grid = GRID, jobs: int | None = None,
          progress: Progress | None = None, budget_s: float | None = None) -> Sweep:
    """Every session replayed with every strategy of :func:`sweep_names`, the runs kept in ``out``/``runs`` as
    they finish; those kept already are read back, not made again. With ``budget_s`` no session is started after
    that many seconds and those still running are abandoned (their finished runs were kept)."""
    started = time.monotonic()
    deadline = None if budget_s is None else started + budget_s
    settings = tune_settings(settings, grid)
    names = sweep_names(grid)
    cache = RunCache(out / RUNS_FOLDER)
    keys: dict[tuple[str, str], str] = {}
    have: dict[tuple[str, str], BenchRun] = {}
    todo: dict[tuple[str, ...], list[Session]] = {}  # the strategies still to run -> the sessions needing them
    for session in sessions:
        fingerprint = session_fingerprint(session)
        missing = []
        for name in names:
            key = keys[session.label, name] = run_key(fingerprint, session.label, name, settings)
            run = cache.get(key)
            if run is None:
                missing.append(name)
            else:
                have[session.label, name] = run
        if missing:
            todo.setdefault(tuple(missing), []).append(session)
    cached = len(have)
    planned = len(sessions) * len(names)
    failed: dict[str, str] = {}

    def keep(runs: list[BenchRun]) -> None:
        for run in runs:
            cache.put(keys[run.session, run.strategy], run)
            have[run.session, run.strategy] = run

    def fail(error: ReplayFailed) -> None:  # that session is left out, said why once; the others go on
        if error.session not in failed:
            log.warning("%s: left out of the tune", error)
            failed[error.session or ""] = str(error)

    told = None if progress is None else lambda _done, _total: progress(len(have), planned)
    if told is not None:
        told(0, 0)
    for left, waiting in todo.items():
        if deadline is not None and time.monotonic() >= deadline:
            break
        run_bench(waiting, list(left), settings, jobs=jobs, progress=told, finished=keep, deadline=deadline,
                  failed=fail, per_job=PER_JOB)
    complete = tuple(s.label for s in sessions if all((s.label, name) in have for name in names))
    runs = tuple(have[label, name] for label in complete for name in names)
    incomplete = tuple(s.label for s in sessions if s.label not in complete and s.label not in failed)
    return Sweep(dict(settings.variants), runs, complete, incomplete, failed, cached, len(have) - cached, planned,
                 bool(incomplete), time.monotonic() - started)


# --------------------------------------------------------------------------- the choice


@dataclass(frozen=True)
class Tuned:
    """A tune's outcome: the frontier over the sessions measured (cross-validated by session), the grid point
    chosen on all of them at no more than the anchor's cost, and each point's mean ``asked`` (what the person
    asked, still held: :mod:`contextfold.replay.strict`) beside its strict recall."""

    found: Frontier
    anchor: str
    chosen: str
    written: str
    """The point the policy file holds: ``chosen`` when its cross-validated figures hold up against the anchor's
    (:func:`holds_up`) or there were too few sessions to cross-validate, else the anchor: a choice that loses on
    sessions it was not chosen on is fitted to the ones it was."""
    policy: Policy
    """``written``'s policy."""
    rule: str
    """The rule of :data:`~.frontier.CHOICE_RULES` that chose ``chosen`` (the one that held up best when
    cross-validated over every session measured: :func:`~.frontier.choose_rule`)."""
    asked: dict[str, float | None] = field(default_factory=dict)
    held_out_asked: tuple[float | None, float | None] = (None, None)
    """The anchor's ``asked`` and the cross-validated choice's, over the held-out sessions."""
    inert: tuple[str, ...] = ()
    """The grid points that ran as the anchor did on every session (:func:`~.frontier.inert`): knobs that do not act
    on these sessions at this window (never chosen: they are the anchor there)."""


def choose_policy(result: Sweep, window: int, folds: int, anchor: str = DEFAULT_ANCHOR) -> Tuned:
    """The frontier of the grid swept over the sessions of ``result`` and the point chosen for ``anchor`` on all
    of them by the rule that holds up best there (:func:`~.frontier.choose_by_rule`, as each fold chooses on its
    tuning sessions); its held-out figures are :attr:`Frontier.held_out` ``[anchor]``."""
    grid = list(result.policies)
    found = frontier(result.runs, grid, [], window, folds)
    rule, chosen = choose_by_rule(result.runs, grid, anchor, set(result.complete), folds)
    asked = {name: mean_asked(r for r in result.runs if r.strategy == name) for name in grid}
    held_out: tuple[float | None, float | None] = (None, None)
    if anchor in found.held_out:
        picked = [r for fold in found.folds for r in result.runs
                  if r.session in fold.held_out and r.strategy == fold.chosen[anchor]]
        held_out = (asked[anchor], mean_asked(picked))
    written = chosen if anchor not in found.held_out or holds_up(found.held_out[anchor]) else anchor
    return Tuned(found, anchor, chosen, written, result.policies[written], rule, asked, held_out,
                 inert(result.runs, grid, anchor, set(result.complete)))


def holds_up(held: HeldOut) -> bool:
    """The cross-validated choice keeps at least the anchor's strict recall at no more than its cost, on sessions
    none of its choices was made on (to nine places: the same figures summed in another order are equal)."""
    return (held.chosen.strict is not None and held.anchor.strict is not None
            and round(held.chosen.strict - held.anchor.strict, 9) >= 0
            and round(held.chosen.cost - held.anchor.cost, 9) <= 0)


def mean_asked(runs: Iterable[BenchRun]) -> float | None:
    """The mean of the sessions' ``asked`` (``None`` when no session asked anything)."""
    values = [run.totals.strict.asked for run in runs if run.totals.strict.asked is not None]
    return sum(values) / len(values) if values else None

