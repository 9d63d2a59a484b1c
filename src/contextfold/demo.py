"""``contextfold demo``: a long coding-agent session, generated here, and its token accounting live.

The session comes from :mod:`contextfold.synthetic` (no network, no key). It is
replayed request by request the way an agent loop would send it. A simulated
provider reports each request's prompt tokens (the exact o200k count of the
request rendered as Chat Completions JSON, which includes the framing our
estimator only approximates); contextfold's counter sees only its own
estimate and the figure reported for the previous request, as it would in
production, and the view shows how close the anchored count runs.
"""

from __future__ import annotations

import json
import time
from collections import deque

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table

from .adapters.openai_chat import tools_to_openai
from .commands import make_estimator
from .conversation import Conversation
from .inspection import compose
from .limits import model_limits
from .synthetic import generate_session
from .tokens import Estimator, TiktokenText, TokenCounter, TokenizerUnavailable, percentile
from .usage import Usage

RECENT_ROWS = 12


class _SimulatedProvider:
    """Reports a request's prompt tokens as a provider would: exactly, on the wire form."""

    def __init__(self) -> None:
        self._text = TiktokenText("o200k_base")

    def prompt_tokens(self, conversation: Conversation) -> int:
        request = {"messages": conversation.to_openai(), "tools": tools_to_openai(conversation)}
        return self._text(json.dumps(request, ensure_ascii=False))


def run(*, rounds: int, seed: int, model: str, delay_s: float, tokenizer: str) -> None:
    console = Console()
    session = generate_session(rounds=rounds, seed=seed)
    limits = model_limits(model)
    estimator = make_estimator(tokenizer)
    try:
        provider: _SimulatedProvider | None = _SimulatedProvider()
    except TokenizerUnavailable as why:
        provider = None
        console.print(f"[yellow]No exact tokenizer offline ({why}); showing estimates only.[/]")
    counter = TokenCounter(Estimator(estimator.text))
    naive_errors: list[float] = []
    anchored_errors: list[float] = []
    recent: deque[tuple[int, int, int | None, str]] = deque(maxlen=RECENT_ROWS)
    requests = [i for i, item in enumerate(session) if item.role == "assistant"]

    def view(step: int, tokens: int) -> Group:
        table = Table("request", "items", "anchored count", "provider reported", "error", title_justify="left",
                      title=f"Session of {len(session)} items, {rounds} tool rounds (seed {seed})")
        for number, items, count, reported, error in recent:
            table.add_row(str(number), str(items), f"{count:,}", f"{reported:,}" if reported else "-", error)
        used = min(tokens / limits.context_window, 1.0)
        bar = ProgressBar(total=1.0, completed=used, width=60)
        caption = f"{tokens:,} of {limits.context_window:,} tokens ({used:.0%}) in {model}'s window, request {step}"
        return Group(table, Panel(Group(bar, caption), title="context"))

    with Live(view(0, 0), console=console, refresh_per_second=20, transient=False) as live:
        for number, index in enumerate(requests, 1):
            request = session.with_items(session.items[:index])
            count = counter.count(request)
            reported = provider.prompt_tokens(request) if provider else None
            error = ""
            if reported:
                if counter.anchored:
                    anchored_errors.append(abs(count - reported) / reported)
                naive = sum(len(i.text) for i in request) / 4
                naive_errors.append(abs(naive - reported) / reported)
                error = f"{(count - reported) / reported:+.2%}" if counter.anchored else "(first call)"
                counter.record_usage(Usage(prompt_tokens=reported), request)
            recent.append((number, len(request), count, reported, error))
            live.update(view(number, reported or count))
            if delay_s:
                time.sleep(delay_s)

    composition = compose(session, estimator.item, lambda c: estimator.header(c.header))
    summary = Table("kind", "items", "tokens", title="What fills the window at the end", title_justify="left")
    for kind, tokens in sorted(composition.tokens_by_kind.items(), key=lambda kv: -kv[1]):
        summary.add_row(kind, str(composition.items_by_kind[kind]), f"{tokens:,}")
    console.print(summary)
    if anchored_errors:
        anchored_errors.sort()
        naive_errors.sort()
        console.print(
            f"Anchored count vs the provider over {len(anchored_errors)} requests: median |error| "
            f"{percentile(anchored_errors, 0.5):.2%}, p95 {percentile(anchored_errors, 0.95):.2%}; "
            f"characters/4 would be {percentile(naive_errors, 0.5):.1%} off (median)."
        )
    total = composition.total_tokens
    if total > limits.context_window:
        console.print(
            f"[bold]The full history ({total:,} tokens) no longer fits {model}'s {limits.context_window:,}-token window.[/]"
        )
