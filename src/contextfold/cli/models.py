"""``contextfold models``: the window registry and the price table, so a user sees which names contextfold knows,
their limits, the API that serves each (what ``Context(model)`` writes) and which list prices it could confirm."""

from __future__ import annotations

import json
from dataclasses import asdict

import click
from rich.console import Console
from rich.table import Table

from ..errors import UnknownPrice
from ..limits import PRICES_AS_OF, ModelPrices, model_limits, model_prices, model_provider, registered_models
from .options import reports_errors


@click.command("models")
@click.argument("names", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per model.")
@reports_errors
def models_command(names: tuple[str, ...], as_json: bool) -> None:
    """The context window, longest reply, provider and list prices of every model contextfold knows, or of NAMES (dated
    and provider-prefixed names resolve as everywhere else; an unknown one is an error). A price that could
    not be confirmed is shown as unknown, never guessed."""
    chosen = {name: model_limits(name) for name in names} if names else registered_models()
    if as_json:
        for name, limits in chosen.items():
            prices = _prices(name)
            listed = None if prices is None else {"input": prices.input_per_mtok, "output": prices.output_per_mtok,
                                                  "cache_read": prices.cache_read_per_mtok}
            click.echo(json.dumps({"model": name, **asdict(limits), "provider": model_provider(name),
                                   "usd_per_mtok": listed}))
        return
    table = Table("model", "window", "reply", "provider", "USD/MTok in, out", title_justify="left",
                  title="Models contextfold knows, in tokens (any other needs its window: --window, window_tokens=); "
                        f"list prices as of {PRICES_AS_OF}, unknown where none could be confirmed")
    table.columns[0].overflow = "fold"  # a long name wraps on a narrow terminal rather than lose its end
    for name, limits in chosen.items():
        prices = _prices(name)
        price = "unknown" if prices is None else f"{prices.input_per_mtok:g}, {prices.output_per_mtok:g}"
        table.add_row(name, f"{limits.context_window:,}", f"{limits.max_output_tokens:,}", model_provider(name) or "?",
                      price)
    Console().print(table)


def _prices(name: str) -> ModelPrices | None:
    """``name``'s list prices, or ``None`` when the table has none it could confirm."""
    try:
        return model_prices(name)
    except UnknownPrice:
        return None
