"""What the terminal shows while the agent works: replies, tool calls, compaction events, the status line.

One line per tool call and per event, so a long session stays readable;
subagents' lines carry their name. Events are shown when they changed
something or something failed (a deferred compaction is not news).
"""

from __future__ import annotations

import json

from rich.console import Console
from rich.markup import escape

from contextfold import Context, Event, Item, ToolCall, ToolResult

PREVIEW_CHARS = 100
WARNINGS = frozenset({"failed", "breaker_open", "break", "prompt_too_long"})
"""Event actions shown although they changed nothing."""


def one_line(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def describe_event(event: Event) -> str:
    """An event as a sentence: what the stage did, to how many tokens, and the manual instructions if any."""
    text = f"{event.stage} {event.action}"
    if event.detail:
        text += f": {event.detail}"
    if "span_tokens" in event.data:
        text += f"; {event.data['span_tokens']:,} tokens became a {event.data.get('summary_tokens', 0):,}-token summary"
    if event.items:
        text += f"; context {event.tokens_before:,} → {event.tokens_after:,} tokens"
    if event.data.get("instructions"):
        text += f"; instructions: {event.data['instructions']!r}"
    return text


def status_line(context: Context) -> str:
    """Context use against the window and the trigger, and which stage changed the view last."""
    stats = context.stats()
    return (
        f"context {stats['tokens']:,}/{stats['window_tokens']:,} tokens ({stats['utilization']:.0%}) · "
        f"compacts at {stats['trigger_tokens']:,} · last stage: {stats['last_stage'] or 'none'} · "
        f"summaries in view: {stats['summaries']} · {stats['requests']} requests"
    )


class RichDisplay:
    """Prints to ``console``; ``show_text`` prints the agent's own words too (interactive mode)."""

    def __init__(self, console: Console, *, show_text: bool) -> None:
        self.console = console
        self.show_text = show_text

    def _prefix(self, agent: str) -> str:
        return "" if agent == "agent" else f"[magenta]\\[{agent}][/] "

    def reply(self, agent: str, items: list[Item]) -> None:
        for item in items:
            if item.text and self.show_text:
                self.console.print(self._prefix(agent) + escape(item.text if agent == "agent" else one_line(item.text)))
            for call in item.tool_calls:
                arguments = one_line(json.dumps(dict(call.arguments), ensure_ascii=False), 80)
                self.console.print(f"{self._prefix(agent)}[cyan]●[/] [bold]{call.name}[/]({escape(arguments)})")

    def tool_result(self, agent: str, call: ToolCall, result: ToolResult) -> None:
        style = "red" if result.is_error else "dim"
        lines = result.text.count("\n") + 1
        self.console.print(
            f"{self._prefix(agent)}  [{style}]⎿ {escape(one_line(result.text))}[/] [dim]({lines} lines)[/]"
        )

    def event(self, agent: str, event: Event) -> None:
        if event.items or event.action in WARNINGS:
            self.console.print(f"{self._prefix(agent)}[yellow]⟳ {escape(describe_event(event))}[/]")

    def status(self, context: Context) -> None:
        self.console.print(f"[dim]{escape(status_line(context))}[/]")
