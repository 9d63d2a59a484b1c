"""search_history and read_history: the agent looks back into its own session instead of forgetting.

Compaction drops items from what is sent, never from the history (every item
ever added, offloaded outputs included through :mod:`.offloaded`). These two
functions let the agent reach that history again:

- :func:`search_history` lists the lines that match a literal or a bounded
  regular expression (:mod:`.pattern`: linear time whatever the pattern),
  newest item first, each with where it came from (the item's ref, the turn,
  the tool and arguments that produced it, the file and line when the output
  was a numbered file read) and a few lines around it, within a count of
  results, a token budget and a time bound. Items the view still holds
  unchanged are not searched: the agent already sees them.
- :func:`read_history` gives a range of lines of one item, verbatim, bounded
  in lines and characters.

Both read only the :class:`~contextfold.conversation.Conversation` they are
given: a ref is looked up among its item ids and is never a path, so nothing
outside the session can be reached. A bad argument is a
:class:`~contextfold.errors.HistoryQueryError` naming it.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from ..conversation import Conversation, Item, readable_text
from ..errors import HistoryQueryError, HistoryRefNotFound
from ..readings import Key
from .names import HISTORY_TOOLS
from .offloaded import is_offloaded, offloaded_output
from .pattern import Matcher, compile_query

DEFAULT_LIMIT = 20
"""Matching lines :func:`search_history` lists when the caller names no limit."""
MAX_LIMIT = 100
"""The most a caller may ask for."""
CONTEXT_LINES = 2
"""Lines shown before and after a matching line."""
DEFAULT_BUDGET_TOKENS = 4_000
"""What a search result may cost the context; the hits that do not fit are counted, not shown."""
REGEX_DEADLINE_S = 0.07
"""Wall time a regular-expression search may take (the automaton steps once a character, in Python); then it
stops, says how far it got, and the agent narrows the query."""
LITERAL_DEADLINE_S = 2.0
"""The same for a literal search, which ``str.find`` runs in C: a bound that only a huge history reaches."""
SHOWN_LINE_CHARS = 400
"""A longer matching line is shown as the part around its match; context lines as their start."""
READ_MAX_LINES = 400
"""Lines one read_history call returns at most."""
READ_MAX_CHARS = 40_000
"""Characters one read_history call returns at most (a file of very long lines stops earlier)."""
MAX_REF_CHARS = 200
TOOL_NAMES = HISTORY_TOOLS
"""The history tools themselves: their calls and results are not searched (a search would find its own query)."""
FILE_KEYS = ("path", "file_path", "filename", "file", "notebook_path")
"""Argument names that say which file a tool call read."""
_NUMBERED = re.compile(r"^\s*(\d{1,9})(?:\t|: |\| |→)")
"""A line of a numbered file read (``cat -n``, the agent's read_file, ``grep -n``'s ``12:``)."""

CountText = Callable[[str], int]
ReadOffloaded = Callable[[Item], "str | None"]


def approximate_tokens(text: str) -> int:
    """Tokens of ``text`` when no counter is given: four characters a token."""
    return len(text) // 4 + 1


@dataclass(frozen=True)
class Hit:
    """One matching line: ``ref`` (the item id), its ``turn``, where it came from, and the lines around it."""

    ref: str
    turn: int
    origin: str
    line: int
    """1-based, in the item's text."""
    total_lines: int
    file_line: int | None
    shown: tuple[tuple[int, str], ...]
    """(line number, text as shown) around the match, the match included."""

    def render(self) -> str:
        where = f"line {self.line} of {self.total_lines}"
        if self.file_line is not None:
            where += f" (file line {self.file_line})"
        body = "\n".join(f"{'>' if number == self.line else ' '}{number:>5}| {text}" for number, text in self.shown)
        return f"--- {self.ref} · turn {self.turn} · {self.origin} · {where}\n{body}"


@dataclass(frozen=True)
class SearchResult:
    """What a search found and the text the agent reads (:attr:`text`)."""

    query: str
    hits: tuple[Hit, ...]
    matches: int
    """Matching lines found, shown or not (the search stops counting at the limit)."""
    items_searched: int
    items_total: int
    stopped: str | None
    """Why the search stopped early (``"time"``), else ``None``."""
    text: str


@dataclass(frozen=True)
class _Entry:
    item: Item
    turn: int


def _entries(history: Conversation) -> list[_Entry]:
    """Every item with its turn (the number of the reply it is, answers or prompts), in history order."""
    entries: list[_Entry] = []
    assistants = 0
    for item in history.items:
        if item.role == "assistant":
            assistants += 1
        turn = assistants if item.role in ("assistant", "tool") else assistants + 1
        entries.append(_Entry(item, max(turn, 1)))
    return entries


def _origin(item: Item, history: Conversation) -> tuple[str, bool]:
    """One line saying where ``item`` came from (the call and its arguments for an output), and whether the
    call named a file."""
    result = item.tool_result
    if result is None:
        calls = item.tool_calls
        if calls:
            return f"{item.role} message calling {', '.join(call.name for call in calls)}", False
        return f"{item.role} message", False
    name, arguments = result.tool_name, result.arguments
    if name is None or arguments is None:
        call = history.call(result.call_id)
        if call is not None:
            name, arguments = call.name, call.arguments
    given = dict(arguments or {})
    shown = json.dumps(given, ensure_ascii=False)
    shown = shown if len(shown) <= 200 else shown[:199] + "…"
    path = next((given[key] for key in FILE_KEYS if isinstance(given.get(key), str)), None)
    file_note = f" (file {path})" if path is not None else ""
    offloaded = ", offloaded" if is_offloaded(item) else ""
    return f"output of {name or 'a tool'} {shown}{file_note}{offloaded}", path is not None


_TEXT: Key[str] = Key("lookback_text")


def item_text(item: Item, read_offloaded: ReadOffloaded = offloaded_output) -> str:
    """The whole text of ``item`` as the agent would read it: an offloaded output read back, when it can be."""
    if is_offloaded(item):
        whole = read_offloaded(item)
        if whole is not None:
            return whole
        return item.text + "\n[contextfold: the full output is no longer available; this is the preview kept]"
    return item.readings.setdefault(_TEXT, lambda: readable_text(item))


def _clip(text: str, end: int | None) -> str:
    if len(text) <= SHOWN_LINE_CHARS:
        return text
    if end is None:
        return text[: SHOWN_LINE_CHARS - 1] + "…"
    start = max(0, min(end - SHOWN_LINE_CHARS * 3 // 4, len(text) - SHOWN_LINE_CHARS))
    stop = start + SHOWN_LINE_CHARS
    return ("…" if start else "") + text[start:stop] + ("…" if stop < len(text) else "")


def _looks_back(item: Item, history: Conversation) -> bool:
    """Whether ``item`` is a history tool's call (and nothing else) or its result."""
    calls = item.tool_calls
    if calls:
        return all(call.name in TOOL_NAMES for call in calls) and not item.text.strip()
    result = item.tool_result
    if result is None:
        return False
    name = result.tool_name
    if name is None:
        call = history.call(result.call_id)
        name = call.name if call is not None else None
    return name in TOOL_NAMES


def _hits_in(entry: _Entry, history: Conversation, text: str, matcher: Matcher,
            expired: Callable[[], bool]) -> Iterator[Hit]:
    lines = text.splitlines()
    origin: tuple[str, bool] | None = None
    for index, line in enumerate(lines):
        if index % 32 == 31 and expired():
            return
        match = matcher.search(line)
        if match is None:
            continue
        origin = origin or _origin(entry.item, history)
        low, high = max(0, index - CONTEXT_LINES), min(len(lines), index + CONTEXT_LINES + 1)
        shown = tuple((n + 1, _clip(lines[n], match.end if n == index else None)) for n in range(low, high))
        numbered = _NUMBERED.match(line) if origin[1] else None
        yield Hit(entry.item.id, entry.turn, origin[0], index + 1, len(lines),
                  int(numbered.group(1)) if numbered else None, shown)


def search_history(
    history: Conversation,
    query: str,
    *,
    limit: int = DEFAULT_LIMIT,
    regex: bool = False,
    ignore_case: bool = False,
    in_view: AbstractSet[str] = frozenset(),
    read_offloaded: ReadOffloaded = offloaded_output,
    count_text: CountText = approximate_tokens,
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
    deadline_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> SearchResult:
    """The lines of ``history`` matching ``query``, newest item first (see the module doc).

    ``in_view`` names the items the agent still sees whole (not searched; an offloaded output is seen only as
    its preview, so it is searched wherever it is).
    At most ``limit`` hits are listed, and only as many as fit ``budget_tokens``
    (counted with ``count_text``); the search stops at ``deadline_s`` (default :data:`REGEX_DEADLINE_S` or
    :data:`LITERAL_DEADLINE_S`), and says so.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise HistoryQueryError("limit", f"a whole number from 1 to {MAX_LIMIT} is expected, not {limit!r}")
    matcher = compile_query(query, regex=regex, ignore_case=ignore_case)
    bound = deadline_s if deadline_s is not None else REGEX_DEADLINE_S if regex else LITERAL_DEADLINE_S
    started = clock()

    def expired() -> bool:
        return clock() - started > bound

    everything = [entry for entry in _entries(history) if not _looks_back(entry.item, history)]
    entries = [entry for entry in everything if entry.item.id not in in_view or is_offloaded(entry.item)]
    hits, searched, stopped = _scan(entries, history, matcher, limit, read_offloaded, expired)
    seen = [entry for entry in everything if entry.item.id in in_view and not is_offloaded(entry.item)]
    if not hits and stopped is None and seen:  # nothing out of sight: say where it is in sight, with provenance
        hits, more, stopped = _scan(seen, history, matcher, limit, read_offloaded, expired)
        return _result(query, hits, searched + more, len(everything), 0, stopped, count_text, budget_tokens,
                       in_context=bool(hits))
    return _result(query, hits, searched, len(entries), len(seen), stopped, count_text, budget_tokens)


def _scan(entries: list[_Entry], history: Conversation, matcher: Matcher, limit: int, read_offloaded: ReadOffloaded,
          expired: Callable[[], bool]) -> tuple[list[Hit], int, str | None]:
    """Up to ``limit`` hits in ``entries``, newest first; how many entries were searched; ``"time"`` if cut short."""
    hits: list[Hit] = []
    searched = 0
    for entry in reversed(entries):
        if expired():
            return hits, searched, "time"
        searched += 1
        text = item_text(entry.item, read_offloaded)
        if not matcher.may_occur_in(text):
            continue
        for hit in _hits_in(entry, history, text, matcher, expired):
            hits.append(hit)
            if len(hits) >= limit:
                return hits, searched, None
        if expired():
            return hits, searched, "time"
    return hits, searched, None


def _result(query: str, hits: list[Hit], searched: int, total: int, seen: int, stopped: str | None,
            count_text: CountText, budget_tokens: int, *, in_context: bool = False) -> SearchResult:
    head = f"search_history({query!r}):"
    if not hits:
        why = f"; stopped at the time bound after {searched} of {total} items: narrow the query" if stopped else ""
        skipped = f"; the {seen} items still in your context were not" if seen else ""
        text = f"{head} no line of the session's history matches ({searched} items searched{skipped}){why}."
        return SearchResult(query, (), 0, searched, total, stopped, text)
    shown: list[Hit] = []
    parts: list[str] = []
    used = count_text(head) + 40
    for hit in hits:
        block = hit.render()
        cost = count_text(block)
        if shown and used + cost > budget_tokens:
            break
        shown.append(hit)
        parts.append(block)
        used += cost
    notes = [f"{len(hits)} matching line{'s' if len(hits) != 1 else ''}, newest first"]
    if in_context:
        notes.append("none in what compaction took out: these are in items still in your context")
    if len(shown) < len(hits):
        notes.append(f"{len(hits) - len(shown)} not shown (token budget): narrow the query")
    if stopped:
        notes.append(f"stopped at the time bound after {searched} of {total} items")
    footer = 'Read more of an item with read_history(ref, "START-END").'
    text = "\n".join([f"{head} {'; '.join(notes)}", *parts, footer])
    return SearchResult(query, tuple(shown), len(hits), searched, total, stopped, text)


def matching_lines(text: str) -> list[str]:
    """The matching lines a :func:`search_history` result shows (each marked ``>``), as the agent reads them."""
    return [line for line in text.splitlines() if line.startswith(">")]


def parse_lines(lines: object) -> tuple[int, int | None]:
    """A range of lines, 1-based and inclusive: ``"10-40"``, ``"10-"``, ``"12"``, ``12``, ``[10, 40]`` or ``None``."""
    if lines is None or lines == "":
        return 1, None
    bounds: list[object]
    if isinstance(lines, bool):
        bounds = []
    elif isinstance(lines, int):
        bounds = [lines, lines]
    elif isinstance(lines, str) and len(lines) <= 40:
        low, dash, high = lines.strip().partition("-")
        bounds = [low.strip(), high.strip() or None] if dash else [low.strip(), low.strip()]
    elif isinstance(lines, (list, tuple)) and len(lines) == 2:
        bounds = list(lines)
    else:
        bounds = []
    try:
        start = int(bounds[0])  # type: ignore[call-overload]
        end = None if bounds[1] is None else int(bounds[1])  # type: ignore[call-overload]
    except (IndexError, TypeError, ValueError):
        raise HistoryQueryError("lines", f'a range such as "120-160" or "120-" is expected, not {quoted(lines)}') from None
    if start < 1 or (end is not None and end < start):
        raise HistoryQueryError("lines", f"{quoted(lines)}: lines are numbered from 1 and the range must not be reversed")
    return start, end


def quoted(value: object) -> str:
    """An argument as an error message quotes it: a string cut to 80 characters, a number of up to 40 digits,
    anything else by its type (a model's argument may be nested thousands deep, or a number too long to print)."""
    if isinstance(value, str):
        return repr(value[:80])
    if isinstance(value, int) and abs(value) < 10**40:
        return repr(value)
    return f"a {type(value).__name__}"


def find_item(history: Conversation, ref: object) -> tuple[Item, _Entry]:
    """The item ``ref`` names in ``history``; :class:`HistoryRefNotFound` for anything else."""
    if not isinstance(ref, str) or not ref or len(ref) > MAX_REF_CHARS:
        raise HistoryQueryError("ref", f"an item ref such as \"it_0123abcd\" is expected, not {quoted(ref)}")
    wanted = ref.strip().strip('"')
    for entry in _entries(history):
        if entry.item.id == wanted:
            return entry.item, entry
    raise HistoryRefNotFound("ref", f"{ref[:80]!r} names no item of this session; refs come from search_history "
                                    "results, summaries and previews")


def read_history(history: Conversation, ref: object, lines: object = None, *,
                 read_offloaded: ReadOffloaded = offloaded_output) -> str:
    """Lines ``lines`` of the item ``ref`` names, verbatim, under one line saying where they come from."""
    start, end = parse_lines(lines)
    item, entry = find_item(history, ref)
    text_lines = item_text(item, read_offloaded).splitlines()
    total = len(text_lines)
    if start > max(total, 1):
        raise HistoryQueryError("lines", f"{ref} has {total} lines; {quoted(start)} is past its end")
    last = min(total, end if end is not None else total, start + READ_MAX_LINES - 1)
    shown: list[str] = []
    size = 0
    for line in text_lines[start - 1 : last]:
        if shown and size + len(line) + 1 > READ_MAX_CHARS:
            break
        shown.append(line[:READ_MAX_CHARS])
        size += len(line) + 1
    stop = start + len(shown) - 1
    more = f'\n[lines {stop + 1}-{total} follow: read_history("{item.id}", "{stop + 1}-")]' if stop < total and (
        end is None or stop < end) else ""
    head = f"--- {item.id} · turn {entry.turn} · {_origin(item, history)[0]} · lines {start}-{stop} of {total}"
    return "\n".join([head, *shown]) + more
