"""Claude Code session transcripts (``~/.claude/projects/<project>/<session>.jsonl``).

One JSON record per line. ``user`` and ``assistant`` records carry an
Anthropic Messages ``message``; the functions here that convert those
messages are shared with the stream-json importer, whose events have the
same shape.

- An API response is often written as several ``assistant`` records sharing
  ``message.id`` (one per content block). They become one assistant item
  (``meta["response_id"]``), so parallel calls stay in one round; the usage
  of the response's last record is kept once, in ``meta["usage"]``.
- A ``user`` record with ``tool_result`` blocks gives one tool item per block
  (``is_error`` as recorded); the record's ``toolUseResult`` adds its short
  scalar fields (``filePath``, ``interrupted``, ``numFiles``...) to
  ``ToolResult.extra``. Other user content is a user item; ``isMeta`` records
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

from ..conversation import Block, Conversation, Document, Image, Opaque, RedactedThinking, Text, Thinking, ToolCall
from ..adapters import adapter_for
from ._common import ConversationBuilder, Source, field_of, small_scalars, unix_time

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
        and record.get("type") in RECORD_TYPES | BOOKKEEPING
        and "session_id" not in record
        and any(key in record for key in LINK_KEYS)
    )


def load(source: Source) -> list[Conversation]:
    main = ConversationBuilder(source, f"{source.name}:0", {"format": FORMAT})
    chains: dict[str, ConversationBuilder] = {}  # sidechain root uuid -> its conversation
    chain_of: dict[str, str] = {}  # record uuid -> sidechain root uuid
    for number, record in source.records():
        where = f"line {number}"
        kind = record.get("type")
        if kind in BOOKKEEPING:
            main.skip(kind)
            continue
        if kind not in RECORD_TYPES:
            raise source.error(where, f"unknown record type {kind!r}")
        builder = main
        if record.get("isSidechain"):
            root = chain_of.get(record.get("parentUuid") or "", record.get("uuid") or where)
            chain_of[record.get("uuid") or where] = root
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
    """One assistant record/event; records of the same response (``message.id``) join one item."""
    content = field_of(builder.source, message, "content", list, f"{where}.message")
    blocks = [_assistant_block(builder, block, f"{where}.message.content[{i}]") for i, block in enumerate(content)]
    meta: dict[str, Any] = {}
    if isinstance(message.get("model"), str):
        meta["model"] = message["model"]
    if isinstance(message.get("usage"), Mapping):
        meta["usage"] = adapter_for("anthropic").read_usage(message["usage"]).to_dict()
    if isinstance(message.get("stop_reason"), str):
        meta["stop_reason"] = message["stop_reason"]
    response_id = message.get("id")
    builder.add_assistant(blocks, where, timestamp, meta, response_id if isinstance(response_id, str) else None)


def add_user_message(
    builder: ConversationBuilder,
    message: Mapping[str, Any],
    where: str,
    timestamp: float | None,
    tool_use_result: Any = None,
    meta: Mapping[str, Any] | None = None,
) -> None:
    """One user record/event: tool results become tool items, anything else a user item."""
    content = message.get("content")
    if isinstance(content, str):
        builder.add_user([Text(content)], timestamp, meta)
        return
    if not isinstance(content, list):
        raise builder.source.error(f"{where}.message.content", "expected a string or a list of blocks")
    results = [b for b in content if isinstance(b, Mapping) and b.get("type") == "tool_result"]
    extra = tool_result_extra(tool_use_result) if len(results) == 1 else {}
    others: list[Block] = []
    for index, block in enumerate(content):
        at = f"{where}.message.content[{index}]"
        if not isinstance(block, Mapping):
            raise builder.source.error(at, "a content block must be an object")
        if block.get("type") == "tool_result":
            call_id = field_of(builder.source, block, "tool_use_id", str, at)
            is_error = block.get("is_error")
            builder.add_result(
                call_id,
                _result_content(builder, block.get("content"), f"{at}.content"),
                at,
                is_error if isinstance(is_error, bool) else None,
                timestamp,
                extra,
                meta,
            )
        else:
            others.append(_content_block(block))
    if others:
        builder.add_user(others, timestamp, meta)


def tool_result_extra(raw: Any) -> dict[str, Any]:
    """The short structured facts of ``toolUseResult`` (Read's nested ``file`` included)."""
    extra = small_scalars(raw, RESULT_COPIES)
    if isinstance(raw, Mapping) and isinstance(raw.get("file"), Mapping):
        for key, value in small_scalars(raw["file"], RESULT_COPIES).items():
            extra.setdefault(key, value)
    return extra


def _assistant_block(builder: ConversationBuilder, block: Any, where: str) -> Block:
    if not isinstance(block, Mapping):
        raise builder.source.error(where, "a content block must be an object")
    kind = block.get("type")
    if kind == "tool_use":
        call_id = field_of(builder.source, block, "id", str, where)
        name = field_of(builder.source, block, "name", str, where)
        arguments = block.get("input")
        if not isinstance(arguments, Mapping):
            raise builder.source.error(f"{where}.input", "tool_use input must be an object")
        return ToolCall(call_id, name, dict(arguments))
    if kind == "thinking" and isinstance(block.get("thinking"), str):
        signature = block.get("signature")
        return Thinking(block["thinking"], signature if isinstance(signature, str) else None)
    if kind == "redacted_thinking" and isinstance(block.get("data"), str):
        return RedactedThinking(block["data"])
    return _content_block(block)


def _content_block(block: Mapping[str, Any]) -> Block:
    """Text, image and document blocks; anything else passes through as an opaque block."""
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return Text(block["text"])
    source = block.get("source")
    if kind == "image" and isinstance(source, Mapping):
        if source.get("type") == "url":
            return Image(url=source.get("url"))
        return Image(data=source.get("data"), media_type=source.get("media_type"))
    if kind == "document" and isinstance(source, Mapping):
        return Document(source)
    return Opaque(block, provider="anthropic")


def _result_content(builder: ConversationBuilder, content: Any, where: str) -> str | tuple[Block, ...]:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not all(isinstance(b, Mapping) for b in content):
        raise builder.source.error(where, "tool_result content must be a string or a list of blocks")
    return tuple(_content_block(b) for b in content)
