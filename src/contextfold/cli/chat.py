"""The ``contextfold chat`` command: the reference coding agent, interactive or with ``-p "task"``.

Interactive mode
reads lines from stdin: a slash command (``/help`` lists them) or a message
for the agent; after each turn a status line shows the context against the
window and the stage that fired last. With ``-p`` the agent works on the
task until the model stops calling tools and the final answer is printed on
stdout (progress goes to stderr). The transcript and persisted outputs live
in the working folder's ``.contextfold/``. With ``--idle-compaction``, while the
REPL waits for the person an idle session compacts just before its prompt cache
expires when that pays (``Policy.idle_compaction``, off by default:
:mod:`contextfold.agent.idle`).
"""

from __future__ import annotations

import sys
import threading
import warnings
from dataclasses import replace
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from ..agent.commands import Session, run_command
from ..agent.display import RichDisplay
from ..agent.idle import IdleCompactor, chat_policy
from ..agent.loop import Agent, TurnLimit
from ..agent.models import PROVIDERS, make_model, model_name
from ..agent.tools import Approve, ToolError, Workspace
from ..context import Context, Storage
from ..errors import ContextfoldError, ProviderRequired, RequestOverWindow, UnknownModel, UnknownPriceWarning
from ..limits import model_limits, require_provider
from ..pipeline.base import DEFAULT_PRICES, Policy
from .options import check_window, command_line_message, fail, preset_option

TRANSCRIPT_DIR = ".contextfold"
REPLY_TOKENS = 8_192
"""Longest reply asked of the model (capped by the model's own limit)."""


def reply_tokens(model: str) -> int:
    """The longest reply to ask for: the model's own limit, at most :data:`REPLY_TOKENS`."""
    try:
        return min(model_limits(model).max_output_tokens, REPLY_TOKENS)
    except UnknownModel:
        return REPLY_TOKENS


def new_context(model: str, window: int | None, provider: str, root: Path, policy: Policy | None = None,
                idle_compaction: bool = False) -> Context:
    """A context for ``model`` that keeps room for its reply; an unregistered model needs ``window`` (tokens)."""
    try:
        model_limits(model)
        known: str | None = model
    except UnknownModel:
        if window is None:
            raise
        known = None
    return Context(
        known,
        window_tokens=window,
        max_output_tokens=reply_tokens(model),
        provider=provider,
        policy=priced_for(model, chat_policy(model, policy or Policy(), idle_compaction=idle_compaction)),
        storage=Storage(transcript=root / TRANSCRIPT_DIR),
    )


def priced_for(model: str, chosen: Policy) -> Policy:
    """``chosen`` at ``model``'s list prices; a model without one gets the default prices, said in one line."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnknownPriceWarning)
        policy = chosen.for_model(model)
    if not caught:
        return policy
    click.echo(f"contextfold chat: no list price is known for {model!r}: /cost and the cache decisions use "
               "Claude Sonnet 4.5's list prices", err=True)
    return replace(chosen, prices=DEFAULT_PRICES)  # given: the Context does not warn again


def refuse_without_yes(command: str) -> bool:
    """With -p there is no one to ask: a shell command is refused, saying how to allow it."""
    raise ToolError(
        "shell commands need confirmation and this session is not interactive; "
        f"rerun with --yes to allow them (refused: {command})"
    )


def ask_user(console: Console) -> Approve:
    """Ask on the terminal before each shell command."""

    def approve(command: str) -> bool:
        answer = console.input(f"[yellow]run[/] [bold]{escape(command)}[/] [yellow]in the working folder? \\[y/N][/] ")
        return answer.strip().lower() in ("y", "yes")

    return approve


@click.command("chat")
@click.option("--provider", type=click.Choice(PROVIDERS), default=None,
              help="The API to talk to (default: the one serving --model, see `contextfold models`; anthropic "
                   "when no model is named).")
@click.option(
    "--model", default=None, help="Model name (default: $ANTHROPIC_MODEL / $OPENAI_MODEL, else a current model)."
)
@click.option(
    "--base-url", default=None, help="API base URL (default: the SDK's, or $ANTHROPIC_BASE_URL / $OPENAI_BASE_URL)."
)
@click.option(
    "--window",
    type=click.IntRange(min=1_000),
    default=None,
    help="Context window in tokens (default: the model's; required for an unregistered model).",
)
@click.option(
    "-p", "--prompt", "task", default=None, help="Work on this task without asking, print the final answer, exit."
)
@click.option("--yes", is_flag=True, help="Run shell commands without asking for confirmation.")
@click.option(
    "--max-turns",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Model requests per user turn before the agent stops.",
)
@click.option(
    "--idle-compaction",
    is_flag=True,
    help="While you are away, compact just before the prompt cache expires when a summary from the warm cache "
         "costs less than the cold prompt (off by default: it costs less, and loses some of what the next turns "
         "use; see the README).",
)
@click.option(
    "--cwd",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=Path("."),
    help="Working folder: the tools reach only inside it.",
)
@preset_option
def chat(
    provider: str | None,
    model: str | None,
    base_url: str | None,
    window: int | None,
    task: str | None,
    yes: bool,
    max_turns: int,
    idle_compaction: bool,
    cwd: Path,
    policy: Policy,
) -> None:
    """A coding agent on contextfold: tools, subagents, /compact, /context, /cost."""
    interactive = task is None
    console = Console(stderr=not interactive, highlight=False)
    root = cwd.resolve()
    try:
        provider = require_provider(model, provider, PROVIDERS)
    except ProviderRequired as error:
        raise click.UsageError(f"{error.model!r}: which API serves it? pass --provider") from None
    name = model_name(provider, model)
    if window is not None:
        check_window(window, reply_tokens(name), reserve_option=None)
    try:
        client = make_model(provider, name, max_tokens=reply_tokens(name), base_url=base_url)
        context = new_context(name, window, provider, root, policy, idle_compaction)
    except UnknownModel as error:
        raise click.UsageError(f"{command_line_message(error)}; for another model pass --window N (its context "
                               "window in tokens)") from None
    except ContextfoldError as error:  # no SDK, no key: one line saying what to install or set
        fail(error)
    approve = (lambda command: True) if yes else ask_user(console) if interactive else refuse_without_yes
    display = RichDisplay(console, show_text=interactive)
    agent = Agent(context, client, Workspace(root, approve), display, max_turns=max_turns)
    try:
        if task is None:
            fresh = lambda: new_context(name, window, provider, root, policy, idle_compaction)  # noqa: E731
            _repl(Session(agent, display, fresh), f"{provider} {name}")
            return
        reported: tuple[type[BaseException], ...] = (TurnLimit, RequestOverWindow, *client.api_errors)
        try:
            answer = agent.ask(task)
        except reported as error:
            console.print(f"contextfold chat: {escape(agent.error_text(error))}")
            sys.exit(1)
        display.status(agent.context)
        click.echo(answer)
    finally:
        agent.context.close()


def _repl(session: Session, model: str) -> None:
    console, agent = session.console, session.agent
    console.print(
        f"[bold]contextfold chat[/] · {escape(model)} · window {agent.context.window_tokens:,} tokens · "
        f"working in {agent.workspace.root} · /help for commands"
    )
    lock = threading.Lock()  # an idle compaction on its timer thread never overlaps the person's next turn
    idle = IdleCompactor(lambda: agent.context, lock, lambda events: session.display.status(agent.context))
    while session.running:
        try:
            with idle.waiting():
                line = console.input("[bold cyan]>[/] ").strip()
        except (EOFError, KeyboardInterrupt):
            break
        with lock:
            _turn(session, line)


def _turn(session: Session, line: str) -> None:
    """What the person typed: a command, or a turn of the agent."""
    console, agent = session.console, session.agent
    if line.startswith("/"):
        run_command(session, line)
        return
    if not line:
        return
    reported: tuple[type[BaseException], ...] = (TurnLimit, RequestOverWindow, *agent.model.api_errors)
    try:
        agent.ask(line)
    except KeyboardInterrupt:
        console.print("[red]interrupted[/]")
    except reported as error:
        console.print(f"[red]{escape(agent.error_text(error))}[/]")
    session.display.status(agent.context)
