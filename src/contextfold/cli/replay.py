"""``contextfold replay``: replay a recorded session through a strategy and print its figures."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from ..conversation import Conversation
from ..events import Event
from ..pipeline.base import Policy, Prices
from ..replay import strategies
from ..replay.base import StrategyConfig
from ..replay.cost import DEFAULT_CACHE_TTL_S, parse_prices
from ..replay.fired import Recorder, stage_counts, summaries
from ..replay.result import Totals
from ..replay.run import replay
from ..tokens import TOKENIZER_CHOICES, named_estimator
from .options import (
    check_window,
    format_option,
    load_recorded,
    make_summarizer,
    preset_option,
    progress_bar,
    recorded_argument,
    reports_errors,
    resolved_tokenizer,
    summarizer_options,
)


def _prices(context: click.Context, parameter: click.Parameter, value: str | None) -> Prices:
    try:
        return parse_prices(value or "")
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


@click.command("replay")
@recorded_argument
@click.option("--window", type=click.IntRange(min=1), required=True, help="Context window in tokens.")
@click.option("--strategy", type=click.Choice(strategies.names()), default="default", show_default=True,
              help="Context strategy to replay the session through (default: contextfold's pipeline; none: the full history).")
@click.option("--tokenizer", type=click.Choice(TOKENIZER_CHOICES), default="auto", show_default=True,
              help="Token counter for every figure: exact tiktoken encodings, the block-aware estimate, or auto "
              "(o200k when its file is on this machine, else the estimate; stderr says which).")
@click.option("--index", type=click.IntRange(min=0), default=None,
              help="Only the N-th conversation of the file (0-based); default: every one.")
@click.option("--requests", "requests_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write every request sent to this JSON Lines file, owner-only (needs --index for a file of several).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object of totals per conversation.")
@click.option("--max-output", type=click.IntRange(min=1), default=StrategyConfig.max_output_tokens,
              show_default=True, help="Tokens reserved for the reply.")
@click.option("--prices", callback=_prices, default=None, metavar="KEY=USD,...",
              help="USD per million tokens, any of input, cache_write, cache_read, output "
              "[default: input=3,cache_write=3.75,cache_read=0.3,output=15].")
@click.option("--ttl", type=click.FloatRange(min=0), default=DEFAULT_CACHE_TTL_S, show_default=True,
              help="Seconds the prompt cache keeps a prefix.")
@click.option("--idle-compaction", is_flag=True,
              help="Compact an idle session just before its cache expires (--ttl) when that pays "
              "(Policy.idle_compaction), on the recording's real gaps.")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where a strategy may write files (persisted outputs).")
@format_option
@preset_option
@summarizer_options
@reports_errors
def replay_command(
    file: Path,
    window: int,
    strategy: str,
    tokenizer: str,
    index: int | None,
    requests_path: Path | None,
    as_json: bool,
    max_output: int,
    prices: Prices,
    ttl: float,
    idle_compaction: bool,
    results_dir: Path | None,
    input_format: str | None,
    policy: Policy,
    summarizer_kind: str,
    model: str | None,
    base_url: str | None,
) -> None:
    """Feed a recorded session through a context strategy and report tokens, cache, cost, what survived and recall."""
    check_window(window, max_output)
    estimator = named_estimator(resolved_tokenizer(tokenizer))
    sessions = _sessions(file, input_format, index, requests_path)
    summarizer = make_summarizer(summarizer_kind, model, base_url)
    if idle_compaction:  # the pipeline's cache lifetime is the replay's
        policy = replace(policy, idle_compaction=True, cache_ttl_s=ttl)
    config = StrategyConfig(window, max_output, None if results_dir is None else str(results_dir), summarizer, policy)
    for name, conversation in sessions:
        recorder = Recorder(strategies.create(strategy, config))
        with progress_bar(name) as progress:
            result = replay(conversation, recorder, config, tokenizer=estimator, prices=prices, cache_ttl_s=ttl,
                            requests_path=requests_path, progress=progress, session=name)
        if as_json:
            click.echo(json.dumps(result.totals.to_dict(), ensure_ascii=False))
        else:
            Console().print(totals_table(result.totals))
            click.echo(fired_line(recorder.all_events()))


def fired_line(events: list[Event]) -> str:
    """Which stages fired, how often and what they saved, and how many summaries were written."""
    counts = stage_counts(events)
    if not counts:
        return "stages fired: none recorded; 0 summaries written"
    stages = ", ".join(f"{c.stage} {c.times}× ({abs(c.saved_tokens):,} tokens "
                       f"{'saved' if c.saved_tokens >= 0 else 'put back'})" for c in counts)
    written = summaries(events)
    return f"stages fired: {stages}; {written} summar{'y' if written == 1 else 'ies'} written"


def _sessions(
    file: Path, input_format: str | None, index: int | None, requests_path: Path | None
) -> list[tuple[str, Conversation]]:
    """The conversations to replay, each with the name its totals carry (``FILE#N`` in a file of several)."""
    conversations = load_recorded(file, input_format)
    several = len(conversations) > 1
    if index is not None and index >= len(conversations):
        raise click.BadParameter(f"the file holds {len(conversations)} conversation(s)", param_hint="--index")
    if index is None and several and requests_path is not None:
        raise click.UsageError(f"the file holds {len(conversations)} conversations: pick one with --index to dump it")
    chosen = range(len(conversations)) if index is None else [index]
    return [(f"{file}#{n}" if several else str(file), conversations[n]) for n in chosen]


def totals_table(totals: Totals) -> Table:
    """The totals for a person: tokens, cache, cost, window, invariants, survival, recall and strict recall."""
    table = Table("figure", "value", title=f"{totals.session}: strategy {totals.strategy}, window "
                  f"{totals.window:,} tokens ({totals.tokenizer})", title_justify="left")
    peak_share = totals.peak_tokens / totals.window
    rows = [
        ("requests", f"{totals.requests:,}" + (f" (+{totals.summarizer_calls:,} summarizer)" if totals.summarizer_calls else "")),
        ("input tokens", f"{totals.input_tokens:,}"),
        ("  read from cache", f"{totals.cache_read_tokens:,} ({totals.cache_hit_ratio:.1%})"),
        ("  written to cache", f"{totals.cache_write_tokens:,}"),
        ("output tokens", f"{totals.output_tokens:,}"),
        ("summarizer tokens in / out", f"{totals.summarizer_input_tokens:,} / {totals.summarizer_output_tokens:,}"),
        ("cost", f"${totals.cost_usd:,.4f} (without caching ${totals.cost_no_cache_usd:,.4f})"),
        ("cost, summaries priced as LLM calls", f"${totals.cost_llm_usd:,.4f} (summarizer reads its own cache)"),
        ("  as the live path pays", f"${totals.cost_live_usd:,.4f} (the summarizer reads the agent's cache)"),
        ("peak request", f"{totals.peak_tokens:,} tokens ({peak_share:.0%} of the window)"),
        ("over the window", (f"{totals.overflows:,} ({totals.overflows_reserve:,} leave less than "
                             f"{totals.max_output_tokens:,} for the reply)")),
        ("invariant violations", f"{totals.violations:,}"),
    ]
    rows += [(f"survival: {name.replace('_', ' ')}", "-" if value is None else f"{value:.1%}")
             for name, value in totals.survival.items()]
    rows += [(f"recall: {label}", "-" if value is None else f"{value:.1%}") for label, value in (
        (f"all ({totals.recall_needed:,} needed)", totals.recall),
        (f"far ({totals.recall_far_needed:,} needed)", totals.recall_far),
        ("worst request", totals.worst_request_recall))]
    rows.append((f"recall: recoverable by one search ({totals.recoverable_missing:,} missing)",
                 "-" if totals.recoverable_recall is None else f"{totals.recoverable_recall:.2%}"))
    strict = totals.strict
    rows += [(label, "-" if value is None else f"{value:.1%}") for label, value in (
        ("strict recall (mean of the three)", strict.strict),
        (f"strict: in context ({strict.kwic_needed:,} needed)", strict.kwic),
        (f"strict: in context, far ({strict.kwic_far_needed:,})", strict.kwic_far),
        (f"strict: lines ({strict.line_needed:,} needed)", strict.line),
        (f"strict: lines, far ({strict.line_far_needed:,})", strict.line_far),
        ("strict: last error and test result", strict.outcome),
        ("strict: the same, far", strict.outcome_far),
        ("asked: the person's first and latest words", strict.asked))]
    for row in rows:
        table.add_row(*row)
    return table
