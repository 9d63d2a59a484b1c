"""What the commands share: options, turning library errors into one line, the progress bar.

Errors from the library, and a file or folder the system refuses (permission
denied, not a folder), are shown as one line naming the fault, with exit
code 2, never a traceback (:func:`reports_errors`).
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .. import importers
from ..adapters import PROVIDERS, adapter_for
from ..conversation import Conversation
from ..errors import ContextfoldError, InvalidLimits, StoreError, TokenizerUnavailable, UnknownModel
from ..importers import FORMATS
from ..limits import resolve_limits
from ..pipeline.base import MODES, Mode, Policy
from ..pipeline.presets import PRESETS
from ..redaction import redact_credentials, redact_url
from ..replay.run import Progress as ProgressCallback
from ..stores import open_store, split_session_ref
from ..stores.opening import local_path
from ..stores.records import restore
from ..stores.transcript import FORMAT as TRANSCRIPT_FORMAT
from ..stores.transcript import Transcript
from ..summarizers.base import Summarizer
from ..tokens import TOKENIZER_CHOICES, load_encoding

F = TypeVar("F", bound=Callable[..., object])
log = logging.getLogger(__name__)

SUMMARIZERS = ("extractive", *PROVIDERS)
"""Who may write a summary: offline extraction, or any provider's model."""


def fail(error: ContextfoldError | OSError) -> NoReturn:
    """One line on stderr, exit code 2: a message of several lines (a database driver's, say) is joined by '; '."""
    message = redact_credentials(command_line_message(error))  # the last guard: no credential on the terminal
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    click.echo(f"contextfold: {'; '.join(lines)}", err=True)
    sys.exit(2)


def command_line_message(error: ContextfoldError | OSError) -> str:
    """The error's message, with what to do said in command-line terms where the library's would not help."""
    if isinstance(error, OSError):
        return f"{error.filename}: {error.strerror}" if error.filename and error.strerror else str(error)
    if isinstance(error, UnknownModel):
        guess = f" (did you mean {' or '.join(error.close)}?)" if error.close else ""
        return f"unknown model {error.model!r}{guess}: `contextfold models` lists the known ones"
    return str(error)


def reports_errors(function: F) -> F:
    """A library error, or a file the system refuses, ends the command with one line on stderr and exit code 2."""

    @functools.wraps(function)
    def wrapper(*args: object, **kwargs: object) -> object:
        try:
            return function(*args, **kwargs)
        except (ContextfoldError, OSError) as error:
            fail(error)

    return wrapper  # type: ignore[return-value]


@dataclass(frozen=True)
class StoredRef:
    """A session of a store, named on the command line as ``STORE#session-id``."""

    location: str
    session_id: str

    def __str__(self) -> str:
        return f"{redact_url(self.location)}#{self.session_id}"


if TYPE_CHECKING:  # click 8.4 types a parameter type by its value; older clicks cannot subscript it at run time
    _SessionParamType = click.ParamType[Path | StoredRef]
else:
    _SessionParamType = click.ParamType


class RecordedSession(_SessionParamType):
    """A recorded session file, or ``STORE#session-id``: a session of a store (a folder or a store URL)."""

    name = "FILE|STORE#ID"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path | StoredRef:
        if isinstance(value, (Path, StoredRef)):
            return value
        try:
            if Path(value).is_file():
                return Path(value)
        except OSError:  # a folder on the way cannot be searched: reading it says so in one line
            return Path(value)
        ref = split_session_ref(value)
        if ref is None:
            self.fail(f"{value!r} is neither a file nor STORE#session-id (a store URL or folder, '#', an id)",
                      param, ctx)
        return StoredRef(*ref)


def check_window(window: int, reserve: int, reserve_option: str | None = "--max-output") -> None:
    """A usage error when ``window`` leaves no room for a prompt beside the ``reserve`` kept for each reply: the
    library's one check (:func:`~contextfold.limits.resolve_limits`), said in command-line terms."""
    try:
        resolve_limits(None, window, reserve)
    except InvalidLimits:
        smaller = f" (or a smaller {reserve_option})" if reserve_option else ""
        raise click.BadParameter(f"{window:,} tokens leave no room for a prompt beside the {reserve:,} tokens kept "
                                 f"for each reply: use a larger window{smaller}", param_hint="--window") from None


def recorded_argument(function: F) -> F:
    """The ``FILE`` argument of a command that reads recorded sessions: a file, or ``STORE#session-id``."""
    return click.argument("file", type=RecordedSession())(function)


def existing(location: str) -> str:
    """``location``, when the store is there: opening a store creates it (a SQLite file, a folder), which reading
    one must not do, nor report a mistyped path as an empty store. (A server's store is checked by connecting.)"""
    path = local_path(location)
    if path is not None and not path.exists():
        raise StoreError(f"{redact_url(location)}: the store does not exist ({path} not found)")
    return location


def load_recorded(source: Path | StoredRef, format_: str | None = None) -> list[Conversation]:
    """The conversations of a recorded file (its format sniffed unless given), or the history of a stored session.

    A contextfold transcript (a file of a JSONL store, or what ``sessions
    export`` writes) is read as the store reads it: the session's current
    view, a torn or damaged line skipped with a warning naming it.
    """
    if isinstance(source, Path):
        if format_ is None and is_transcript(source):
            restored = Transcript.load(source)
            for line in restored.report.skipped:
                log.warning("%s: %s", source, line)
            return [restored.conversation]
        return importers.load(source, format=format_)
    if format_ is not None:
        raise click.UsageError("--input-format is for files: a stored session has its own")
    with closing(open_store(existing(source.location))) as store:  # read only: inspecting never takes a writer's lock
        records = store.read(source.session_id)
    return [restore(str(source), records).conversation]


def is_transcript(path: Path) -> bool:
    """Whether ``path`` starts with a contextfold transcript's header record (the importers read other tools' files;
    a transcript is the stores' own format, read through them)."""
    try:
        with path.open("rb") as file:
            first = json.loads(file.readline(1 << 20) or b"null")
    except (OSError, ValueError, RecursionError):  # unreadable, not JSON, or nested too deep: not a transcript
        return False
    return isinstance(first, dict) and first.get("format") == TRANSCRIPT_FORMAT


def resolved_tokenizer(choice: str) -> str:
    """A ``--tokenizer`` choice made definite before a run whose figures are compared (``replay``, ``bench``):
    ``auto`` is ``o200k`` when its file is on this machine (``$CONTEXTFOLD_TOKENIZERS_DIR``, tiktoken's cache;
    the network is never tried), else ``estimate``. Which one is said on stderr, and the figures name it."""
    if choice != "auto":
        return choice
    try:
        load_encoding("o200k_base", download=False)
    except TokenizerUnavailable as error:
        click.echo(f"contextfold: counting tokens with the block-aware estimate (a few % off): {error}", err=True)
        return "estimate"
    click.echo("contextfold: counting tokens exactly with o200k (its file is on this machine)", err=True)
    return "o200k"


def tokenizer_option(function: F) -> F:
    return click.option(
        "--tokenizer",
        type=click.Choice(TOKENIZER_CHOICES),
        default="auto",
        show_default=True,
        help="Token counter: exact tiktoken encodings, the block-aware estimate, or auto "
        "(exact when the encoding is available offline, else the estimate).",
    )(function)


def renamed_option(old: str, new: str, **new_attrs: Any) -> Callable[[F], F]:
    """Option ``new``, and ``old`` (its former name) still accepted, hidden and saying it is deprecated.

    ``old`` is processed first (eager) and leaves its value for ``new``, which
    takes it when not given itself; ``new``'s ``default`` applies last.
    """
    key = f"contextfold.renamed.{new}"
    default = new_attrs.pop("default", None)

    def remember(ctx: click.Context, parameter: click.Parameter, value: object) -> None:
        if value is not None:
            ctx.meta[key] = value

    def resolve(ctx: click.Context, parameter: click.Parameter, value: object) -> object:
        return value if value is not None else ctx.meta.get(key, default)

    def decorate(function: F) -> F:
        function = click.option(old, type=new_attrs.get("type"), default=None, hidden=True, expose_value=False,
                                is_eager=True, callback=remember, deprecated=f"Use {new} instead.")(function)
        return click.option(new, default=None, callback=resolve, **new_attrs)(function)

    return decorate


def format_option(function: F) -> F:
    """``--input-format``: the session format of FILE (``--format`` before it meant the output in ``compact``)."""
    return renamed_option("--format", "--input-format", type=click.Choice(FORMATS),
                          help="The session format of FILE (detected when omitted).")(function)


def preset_option(function: F) -> F:
    """``--preset`` or ``--policy FILE``: the point on the cost / usable-context frontier the pipeline runs at
    (``Policy.preset``, or a policy file ``Policy.save`` or ``contextfold tune`` wrote), and ``--mode``: when it
    may compact (``Policy.mode``; given, it replaces the policy's), passed to the command as one
    :class:`~contextfold.pipeline.base.Policy`. ``--preset`` is read first and left for ``--policy``'s callback,
    which refuses both at once: one policy is run, and neither silently wins."""
    key = "contextfold.preset"

    def remember(ctx: click.Context, parameter: click.Parameter, name: str | None) -> None:
        if name is not None:
            ctx.meta[key] = name

    def resolve(ctx: click.Context, parameter: click.Parameter, path: Path | None) -> Policy:
        name = ctx.meta.get(key)
        if path is None:
            return Policy.preset(name or "balanced")
        if name is not None:
            raise click.BadParameter(f"--preset {name} and a policy file: give one", param_hint="'--policy'")
        try:
            return Policy.load(path)
        except (ContextfoldError, OSError) as error:  # parsed before the command: its one line is click's
            raise click.BadParameter(command_line_message(error), param_hint="'--policy'") from None

    @functools.wraps(function)
    def with_mode(*args: object, mode: Mode | None, policy: Policy, **kwargs: object) -> object:
        return function(*args, policy=policy if mode is None else replace(policy, mode=mode), **kwargs)

    moded = click.option("--mode", type=click.Choice(MODES), default=None,
                         help="When the pipeline compacts: auto (on its own; the default), manual (only when asked: "
                         "/compact; a request over the window is refused), off (never).")(with_mode)
    moded = click.option("--preset", type=click.Choice(tuple(PRESETS)), default=None, is_eager=True,
                         expose_value=False, callback=remember,
                         help="How much of the window the pipeline spends: lean (cheapest), balanced (the "
                         "default), thorough (keeps the most); see the README's Presets.")(moded)
    return click.option("--policy", "policy", type=click.Path(dir_okay=False, path_type=Path), default=None,
                        callback=resolve, metavar="FILE",
                        help="A policy file (JSON; what `contextfold tune` writes, or Policy.save) instead of a "
                        "preset.")(moded)  # type: ignore[return-value]


def summarizer_options(function: F) -> F:
    """``--summarizer``, ``--model`` and ``--base-url``, for every command that summarizes."""
    options = (
        click.option("--summarizer", "summarizer_kind", type=click.Choice(SUMMARIZERS), default="extractive",
                     show_default=True, help="Who writes the summary: offline extraction, or a model."),
        click.option("--model", default=None, help="The summarizer's model (default: a small one of its provider)."),
        click.option("--base-url", default=None,
                     help="The summarizer's endpoint (an OpenAI-compatible server, a proxy, a local test server)."),
    )
    for option in reversed(options):
        function = option(function)
    return function


def make_summarizer(kind: str, model: str | None = None, base_url: str | None = None, *,
                    ride_cache: bool = True) -> Summarizer:
    """The summarizer a ``--summarizer`` choice names; keys from the environment. ``ride_cache=False``: a model
    summarizer sends the separately fitted prompt, not the agent's request (no agent warmed the cache)."""
    if kind == "extractive":
        if model or base_url:
            raise click.UsageError(f"--model and --base-url are for a model summarizer (--summarizer "
                                   f"{'|'.join(PROVIDERS)})")
        from ..summarizers.extractive import ExtractiveSummarizer

        return ExtractiveSummarizer()
    from ..summarizers.llm import ModelSummarizer

    adapter_for(kind).require_client("a model summarizer").sdk.module()  # a missing SDK: one line now, not a
    # fallback after the work
    return ModelSummarizer(provider=kind, model=model or "", base_url=base_url, ride_cache=ride_cache)


@contextmanager
def progress_bar(name: str) -> Iterator[ProgressCallback | None]:
    """A progress bar on stderr when it is a terminal, else nothing."""
    if not sys.stderr.isatty():
        yield None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(f"replaying {name}", total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
