"""What ``contextfold serve-fake`` serves: a scripted model as a process, so examples and agent loops run offline.

The command itself is the CLI's (:mod:`contextfold.cli.serve_fake`, also
``python3 -m contextfold serve-fake``): this module is standard library only,
and calls :func:`serve` with what the command line asked for.

It serves Anthropic Messages (``/v1/messages``), OpenAI Chat Completions and
Responses (``/v1/chat/completions``, ``/v1/responses``) and Gemini
(``/v1beta/models/{model}:generateContent``) on one port, every request
checked as :class:`~contextfold.testing.scripted.ScriptedModel` checks it (a
broken one is answered 400 in the provider's error shape). The SDKs find it
through the environment variables they read (:data:`BASE_URL_VARIABLES`);
the examples then set a dummy key themselves.

The model does what the examples ask of a real one, with the tools they
offer (:func:`reading_script`): it lists the folder when it can, reads one
file, and answers with that file's name and first line, so a run shows that
every tool call went out and its result came back through contextfold.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from ..conversation import JSONObject
from .scripted import Call, ScriptedModel, Seen, Turn

PROVIDERS = ("anthropic", "openai", "responses", "gemini")
BASE_URL_VARIABLES: Mapping[str, str] = {
    "anthropic": "ANTHROPIC_BASE_URL",
    "openai": "OPENAI_BASE_URL",
    "responses": "OPENAI_BASE_URL",
    "gemini": "GOOGLE_GEMINI_BASE_URL",
}
"""The variable each provider's SDK reads its base URL from (the Responses API is the OpenAI client's too)."""
PREFERRED_FILE = "README.md"


def tool_names(provider: str, body: Mapping[str, Any]) -> list[str]:
    """The names of the tools a request offers, in its provider's shape."""
    tools = body.get("tools") or []
    if provider == "gemini":
        return [d.get("name", "") for t in tools for d in t.get("functionDeclarations") or []]
    if provider == "openai":
        return [(t.get("function") or {}).get("name", "") for t in tools]
    return [t.get("name", "") for t in tools]


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "(an empty file)")


def _chosen_file(listing: str) -> str:
    """The file to read from a ``list_files`` result: the README when there is one, else the first file."""
    files = [line.strip() for line in listing.splitlines() if line.strip()]
    return PREFERRED_FILE if PREFERRED_FILE in files or not files else files[0]


ANSWER = "contextfold's scripted model read a file; its first line is: "
_EARLIER_ANSWER = re.compile(re.escape(ANSWER) + r'((?:[^"\\]|\\.)*)')


def _earlier_answer(body: JSONObject) -> str | None:
    """The first line this script answered with earlier in the session, as the request still holds it."""
    found = _EARLIER_ANSWER.findall(json.dumps(body, ensure_ascii=False))
    return json.loads(f'"{found[-1]}"').strip() or None if found else None


def reading_script(seen: Seen) -> Turn:
    """List (when ``list_files`` is offered), read one file with ``read_file``, then answer with what it read.

    A request without ``read_file`` is answered at once; any request after
    the answer (a follow-up run on the same history) is answered from the
    history too, so a second question in an example gets a reply. When
    ``search_history`` is offered, the first follow-up looks back instead:
    it searches the history for the line it answered with, then answers
    with the matching line the search returned.
    """
    tools = tool_names(seen.provider, seen.body)
    listing = "list_files" in tools
    answered = 2 if listing else 1
    if "search_history" in tools and "read_file" in tools and seen.step > answered:
        looked_back = _look_back(seen, answered)
        if looked_back is not None:
            return looked_back
    if "read_file" not in tools:
        return Turn("contextfold's scripted model: no read_file tool was offered, so there is nothing to read.")
    if seen.step == 0 and listing:
        return Turn("", (Call("list_files", {}),))
    if seen.step == (1 if listing else 0):
        path = _chosen_file(seen.results[0]) if listing and seen.results else PREFERRED_FILE
        return Turn("", (Call("read_file", {"path": path}),))
    if seen.step == (2 if listing else 1) and seen.results:
        return Turn(f"{ANSWER}{_first_line(seen.results[0])}")
    return Turn("contextfold's scripted model answers from the history: the file above says what the project does.")


def _look_back(seen: Seen, answered: int) -> Turn | None:
    """The follow-up's two steps with ``search_history``: search for the earlier answer, then say what came back."""
    if seen.step == answered + 1 and not seen.results:
        earlier = _earlier_answer(seen.body)
        return Turn("", (Call("search_history", {"query": earlier}),)) if earlier else None
    if seen.step == answered + 2 and seen.results:
        source = ""
        for line in seen.results[0].splitlines():
            source = line if line.startswith("--- ") else source
            if line.startswith(">") and "· output of " in source:  # the tool output it came from, not its own answer
                origin = source.removeprefix("--- ")
                return Turn(f"contextfold's scripted model looked back in its history: {line.split('| ', 1)[-1]} "
                            f"(from {origin})")
    return None


def environment_lines(url: str, providers: Sequence[str]) -> list[str]:
    """``export NAME=value`` lines pointing each provider's SDK at the server at ``url``."""
    lines = []
    for provider in providers:
        line = f"export {BASE_URL_VARIABLES[provider]}={url if provider in ('anthropic', 'gemini') else url + '/v1'}"
        if line not in lines:
            lines.append(line)
    return lines


def serve(providers: Sequence[str], port: int, *, out: TextIO | None = None) -> None:
    """Serve :func:`reading_script` on 127.0.0.1:``port`` until interrupted, after printing how to point SDKs at it."""
    out = out or sys.stdout
    with ScriptedModel(reading_script, port=port) as model:
        print(f"contextfold's scripted model on {model.url} (no network, no key needed; Ctrl-C stops it)", file=out)
        for line in environment_lines(model.url, providers):
            print(line, file=out)
        out.flush()
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
