"""Strict recall: what a reply went on to use, still in its request together with its context.

Forward-reference recall (:mod:`.recall`) asks whether each specific token a
reply used is anywhere in its request, so a bare list of the agent's
identifiers satisfies it while telling the agent nothing: which file, which
line, what value, what failed. Strict recall asks for the token *with the
words around it*, for the lines the agent went on to write, and for the last
outcome it saw. Three measures, each with a *far* variant that counts only
what occurred nowhere in the last :data:`~.recall.FAR_MESSAGES` messages
before the reply (what only a compaction can lose):

``kwic`` (keyword in context)
    The specific tokens of the reply's text, reasoning and decoded argument
    values (no JSON keys, no tool names) that occurred in an earlier message
    outside the system prompt. A token counts as held when, for one of its
    latest :data:`MAX_OCCURRENCES` earlier messages, one of its occurrences
    there is in the request with :data:`CONTEXT_CHARS` characters of its
    line on each side (clipped at the line's ends; an occurrence whose line
    gives fewer than :data:`MIN_CONTEXT_CHARS` characters of context brings
    the end of the line before it, or else the start of the line after it).
``line``
    The lines the reply writes that occurred verbatim earlier (code it
    copies or edits, a command it runs again, an error it quotes): at least
    :data:`~contextfold.reading.request.MIN_LINE_CHARS` characters, a space, two words. Held when present.
``outcome``
    The last error before the reply (the error line the survival probe finds
    in the latest output that had one, and up to :data:`ERROR_FRAME_LINES`
    lines before it: the failing frame) and the last test-result line, both
    as the tool wrote them (not the mark a chat message puts before a result
    flagged an error): the share present, averaged over requests.

``strict`` is the mean of the three. Beside it, not part of it:

``asked``
    What the person asked, as the reply had it: the first lines
    (:data:`ASKED_LINES` scorable ones) of the person's first message, the
    task, and of the latest message of the person before the reply: the
    share present verbatim, averaged over requests. Who is the person is
    :mod:`contextfold.reading`'s answer: a caveat, a reminder, a command
    echo, an interrupt notice, a format nag, an observation or a
    demonstration in a user message is not (a summary that quotes one as the
    user's request has lost what was asked).

 Every text is compared as lines with
whitespace collapsed and JSON string escapes undone (:func:`normalized_lines`).
A session's kwic and line are pooled over its requests; a set of sessions
takes the mean of its sessions' figures, as recall does. These are the
definitions of ``../shared/referee/strict.py``, so a ``--requests`` dump
scored there arrives at the same figures; verbatim matching undervalues a
faithful paraphrase, so read them as lower bounds, fair between extractive
strategies.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..conversation import Conversation, Item, JSONValue, Summary, Text, Thinking, ToolCall, ToolResult
from ..pipeline.importance import specific_tokens
from ..reading import OPENING_LINES, is_person, says_something
from ..readings import Key
from .probes import last_error_line
from .recall import FAR_MESSAGES
from .render import recorded_messages

CONTEXT_CHARS = 24
"""Characters of an occurrence's line kept on each side of the token."""
MIN_CONTEXT_CHARS = 12
"""Fewer characters of context than this on the line: the neighbouring line is part of the context."""
MAX_OCCURRENCES = 40
"""Earlier messages holding a token that are tried, the latest first."""
ASKED_LINES = OPENING_LINES
"""Scorable lines of a person's message that ``asked`` looks for: its opening states the request."""
ERROR_FRAME_LINES = 2
"""Lines before the error line that belong to the outcome: the failing frame."""

_ESCAPES = (("\\n", "\n"), ("\\t", " "), ('\\"', '"'), ("\\'", "'"), ("\\\\", "\\"))
"""JSON string escapes left in a text (an argument written twice escaped), undone in this order."""
_TEST_RESULTS = (
    r"\b\d+ (?:passed|failed|errors?)\b",  # pytest: "3 passed, 1 failed"
    r"^Ran \d+ tests? in\b",  # unittest
    r"^(?:OK|FAILED)(?: \(.*\))?$",
    r"test result: ",  # cargo
    r"^Tests?:\s+\d+",  # jest
    r"\b\d+ (?:tests?|examples?|specs?) (?:passed|failed)",
    r"\bAll \d+ tests? passed",
)
TEST_RESULT = re.compile("|".join(_TEST_RESULTS))
"""A line reporting how a test run went."""

_LINES: Key[tuple[str, ...]] = Key("strict_lines")


# --------------------------------------------------------------------------- the text a model reads


def argument_values(call: ToolCall) -> list[str]:
    """The values inside a call's arguments as sent, in order (numbers and booleans as Python writes them).

    Arguments that are not JSON are one value, as written.
    """
    sent = call.raw_arguments if call.raw_arguments is not None else json.dumps(dict(call.arguments), ensure_ascii=False)
    try:
        decoded = json.loads(sent)
    except ValueError:
        return [sent]
    values: list[str] = []
    stack: list[JSONValue] = [decoded]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            stack.extend(reversed(value))
        elif value is not None:
            values.append(value if isinstance(value, str) else str(value))
    return values


def model_text(item: Item, *, tool_names: bool = True) -> str:
    """What a model reads of ``item``: its text, reasoning, then each call's tool name and argument values.

    Without ``tool_names``: what the agent itself wrote in a reply.
    """
    texts = [block.text for block in item.blocks if isinstance(block, (Text, Summary, ToolResult))]
    texts += [block.thinking for block in item.blocks if isinstance(block, Thinking)]
    for call in (block for block in item.blocks if isinstance(block, ToolCall)):
        texts += [call.name] if tool_names else []
        texts += argument_values(call)
    return "\n".join(text for text in texts if text)


def unescaped(text: str) -> str:
    """``text`` with the JSON string escapes left in it undone."""
    for escaped, plain in _ESCAPES:
        text = text.replace(escaped, plain)
    return text


def normalized_lines(text: str) -> list[str]:
    """The non-empty lines of ``text`` with JSON string escapes undone and whitespace collapsed."""
    return [line for line in (" ".join(raw.split()) for raw in unescaped(text).splitlines()) if line]


def item_lines(item: Item) -> tuple[str, ...]:
    """The normalized lines of all a model reads of ``item`` (memoized on the item: items never change)."""
    lines = item.readings.get(_LINES)
    if lines is None:
        lines = item.readings.set(_LINES, tuple(normalized_lines(model_text(item))))
    return lines


def searchable(item: Item) -> str:
    """The text strict recall searches in a request's ``item``: its normalized lines."""
    return "\n".join(item_lines(item))


scorable_line = says_something
"""Whether a line says enough to be looked for verbatim (:func:`contextfold.reading.says_something`)."""


def contexts(token: str, lines: Sequence[str]) -> list[str]:
    """Every occurrence of ``token`` in ``lines`` with its context (see the module docstring)."""
    found = []
    for number, line in enumerate(lines):
        start = line.find(token)
        while start >= 0:
            end = start + len(token)
            left, right = line[max(0, start - CONTEXT_CHARS) : start], line[end : end + CONTEXT_CHARS]
            context = left + token + right
            if len(left) + len(right) < MIN_CONTEXT_CHARS:
                if number > 0:
                    context = lines[number - 1][-CONTEXT_CHARS:] + "\n" + context
                elif number + 1 < len(lines):
                    context = context + "\n" + lines[number + 1][:CONTEXT_CHARS]
            found.append(context)
            start = line.find(token, start + 1)
    return found


# --------------------------------------------------------------------------- what each reply needs


@dataclass(frozen=True)
class StrictNeeds:
    """What the reply at message ``position`` needs, each with the positions of the earlier messages holding it.

    ``outcome`` holds (position, line) of the last error's lines and the last test-result line; ``asked`` the
    (position, line) of the lines of the task and of the person's latest message.
    """

    position: int
    tokens: Mapping[str, tuple[int, ...]]
    lines: Mapping[str, tuple[int, ...]]
    outcome: tuple[tuple[int, str], ...]
    asked: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class Strict:
    """What one request held: kwic and line as found of needed (all, far), outcome as a share (``None``: none due)."""

    kwic: int
    kwic_needed: int
    kwic_far: int
    kwic_far_needed: int
    line: int
    line_needed: int
    line_far: int
    line_far_needed: int
    outcome: float | None
    outcome_far: float | None
    asked: float | None = None
    asked_far: float | None = None


class StrictSession:
    """A recording prepared for strict recall: the needs of every reply, and its occurrences' contexts.

    Positions count the messages of the recording as a request carries them
    (:func:`~.render.recorded_messages`), the system messages first.
    """

    def __init__(self, recording: Conversation) -> None:
        messages = recorded_messages(recording)
        self._lines = [item_lines(message.item) for _, message in messages]
        system = [n for n, (_, message) in enumerate(messages) if message.data.get("role") == "system"]
        self._system_tokens = set().union(*(specific_tokens("\n".join(self._lines[n])) for n in system))
        self._system_lines = {line for n in system for line in self._lines[n]}
        self._contexts: dict[tuple[str, int], list[str]] = {}
        self.needs: dict[int, StrictNeeds] = {}
        tokens_at: dict[str, list[int]] = defaultdict(list)
        lines_at: dict[str, list[int]] = defaultdict(list)
        error: tuple[tuple[int, str], ...] = ()
        test: tuple[tuple[int, str], ...] = ()
        first_ask: tuple[tuple[int, str], ...] = ()
        last_ask: tuple[tuple[int, str], ...] = ()
        for position, (index, message) in enumerate(messages):
            role = message.data.get("role")
            if role == "user" and is_person(message.item):
                ask = tuple((position, line) for line in filter(scorable_line, self._lines[position]))[:ASKED_LINES]
                first_ask, last_ask = first_ask or ask, ask or last_ask
            if role == "assistant" and index is not None:
                wrote = normalized_lines(model_text(message.item, tool_names=False))
                self.needs[index] = StrictNeeds(
                    position,
                    {t: tuple(tokens_at[t]) for t in specific_tokens("\n".join(wrote))
                     if t in tokens_at and t not in self._system_tokens},
                    {line: tuple(lines_at[line]) for line in set(wrote)
                     if scorable_line(line) and line in lines_at and line not in self._system_lines},
                    error + test,
                    first_ask + (last_ask if last_ask != first_ask else ()),
                )
            if role == "system":
                continue
            lines = self._lines[position]
            for token in specific_tokens("\n".join(lines)):
                tokens_at[token].append(position)
            for line in set(filter(scorable_line, lines)):
                lines_at[line].append(position)
            # the output as the tool wrote it: the recorded result, not its chat rendering, whose text starts
            # with a mark where the result was flagged an error (adapters' ERROR_MARK), a line no tool wrote
            result = recording.items[index].tool_result if index is not None else None
            if result is not None:
                output = normalized_lines(result.text)
                found = self._error(position, result.text, output)
                error = error if found is None else found
                tests = [line for line in output if TEST_RESULT.search(line)]
                test = ((position, tests[-1]),) if tests else test

    @staticmethod
    def _error(position: int, output: str, lines: Sequence[str]) -> tuple[tuple[int, str], ...] | None:
        """The error of the tool ``output`` at ``position``, whose normalized ``lines`` it picks from, as those
        lines (the failing frame first), if any."""
        found = last_error_line(output)
        if found is None:
            return None
        wanted = " ".join(unescaped(found).split())
        at = max((n for n, line in enumerate(lines) if wanted and wanted in line), default=None)
        block = [wanted] if at is None else lines[max(0, at - ERROR_FRAME_LINES) : at + 1]
        return tuple((position, line) for line in block if len(line) >= 4)

    def contexts(self, token: str, position: int) -> list[str]:
        """The occurrences of ``token`` in the message at ``position``, with their context."""
        key = (token, position)
        if key not in self._contexts:
            self._contexts[key] = contexts(token, self._lines[position])
        return self._contexts[key]

    def evaluate(self, index: int, contains: Callable[[str], bool]) -> Strict | None:
        """What a request before the reply at item ``index``, whose text ``contains`` answers for, held."""
        need = self.needs.get(index)
        if need is None:
            return None
        recent = need.position - FAR_MESSAGES
        kwic = [(self._held(token, where, contains), all(p < recent for p in where)) for token, where in need.tokens.items()]
        line = [(contains(text), all(p < recent for p in where)) for text, where in need.lines.items()]
        outcome = [(contains(text), p < recent) for p, text in need.outcome]
        far_outcome = [held for held, far in outcome if far]
        asked = [(contains(text), p < recent) for p, text in need.asked]
        far_asked = [held for held, far in asked if far]
        return Strict(
            kwic=sum(held for held, _ in kwic), kwic_needed=len(kwic),
            kwic_far=sum(held for held, far in kwic if far), kwic_far_needed=sum(far for _, far in kwic),
            line=sum(held for held, _ in line), line_needed=len(line),
            line_far=sum(held for held, far in line if far), line_far_needed=sum(far for _, far in line),
            outcome=sum(held for held, _ in outcome) / len(outcome) if outcome else None,
            outcome_far=sum(far_outcome) / len(far_outcome) if far_outcome else None,
            asked=sum(held for held, _ in asked) / len(asked) if asked else None,
            asked_far=sum(far_asked) / len(far_asked) if far_asked else None,
        )

    def _held(self, token: str, where: Sequence[int], contains: Callable[[str], bool]) -> bool:
        return any(contains(context) for position in reversed(where[-MAX_OCCURRENCES:])
                   for context in self.contexts(token, position))


# --------------------------------------------------------------------------- a session, a set of sessions


@dataclass(frozen=True)
class SessionStrict:
    """A session's strict measures (``None`` where nothing was needed) and how much each counted."""

    strict: float | None = None
    kwic: float | None = None
    kwic_far: float | None = None
    line: float | None = None
    line_far: float | None = None
    outcome: float | None = None
    outcome_far: float | None = None
    asked: float | None = None
    asked_far: float | None = None
    kwic_needed: int = 0
    kwic_far_needed: int = 0
    line_needed: int = 0
    line_far_needed: int = 0


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def session_strict(counts: Iterable[Strict | None]) -> SessionStrict:
    """A session's figures: kwic and line pooled over its requests, outcome the mean of its requests'."""
    counted = [c for c in counts if c is not None]

    def pooled(found: str, needed: str) -> tuple[float | None, int]:
        total = sum(getattr(c, needed) for c in counted)
        return (sum(getattr(c, found) for c in counted) / total if total else None), total

    kwic, kwic_needed = pooled("kwic", "kwic_needed")
    kwic_far, kwic_far_needed = pooled("kwic_far", "kwic_far_needed")
    line, line_needed = pooled("line", "line_needed")
    line_far, line_far_needed = pooled("line_far", "line_far_needed")
    outcome = _mean(c.outcome for c in counted)
    return SessionStrict(
        strict=_mean((kwic, line, outcome)), kwic=kwic, kwic_far=kwic_far, line=line, line_far=line_far,
        outcome=outcome, outcome_far=_mean(c.outcome_far for c in counted), asked=_mean(c.asked for c in counted),
        asked_far=_mean(c.asked_far for c in counted), kwic_needed=kwic_needed,
        kwic_far_needed=kwic_far_needed, line_needed=line_needed, line_far_needed=line_far_needed,
    )


MEASURES = ("strict", "kwic", "kwic_far", "line", "line_far", "outcome", "outcome_far", "asked", "asked_far")
"""The figures of a :class:`SessionStrict`, in the order reports show them."""


def mean_strict(sessions: Sequence[SessionStrict]) -> SessionStrict:
    """A set of sessions: the mean of each figure over the sessions that have it, the needed counts summed."""

    def mean(name: str) -> float | None:
        return _mean(getattr(s, name) for s in sessions)

    def total(name: str) -> int:
        return sum(getattr(s, name) for s in sessions)

    return SessionStrict(
        strict=mean("strict"), kwic=mean("kwic"), kwic_far=mean("kwic_far"), line=mean("line"),
        line_far=mean("line_far"), outcome=mean("outcome"), outcome_far=mean("outcome_far"),
        asked=mean("asked"), asked_far=mean("asked_far"),
        kwic_needed=total("kwic_needed"), kwic_far_needed=total("kwic_far_needed"),
        line_needed=total("line_needed"), line_far_needed=total("line_far_needed"),
    )
