"""``contextfold inspect`` and ``contextfold tokens``: what is in a recorded session, and how right the count is."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from ..conversation import Conversation
from ..inspection import Composition, compose
from ..tokens import TokenCounter, anchored_errors, error_summary, named_estimator
from .options import format_option, load_recorded, recorded_argument, reports_errors, tokenizer_option


def _load(file: Path, format_: str | None, index: int | None = None) -> list[Conversation]:
    conversations = load_recorded(file, format_)
    if index is None:
        return conversations
    if not 0 <= index < len(conversations):
        raise click.BadParameter(f"the file holds {len(conversations)} conversation(s); --index {index} is out of range")
    return [conversations[index]]


@click.command()
@recorded_argument
@click.option("--json", "as_json", is_flag=True, help="One JSON object per conversation in the file.")
@format_option
@tokenizer_option
@reports_errors
def inspect(file: Path, as_json: bool, input_format: str | None, tokenizer: str) -> None:
    """What is in a recorded session: items and tokens by kind and tool, the largest items."""
    estimator = named_estimator(tokenizer)
    for number, conversation in enumerate(_load(file, input_format)):
        composition = compose(conversation, estimator.item, lambda c: estimator.header(c.header))
        if as_json:
            row = {"conversation": number, "tokenizer": estimator.text.name, **composition.to_dict()}
            click.echo(json.dumps(row, ensure_ascii=False))
        else:
            _render_composition(Console(), file, number, composition, estimator.text.name)


def _render_composition(console: Console, file: Path, number: int, c: Composition, counter: str) -> None:
    console.print(
        f"[bold]{file}[/] conversation {number}: {c.items} items, {c.tool_calls} tool calls, "
        f"{c.tool_results} results ({c.error_results} errors), {c.unanswered_calls} calls unanswered, "
        f"{c.total_tokens:,} tokens ({counter})"
    )
    if c.unknown_records:
        console.print(f"[yellow]skipped records of types not known yet:[/] {_listed(c.unknown_records)}")
    if c.skipped_records:
        console.print(f"records that are not turns of the chat, skipped: {_listed(c.skipped_records)}")
    kinds = Table("kind", "items", "tokens", "share", title="By kind", title_justify="left")
    total = max(c.total_tokens, 1)
    kinds.add_row("header", "", f"{c.header_tokens:,}", f"{c.header_tokens / total:.0%}")
    for kind, tokens in sorted(c.tokens_by_kind.items(), key=lambda kv: -kv[1]):
        kinds.add_row(kind, str(c.items_by_kind[kind]), f"{tokens:,}", f"{tokens / total:.0%}")
    console.print(kinds)
    if c.calls_by_tool:
        tools = Table("tool", "calls", "result tokens", title="By tool", title_justify="left")
        for name, calls in c.calls_by_tool.items():
            tools.add_row(name, str(calls), f"{c.tokens_by_tool.get(name, 0):,}")
        console.print(tools)
    largest = Table("#", "kind", "tool", "tokens", "preview", title="Largest items", title_justify="left")
    for entry in c.largest:
        largest.add_row(str(entry["index"]), entry["kind"], entry["tool"] or "", f"{entry['tokens']:,}", entry["preview"])
    console.print(largest)


def _listed(counts: dict[str, int]) -> str:
    return ", ".join(f"{kind} {count}" for kind, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


@click.command()
@recorded_argument
@click.option("--json", "as_json", is_flag=True, help="One JSON object per request, then a summary object.")
@click.option("--index", type=int, default=None, help="Only the N-th conversation of the file (0-based).")
@format_option
@tokenizer_option
@reports_errors
def tokens(file: Path, as_json: bool, index: int | None, input_format: str | None, tokenizer: str) -> None:
    """Replay a session with recorded usage: anchored estimate against reported prompt tokens."""
    estimator = named_estimator(tokenizer)
    console = Console()
    conversations = _load(file, input_format, index)
    without_usage = 0
    for number, conversation in enumerate(conversations):
        checks = anchored_errors(conversation, lambda: TokenCounter(estimator))
        summary = error_summary(checks)
        if as_json:
            for check in checks:
                click.echo(json.dumps({"step": check.step, "estimate": check.estimate, "reported": check.reported}))
            click.echo(json.dumps({"summary": True, "conversation": number if index is None else index, **summary}))
            continue
        if not checks:  # nothing to compare: one line at the end instead of an empty table each
            without_usage += 1
            continue
        table = Table("step", "estimate", "reported", "error", title=f"{file} conversation {number}", title_justify="left")
        for check in checks:
            table.add_row(str(check.step), f"{check.estimate:,}", f"{check.reported:,}", f"{check.error:+.2%}")
        console.print(table)
        console.print(
            f"{summary['requests']} requests: median |error| {summary['median_abs_error']:.2%}, "
            f"p95 {summary['p95_abs_error']:.2%} ({estimator.text.name}, anchored on reported usage)"
        )
    if without_usage:
        console.print(_no_usage(without_usage, len(conversations)))


def _no_usage(without: int, total: int) -> str:
    """What ``tokens`` says once about the conversations with no reported prompt tokens to compare with."""
    usage = "recorded usage (the prompt tokens the provider reported)"
    if total == 1:
        return f"this conversation has no {usage}: nothing to compare"
    if without == total:
        return f"none of the {total} conversations has {usage}: nothing to compare"
    return f"{without} of the {total} conversations have no {usage} and are left out"
