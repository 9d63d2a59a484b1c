"""``contextfold serve-fake``: the scripted model server, so that examples and agent loops run with no key."""

from __future__ import annotations

import click

from ..testing.server import PROVIDERS, serve


@click.command("serve-fake")
@click.option("--provider", "providers", type=click.Choice(PROVIDERS), multiple=True,
              help="Whose base URL to print (repeatable) [default: all]; every provider is served on the one port.")
@click.option("--port", type=int, default=0, show_default=True, help="Port on 127.0.0.1; 0 takes a free one.")
def serve_fake(providers: tuple[str, ...], port: int) -> None:
    """Serve a scripted model on 127.0.0.1 (Anthropic, OpenAI Chat and Responses, Gemini wire formats) until
    Ctrl-C, printing the base-URL variables that point the SDKs at it: the examples then run offline."""
    serve(providers or PROVIDERS, port)
