"""The ``contextfold`` group: every command, each from its own module of this package."""

from __future__ import annotations

import click

from .bench import bench_command
from .chat import chat
from .compact import compact_command
from .demo import demo
from .recorded import inspect, tokens
from .replay import replay_command
from .sessions import sessions


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="contextfold")
def cli() -> None:
    """Keep long-running LLM agents inside their context window."""


for command in (inspect, tokens, demo, replay_command, chat, compact_command, bench_command, sessions):
    cli.add_command(command)


def main() -> None:
    cli()
