"""The model every framework integration test runs against: a tool loop long enough to force several compactions.

:class:`ToolLoopServer` is a :class:`~contextfold.testing.scripted.ScriptedModel`
(127.0.0.1; Anthropic Messages, OpenAI Chat Completions and Responses;
streamed or not; every request checked against its format's rules, with
every tool call one this server issued) with a fixed script and two more
rules for every request:

* the task is present: some user message still holds :data:`TASK` (or the
  task given);
* the request fits the window, counted with contextfold's own token counter
  over the request read through contextfold's adapters.

The script asks for :data:`TOOL` once per request, ``{"chunk": n}`` with
``n`` the session's step, checking that the result of the previous call
came back (its first line is ``== chunk n-1 ==``), until ``rounds`` calls
were made; then it answers :data:`FINAL`. Any later request (the next run on
the same stored history) is answered :data:`FINAL` too. The framework's
tool returns :func:`chunk_text`, about 1,200 tokens, so 60 rounds are about
72,000 tokens of tool output: many compactions at an 8,000-token window. (At
16,000 tokens the trigger sits at 84 % of the window, and clearing the old
outputs alone keeps 60 such rounds under it: no summary would be tested.)

A request that breaks a rule is answered 400 in the provider's error shape
and recorded with its problems; :meth:`ToolLoopServer.failures` says which
bar a finished run missed.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from typing import Any

from contextfold import Conversation, Estimator
from contextfold.adapters import adapter_for
from contextfold.adapters.gemini import from_genai
from contextfold.errors import ContextfoldError
from contextfold.testing.scripted import Call, ScriptedModel, Seen, Turn

TASK = (
    "Audit the service log: read every chunk with read_chunk, starting at chunk 0, one chunk per call, "
    "and when the tool says there is nothing left, answer with the number of ERROR lines you saw."
)
TOOL = "read_chunk"
TOOL_DESCRIPTION = "Read one chunk of the service log."
FINAL = "Audit finished: every chunk was read."
ROUNDS = 60
WINDOW_TOKENS = 8_000
SHRINK = 0.8
"""A request smaller than this share of the one before it shows that the history was compacted."""


def chunk_text(chunk: int, lines: int = 24) -> str:
    """The log chunk ``chunk``: deterministic, varied text of about 1,200 tokens, its number on the first line."""
    rows = [f"== chunk {chunk} =="]
    for line in range(lines):
        n = chunk * lines + line
        level = "ERROR" if n % 17 == 0 else ("WARN" if n % 5 == 0 else "INFO")
        rows.append(
            f"2026-11-23T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z {level} worker-{n % 7} "
            f"request {n * 7919 % 100000:05d} path=/api/v2/items/{n * 31 % 997} took {n * 13 % 900} ms "
            f"status={500 if level == 'ERROR' else 200} bytes={n * 104729 % 65536}"
        )
    return "\n".join(rows)


def request_conversation(provider: str, body: Mapping[str, Any]) -> Conversation:
    """A request body read through contextfold's adapters (the Responses ``instructions`` become a system item)."""
    if provider == "gemini":
        return gemini_conversation(body)
    adapter = adapter_for(provider)
    if provider == "anthropic":
        return adapter.read(body["messages"], system=body.get("system"), tools=body.get("tools"))
    if provider == "openai":
        return adapter.read(body["messages"], tools=body.get("tools"))
    items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
    instructions = [{"role": "system", "content": body["instructions"]}] if body.get("instructions") else []
    return adapter.read([*instructions, *items], tools=body.get("tools"))


def gemini_conversation(body: Mapping[str, Any]) -> Conversation:
    """A ``generateContent`` body read through google-genai's own models (camelCase JSON) and contextfold's adapter."""
    from google.genai import types

    contents = [types.Content.model_validate(content) for content in body["contents"]]
    system = body.get("systemInstruction")
    return from_genai(contents, system_instruction=types.Content.model_validate(system) if system else None)


class ToolLoopServer(ScriptedModel):
    """The server (see the module docstring); ``prompt_tokens`` has the size of every request that could be read."""

    def __init__(self, *, task: str = TASK, rounds: int = ROUNDS, window_tokens: int = WINDOW_TOKENS) -> None:
        self.task = task
        self.rounds = rounds
        self.window_tokens = window_tokens
        self.estimator = Estimator()
        self.prompt_tokens: list[int] = []
        super().__init__(self._script, checks=(self._check,), count_prompt=self._count)

    def _script(self, seen: Seen) -> Turn:
        if 0 < seen.step <= self.rounds and not any(r.startswith(f"== chunk {seen.step - 1} ==") for r in seen.results):
            raise AssertionError(f"the request does not end with the result of chunk {seen.step - 1}")
        if seen.step < self.rounds:
            return Turn(f"Reading chunk {seen.step}.", (Call(TOOL, {"chunk": seen.step}),))
        return Turn(FINAL)

    def _count(self, provider: str, body: Mapping[str, Any]) -> int:
        return self.estimator.conversation(request_conversation(provider, body))

    def _check(self, provider: str, body: Mapping[str, Any]) -> list[str]:
        try:
            conversation = request_conversation(provider, body)
        except ContextfoldError as error:
            return [f"contextfold's adapters cannot read the request: {error}"]
        problems = []
        if not any(item.role == "user" and self.task in item.text for item in conversation):
            problems.append("the task is missing: no user message holds it")
        tokens = self.estimator.conversation(conversation)
        self.prompt_tokens.append(tokens)
        if tokens > self.window_tokens:
            problems.append(f"prompt is too long: {tokens} tokens > {self.window_tokens} maximum")
        return problems

    # ------------------------------------------------------------------ what a run did
    @property
    def tool_rounds(self) -> int:
        """Accepted requests answered with a tool call."""
        return sum(1 for e in self.valid if e.call_ids)

    @property
    def finished(self) -> bool:
        return any(e.turn is not None and e.turn.text == FINAL for e in self.valid)

    @property
    def shrinks(self) -> int:
        """How many times a request was much smaller than the one before it (a compaction reached the wire)."""
        sizes = self.prompt_tokens
        return sum(1 for before, after in pairwise(sizes) if after < SHRINK * before)

    def failures(self, *, min_shrinks: int = 2) -> list[str]:
        """The bars a finished run missed (empty when every one was met)."""
        failed = list(self.problems)
        if self.tool_rounds < self.rounds:
            failed.append(f"only {self.tool_rounds} tool rounds of {self.rounds}")
        if not self.finished:
            failed.append("the task never finished")
        if self.shrinks < min_shrinks:
            failed.append(f"the history shrank {self.shrinks} times, at least {min_shrinks} expected")
        return failed

    def figures(self) -> dict[str, int]:
        """What to print about a run."""
        return {
            "requests": len(self.exchanges),
            "rejected": len(self.exchanges) - len(self.valid),
            "tool_rounds": self.tool_rounds,
            "peak_prompt_tokens": max(self.prompt_tokens, default=0),
            "shrinks": self.shrinks,
        }
