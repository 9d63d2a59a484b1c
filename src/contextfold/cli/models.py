"""``contextfold models``: the window registry, so a user can see which names contextfold knows and their limits."""

from __future__ import annotations

import json
from dataclasses import asdict

import click
from rich.console import Console
from rich.table import Table

from ..limits import model_limits, registered_models
from .options import reports_errors


@click.command("models")
@click.argument("names", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per model.")
@reports_errors
def models_command(names: tuple[str, ...], as_json: bool) -> None:
    """The context window and longest reply of every model contextfold knows, or of NAMES (dated and
    provider-prefixed names resolve as everywhere else; an unknown one is an error)."""
    chosen = {name: model_limits(name) for name in names} if names else registered_models()
    if as_json:
        for name, limits in chosen.items():
            click.echo(json.dumps({"model": name, **asdict(limits)}))
        return
    table = Table("model", "context window", "longest reply", title_justify="left",
                  title="Models contextfold knows, in tokens (any other needs its window: --window, window_tokens=)")
    for name, limits in chosen.items():
        table.add_row(name, f"{limits.context_window:,}", f"{limits.max_output_tokens:,}")
    Console().print(table)
