"""The ``contextfold`` group: every command, each from its own module of this package."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable

import click

from . import logs
from .bench import bench_command
from .chat import chat
from .compact import compact_command
from .demo import demo
from .models import models_command
from .recorded import inspect, tokens
from .replay import replay_command
from .serve_fake import serve_fake
from .sessions import sessions
from .tune import tune_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="contextfold")
@click.option("--log-level", type=click.Choice(logs.LEVELS), default=None,
              help="What contextfold logs to stderr [default: warning].")
@click.option("-v", "--verbose", count=True, help="Log more: -v info, -vv debug.")
def cli(log_level: str | None, verbose: int) -> None:
    """Keep long-running LLM agents inside their context window."""
    context = click.get_current_context()
    context.call_on_close(logs.configure(log_level, verbose))
    context.call_on_close(escaping_stdout())


def escaping_stdout() -> Callable[[], None]:
    """Write a lone surrogate to stdout as its ``\\udXXX`` escape, as Python's stderr does, instead of failing.

    A stored session may hold lone surrogates (the library takes them, a transcript keeps them exactly), which
    UTF-8 cannot encode: printing such a session's text (``inspect --json``, ``sessions show``) would end the
    command with a traceback. In the JSON the commands print, the escape reads back as the same string. The
    function returned puts stdout back as it was (a command run in-process leaves no trace)."""
    stream = sys.stdout
    if not isinstance(stream, io.TextIOWrapper):
        return lambda: None
    before = stream.errors
    stream.reconfigure(errors="backslashreplace")
    return lambda: stream.reconfigure(errors=before)


for command in (inspect, tokens, demo, replay_command, chat, compact_command, bench_command, sessions,
                models_command, serve_fake, tune_command):
    cli.add_command(command)


def main() -> None:
    cli()
