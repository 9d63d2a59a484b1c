"""What the commands share: options, turning library errors into one line, the progress bar.

Errors from the library are shown as one line naming the fault, with exit
code 2, never a traceback (:func:`reports_errors`).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..errors import ContextfoldError
from ..importers import FORMATS
from ..replay.run import Progress as ProgressCallback
from ..summarizers.base import Summarizer
from ..tokens import TOKENIZER_CHOICES

F = TypeVar("F", bound=Callable[..., Any])

EXACT_TOKENIZERS = ("o200k", "cl100k", "estimate")
"""The counters a figure someone will compare may use (no ``auto``: it would change with the machine)."""
SUMMARIZERS = ("extractive", "anthropic", "openai")


def fail(error: ContextfoldError) -> NoReturn:
    click.echo(f"contextfold: {error}", err=True)
    sys.exit(2)


def reports_errors(function: F) -> F:
    """A library error ends the command with one line on stderr and exit code 2."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except ContextfoldError as error:
            fail(error)

    return wrapper  # type: ignore[return-value]


def tokenizer_option(function: F) -> F:
    return click.option(
        "--tokenizer",
        type=click.Choice(TOKENIZER_CHOICES),
        default="auto",
        show_default=True,
        help="Token counter: exact tiktoken encodings, the block-aware estimate, or auto "
        "(exact when the encoding is available offline, else the estimate).",
    )(function)


def format_option(function: F) -> F:
    return click.option(
        "--format", "format_", type=click.Choice(FORMATS), default=None, help="Session format (detected when omitted)."
    )(function)


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


def make_summarizer(kind: str, model: str | None = None, base_url: str | None = None) -> Summarizer:
    """The summarizer a ``--summarizer`` choice names; keys from the environment."""
    if kind == "extractive":
        if model or base_url:
            raise click.UsageError("--model and --base-url are for a model summarizer (--summarizer anthropic|openai)")
        from ..summarizers.extractive import ExtractiveSummarizer

        return ExtractiveSummarizer()
    from ..summarizers.llm import AnthropicSummarizer, OpenAISummarizer

    factory = AnthropicSummarizer if kind == "anthropic" else OpenAISummarizer
    return factory(**({"model": model} if model else {}), base_url=base_url)


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
