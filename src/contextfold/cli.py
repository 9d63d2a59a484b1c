"""The ``contextfold`` command line: a thin layer over the public API.

Each command parses its options, calls the library, and renders the result
with rich (or as JSON with ``--json``). Errors from the library are shown as
one line naming the fault, with exit code 2, never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from .agent.command import register as register_chat
from .bench.command import register as register_bench
from .errors import ContextfoldError
from .replay.command import register as register_replay
from .summarizers.command import register as register_compact

F = TypeVar("F", bound=Callable[..., Any])

TOKENIZERS = ("auto", "estimate", "o200k", "cl100k")


def _tokenizer_option(function: F) -> F:
    return click.option(
        "--tokenizer",
        type=click.Choice(TOKENIZERS),
        default="auto",
        show_default=True,
        help="Token counter: exact tiktoken encodings, the block-aware estimate, or auto "
        "(exact when the encoding is available offline, else the estimate).",
    )(function)


def _format_option(function: F) -> F:
    from .importers import FORMATS

    return click.option(
        "--format", "format_", type=click.Choice(FORMATS), default=None, help="Session format (detected when omitted)."
    )(function)


def _fail(error: ContextfoldError) -> None:
    click.echo(f"contextfold: {error}", err=True)
    sys.exit(2)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="contextfold")
def cli() -> None:
    """Keep long-running LLM agents inside their context window."""


@cli.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per conversation in the file.")
@_format_option
@_tokenizer_option
def inspect(file: Path, as_json: bool, format_: str | None, tokenizer: str) -> None:
    """What is in a recorded session: items and tokens by kind and tool, the largest items."""
    from . import commands

    try:
        commands.inspect(file, as_json=as_json, format_=format_, tokenizer=tokenizer)
    except ContextfoldError as error:
        _fail(error)


@cli.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per request, then a summary object.")
@click.option("--index", type=int, default=None, help="Only the N-th conversation of the file (0-based).")
@_format_option
@_tokenizer_option
def tokens(file: Path, as_json: bool, index: int | None, format_: str | None, tokenizer: str) -> None:
    """Replay a session with recorded usage: anchored estimate against reported prompt tokens."""
    from . import commands

    try:
        commands.tokens(file, as_json=as_json, index=index, format_=format_, tokenizer=tokenizer)
    except ContextfoldError as error:
        _fail(error)


@cli.command()
@click.option("--rounds", type=int, default=200, show_default=True, help="Tool rounds in the generated session.")
@click.option("--seed", type=int, default=7, show_default=True)
@click.option("--window", type=int, default=64_000, show_default=True, help="Context window in tokens.")
@click.option("--delay", type=float, default=0.02, show_default=True, help="Seconds between steps of the live view.")
@_tokenizer_option
def demo(rounds: int, seed: int, window: int, delay: float, tokenizer: str) -> None:
    """Replay a long generated coding-agent session through the pipeline, live, against the full history."""
    from . import demo as demo_module

    try:
        demo_module.run(rounds=rounds, seed=seed, window=window, delay_s=delay, tokenizer=tokenizer)
    except ContextfoldError as error:
        _fail(error)


register_replay(cli)
register_chat(cli)
register_compact(cli)
register_bench(cli)


def main() -> None:
    cli()

