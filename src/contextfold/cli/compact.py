"""``contextfold compact``: compact a recorded session once and write the result.

``contextfold compact FILE --window N`` loads a recorded session, compacts it
once through the public :class:`~contextfold.context.Context` (as a manual
``compact(instructions)`` would), and writes the result: a contextfold
session file the importers read back, or the request body an agent would
send next in a provider's format (``--output-format anthropic``, ``openai``,
``responses``...). Keys come from the provider's usual environment variables
(``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``...); they are never taken on the
command line, where they would end up in shell history.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from .. import importers
from ..adapters import PROVIDERS
from ..codec import conversation_to_dict
from ..context import DEFAULT_MAX_OUTPUT_TOKENS, Context
from ..conversation import Conversation
from ..private_files import replace_file
from .options import (
    check_window,
    load_recorded,
    make_summarizer,
    recorded_argument,
    renamed_option,
    reports_errors,
    summarizer_options,
)

OUTPUT_FORMATS = ("session", *PROVIDERS)


@click.command("compact")
@recorded_argument
@click.option("--window", type=click.IntRange(min=1), required=True, help="Context window in tokens.")
@summarizer_options
@click.option("--instructions", default=None, help="What the summary should focus on (as /compact's argument).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the result, owner-only (default: standard output).")
@renamed_option("--format", "--output-format", type=click.Choice(OUTPUT_FORMATS), default="session",
                help="A contextfold session file, or the next request body for a provider [default: session].")
@click.option("--index", type=click.IntRange(min=0), default=None,
              help="The N-th conversation of the file (0-based); needed when it holds several.")
@click.option("--input-format", type=click.Choice(importers.FORMATS), default=None,
              help="The session format of FILE (detected when omitted).")
@reports_errors
def compact_command(
    file: Path,
    window: int,
    summarizer_kind: str,
    model: str | None,
    base_url: str | None,
    instructions: str | None,
    output: Path | None,
    output_format: str,
    index: int | None,
    input_format: str | None,
) -> None:
    """Compact a recorded session once and write the result."""
    check_window(window, DEFAULT_MAX_OUTPUT_TOKENS, reserve_option=None)
    conversation = _conversation(file, input_format, index)
    # a saved session: no agent request warmed the provider's cache, so the smaller fitted prompt is sent
    context = Context(window_tokens=window, summarizer=make_summarizer(summarizer_kind, model, base_url, ride_cache=False))
    context.set_header(conversation.header)
    context.add(list(conversation.items))
    before = context.counter.count(context.view())
    events = context.compact(instructions)
    view = context.view()
    text = _written(context, view, output_format)
    if output is None:
        click.echo(text)
    else:
        with replace_file(output) as written:  # 0600: it holds the conversation
            written.write(f"{text}\n".encode("utf-8", errors="backslashreplace"))  # as stdout: see escaping_stdout
    summarized = any(e.action == "summarized" for e in events)
    click.echo(f"{len(conversation)} items, {before:,} tokens -> {len(view)} items, "
               f"{context.counter.count(view):,} tokens" + ("" if summarized else " (nothing to summarize)"), err=True)
    for event in events:
        if event.action == "fallback":
            click.echo(f"warning: {event.detail}", err=True)


def _conversation(file: Path, input_format: str | None, index: int | None) -> Conversation:
    conversations = load_recorded(file, input_format)
    if index is None and len(conversations) != 1:
        raise click.UsageError(f"the file holds {len(conversations)} conversations: pick one with --index")
    chosen = 0 if index is None else index
    if chosen >= len(conversations):
        raise click.BadParameter(f"the file holds {len(conversations)} conversation(s)", param_hint="--index")
    return conversations[chosen]


def _written(context: Context, view: Conversation, format_: str) -> str:
    """The result as text: the session file, or the next request (unanswered calls closed, as a request needs)."""
    if format_ == "session":
        return json.dumps(conversation_to_dict(view), ensure_ascii=False)
    ready, repairs = view.repair()
    for repair in repairs:
        click.echo(f"note: item {repair.index}: {repair.detail}, so that the request is valid", err=True)
    return json.dumps(context.render(ready, format_), ensure_ascii=False)
