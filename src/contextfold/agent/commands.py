"""Slash commands of ``contextfold chat``: /compact, /context, /cost, /transcript, /clear, /exit, /help.

Each is a function of the :class:`Session` and the text after the command
name, printing what it promises: ``/compact`` the compaction it made (what
was summarized, tokens before and after, the instructions), ``/context`` what
fills the window now by kind with a bar, and the last compaction's receipt, ``/cost`` the tokens every model call
reported and their price with prompt-cache rates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from contextfold import Context, Usage

from ..inspection import compose
from ..replay.cost import cost_usd
from .display import RichDisplay, describe_event
from .loop import Agent

BAR_CELLS = 40
"""Width of the window bar, in characters."""
RECEIPT_LINES = 8
"""Items of the last compaction's receipt ``/context`` lists (with how many more)."""


@dataclass
class Session:
    """What the commands act on: the agent, where to print, and how to start a fresh context (``/clear``)."""

    agent: Agent
    display: RichDisplay
    new_context: Callable[[], Context]
    running: bool = True

    @property
    def console(self) -> Console:
        return self.display.console


def bar(tokens: int, window: int, cells: int = BAR_CELLS) -> str:
    """``tokens`` as a share of ``window``, drawn in ``cells`` characters."""
    filled = min(cells, round(cells * tokens / window)) if window else 0
    return "█" * filled + "░" * (cells - filled)


def compact(session: Session, instructions: str) -> None:
    """Summarize now; the compaction event itself is printed by the display, as every event is."""
    context = session.agent.context
    events = context.compact(instructions or None)
    if not any(e.action == "summarized" for e in events):
        reason = "; ".join(describe_event(e) for e in events) or "the conversation is too short to summarize"
        session.console.print(f"nothing was compacted: {escape(reason)}")
    session.display.status(context)


def context_breakdown(session: Session, _: str) -> None:
    context = session.agent.context
    estimator = context.estimator
    composition = compose(context.view(), estimator.item, lambda view: estimator.header(view.header))
    stats = context.stats()
    window = context.window_tokens
    console = session.console
    console.print(
        f"[bold]context[/] {stats['tokens']:,} of {window:,} tokens ({stats['utilization']:.0%}), "
        f"compacts at {stats['trigger_tokens']:,}"
    )
    console.print(f"{bar(stats['tokens'], window)}")
    table = Table("kind", "items", "tokens", "share of window", "", box=None, title="by kind", title_justify="left")
    rows = [("header (system + tools)", "", composition.header_tokens)]
    rows += [
        (kind, str(composition.items_by_kind[kind]), tokens)
        for kind, tokens in sorted(composition.tokens_by_kind.items(), key=lambda kv: -kv[1])
    ]
    rows.append(("free", "", max(window - stats["tokens"], 0)))
    for kind, items, tokens in rows:
        table.add_row(kind, items, f"{tokens:,}", f"{tokens / window:.1%}", bar(tokens, window, BAR_CELLS // 2))
    console.print(table)
    console.print(
        f"[dim]by kind: the estimate ({composition.total_tokens:,} tokens); total: anchored on reported usage[/]"
    )
    receipt = context.last_receipt
    if receipt is not None:  # what the last compaction took out, and how the agent reads each back
        console.print("[bold]last compaction[/]")
        for line in receipt.lines(limit=RECEIPT_LINES):
            console.print(f"  {line}", markup=False, highlight=False)


def cost(session: Session, _: str) -> None:
    usage = session.agent.usage
    prices = session.agent.context.policy.prices_in_effect
    total = Usage(
        prompt_tokens=sum(u.prompt_tokens for u in usage),
        output_tokens=sum(u.output_tokens for u in usage),
        cache_read_tokens=sum(u.cache_read_tokens for u in usage),
        cache_write_tokens=sum(u.cache_write_tokens for u in usage),
    )
    usd = cost_usd(
        prices,
        cache_read=total.cache_read_tokens,
        cache_write=total.cache_write_tokens,
        output=total.output_tokens,
        uncached=total.uncached_prompt_tokens,
    )
    without_cache = cost_usd(
        prices, cache_read=0, cache_write=0, output=total.output_tokens, uncached=total.prompt_tokens
    )
    table = Table(
        "", "tokens", "USD per Mtok", box=None, title=f"cost of {len(usage)} model calls", title_justify="left"
    )
    table.add_row("input, uncached", f"{total.uncached_prompt_tokens:,}", f"{prices.input_per_mtok:g}")
    table.add_row("cache reads", f"{total.cache_read_tokens:,}", f"{prices.cache_read_per_mtok:g}")
    table.add_row("cache writes", f"{total.cache_write_tokens:,}", f"{prices.cache_write_per_mtok:g}")
    table.add_row("output", f"{total.output_tokens:,}", f"{prices.output_per_mtok:g}")
    session.console.print(table)
    session.console.print(f"total ${usd:.4f} (${without_cache:.4f} without the prompt cache)")


def transcript(session: Session, _: str) -> None:
    context = session.agent.context
    where = context.transcript.path if context.transcript is not None else None
    session.console.print(f"transcript: {where}" if where else "this session keeps no transcript")
    if context.results_dir is not None:
        session.console.print(f"persisted outputs: {context.results_dir}")


def clear(session: Session, _: str) -> None:
    old = session.agent.context
    kept = f" (the previous one stays in {old.transcript.path})" if old.transcript is not None else ""
    session.agent.attach(session.new_context())
    old.close()
    session.console.print(f"started a fresh context{kept}")


def exit_(session: Session, _: str) -> None:
    session.running = False


def help_(session: Session, _: str) -> None:
    for name, (_run, text) in COMMANDS.items():
        session.console.print(f"[bold]{name}[/] {escape(text)}")


COMMANDS: dict[str, tuple[Callable[[Session, str], None], str]] = {
    "/compact": (compact, "[instructions]  summarize the conversation now, guided by the instructions"),
    "/context": (context_breakdown, "what fills the window now, by kind"),
    "/cost": (cost, "tokens and USD so far, with cache reads and writes"),
    "/transcript": (transcript, "where the full transcript is"),
    "/clear": (clear, "start a fresh context (same system prompt and tools)"),
    "/exit": (exit_, "leave"),
    "/help": (help_, "this list"),
}


def run_command(session: Session, line: str) -> None:
    """Run the slash command ``line`` (``/name rest``)."""
    name, _, rest = line.strip().partition(" ")
    entry = COMMANDS.get(name)
    if entry is None:
        session.console.print(f"unknown command {escape(name)}; the commands are {', '.join(COMMANDS)}")
        return
    entry[0](session, rest.strip())
