"""survival: after a compaction, put back the lines the agent is likely to need next, where it saw them.

A summary (by a model or by extraction) and a batch of cleared outputs both
decide what to keep without knowing what the next turns will use. Before the
compacted request leaves, this check reads the request as it was and lists
what must survive: the errors no later step resolved (their line verbatim),
the open plan items, the files edited, and the names the agent is likely to
use next (:mod:`..importance`: those it and the user kept using, then those
the tools showed it and it has not used yet: a test name in a test run, a
script in ``package.json``, a file in a grep hit). Whatever of that the
compacted request no longer holds is put back in one short note, within a
bounded budget, and an event says what was missing.

A name comes back in the line it stood in, verbatim, under where that line
came from (`` `$ grep -n …` printed:``, ``The agent wrote `src/a.py`:``):
a bare list of names says neither which file a line number belongs to nor
what a value was, and leaves the agent to search again.

The note is a user item placed right after the summary (or before the first
changed round), so it sits in the part of the prompt the compaction rewrote
anyway and costs no further cache break.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ...actions import EDIT, READ, TODO, call_actions, result_action
from ...conversation import Conversation, Item, Provenance, Text, Thinking, readable_text, strings_in
from ...events import Event
from ...reading import agent_words, heading_of, reading_of
from ...summarizers._calls import todo_list
from ...summarizers._facts import Facts
from ...summarizers._text import clip, shorten
from ..base import Budget
from ..edits import MARK
from ..importance import HALF_LIFE_TURNS, References, item_tokens, specific_tokens, used_text
from ..task import task_index as task_of
from .clear import output_lines

STAGE = "survival"
MAX_ERRORS = 3
MAX_PLAN_ITEMS = 10
ERROR_CHARS = 400
PLAN_CHARS = 200
SOURCE_CHARS = 120
"""A longer call (a script passed inline) is cut in its middle: its head says what ran."""
LINE_CHARS = 240
"""A longer line is cut around the name it is kept for (enough on each side to say what it is)."""
SHORT_LINE = 32
"""A line shorter than this comes with the line above it: alone it says little (``return x``)."""
MIN_EXCERPT_TOKENS = 12
"""Less room than this left for excerpts: no further line would fit."""
SEEN_WEIGHT = 0.25
"""A name a tool showed and the agent has not used yet counts this much of one use (decayed by age)."""
SEEN_OUTPUTS = 40
"""The most recent tool outputs whose names are candidates before their first use (and searched for lines)."""
MAX_CANDIDATES = 400
EXCERPTS_TITLE = "Lines that held names in use, under where each came from (oldest first):"


@dataclass(frozen=True)
class OpenError:
    """An error no later step resolved: the call that showed it (how the agent ran it) and its lines, verbatim
    (the failing frame, the exception, the line naming the failure). Only the lines are looked for in the
    compacted request: the call is where they came from, said in contextfold's words."""

    source: str
    lines: str


@dataclass
class Needs:
    """What must survive a compaction, each list most important first."""

    errors: list[OpenError] = field(default_factory=list)
    plan: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {name: len(values) for name, values in vars(self).items() if values}


def needs(conversation: Conversation, task_index: int | None = None, facts: Facts | None = None) -> Needs:
    """What of ``conversation`` must survive any compaction of it (the task item itself is never removed).

    ``facts`` are the facts of ``conversation`` when they were read already
    (a summary's, read on to the end of the request: :func:`~contextfold.summarizers._facts.read_on`).
    """
    if facts is None:
        facts = Facts()
        facts.read(conversation.items, details=False)
    errors: dict[str, OpenError] = {}  # by its lines: a failure shown again (a check re-run) is put back once
    for e in reversed([e for e in facts.errors if e.resolved is None and not e.retired]):
        lines = "\n".join(dict.fromkeys([*e.frame, *([e.detail] if e.detail else []), clip(e.line, ERROR_CHARS)]))
        errors.setdefault(lines, OpenError(shorten(e.source, SOURCE_CHARS), lines))
    plan = [clip(t["text"], PLAN_CHARS) for t in facts.todos or () if t["status"] != "completed"][:MAX_PLAN_ITEMS]
    files = [path for path, _ in facts.edited_files()]
    return Needs(list(errors.values())[:MAX_ERRORS], plan, files, likely_next(conversation.items))


def likely_next(items: Sequence[Item]) -> list[str]:
    """The names the agent is likely to use next, most likely first.

    First what the agent and the user used (:class:`.References`, by uses and
    recency); a name only a tool showed so far (a test in a test run, a
    script in ``package.json``, a file in a grep hit) is a candidate before
    its first use, at :data:`SEEN_WEIGHT` of a use, newest outputs first.
    """
    refs = References.of(items)
    scores = {token: refs.weight(token) for token in refs.uses}
    turns = len(items)
    for turn, item in _recent_outputs(items):
        weight = SEEN_WEIGHT * 0.5 ** ((turns - turn) / HALF_LIFE_TURNS)
        for token in item_tokens(item):
            if token not in refs.uses and _name_like(token):
                scores[token] = max(scores.get(token, 0.0), weight)
    return sorted(scores, key=lambda t: (-scores[t], t))[:MAX_CANDIDATES]


def _recent_outputs(items: Sequence[Item]) -> list[tuple[int, Item]]:
    """The last :data:`SEEN_OUTPUTS` tool outputs of ``items`` with their turn numbers (1-based), oldest first."""
    found: list[tuple[int, Item]] = []
    for index in range(len(items) - 1, -1, -1):
        if items[index].tool_result is not None:
            found.append((index + 1, items[index]))
            if len(found) == SEEN_OUTPUTS:
                break
    return found[::-1]


def _name_like(token: str) -> bool:
    """A name the agent could use (a path, a dotted or snake_case name), not a bare number or a line range."""
    return any(c.isalpha() for c in token) and ("/" in token or "_" in token or "." in token.strip("."))


def missing(needed: Needs, text: str, present: frozenset[str] | None = None) -> Needs:
    """The part of ``needed`` that ``text`` does not hold (substring search, like a reader would).

    ``present`` are the specific tokens of ``text`` when known (the survival
    check takes them from each item, where they are memoized, so an item kept
    from the request before costs no second reading). Errors, plan items and
    files are searched for in the text; the references are specific tokens
    themselves, so they can only stand inside one of the text's own, and are
    searched for among those, a far shorter text.
    """
    present = specific_tokens(text) if present is None else present
    tokens = "\n".join(present)

    def absent(values: Sequence[str], within: str) -> list[str]:
        return [v for v in values if v not in present and v not in within]

    def absent_lines(errors: Sequence[OpenError]) -> list[OpenError]:
        return [e for e in errors if any(line.strip() not in text for line in e.lines.splitlines())]

    return Needs(absent_lines(needed.errors), absent(needed.plan, text), absent(needed.files, text),
                 absent(needed.references, tokens))


def note_text(lost: Needs, max_tokens: int, count_text: Callable[[str], int], removed: Sequence[Item] = ()) -> str | None:
    """The note putting back ``lost`` within ``max_tokens``: errors, plan and files, then the lines of ``removed``
    that hold the lost references (most likely needed first), each under where it came from."""
    header = f"{MARK}: checked after compaction; these were no longer in the context and are kept here, verbatim]"
    lines: list[str] = []
    if lost.errors:
        blocks = (f"`{e.source}` showed:\n" + "\n".join(f"    {line}" for line in e.lines.splitlines()) for e in lost.errors)
        lines.append("Unresolved errors, newest first, each under the call that showed it, with the lines above it:\n"
                     + "\n".join(blocks))
    if lost.plan:
        lines.append("Open plan items:\n" + "\n".join(f"- {p}" for p in lost.plan))
    if lost.files:
        lines.append("Files edited: " + ", ".join(lost.files))
    fixed = "\n".join([header, *lines])
    spent = count_text(fixed)
    if spent > max_tokens:
        return None
    title = EXCERPTS_TITLE
    excerpts = _excerpts(lost.references, removed, max_tokens - spent - count_text(title) - 1, count_text, fixed)
    if excerpts:
        lines.append(f"{title}\n{excerpts}")
    return "\n".join([header, *lines]) if lines else None


def _excerpts(references: Sequence[str], removed: Sequence[Item], max_tokens: int, count_text: Callable[[str], int],
              shown: str = "") -> str:
    """The lines of ``removed`` that hold ``references``, under where they came from, within ``max_tokens``.

    Each reference is looked for in the newest removed item that holds it
    (among what the agent and the user wrote, and the last outputs: a name
    the agent used stands in its own words, a name it has not used yet in a
    recent output); a line already chosen for an earlier reference serves the
    later ones it holds, and so does what the note shows above the excerpts (``shown``: an open error's lines).
    """
    wanted = set(references)
    newest: dict[str, int] = {}
    outputs = {id(item) for _, item in _recent_outputs(removed)}
    for index in range(len(removed) - 1, -1, -1):
        if removed[index].tool_result is not None and id(removed[index]) not in outputs:
            continue
        for token in item_tokens(removed[index]) & wanted:
            newest.setdefault(token, index)
        if len(newest) == len(wanted):
            break
    chosen: dict[tuple[int, int], dict[int, str]] = {}  # (item, segment) -> line number -> line
    segments: dict[int, list[tuple[str, list[str]]]] = {}
    spent = 0
    for token in references:
        if max_tokens - spent < MIN_EXCERPT_TOKENS:
            break
        at = newest.get(token)
        if at is None or token in shown:
            continue
        if at not in segments:  # an item is split into its pieces once, however many references it holds
            segments[at] = _segments(removed[at])
        found = _line_for(token, segments[at])
        if found is None:
            continue
        segment, picked = found
        key = (at, segment)
        new = {n: text for n, text in picked.items() if n not in chosen.get(key, {})}
        header = segments[at][segment][0]
        cost = sum(count_text(text) + 2 for text in new.values()) + (0 if key in chosen else count_text(header) + 1)
        if spent + cost > max_tokens:
            continue
        spent += cost
        chosen.setdefault(key, {}).update(new)
        shown += "\n" + "\n".join(new.values())
    blocks = []
    for index, segment in sorted(chosen):
        lines = chosen[(index, segment)]
        body = "\n".join(f"    {lines[n]}" for n in sorted(lines))
        blocks.append(f"{segments[index][segment][0]}\n{body}")
    return "\n".join(blocks)


def _line_for(token: str, segments: list[tuple[str, list[str]]]) -> tuple[int, dict[int, str]] | None:
    """The first line holding ``token`` (cut around it when long), with the line above when it is short."""
    for segment, (_, lines) in enumerate(segments):
        for number, line in enumerate(lines):
            at = line.find(token)
            if at < 0:
                continue
            text = line.strip()
            if len(text) > LINE_CHARS:
                text = _around(line, at)
            picked = {number: text}
            if len(text) < SHORT_LINE:
                above = next((n for n in range(number - 1, -1, -1) if lines[n].strip()), None)
                if above is not None:
                    picked[above] = shorten(lines[above].strip(), LINE_CHARS)
            return segment, picked
    return None


def _around(line: str, at: int) -> str:
    """A long ``line`` cut to about :data:`LINE_CHARS` around the name at ``at``: from the start of the sentence
    that holds it when that is near enough, else from a word's start, with "…" where the line was cut (a line
    that began mid-word, "mmand injection…", would read as if the agent had written it so)."""
    indent = len(line) - len(line.lstrip())
    start = max(indent, at - LINE_CHARS // 2)
    if start > indent:
        sentence = line.rfind(". ", start, at)
        word = line.find(" ", start, at)
        start = sentence + 2 if sentence >= 0 else word + 1 if word >= 0 else start
    text = shorten(line[start:].strip(), LINE_CHARS, head_share=0.9)
    return text if start <= indent else f"… {text}"


def _segments(item: Item) -> list[tuple[str, list[str]]]:
    """``item``'s text in pieces, each with where it came from as the agent would name it: the command that
    printed it, the file it was read from or written to, the command the agent ran, or who said it."""
    action = result_action(item)
    if action is not None:
        if action.command:
            where = f"`$ {shorten(' '.join(action.command.split()), 160)}` printed:"
        elif action.kind == READ and action.paths:
            where = f"`{action.paths[0]}` as read:"
        else:
            name = item.tool_result.tool_name if item.tool_result is not None else None
            where = f"The output of {name or 'a tool call'}:"
        return [(where, output_lines(used_text(item)))]
    if item.provenance.survival:  # an earlier note: its lines keep the sources it named
        return _note_segments(item.text)
    if item.role == "assistant":
        said = agent_words(item)
        thought = "\n".join(b.thinking for b in item.blocks if isinstance(b, Thinking))
        pieces = [("The agent said:", f"{thought}\n{said}".strip().splitlines())]
        for call, act in zip(item.tool_calls, call_actions(item)):
            if act.kind == TODO:  # a list as it was then: its items' names, not the statuses they had (stale since)
                pieces.append(("A todo list the agent wrote named:", [t["text"] for t in todo_list(call.arguments) or ()]))
                continue
            text = "\n".join(strings_in(dict(call.arguments)))
            if act.kind == EDIT and act.paths:
                pieces.append((f"The agent wrote to `{act.paths[0]}`:", text.splitlines()))
            elif act.command:
                pieces.append(("The agent ran:", act.command.splitlines()))
            else:
                pieces.append((f"The agent called {call.name} with:", text.splitlines()))
        return pieces
    if item.provenance.summary:
        return [("An earlier summary said:", used_text(item).splitlines())]
    if item.provenance.restored:
        return [("Restored after an earlier compaction:", used_text(item).splitlines())]
    return [(heading_of(reading_of(item)) if item.role == "user" else f"The {item.role} message said:",
             used_text(item).splitlines())]


def _note_segments(text: str) -> list[tuple[str, list[str]]]:
    """An earlier survival note's excerpts: each header with its indented lines. Its errors, plan and files are
    not among them: :func:`needs` finds those again, and a block quoted under its heading ("Unresolved
    errors…") would stand among the excerpts as if it were where a line came from."""
    pieces: list[tuple[str, list[str]]] = []
    lines = text.splitlines()
    start = next((i + 1 for i, line in enumerate(lines) if line == EXCERPTS_TITLE), len(lines))
    for line in lines[start:]:
        if line.startswith("    ") and pieces:
            pieces[-1][1].append(line[4:])
        elif line.endswith(":"):
            pieces.append((line, []))
    return pieces


def survival(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
    """The ``after`` stage: :func:`survive` of ``conversation``, the result of a compaction of
    ``budget.compacted_from`` (outside the ``after`` tier, where that is not set, nothing changes)."""
    before = budget.compacted_from
    if before is None:
        return conversation, []
    return survive(before, conversation, budget, task_index=task_of(before), facts=budget.compacted_facts)


def survive(before: Conversation, after: Conversation, budget: Budget, *, task_index: int | None,
            facts: Facts | None = None) -> tuple[Conversation, list[Event]]:
    """``after`` with what it lost of ``before``'s needs put back (at most the policy's survival budget).

    ``facts``: ``before``'s facts when known (see :func:`needs`)."""
    p = budget.policy
    if budget.count_text is None or p.survival_max_tokens <= 0 or after is before:
        return after, []
    # What the request holds: the header too, so a name the system prompt teaches (a harness's ``end_of_edit``)
    # is never put back as if the compaction had lost it.
    held = [*after.header.system, *after.header.pinned, *after.items]
    text = "\n".join(readable_text(item) for item in held)
    lost = missing(needs(before, task_index, facts), text, frozenset().union(*map(item_tokens, held)))
    if not lost.counts():
        return after, [Event(STAGE, "checked", detail="everything needed survived")]
    saved = budget.count(before) - budget.count(after)
    cap = min(p.survival_max_tokens, max(int(saved * p.survival_max_share), 0))
    kept = {id(item) for item in after.items}
    removed = [item for item in before.items if id(item) not in kept]
    note = note_text(lost, cap, budget.count_text, removed)
    if note is None:
        return after, [Event(STAGE, "lost", detail=f"no room to put back {lost.counts()}", data=lost.counts())]
    item = Item("user", (Text(note),), timestamp=budget.now_s, provenance=Provenance(survival=True))
    items = list(after.items)
    items.insert(_insert_at(before, after), item)
    result = after.with_items(items)
    tokens_before = budget.count(after)
    event = Event(STAGE, "restored", (item.id,), tokens_before, budget.count(result),
                  f"put back what the compaction lost: {', '.join(f'{n} {k}' for k, n in lost.counts().items())}",
                  lost.counts())
    return result, [event]


def _insert_at(before: Conversation, after: Conversation) -> int:
    """After a new summary (and its restored files), else at the start of the first changed unit."""
    for index, item in enumerate(after.items):
        if item.provenance.summary and index < len(before) and before[index] is not item:
            while index + 1 < len(after) and after[index + 1].provenance.restored:
                index += 1
            return index + 1
    first = next((i for i, (old, new) in enumerate(zip(before.items, after.items)) if old is not new), len(after))
    return max((start for start, _ in after.units() if start <= first), default=0)
