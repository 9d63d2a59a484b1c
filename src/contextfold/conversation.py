"""The provider-neutral model of a conversation.

A :class:`Conversation` is a :class:`Header` (system prompt, tool definitions,
pinned items: never compacted) plus an ordered list of :class:`Item` s. An item
is one message: a role and a tuple of blocks. Tool results are items of their
own (role ``"tool"``, exactly one :class:`ToolResult` block) whatever the wire
format does, so that every stage can treat "one call, one result" uniformly;
the Anthropic adapter groups them back into user messages.

The unit compaction works in is the :class:`Round`: an assistant item with all
of its tool calls (parallel ones included) plus the items answering them. No
stage ever splits a round; :meth:`Conversation.units` gives the atomic spans.

Everything here is provider-agnostic and imports no adapter: reading and
writing wire formats is :mod:`contextfold.adapters`' job
(``adapter_for("anthropic").read(messages)``). Provider-specific fields that
the model has no slot for ride along in ``Block.extra`` and ``Item.meta`` so
that the adapters can reproduce the exact wire message (round trips are
lossless). What contextfold itself knows of an item (it wrote a summary, a
stage replaced its output, the output was kept elsewhere) is typed, in
:class:`Provenance`: only adapters read ``meta``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import secrets
import typing
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .blocks import BLOCK_TYPES as BLOCK_TYPES
from .blocks import Block as Block
from .blocks import Document as Document
from .blocks import Image as Image
from .blocks import JSONObject as JSONObject
from .blocks import JSONValue as JSONValue
from .blocks import Opaque as Opaque
from .blocks import RedactedThinking as RedactedThinking
from .blocks import Summary as Summary
from .blocks import Text as Text
from .blocks import Thinking as Thinking
from .blocks import ToolCall as ToolCall
from .blocks import ToolResult as ToolResult
from .blocks import ToolSpec as ToolSpec
from .blocks import _empty
from .errors import InvalidContent, UnknownRole
from .pairing import UNANSWERED_TEXT as UNANSWERED_TEXT
from .pairing import Repair as Repair
from .pairing import Round as Round
from .pairing import Validator as Validator
from .pairing import Violation as Violation
from .readings import Key, Readings

Role = Literal["system", "developer", "user", "assistant", "tool"]
"""The role of an item. ``developer`` is OpenAI's newer name for system."""

ROLES: frozenset[Role] = frozenset(typing.get_args(Role))
"""Roles an item may have (:data:`Role`'s values, for checks at run time)."""


_ID_STREAM: ContextVar[Iterator[str] | None] = ContextVar("contextfold_id_stream", default=None)


def new_id(prefix: str = "it") -> str:
    """A fresh, unique, filename-safe id (``it_`` + 16 hex digits); random unless :func:`reproducible_ids` is on."""
    stream = _ID_STREAM.get()
    return f"{prefix}_{next(stream) if stream is not None else secrets.token_hex(8)}"


@contextmanager
def reproducible_ids(seed: str) -> Iterator[None]:
    """Draw the ids made in this block (in this thread or task) from a stream seeded by ``seed``.

    A replay names the items it writes (summaries, notes, previews, and the refs to them a summary
    carries), so with random ids two replays of one recording would write different requests. Inside
    the block the n-th id is a hash of ``seed`` and n: unique within the block and the same on every
    run. Not for live sessions, whose ids must not collide across processes.
    """
    digits = (hashlib.sha256(f"{seed}\0{n}".encode()).hexdigest()[:16] for n in itertools.count())
    token = _ID_STREAM.set(digits)
    try:
        yield
    finally:
        _ID_STREAM.reset(token)


def as_role(value: object) -> Role:
    """``value`` as a :data:`Role` (a role read from a wire message is a ``str``), or :class:`UnknownRole`."""
    for role in ROLES:
        if value == role and isinstance(value, str):
            return role
    raise UnknownRole(None, "role", f"unknown role {value!r}; expected one of {sorted(ROLES)}")


# --------------------------------------------------------------------------- items


@dataclass(frozen=True, slots=True)
class Offloaded:
    """Where the whole of an output too large to send was kept (its item holds a preview): a blob of the
    session's store, a file, or both (a store that keeps blobs as files)."""

    blob: str | None = None
    """The blob's digest in the session's store."""
    saved_to: str | None = None
    """The file's path."""


@dataclass(frozen=True, slots=True)
class Provenance:
    """What contextfold knows of an item that no wire format carries: whether it wrote the item, and what a stage
    did to it. The pipeline acts on these (a summary is never the task, a placeholder is not shrunk again);
    keeping them typed and apart from :attr:`Item.meta` (the wire data only adapters read) means a stage can
    neither misspell a flag nor mistake a format's field for one. The default: an item as its author wrote it.
    """

    summary: bool = False
    """A summary contextfold (or an integration) put in place of a span."""
    summarizer: str | None = None
    """The summarizer that wrote it."""
    restored: bool = False
    """Files and state contextfold put back after a compaction."""
    survival: bool = False
    """The survival check's note of what a compaction would have lost."""
    synthetic: bool = False
    """An error result :meth:`Conversation.repair` added for a call that had none."""
    static: bool = False
    """A system item of the static part of a split system prompt (see :attr:`Header.static_system`)."""
    compacted: str | None = None
    """The stage that replaced the item's content (a placeholder, a preview, a shortened output)."""
    offloaded: Offloaded | None = None
    """Where the whole output went, when only its preview is sent."""
    failure_line: str | None = None
    """The failure line the output reported before a stage replaced it (``""``: it reported none)."""
    error_frame: tuple[str, ...] | None = None
    """The failing frame (the lines above that line) the output showed: what failed where, put back with the
    line when the error is still open."""
    tally: str | None = None
    """The tally a test or lint run ended on ("3 failed, 12 passed"), kept when its output was replaced."""

    @property
    def by_contextfold(self) -> bool:
        """Whether contextfold wrote the item (a summary, restored files, a survival note), not the user."""
        return self.summary or self.restored or self.survival


NO_PROVENANCE = Provenance()
"""An item as its author wrote it: nothing contextfold added or changed."""

_TOOL_CALLS: Key[tuple[ToolCall, ...]] = Key("calls")


@dataclass(frozen=True, slots=True)
class Item:
    """One message of the conversation.

    ``meta`` carries what an adapter needs to reproduce the wire message
    exactly (``origin``: the format it came from, plus format-specific keys);
    only adapters (and the importers writing it) read it. ``provenance`` is
    what contextfold knows of the item, typed, for the pipeline.
    ``readings`` is what modules read of this item object once (its token
    count, its tool calls: :mod:`contextfold.readings`); it takes no part in
    equality, is never serialized and starts empty on every copy.
    """

    role: Role
    blocks: tuple[Block, ...]
    id: str = field(default_factory=new_id)
    timestamp: float | None = None
    meta: Mapping[str, Any] = field(default_factory=_empty)
    provenance: Provenance = NO_PROVENANCE
    readings: Readings = field(default_factory=Readings, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        as_role(self.role)
        if not isinstance(self.blocks, tuple):
            object.__setattr__(self, "blocks", tuple(self.blocks))
        results = sum(isinstance(b, ToolResult) for b in self.blocks)
        if self.role == "tool" and (results != 1 or len(self.blocks) != 1):
            raise InvalidContent(None, "blocks", "a tool item holds exactly one ToolResult block")
        if self.role != "tool" and results:
            raise InvalidContent(None, "blocks", f"a {self.role} item cannot hold a ToolResult block")

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The item's tool calls, found once and kept in :attr:`readings`: a step asks for them of every item several
        times (rounds, actions, facts), and an item never changes."""
        calls = self.readings.get(_TOOL_CALLS)
        if calls is None:
            calls = self.readings.set(_TOOL_CALLS, tuple(b for b in self.blocks if isinstance(b, ToolCall)))
        return calls

    @property
    def tool_result(self) -> ToolResult | None:
        block = self.blocks[0] if self.role == "tool" else None
        return block if isinstance(block, ToolResult) else None

    @property
    def text(self) -> str:
        """Concatenated text of the text-like blocks (text, summary, tool result text)."""
        parts: list[str] = []
        for b in self.blocks:
            if isinstance(b, (Text, Summary, ToolResult)):
                parts.append(b.text)
        return "\n".join(parts)

    @property
    def kind(self) -> str:
        """What sort of item this is, for accounting and selective rules."""
        if self.role == "tool":
            return "tool_result"
        if any(isinstance(b, Summary) for b in self.blocks):
            return "summary"
        if self.role == "assistant" and self.tool_calls:
            return "tool_call"
        return self.role

    def with_blocks(self, blocks: Iterable[Block]) -> Item:
        """A copy with other blocks, same id, role, timestamp, meta and provenance."""
        return replace(self, blocks=tuple(blocks))


def readable_text(item: Item, *, decode_arguments: bool = False, tool_names: bool = True) -> str:
    """Everything of ``item`` a model reads as text, in order: text, summaries, reasoning, outputs, tool names
    and arguments.

    Arguments are the JSON text sent (the exact string, when the source format
    sent one); with ``decode_arguments``, the strings inside that JSON, so that
    a path in them reads as written. ``tool_names=False`` leaves the tools'
    names out (what the author wrote, rather than which tool it went to).
    """
    parts: list[str] = []
    for block in item.blocks:
        if isinstance(block, (Text, Summary, ToolResult)):
            parts.append(block.text)
        elif isinstance(block, Thinking):
            parts.append(block.thinking)
        elif isinstance(block, ToolCall):
            raw = block.raw_arguments
            sent = raw if raw is not None else json.dumps(dict(block.arguments), ensure_ascii=False)
            parts.extend([*([block.name] if tool_names else []), *(strings_in(_decoded(sent)) if decode_arguments else [sent])])
    return "\n".join(parts)


def _decoded(arguments: str) -> JSONValue:
    try:
        decoded: JSONValue = json.loads(arguments)
        return decoded
    except ValueError:
        return arguments


def strings_in(value: object) -> list[str]:
    """The strings inside a JSON value (a tool call's decoded arguments), in order; keys are not among them."""
    found: list[str] = []
    stack = [value]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict):
            stack.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            stack.extend(reversed(value))
    return found


def user(text: str, **kw: Any) -> Item:
    """A user item holding one text block."""
    return Item("user", (Text(text),), **kw)


def assistant(text: str = "", calls: Sequence[ToolCall] = (), **kw: Any) -> Item:
    """An assistant item: optional text, then tool calls."""
    blocks: list[Block] = [Text(text)] if text else []
    blocks.extend(calls)
    return Item("assistant", tuple(blocks), **kw)


def tool(call_id: str, content: str | tuple[Block, ...], is_error: bool | None = None, **kw: Any) -> Item:
    """A tool item answering ``call_id``."""
    return Item("tool", (ToolResult(call_id, content, is_error),), **kw)


@dataclass(frozen=True, slots=True)
class Header:
    """What every request starts with and no stage may touch.

    ``system`` holds the system/developer items in order; ``pinned`` items are
    sent right after them, before the conversation. ``meta`` keeps format
    details of the header (the shape of Anthropic's ``system`` field, say).
    """

    system: tuple[Item, ...] = ()
    tools: tuple[ToolSpec | Opaque, ...] = ()
    pinned: tuple[Item, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=_empty)

    @property
    def system_text(self) -> str:
        return "\n\n".join(i.text for i in self.system)

    @property
    def static_system(self) -> int:
        """How many of the first system items are the static part of a split system prompt (0: not split).

        The static part is the same in every session (the agent's rules), so it
        is cached on its own breakpoint and shared across sessions; the rest
        (tool lists from MCP servers, the user's language) follows it. An item
        is static when its :attr:`Provenance.static` says so.
        """
        count = 0
        while count < len(self.system) and self.system[count].provenance.static:
            count += 1
        return count

    def overlaid(self, given: Header) -> Header:
        """This header with the parts ``given`` sets (those not empty) in place of its own.

        What ``Context.add(messages, system=..., tools=...)`` on every turn
        means: an agent loop that passes its system prompt and tools each time
        must not wipe the items it pinned, nor turn a split system prompt
        (:attr:`static_system`) back into one part. A system prompt with the
        same text as this one's keeps this one's items.
        """
        same_system = not given.system or given.system_text == self.system_text
        return Header(system=self.system if same_system else given.system, tools=given.tools or self.tools,
                      pinned=given.pinned or self.pinned, meta={**self.meta, **given.meta})


# --------------------------------------------------------------------------- structure


class Conversation:
    """A header plus an ordered, append-only-by-convention list of items.

    Appending links each tool result to its call (filling ``tool_name`` and ``arguments``) in O(1). Stages never
    mutate a conversation; they build a new one with :meth:`with_items`, sharing the unchanged item objects.
    """

    __slots__ = ("_calls", "_items", "_rounds", "folds", "header")

    def __init__(self, items: Iterable[Item] = (), header: Header | None = None) -> None:
        self.header = header or Header()
        self._items: list[Item] = []
        self._calls: dict[str, ToolCall] = {}
        self._rounds: tuple[int, list[Round]] | None = None  # rounds() of the first N items (appends only add)
        self.folds: dict[Any, tuple[int, Any]] = {}  # what a Fold read of the first N items (:mod:`.folds`)
        self.extend(items)

    # -- container protocol
    @property
    def items(self) -> Sequence[Item]:
        return self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Item]:
        return iter(self._items)

    def __getitem__(self, index: int) -> Item:
        return self._items[index]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Conversation):
            return NotImplemented
        return self.header == other.header and self._items == other._items

    def __repr__(self) -> str:
        return f"Conversation({len(self._items)} items, {len(self.header.tools)} tools)"

    # -- building
    def append(self, item: Item) -> Item:
        """Add one item at the end; returns the stored item (results linked to calls)."""
        for call in item.tool_calls:
            self._calls[call.id] = call
        item = self.linked(item)
        self._items.append(item)
        return item

    def linked(self, item: Item) -> Item:
        """``item`` with its result naming the tool and arguments of the call it answers, when that call was
        appended here (as :meth:`append` stores it; nothing is appended)."""
        result = item.tool_result
        if result is None or result.tool_name is not None:
            return item
        answered = self._calls.get(result.call_id)
        if answered is None:
            return item
        return item.with_blocks((replace(result, tool_name=answered.name, arguments=answered.arguments),))

    def extend(self, items: Iterable[Item]) -> None:
        for item in items:
            self.append(item)

    def with_items(self, items: Iterable[Item], header: Header | None = None) -> Conversation:
        """A new conversation with the same header (unless given) and these items."""
        return Conversation(items, header or self.header)

    def snapshot(self) -> Conversation:
        """A copy that later appends to this one leave alone (pointer copies only, no re-linking)."""
        copy = Conversation.__new__(Conversation)
        copy.header = self.header
        copy._items = list(self._items)
        copy._calls = dict(self._calls)
        copy._rounds, copy.folds = self._rounds, {}  # a fold's state changes in place: the copy's appends are its own
        return copy

    @property
    def call_ids(self) -> AbstractSet[str]:
        """The ids of every call appended so far (a live view, not a copy)."""
        return self._calls.keys()

    def call(self, call_id: str) -> ToolCall | None:
        """The tool call with this id, if one was appended."""
        return self._calls.get(call_id)

    # -- structure
    def rounds(self) -> list[Round]:
        """Every assistant item with tool calls, with the span its results occupy.

        Remembered until an item is appended (stages ask it of the same request several times); a copy is
        returned, so the caller may change it.
        """
        known = self._rounds
        if known is None or known[0] != len(self._items):
            known = self._rounds = (len(self._items), self._find_rounds())
        return list(known[1])

    def _find_rounds(self) -> list[Round]:
        owner: dict[str, int] = {}
        spans: dict[int, int] = {}
        for index, item in enumerate(self._items):
            for call in item.tool_calls:
                owner.setdefault(call.id, index)
            if item.tool_calls:
                spans[index] = index + 1
            result = item.tool_result
            if result is not None and result.call_id in owner:
                start = owner[result.call_id]
                if start < index:
                    spans[start] = max(spans[start], index + 1)
        return [
            Round(start, end, tuple(c.id for c in self._items[start].tool_calls)) for start, end in sorted(spans.items())
        ]

    def units(self) -> list[tuple[int, int]]:
        """The conversation split into atomic ``(start, end)`` spans, in order.

        A round (and anything that sits inside its span) is one unit; so is
        a text-mode agent's reply with the output its harness sent back as a
        user message (mini-swe-agent's ``<returncode>…``, SWE-agent's
        ``OBSERVATION:``); every other item is a unit of its own. Cutting only
        between units keeps every call with its result, and never opens a
        tail with an output whose command was summarized away.
        """
        # Which user message is a command's output is the session reader's answer; it reads Items, so it is
        # imported here, once the model is built (tests/test_architecture.py allows this one import).
        from .reading import answers_reply

        units: list[tuple[int, int]] = []
        index = 0
        round_end = {r.start: r.end for r in self.rounds()}
        while index < len(self._items):
            end = round_end.get(index, index + 1)
            # A round that begins inside this span extends it (interleaved rounds).
            probe = index + 1
            while probe < end:
                end = max(end, round_end.get(probe, probe + 1))
                probe += 1
            reply = self._items[end - 1]
            if (end < len(self._items) and reply.role == "assistant" and not reply.tool_calls
                    and answers_reply(self._items[end])):
                end += 1
            units.append((index, end))
            index = end
        return units

    # -- invariants
    def validate(self) -> list[Violation]:
        """Every broken rule, with the index of the item at fault. Empty means valid."""
        checker = Validator()
        for item in self._items:
            checker.feed(item)
        violations = checker.violations + checker.open_violations()
        # An "orphan" whose call turns up later is a result that came too early.
        later = {call.id for item in self._items for call in item.tool_calls}
        violations = [
            Violation("result_before_call", v.index, f"result for call {v.call_id!r} comes before the call", v.call_id)
            if v.kind == "orphan_result" and v.call_id in later
            else v
            for v in violations
        ]
        violations.sort(key=lambda v: v.index)
        return violations

    def repair(self) -> tuple[Conversation, list[Repair]]:
        """A valid copy and the list of changes made to get there.

        Orphan, premature and duplicate results are dropped; a result separated
        from its call is moved next to it (a real result is always preferred
        to a synthetic one); calls still unanswered get an error result right
        after their round; a tool call repeating an earlier call's id is
        dropped (and its item with it when nothing else is left); a duplicate
        item id is renamed.
        """
        repairs: list[Repair] = []
        call_pos: dict[str, int] = {}
        for index, item in enumerate(self._items):
            for call in item.tool_calls:
                call_pos.setdefault(call.id, index)
        results = self._results_by_call(call_pos, repairs)
        taken = {result.tool_result.call_id for answers in results.values() for _, result in answers
                 if result.tool_result is not None}
        items = self._laid_out(call_pos, results, taken, repairs)
        repairs.sort(key=lambda r: r.index)
        return self.with_items(items), repairs

    def _results_by_call(self, call_pos: Mapping[str, int], repairs: list[Repair]) -> dict[int, list[tuple[int, Item]]]:
        """:meth:`repair`'s first pass: which result answers which call (by the index of the item holding the
        call, the results in their original order); the results that answer none are dropped."""
        results: dict[int, list[tuple[int, Item]]] = {}
        taken: set[str] = set()
        for index, item in enumerate(self._items):
            result = item.tool_result
            if result is None:
                continue
            cid = result.call_id
            at = call_pos.get(cid)
            if at is None or at > index or cid in taken:
                why = "duplicate" if cid in taken else ("premature" if at is not None else "orphan")
                repairs.append(Repair("dropped_result", index, f"{why} result for call {cid!r}", cid))
                continue
            taken.add(cid)
            results.setdefault(at, []).append((index, item))
            if any(self._items[k].role != "tool" for k in range(at + 1, index)):
                repairs.append(Repair("moved_result", index, f"moved next to call {cid!r}", cid))
        return results

    def _laid_out(self, call_pos: Mapping[str, int], results: Mapping[int, list[tuple[int, Item]]],
                  taken: AbstractSet[str], repairs: list[Repair]) -> list[Item]:
        """:meth:`repair`'s second pass: the items laid out, each round followed by its results."""
        items: list[Item] = []
        seen_ids: set[str] = set()

        def place(item: Item, index: int) -> None:
            if item.id in seen_ids:
                item = replace(item, id=new_id())
                repairs.append(Repair("renamed_item", index, f"duplicate item id renamed to {item.id!r}"))
            seen_ids.add(item.id)
            items.append(item)

        for index, item in enumerate(self._items):
            if item.role == "tool":
                continue
            kept = _without_repeated_calls(item, index, call_pos, repairs)
            if kept is None:
                continue
            item = kept
            place(item, index)
            for result_index, result_item in results.get(index, ()):
                place(result_item, result_index)
            for call in item.tool_calls:
                if call.id in taken:
                    continue
                synthetic = Item(
                    "tool",
                    (ToolResult(call.id, UNANSWERED_TEXT, True, call.name, call.arguments),),
                    provenance=Provenance(synthetic=True),
                )
                items.append(synthetic)
                repairs.append(Repair("answered_call", index, f"added an error result for call {call.id!r}", call.id))
        return items


def _without_repeated_calls(item: Item, index: int, call_pos: Mapping[str, int],
                            repairs: list[Repair]) -> Item | None:
    """``item`` without the tool calls whose id an earlier item, or an earlier block of it, already used
    (``None`` when nothing else is left)."""
    kept, repeated, ids_here = [], [], set()
    for block in item.blocks:
        if isinstance(block, ToolCall):
            if call_pos[block.id] != index or block.id in ids_here:
                repeated.append(block)
                continue
            ids_here.add(block.id)
        kept.append(block)
    if not repeated:
        return item
    for call in repeated:
        repairs.append(Repair("dropped_call", index, f"repeated tool call id {call.id!r}", call.id))
    return item.with_blocks(kept) if kept else None
