"""Claude Code ``--output-format stream-json`` sessions: raw JSON Lines, or embedded in a hive-mind log.

Each ``system``/``init`` event starts a session, i.e. a conversation: its
``tools`` (names only) go to the header, with ``model``, ``session_id`` and
``claude_code_version`` in ``Header.meta``. In a hive-mind log, the user and
system prompt blocks logged before the session give its first user item and
``Header.system`` (that is the *appended* system prompt; Claude Code's
built-in one is not recorded anywhere). ``assistant`` and ``user`` events are
converted as in :mod:`.claude_code` (same message shape); timestamps come from
the log line.

Events with a ``parent_tool_use_id`` belong to a subagent started by a
``Task`` call; each subagent is a conversation of its own
(``meta["parent_tool_use_id"]``), opened with the prompt of that call. The
sessions come first, in the order they began, then the subagents, in the
order they began (as the Claude Code importer lists a transcript's main
chain before its sidechains): the N-th session is conversation N however
many subagents ran before it, so ``--index N`` names the same session to
every reader of the log. The final ``result``
event's figures (cost, turns, duration) go to ``Header.meta["result"]``; its
``result`` text repeats the last assistant message. Other system subtypes and
other event types (the ``stream_event`` deltas of
``--include-partial-messages``) are counted as skipped. A log event that could
not be decoded (the log ends inside it) is listed by line in
``Header.meta["unparsed_lines"]``; a call it would have answered stays
unanswered.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..conversation import Conversation, JSONObject, JSONValue, Text
from . import hive_mind_log
from ._common import ConversationBuilder, Source, field_of, tool_specs
from .claude_code import add_assistant_message, add_user_message
from .hive_mind_log import Entry

FORMAT = "claude-stream-json"
EVENT_TYPES = frozenset({"system", "assistant", "user", "result"})
RESULT_FIELDS = ("subtype", "is_error", "num_turns", "duration_ms", "total_cost_usd")


class _Sessions(hive_mind_log.AgentLog):
    """Routes events to the conversation they belong to, in file order."""

    def __init__(self, source: Source) -> None:
        super().__init__(source)
        self.opened = 0  # conversations begun, sessions and subagents: numbers their keys (the seeds of item ids)
        self.sessions: list[ConversationBuilder] = []
        self.now: ConversationBuilder | None = None
        self.subagents: dict[str, ConversationBuilder] = {}  # by the Task call that started it, in order begun

    @staticmethod
    def is_event(value: object) -> bool:
        if not isinstance(value, dict):
            return False
        kind = value.get("type")
        return isinstance(kind, str) and kind in EVENT_TYPES and "session_id" in value

    def finish(self) -> list[Conversation]:
        """The sessions, then the subagents, each in the order they began."""
        return [builder.build() for builder in (*self.sessions, *self.subagents.values())]

    def event(self, entry: Entry) -> None:
        event, where = entry.value, f"line {entry.line}"
        kind = event["type"]
        if kind == "system" and event.get("subtype") == "init":
            self._open(event)
        elif kind == "system":
            self.current().skip(f"system/{event.get('subtype')}")
        elif kind == "result":
            self.current().meta["result"] = {k: event[k] for k in RESULT_FIELDS if k in event}
        elif kind in ("assistant", "user"):
            builder = self._builder_for(event)
            message = field_of(self.source, event, "message", Mapping, where)
            if kind == "assistant":
                add_assistant_message(builder, message, where, entry.timestamp)
            else:
                add_user_message(builder, message, where, entry.timestamp, event.get("tool_use_result"))
        else:  # stream_event (partial deltas of a message that follows whole) and other side channels
            self.current().skip(str(kind))

    def _open(self, init: JSONObject | None) -> ConversationBuilder:
        init = init or {}
        meta: dict[str, JSONValue] = {"format": FORMAT}
        meta.update({k: init[k] for k in ("session_id", "model", "claude_code_version", "cwd") if k in init})
        builder = self._begin(meta)
        builder.tools = tool_specs(init.get("tools"))
        hive_mind_log.add_prompts(builder, self.prompts)
        self.sessions.append(builder)
        self.now = builder
        return builder

    def _begin(self, meta: JSONObject) -> ConversationBuilder:
        """A new conversation's builder, keyed by the order conversations began (what seeds its item ids)."""
        builder = ConversationBuilder(self.source, f"{self.source.name}:{self.opened}", meta)
        self.opened += 1
        return builder

    def current(self) -> ConversationBuilder:
        """The session in progress; events before any ``init`` open one without it."""
        return self.now if self.now is not None else self._open(None)

    def _builder_for(self, event: JSONObject) -> ConversationBuilder:
        session = self.current()
        parent = event.get("parent_tool_use_id")
        if not isinstance(parent, str):
            return session
        if parent not in self.subagents:
            meta = {
                "format": FORMAT,
                "subagent": True,
                "parent_tool_use_id": parent,
                "session_id": session.meta.get("session_id"),
            }
            builder = self._begin(meta)
            call = session.call(parent)
            prompt = call.arguments.get("prompt") if call is not None else None
            if isinstance(prompt, str):
                builder.add_user([Text(prompt)], meta={"from_call": parent})
            self.subagents[parent] = builder
        return self.subagents[parent]


matches, load = _Sessions.matches, _Sessions.load
