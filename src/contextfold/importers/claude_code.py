"""Claude Code session transcripts (``~/.claude/projects/<project>/<session>.jsonl``).

One JSON record per line. ``user`` and ``assistant`` records carry an
Anthropic Messages ``message``, read by the Anthropic adapter (the one reader
of that format: images by file id, cache marks and unknown blocks survive
and are written back); the functions here that hand those messages over are
shared with the stream-json importer, whose events have the same shape.

- An API response is often written as several ``assistant`` records sharing
  ``message.id`` (one per content block). They become one assistant item
  (``meta["response_id"]``), so parallel calls stay in one round; the usage
  of the response's last record is kept once, in ``meta["usage"]``.
- A ``user`` record with tool results gives one tool item per result
  (``is_error`` as recorded); the record's ``toolUseResult`` adds its short
  scalar fields (``filePath``, ``interrupted``, ``numFiles``...) to the tool
  item's ``meta["facts"]``. Other user content is a user item; ``isMeta`` records
  (hook feedback, injected reminders) are marked ``meta["is_meta"]``.
- ``isSidechain`` records (a subagent's own chat in older versions) form a
  separate conversation per chain, after the main one.
- ``queue-operation``, ``file-history-snapshot``, ``summary`` (session title)
  and ``system`` (local command output, compaction boundary) records are not
  turns of the chat: counted in ``meta["skipped"]``.

Records are taken in file order; the ``parentUuid`` tree is not re-walked, so
a session that was rewound keeps its abandoned branch in place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..conversation import Conversation
from ._common import ConversationBuilder, Source, field_of, kind_of, read_reply, read_wire, small_scalars, unix_time

FORMAT = "claude-code"
RECORD_TYPES = frozenset({"user", "assistant"})
BOOKKEEPING = frozenset({"queue-operation", "file-history-snapshot", "summary", "system"})
LINK_KEYS = ("sessionId", "parentUuid", "leafUuid", "messageId")
RESULT_COPIES = frozenset({"stdout", "stderr", "content", "originalFile", "oldString", "newString", "prompt"})
"""``toolUseResult`` fields that repeat the result text or the call's input: kept out of ``extra``."""


def matches(source: Source) -> bool:
    record = source.first_record
    return (
        record is not None
        and isinstance(record.get("type"), str)
        and record["type"] in RECORD_TYPES | BOOKKEEPING
        and "session_id" not in record
        and any(key in record for key in LINK_KEYS)
    )


def load(source: Source) -> list[Conversation]:
    main = ConversationBuilder(source, f"{source.name}:0", {"format": FORMAT})
    chains: dict[str, ConversationBuilder] = {}  # sidechain root uuid -> its conversation
    chain_of: dict[str, str] = {}  # record uuid -> sidechain root uuid
    for number, record in source.records():
        where = f"line {number}"
        kind = kind_of(source, record, "type", where)
        if kind in BOOKKEEPING:
            main.skip(kind)
            continue
        if kind not in RECORD_TYPES:
            raise source.error(where, f"unknown record type {kind!r}")
        builder = main
        if record.get("isSidechain"):
            parent, uuid = (value if isinstance(value, str) else "" for value in map(record.get, ("parentUuid", "uuid")))
            root = chain_of.get(parent, uuid or where)
            chain_of[uuid or where] = root
            if root not in chains:
                chains[root] = ConversationBuilder(
                    source, f"{source.name}:{len(chains) + 1}", {"format": FORMAT, "sidechain": True}
                )
            builder = chains[root]
        if record.get("sessionId"):
            main.meta.setdefault("session_id", record["sessionId"])
        message = field_of(source, record, "message", Mapping, where)
        timestamp = unix_time(record.get("timestamp"))
        if kind == "assistant":
            add_assistant_message(builder, message, where, timestamp)
        else:
            meta = {"is_meta": True} if record.get("isMeta") else {}
            add_user_message(builder, message, where, timestamp, record.get("toolUseResult"), meta)
    return [main.build(), *(chain.build() for chain in chains.values())]


# --------------------------------------------------------------------------- shared with stream-json


def add_assistant_message(
    builder: ConversationBuilder, message: Mapping[str, Any], where: str, timestamp: float | None
) -> None:
    """One assistant record/event (an API response), read by the Anthropic adapter.

    Records of the same response (``message.id``) join one item.
    """
    field_of(builder.source, message, "content", list, f"{where}.message")
    reply = read_reply(builder, "anthropic", message, f"{where}.message")
    meta: dict[str, Any] = {"model": message["model"]} if isinstance(message.get("model"), str) else {}
    if reply.usage is not None:
        meta["usage"] = reply.usage.to_dict()
    if reply.stop is not None:
        meta["stop"] = reply.stop
    response_id = message["id"] if isinstance(message.get("id"), str) else None
    for item in reply.conversation:
        builder.add_item(item, where, timestamp, meta, response_id=response_id)


def add_user_message(
    builder: ConversationBuilder,
    message: Mapping[str, Any],
    where: str,
    timestamp: float | None,
    tool_use_result: Any = None,
    meta: Mapping[str, Any] | None = None,
) -> None:
    """One user record/event, read by the Anthropic adapter: tool results become tool items, the rest a user item."""
    wire = {"role": "user", "content": message.get("content")}
    items = read_wire(builder, "anthropic", [wire], f"{where}.message")
    results = sum(item.role == "tool" for item in items)
    facts = tool_result_extra(tool_use_result) if results == 1 else {}
    for item in items:
        builder.add_item(item, where, timestamp, meta, facts if item.role == "tool" else None)


def tool_result_extra(raw: Any) -> dict[str, Any]:
    """The short structured facts of ``toolUseResult`` (Read's nested ``file`` included)."""
    extra = small_scalars(raw, RESULT_COPIES)
    if isinstance(raw, Mapping) and isinstance(raw.get("file"), Mapping):
        for key, value in small_scalars(raw["file"], RESULT_COPIES).items():
            extra.setdefault(key, value)
    return extra
