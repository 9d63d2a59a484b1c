"""The two history tools as the model sees them: their definitions, and a call answered from its arguments.

The definitions are neutral :class:`~contextfold.conversation.ToolSpec` s (an
adapter writes them in its provider's format); :func:`answer` checks a
call's arguments against them (a :class:`~contextfold.errors.HistoryQueryError`
names the argument) and runs :func:`~.history.search_history` or
:func:`~.history.read_history`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..adapters import adapter_for
from ..conversation import Conversation, Header, Item, JSONObject, ToolCall, ToolResult, ToolSpec
from ..errors import HistoryQueryError
from ..pipeline.offload_store import Blobs
from . import history
from .history import DEFAULT_LIMIT, MAX_LIMIT, READ_MAX_LINES, TOOL_NAMES, quoted
from .offloaded import offloaded_output

SEARCH, READ = "search_history", "read_history"
NAMES = TOOL_NAMES

SEARCH_SPEC = ToolSpec(
    SEARCH,
    "Search this session's earlier history (tool outputs, messages and offloaded outputs that were compacted "
    "out of your context) for lines containing a literal text, or matching a regular expression with "
    "regex=true (linear-time subset: no look-around or back-references). Returns matching lines newest first, "
    "each with its ref, turn, the tool call that produced it and the lines around it.",
    {"type": "object", "properties": {
        "query": {"type": "string", "description": "The text to find (a literal unless regex is true)."},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                  "description": f"Matching lines to return (default {DEFAULT_LIMIT})."},
        "regex": {"type": "boolean", "description": "Treat query as a regular expression."},
        "ignore_case": {"type": "boolean", "description": "Match regardless of case."},
    }, "required": ["query"]},
)
READ_SPEC = ToolSpec(
    READ,
    "Read lines of one earlier item of this session verbatim, by the ref a search result, a summary or a "
    f"preview gave (\"it_...\"). At most {READ_MAX_LINES} lines per call.",
    {"type": "object", "properties": {
        "ref": {"type": "string", "description": "The item's ref, such as it_0123abcd4567ef89."},
        "lines": {"type": "string", "description": 'A range such as "120-160" or "120-" (default: from the start).'},
    }, "required": ["ref"]},
)
SPECS = (SEARCH_SPEC, READ_SPEC)

Search = Callable[..., str]
Read = Callable[[Any, Any], str]


def _argument(arguments: JSONObject, name: str, kind: type, default: object) -> Any:
    value = arguments.get(name, default)
    if value is None:
        return default
    if kind is int and isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise HistoryQueryError(name, f"a {kind.__name__} is expected, not {type(value).__name__}")
    return value


def answer(name: str, arguments: object, search: Search, read: Read) -> str:
    """The text that answers a call of ``name`` with ``arguments``; :class:`HistoryQueryError` for a bad one."""
    if not isinstance(arguments, Mapping):
        raise HistoryQueryError("arguments", f"a JSON object is expected, not {type(arguments).__name__}")
    tools = {SEARCH: ("query", "limit", "regex", "ignore_case"), READ: ("ref", "lines")}
    known = tools.get(name) if isinstance(name, str) else None  # a name that is no string may not even hash
    if known is None:
        raise HistoryQueryError("name", f"{quoted(name)} is not a history tool ({', '.join(sorted(NAMES))})")
    unknown = sorted(key if isinstance(key, str) else f"{type(key).__name__} key" for key in arguments
                     if key not in known)
    if unknown:
        raise HistoryQueryError(unknown[0], f"{name} takes {', '.join(known)}")
    if name == SEARCH:
        if "query" not in arguments:
            raise HistoryQueryError("query", "the text to search for is required")
        return search(_argument(arguments, "query", str, None), limit=_argument(arguments, "limit", int, DEFAULT_LIMIT),
                      regex=_argument(arguments, "regex", bool, False),
                      ignore_case=_argument(arguments, "ignore_case", bool, False))
    if "ref" not in arguments:
        raise HistoryQueryError("ref", "the ref of the item to read is required")
    lines = arguments.get("lines")
    return read(arguments["ref"], lines)


class HistoryTools:
    """The agent's two history tools over one session (what ``Context.search_history`` and its siblings run).

    ``history`` and ``view`` give the session's history and the view sent now
    (searched: what the view no longer holds whole); ``blobs`` the stored
    session offloaded outputs are read back from (any worker's); ``provider``
    the format :meth:`definitions` are written in by default.
    """

    specs = SPECS
    """The two tools as neutral :class:`~contextfold.ToolSpec` s (name, description, JSON schema)."""

    def __init__(self, history: Callable[[], Conversation], view: Callable[[], Conversation],
                 count_text: Callable[[str], int], blobs: Callable[[], Blobs | None], provider: str) -> None:
        self._history = history
        self._view = view
        self._count_text = count_text
        self._blobs = blobs
        self._provider = provider

    def search(self, query: str, limit: int = DEFAULT_LIMIT, *, regex: bool = False, ignore_case: bool = False) -> str:
        """The ``search_history`` tool: lines of the history the view no longer holds whole that match ``query``
        (a literal, or with ``regex`` a linear-time regular expression), newest first, each with its ref, turn
        and the call that produced it (:mod:`contextfold.lookback.history`).

        :class:`~contextfold.errors.HistoryQueryError` names a bad argument.
        """
        whole = self._history()
        by_id = {item.id: item for item in whole.items}
        in_view = frozenset(item.id for item in self._view().items if by_id.get(item.id) is item)
        return history.search_history(whole, query, limit=limit, regex=regex, ignore_case=ignore_case,
                                      in_view=in_view, count_text=self._count_text,
                                      read_offloaded=self._read_offloaded).text

    def read(self, ref: str, lines: str | None = None) -> str:
        """The ``read_history`` tool: lines ``lines`` (``"120-160"``) of the item ``ref`` names, verbatim."""
        return history.read_history(self._history(), ref, lines, read_offloaded=self._read_offloaded)

    def _read_offloaded(self, item: Item) -> str | None:
        return offloaded_output(item, self._blobs())

    def definitions(self, provider: str | None = None) -> list[dict[str, Any]]:
        """The two tools' definitions in ``provider``'s tool format (add them to the request's tools)."""
        header = Header(tools=SPECS)
        return list(adapter_for(provider or self._provider).write_header(header).fields.get("tools", []))

    def call(self, name: str, arguments: object) -> str:
        """The text answering a call of a history tool; :class:`~contextfold.errors.HistoryQueryError` names a
        bad argument (an unknown tool name included)."""
        return answer(name, arguments, self.search, self.read)

    def answer(self, call: ToolCall) -> Item | None:
        """The result item answering ``call`` when it calls a history tool (``None`` for any other tool).

        A bad argument becomes an error result that says why, so the model can call again; add the item
        like any other result (it is compacted like any other).
        """
        if call.name not in NAMES:
            return None
        try:
            text, failed = self.call(call.name, call.arguments), False
        except HistoryQueryError as error:
            text, failed = f"{call.name} failed: {error}", True
        return Item("tool", (ToolResult(call.id, text, is_error=failed, tool_name=call.name,
                                        arguments=call.arguments),))
