"""Replaying many sessions with many strategies, in parallel, and keeping what the report and plots need.

One job is one session replayed with every strategy in turn (or a share of
them, ``run_bench(per_job=)``), in one worker process: the strategies share
the session's item objects, so each item is rendered and counted once per
job however many strategies send it. Jobs go out largest first so that the
last one to finish is a short one.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.pool
import os
import re
import signal
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import importers
from ..conversation import Conversation, Header
from ..errors import ContextfoldError, SessionFormatError
from ..pipeline.base import Policy, Prices
from ..replay import strategies
from ..replay.base import Sent, Step, Strategy, StrategyConfig
from ..replay.cost import DEFAULT_CACHE_TTL_S, DEFAULT_PRICES
from ..replay.probes import PROBES
from ..replay.result import AGENT, ReplayResult, Totals
from ..replay.run import replay
from ..tokens import Estimator, named_estimator
from ..usage import Usage

TAU_BENCH_LIMIT = 20
"""Conversations of a tau-bench file replayed by default: its 200 short chats would outweigh everything else."""

Progress = Callable[[int, int], None]
"""Called as runs finish with (runs done, runs in all)."""


@dataclass(frozen=True)
class Session:
    """A recorded conversation to replay: ``label`` names it in the report, ``slug`` in file names.

    ``path``, ``index`` and ``format`` say where it was read from (``None``
    for a session handed in from memory).
    """

    label: str
    conversation: Conversation
    path: str | None = None
    index: int | None = None
    format: str | None = None
    slug: str = ""

    def __post_init__(self) -> None:
        if not self.slug:
            object.__setattr__(self, "slug", slugify(self.label))

    @property
    def requests(self) -> int:
        """Request points: one per recorded assistant reply."""
        return sum(item.role == "assistant" for item in self.conversation.items)


@dataclass(frozen=True)
class Skipped:
    """A file or conversation found under the paths but not replayed, and why."""

    where: str
    reason: str


@dataclass(frozen=True)
class BenchRun:
    """One session (by label) replayed with one strategy: its totals, and the series the plots draw.

    ``context_tokens`` holds each agent request's prompt tokens in order;
    ``step_cost_usd`` what each step cost (its agent request and any
    summarizer requests). ``survival_requests`` counts, per probe, the
    requests where it had something to look for (the weights of the probe's
    mean when sessions are pooled). ``empty_requests`` counts the requests
    that held nothing but the system prompt although the recording had
    messages before that reply: Anthropic's API rejects an empty message
    list, no agent can carry on from one, and the replay's invariants do not
    look for it.
    """

    session: str
    strategy: str
    totals: Totals
    context_tokens: tuple[int, ...]
    step_cost_usd: tuple[float, ...]
    survival_requests: dict[str, int] = field(default_factory=dict)
    empty_requests: int = 0
    requests_file: str | None = None

    @property
    def violations(self) -> int:
        """Broken invariants, and requests emptied of every message."""
        return self.totals.violations + self.empty_requests


class EmptyRequests:
    """Passes a strategy through, counting the requests it emptied (see :attr:`BenchRun.empty_requests`)."""

    def __init__(self, inner: Strategy, name: str | None = None) -> None:
        self.inner = inner
        self.name = name or inner.name
        self.count = 0

    def start(self, header: Header) -> None:
        self.inner.start(header)

    def step(self, step: Step) -> Sent:
        sent = self.inner.step(step)
        request = sent.request
        self.count += step.index > 0 and not request.items and not request.header.pinned
        return sent

    def record_usage(self, usage: Usage) -> None:
        self.inner.record_usage(usage)


def slugify(label: str) -> str:
    """``label`` as a file name: runs of anything but letters, digits, ``.``, ``_`` and ``-`` become one ``_``."""
    return re.sub(r"[^\w.-]+", "_", label).strip("_") or "session"


def find_sessions(
    paths: Iterable[str | os.PathLike[str]], tau_bench_limit: int | None = TAU_BENCH_LIMIT
) -> tuple[list[Session], list[Skipped]]:
    """Every conversation in the files under ``paths``, and what was passed over.

    A file named directly must be a session (its error is raised); a file
    found in a folder that no importer reads, or that fails to load, is
    skipped with the reason. Conversations with no assistant reply have
    nothing to replay and are skipped too; a tau-bench file gives its first
    ``tau_bench_limit`` conversations (all with ``None``). Labels are paths
    relative to the folder given (the file as given otherwise), with ``#N``
    for the N-th conversation of a file of several; slugs are made from the
    relative path, or from the name of a file given directly.
    """
    sessions: list[Session] = []
    skipped: list[Skipped] = []
    taken: set[str] = set()  # labels given
    read: set[Path] = set()  # files read
    for root in map(Path, paths):
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for file in files:
            name = file.relative_to(root).as_posix() if root.is_dir() else str(file)
            if file.resolve() in read:
                skipped.append(Skipped(name, "the same file was found under an earlier path"))
                continue
            read.add(file.resolve())
            try:
                kind = importers.detect(file)
                conversations = importers.load(file, format=kind)
            except SessionFormatError as error:
                if not root.is_dir():
                    raise
                skipped.append(Skipped(name, str(error)))
                continue
            if kind == "tau-bench" and tau_bench_limit is not None and len(conversations) > tau_bench_limit:
                skipped.append(Skipped(name, f"conversations {tau_bench_limit} to {len(conversations) - 1} "
                                             f"(beyond the tau-bench limit of {tau_bench_limit})"))
                conversations = conversations[:tau_bench_limit]
            several = len(conversations) > 1
            name = name if name not in taken else str(file)  # the same relative path under two folders
            taken.add(name)
            for index, conversation in enumerate(conversations):
                label = f"{name}#{index}" if several else name
                short = f"{file.name}#{index}" if several else file.name
                session = Session(label, conversation, str(file), index, kind, slugify(label if root.is_dir() else short))
                if session.requests:
                    sessions.append(session)
                else:
                    skipped.append(Skipped(label, "no assistant reply to replay"))
    return unique_slugs(sessions), skipped


def unique_slugs(sessions: Sequence[Session]) -> list[Session]:
    """The sessions with distinct slugs (a later one that collides gets ``-2``, ``-3``...)."""
    seen: dict[str, int] = {}
    result = []
    for session in sessions:
        slug = session.slug
        seen[slug] = seen.get(slug, 0) + 1
        if seen[slug] > 1:
            slug = f"{slug}-{seen[slug]}"
        result.append(Session(session.label, session.conversation, session.path, session.index, session.format, slug))
    return result


# --------------------------------------------------------------------------- running


@dataclass(frozen=True)
class Settings:
    """Everything a run depends on besides the session and the strategy (tokens, USD per million, seconds)."""

    window_tokens: int
    max_output_tokens: int = StrategyConfig.max_output_tokens
    tokenizer: str = "o200k"
    prices: Prices = DEFAULT_PRICES
    cache_ttl_s: float = DEFAULT_CACHE_TTL_S
    requests_dir: str | None = None
    results_dir: str | None = None
    policy: Policy | None = None  # contextfold's knobs (a preset's), default Policy()
    variants: Mapping[str, Policy] = field(default_factory=dict)
    """More names a run may name, each contextfold's pipeline at its own policy (the frontier's grid points)."""

    def strategy_config(self, name: str) -> StrategyConfig:
        """What strategy ``name`` is told: a variant's own policy, else :attr:`policy`."""
        return StrategyConfig(self.window_tokens, self.max_output_tokens, self.results_dir,
                              policy=self.variants.get(name, self.policy))


def create_strategy(name: str, settings: Settings) -> Strategy:
    """Strategy ``name``: a registered one, or contextfold's pipeline at the policy of variant ``name``."""
    return strategies.create("default" if name in settings.variants else name, settings.strategy_config(name))


def available_strategies(settings: Settings, names: Sequence[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The strategies that can run here (of ``names``, default every registered one) and why the others cannot.

    An unknown name raises :class:`ValueError`; a known one that cannot be
    created (a missing optional dependency) is returned with its reason.
    """
    usable: list[str] = []
    missing: dict[str, str] = {}
    for name in names if names is not None else strategies.names():
        try:
            create_strategy(name, settings)
        except ContextfoldError as error:
            missing[name] = str(error)
            continue
        usable.append(name)
    return usable, missing


def run_bench(
    sessions: Sequence[Session],
    names: Sequence[str],
    settings: Settings,
    *,
    jobs: int | None = None,
    progress: Progress | None = None,
    finished: Callable[[list[BenchRun]], None] | None = None,
    deadline: float | None = None,
    failed: Callable[[ReplayFailed], None] | None = None,
    per_job: int | None = None,
) -> list[BenchRun]:
    """Replay every session with every strategy named; the runs in session order, then strategy order.

    ``jobs`` worker processes (default: the cores available; 1 runs here, in
    this process). Oversized outputs that a strategy persists go to a
    temporary folder removed afterwards unless ``settings.results_dir`` names
    one. With ``settings.requests_dir`` each run's requests are dumped to
    ``<requests_dir>/<session slug>.<strategy>.jsonl``. ``finished`` is
    handed each session's runs as they land (``contextfold tune`` keeps them
    on disk, so an interrupted sweep resumes). At ``deadline``
    (``time.monotonic()``) no session is started any more and the workers'
    sessions still running are abandoned: the runs returned are the sessions
    finished by then (with one job, the session running at the deadline
    ends first). A session whose replay raises stops the bench with
    :class:`ReplayFailed`, unless ``failed`` is given: it is then handed the
    error and the other sessions go on. A job replays one session with every
    strategy, or with ``per_job`` of them: smaller jobs land sooner (what a
    deadline or Ctrl-C abandons is less), each rendering the session again.
    """
    labels = [session.label for session in sessions]
    if len(set(labels)) < len(labels):
        raise ValueError(f"two sessions share a label: {min(x for x in labels if labels.count(x) > 1)!r}")
    jobs = max(1, min(jobs or available_cores(), len(sessions) or 1))
    total = len(sessions) * len(names)
    if settings.requests_dir is not None:
        Path(settings.requests_dir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="contextfold-bench-") as scratch:
        if settings.results_dir is None:
            settings = replace(settings, results_dir=scratch)
        step = per_job or max(len(names), 1)
        work = [(session, tuple(names[i:i + step]), settings) for session in sorted(sessions, key=_size, reverse=True)
                for i in range(0, len(names), step)]
        done: list[BenchRun] = []

        def land(runs: list[BenchRun] | ReplayFailed) -> None:
            if isinstance(runs, ReplayFailed):
                if failed is None:
                    raise runs
                failed(runs)
                runs = []
            done.extend(runs)
            if finished is not None:
                finished(runs)
            if progress is not None:
                progress(len(done), total)

        _run_jobs(work, jobs, deadline, land)
    order = {session.label: number for number, session in enumerate(sessions)}
    return sorted(done, key=lambda run: (order[run.session], names.index(run.strategy)))


def _run_jobs(work: list[tuple[Session, tuple[str, ...], Settings]], jobs: int, deadline: float | None,
              land: Callable[[list[BenchRun] | ReplayFailed], None]) -> None:
    """Replay each job of ``work`` (here with one job, else in ``jobs`` worker processes), handing each result to
    ``land`` as it comes; at ``deadline`` no job is started and those running are abandoned."""
    if jobs == 1:
        for job in work:
            if deadline is not None and time.monotonic() >= deadline:
                break
            land(_replay_or_failure(job))
        return
    with _pool_deaf_to_interrupts(jobs) as pool:
        results = pool.imap_unordered(_replay_or_failure, work)
        for _ in work:
            try:
                land(results.next(None if deadline is None else max(deadline - time.monotonic(), 0.0)))
            except multiprocessing.TimeoutError:  # the ``with`` ends the pool, and the sessions running
                break


@contextmanager
def _pool_deaf_to_interrupts(jobs: int) -> Iterator[multiprocessing.pool.Pool]:
    """A pool whose workers never see Ctrl-C: SIGINT is held back (blocked, not ignored, so none is lost) while
    they start, they inherit that, and each ignores it before letting it through; the parent's own held-back
    SIGINT is raised once the pool is in hand, so the ``with`` ends it (terminate) and the command stops."""
    hold = getattr(signal, "pthread_sigmask", None)  # POSIX; elsewhere the initializer alone
    held = hold(signal.SIG_BLOCK, {signal.SIGINT}) if hold is not None else None
    try:
        pool = multiprocessing.get_context().Pool(jobs, initializer=_ignore_interrupts)
    except BaseException:
        if hold is not None and held is not None:
            hold(signal.SIG_SETMASK, held)
        raise
    with pool:
        if hold is not None and held is not None:
            hold(signal.SIG_SETMASK, held)
        yield pool


def _ignore_interrupts() -> None:
    """A worker leaves Ctrl-C to the parent, which stops the pool: the terminal's SIGINT reaches every process of
    its group, and each worker would otherwise print its own traceback. A worker starts with SIGINT held back
    (see :func:`_pool_deaf_to_interrupts`): one sent meanwhile is dropped by ``SIG_IGN`` before it is let through."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def available_cores() -> int:
    """Cores this process may run on."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def _size(session: Session) -> int:
    return len(session.conversation)


_estimators: dict[str, Estimator] = {}


def estimator_for(tokenizer: str) -> Estimator:
    """The counter a ``--tokenizer`` choice names, made once per process."""
    if tokenizer not in _estimators:
        _estimators[tokenizer] = named_estimator(tokenizer)
    return _estimators[tokenizer]


class ReplayFailed(ContextfoldError):
    """A session's replay raised: which session, which strategy, and the error, in one message; ``session`` is
    the session's label.

    A worker's exception reaches the parent pickled, and one whose ``__init__`` takes other arguments than its
    message (:class:`~contextfold.errors.InvalidMessage`) cannot be rebuilt there: the pool then waits forever
    for a result that never comes. This one always can (:meth:`__reduce__`)."""

    def __init__(self, message: str, session: str | None = None) -> None:
        super().__init__(message)
        self.session = session

    def __reduce__(self) -> tuple[type[ReplayFailed], tuple[str, str | None]]:
        return type(self), (str(self), self.session)


def replay_session(job: tuple[Session, tuple[str, ...], Settings]) -> list[BenchRun]:
    """One session replayed with each strategy (the work of one job); :class:`ReplayFailed` if a replay raises."""
    session, names, settings = job
    estimator = estimator_for(settings.tokenizer)
    runs = []
    for name in names:
        config = settings.strategy_config(name)
        dump = None if settings.requests_dir is None else str(Path(settings.requests_dir) / f"{session.slug}.{name}.jsonl")
        strategy = EmptyRequests(create_strategy(name, settings), name)
        try:
            result = replay(session.conversation, strategy, config, tokenizer=estimator, prices=settings.prices,
                            cache_ttl_s=settings.cache_ttl_s, requests_path=dump, session=session.label)
        except Exception as error:
            raise ReplayFailed(f"{session.label} could not be replayed with {name}: "
                               f"{type(error).__name__}: {error}", session.label) from error
        runs.append(_bench_run(session, name, result, strategy.count, dump))
    return runs


def _replay_or_failure(job: tuple[Session, tuple[str, ...], Settings]) -> list[BenchRun] | ReplayFailed:
    """:func:`replay_session`, its failure returned rather than raised: the caller decides whether it stops the
    bench, and a worker's error crosses to the parent as a value, so the pool goes on."""
    try:
        return replay_session(job)
    except ReplayFailed as error:
        return error


def _bench_run(session: Session, name: str, result: ReplayResult, empty: int, dump: str | None) -> BenchRun:
    agent = [record for record in result.requests if record.kind == AGENT]
    step_cost: dict[int, float] = {}
    for record in result.requests:
        step_cost[record.step] = step_cost.get(record.step, 0.0) + record.cost_usd
    counts = {probe: sum(r.survival is not None and getattr(r.survival, probe) is not None for r in agent)
              for probe in PROBES}
    return BenchRun(session.label, name, result.totals, tuple(r.input_tokens for r in agent),
                    tuple(step_cost[r.step] for r in agent), counts, empty, dump)
