"""Claude Code session transcripts (``~/.claude/projects/<project>/<session>.jsonl``).

One JSON record per line. ``user`` and ``assistant`` records carry an
Anthropic Messages ``message``, read by the Anthropic adapter (the one reader
of that format: images by file id, cache marks and unknown blocks survive
and are written back); the functions here that hand those messages over are
shared with the stream-json importer, whose events have the same shape.

- An API response is often written as several ``assistant`` records sharing
  ``message.id`` (one per content block). They become one assistant item
  (``meta["response_id"]``), so parallel calls stay in one round; the usage
  of the response's last record is kept once, in ``meta["usage"]``. A message
  Claude Code wrote itself in the model's place (``model: "<synthetic>"``: an
  API error, "No response requested." after an interruption) made no request:
  its all-zero usage is not a reported one and is not kept.
- A ``user`` record with tool results gives one tool item per result
  (``is_error`` as recorded); the record's ``toolUseResult`` adds its short
  scalar fields (``filePath``, ``interrupted``, ``numFiles``...) to the tool
  item's ``meta["facts"]``. Other user content is a user item; ``isMeta`` records
  (hook feedback, injected reminders) are marked ``meta["is_meta"]``. Results
  that open the file (a session continued from another file) answer a call it
  does not hold: each is kept as an observation (:data:`EARLIER_OUTPUT`), as is
  a result further in whose call's record the file lost (:data:`LOST_CALL_OUTPUT`,
  counted in ``meta["unmatched_results"]``, with a warning). Empty text blocks
  (an MCP tool's empty output, a streamed response's empty block: the API
  refuses them in a request) are left out, counted in ``meta["empty_text_blocks"]``.
- ``isSidechain`` records (a subagent's own chat: inline in older versions,
  a file of its own, ``subagents/agent-<id>.jsonl``, in 2.1.x) form a
  separate conversation per subagent (``agentId``) or, without one, per
  ``parentUuid`` chain, after the main one. A file with no chat of a main
  chain (a subagent's own file) is the subagent's conversation(s) alone: its
  first one is conversation 0, opened by the prompt the parent agent gave it
  (the request it works on, read as its task).
- A message the person sent while the agent was working (an ``attachment``
  of type ``queued_command``) is a user item marked ``meta["queued"]``, placed
  after the results of the round it arrived in, where the model read it;
  ``meta["prompt_origin"]`` says whether the person typed it (``human``) or
  the harness wrote it (``task-notification``).
- ``isCompactSummary`` user records (the summary a compaction left in place
  of the chat before it) are marked ``meta["compact_summary"]``; the kind of
  prompt a record says it is (``origin.kind``: ``human``, a task
  notification...) goes to ``meta["prompt_origin"]``.
- Records that are not turns of the chat (:data:`BOOKKEEPING`: the session
  title, permission mode, file-history snapshots and deltas, hook progress,
  queue operations, bridge and PR links, ``system`` lines such as the
  compaction boundary, ``attachment`` lines such as a deferred tool list) are
  counted in ``meta["skipped"]``, ``system`` and ``attachment`` by subtype.
  A record type not listed there (a version newer than this importer) is
  skipped and counted in ``meta["unknown_records"]``, never a refusal of the
  file.

Records are taken in file order; the ``parentUuid`` tree is not re-walked, so
a session that was rewound keeps its abandoned branch in place. Two
exceptions: a record written before the record its ``parentUuid`` names (a
tool result a line or two ahead of its call, as 2.1.9x and later can write it)
is read right after that record (:func:`~._order.after_parents`; how many in
``meta["reordered"]``); and the chat a reopened session wrote into the file a
second time (:func:`resumed_copies`: as a new chain, or as a second branch of
the chat already there) is read once, where it first happened,
and its copy counted in ``meta["skipped"]``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..adapters.anthropic.wire import empty_text
from ..adapters.recorded import result_call_id
from ..conversation import Conversation, Item, JSONObject, JSONValue
from ._common import ConversationBuilder, Source, field_of, kind_of, read_reply, read_wire, small_scalars, unix_time
from ._order import after_parents

logger = logging.getLogger(__name__)

FORMAT = "claude-code"
RECORD_TYPES = frozenset({"user", "assistant"})
BOOKKEEPING = frozenset(
    {
        "queue-operation",
        "file-history-snapshot",
        "file-history-delta",
        "summary",
        "system",
        "attachment",
        "progress",
        "permission-mode",
        "mode",
        "ai-title",
        "custom-title",
        "last-prompt",
        "agent-name",
        "agent-color",
        "agent-setting",
        "bridge-session",
        "pr-link",
        "tag",
        "cost-state",
        "worktree-state",
        "atis-latch",
        "frame-link",
        "history-suppression",
        "teleported-from",
    }
)
"""Record types Claude Code writes beside the chat (titles, modes, file history, UI state): not turns of it."""
BY_SUBTYPE = {"system": "subtype", "attachment": "attachment.type", "progress": "data.type"}
"""Bookkeeping counted by their subtype (where it is recorded), so that a compaction boundary shows as one."""
LINK_KEYS = ("sessionId", "parentUuid", "leafUuid", "messageId")
LEADING_RECORDS = 20
"""How many leading records detection reads: recent versions open with several bookkeeping records."""
RESUMED_COPY = "resumed copy"
"""How the chat records a reopened session wrote again are counted in ``meta["skipped"]``."""
SYNTHETIC_MODEL = "<synthetic>"
"""The ``model`` of an assistant message the harness wrote (no API request behind it)."""
RESULT_COPIES = frozenset({"stdout", "stderr", "content", "originalFile", "oldString", "newString", "prompt"})
"""``toolUseResult`` fields that repeat the result text or the call's input: kept out of ``extra``."""


def matches(source: Source) -> bool:
    """Records with a string ``type`` (no stream-json ``session_id``, no rollout ``payload``), one of the leading
    ones carrying a session link (``sessionId``...) before any that is neither linked nor a known bookkeeping
    record would decide otherwise; or only known bookkeeping records (a session with no chat in it, such as one
    teleported elsewhere). A leading record of a type not known yet (a sub-agent's ``fork-context-ref`` of
    2.1.2xx) is passed over when a linked record follows it: a new record type never refuses the file."""
    leading = source.leading_records(LEADING_RECORDS)
    unknown = False
    for record in leading:
        if record is None or not isinstance(record.get("type"), str) or {"session_id", "payload"} & record.keys():
            return False
        if any(key in record for key in LINK_KEYS):
            return True
        unknown = unknown or record["type"] not in BOOKKEEPING
    return bool(leading) and not unknown


def load(source: Source) -> list[Conversation]:
    main = ConversationBuilder(source, f"{source.name}:0", {"format": FORMAT})
    chains: dict[str, ConversationBuilder] = {}  # sidechain root uuid -> its conversation
    chain_of: dict[str, str] = {}  # record uuid -> sidechain root uuid
    queued: list[tuple[Item, str, float | None]] = []  # messages sent mid-turn, held until the round's results are in
    records, reordered = after_parents(list(source.records()))
    if reordered:
        main.meta["reordered"] = reordered
    copied = resumed_copies(records)
    for number, record in records:
        where = f"line {number}"
        kind = kind_of(source, record, "type", where)
        if number in copied:
            main.skip(RESUMED_COPY)
            continue
        root = _chain_root(record, where, chain_of)  # bookkeeping records link a chain too
        if root is None and _queued_command(record):
            queued.extend((item, where, unix_time(record.get("timestamp"))) for item in _queued(main, record, where))
            continue
        if kind in BOOKKEEPING:
            main.skip(_bookkeeping_name(kind, record))
            continue
        if kind not in RECORD_TYPES:
            main.skip_unknown(kind or "(no type)")
            continue
        builder = main
        if root is not None:
            if root not in chains:
                chains[root] = ConversationBuilder(
                    source, f"{source.name}:{len(chains) + 1}", {"format": FORMAT, "sidechain": True}
                )
            builder = chains[root]
        if record.get("sessionId"):
            main.meta.setdefault("session_id", record["sessionId"])
        message = field_of(source, record, "message", Mapping, where)
        timestamp = unix_time(record.get("timestamp"))
        if builder is main and not _only_results(message):
            _release(main, queued)
        if kind == "assistant":
            add_assistant_message(builder, message, where, timestamp)
        else:
            add_user_message(builder, message, where, timestamp, record.get("toolUseResult"), _user_marks(record))
    _release(main, queued)
    if chains and not main.started:
        return _subagent_file(main, list(chains.values()))
    return [main.build(), *(chain.build() for chain in chains.values())]


def _subagent_file(main: ConversationBuilder, chains: list[ConversationBuilder]) -> list[Conversation]:
    """The conversations of a file that holds a subagent's chat and nothing of a main chain
    (``subagents/agent-<id>.jsonl``, an older ``agent-<id>.jsonl``): the subagent's, first, with what the main
    chain counted (bookkeeping, the session) carried over, not an empty conversation in front of it that
    ``--index 0`` would replay as nothing."""
    first = chains[0]
    first.skipped.update(main.skipped)
    first.unknown.update(main.unknown)
    for key, value in main.meta.items():
        first.meta.setdefault(key, value)
    return [chain.build() for chain in chains]


def resumed_copies(records: Sequence[tuple[int, JSONObject]]) -> frozenset[int]:
    """Line numbers of the chat records a reopened session wrote again, after the ones they copy.

    They are the same turns, not new ones: the model made each once, and read twice they would be turns it never
    made (and a replay's requests would no longer line up with the responses). Two shapes are known:
    :func:`_new_chain_copies` and :func:`_branch_copies`.
    """
    return _new_chain_copies(records) | _branch_copies(records)


def _new_chain_copies(records: Sequence[tuple[int, JSONObject]]) -> frozenset[int]:
    """Reopening a conversation (the VS Code extension, 2.0.x) can write the chat so far once more into the same
    file: a new chain (a user record with no ``parentUuid`` that is no compaction's) whose records all carry the
    reopening's timestamp and repeat the responses already there (same ``message.id``); the records after them,
    stamped as they happen, go on from there."""
    copied: set[int] = set()
    responses: set[str] = set()
    chat_seen = False
    for index, (_, record) in enumerate(records):
        if _chat(record) and chat_seen and _starts_a_chain(record):
            region = [(n, r) for n, r in _stamped_with(records, index, record.get("timestamp")) if _chat(r)]
            repeated = {_response_id(r) for _, r in region if r.get("type") == "assistant"} - {""}
            if repeated and repeated <= responses:
                copied.update(n for n, _ in region)
        if _chat(record):
            chat_seen = True
            if record.get("type") == "assistant":
                responses.add(_response_id(record))
    return frozenset(copied)


def _branch_copies(records: Sequence[tuple[int, JSONObject]]) -> frozenset[int]:
    """Resuming a session (the CLI, 2.0.x) can write its last turns once more as a second branch: each record with a
    new ``uuid`` but its original timestamp, response (``message.id``) and content, the first linked to the record
    the originals follow. A copy starts at an assistant record repeating one read before: the same content
    again, or a response read before that is not the latest (whose records can be interleaved with their results;
    a copy's blocks can differ from the first writing in a signature, or hold one whose first record was lost).
    It runs while each record is of a response read before or only answers calls already answered."""
    copied: set[int] = set()
    written: set[str] = set()
    responses: set[str] = set()
    answered: set[str] = set()
    latest = ""
    copying = False
    for number, record in records:
        if not _chat(record):
            continue
        message = record.get("message")
        content = message.get("content") if isinstance(message, Mapping) else None
        if record.get("type") == "assistant":
            response = _response_id(record)
            written_as = f"{response} {json.dumps(content, sort_keys=True)}"
            again = response in responses and (copying or response != latest)
            copying = bool(response) and (written_as in written or again)
            written.add(written_as)
            responses.add(response)
            latest = latest if copying else response
        else:
            results = _result_ids(content)
            copying = copying and bool(results) and results <= answered
            answered |= results
        if copying:
            copied.add(number)
    return frozenset(copied)


def _result_ids(content: object) -> set[str]:
    """The call ids a user message's tool results answer; empty when it holds anything but results."""
    if not isinstance(content, list) or not content:
        return set()
    results = [call_id for call_id in map(result_call_id, content) if call_id is not None]
    return set(results) if len(results) == len(content) else set()


def _chat(record: JSONObject) -> bool:
    """A user or assistant record of the main chain (a ``type`` that is no string is none: :func:`load` reports it)."""
    kind = record.get("type")
    return isinstance(kind, str) and kind in RECORD_TYPES and not record.get("isSidechain")


def _starts_a_chain(record: JSONObject) -> bool:
    """A user record with no parent that no compaction explains (a compaction's records name the one before)."""
    return (record.get("type") == "user" and "parentUuid" in record and record["parentUuid"] is None
            and not record.get("logicalParentUuid") and not record.get("isCompactSummary"))


def _stamped_with(
    records: Sequence[tuple[int, JSONObject]], start: int, stamp: object
) -> list[tuple[int, JSONObject]]:
    """The records from ``start`` on written in the same instant (records with no timestamp go along)."""
    region = []
    for number, record in records[start:]:
        if record.get("timestamp") not in (stamp, None):
            break
        region.append((number, record))
    return region


def _response_id(record: JSONObject) -> str:
    message = record.get("message")
    value = message.get("id") if isinstance(message, Mapping) else None
    return value if isinstance(value, str) else ""


def _queued_command(record: JSONObject) -> bool:
    attachment = record.get("attachment")
    return record.get("type") == "attachment" and isinstance(attachment, Mapping) and (
        attachment.get("type") == "queued_command"
    )


def _queued(builder: ConversationBuilder, record: Mapping[str, Any], where: str) -> list[Item]:
    """The message a ``queued_command`` attachment carries, as user items: typed by the person
    (``commandMode: "prompt"``) or written by the harness (a task notification)."""
    attachment = record["attachment"]
    prompt = attachment.get("prompt")
    if not prompt:
        return []
    mode = attachment.get("commandMode")
    origin = "human" if mode in (None, "prompt") else str(mode)
    marks = {"queued": True, "prompt_origin": origin}
    items = read_wire(builder, "anthropic", [{"role": "user", "content": prompt}], f"{where}.attachment.prompt")
    return [replace(item, meta={**item.meta, **marks}) for item in items]


def _only_results(message: JSONObject) -> bool:
    """Whether a user message holds tool results only (more of the round in progress)."""
    content = message.get("content")
    return isinstance(content, list) and bool(content) and all(
        isinstance(block, Mapping) and block.get("type") == "tool_result" for block in content
    )


def _release(builder: ConversationBuilder, queued: list[tuple[Item, str, float | None]]) -> None:
    """The messages held back, now that the round they arrived in has its results: where the model read them."""
    for item, where, timestamp in queued:
        builder.add_item(item, where, timestamp)
    queued.clear()


def _chain_root(record: JSONObject, where: str, chain_of: dict[str, str]) -> str | None:
    """The sidechain an ``isSidechain`` record belongs to (``None`` for the main chain).

    Recent versions name the subagent (``agentId``: one subagent, one
    conversation, across its compactions). Otherwise a record joins its
    parent's chain; a compaction boundary starts with no parent but names the
    record before it (``logicalParentUuid``), so the chain goes on through it.
    """
    if not record.get("isSidechain"):
        return None
    parent, logical, uuid, agent = (value if isinstance(value, str) else "" for value in
                                    map(record.get, ("parentUuid", "logicalParentUuid", "uuid", "agentId")))
    root = f"agent {agent}" if agent else chain_of.get(parent or logical, uuid or where)
    chain_of[uuid or where] = root
    return root


def _bookkeeping_name(kind: str, record: JSONObject) -> str:
    """``kind``, or ``kind/subtype`` for the types counted by subtype (:data:`BY_SUBTYPE`)."""
    path = BY_SUBTYPE.get(kind)
    if path is None:
        return kind
    value: object = record
    for key in path.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    return f"{kind}/{value}" if isinstance(value, str) else kind


def _user_marks(record: JSONObject) -> dict[str, JSONValue]:
    """What the record's own fields say about a user turn: harness-written (``isMeta``), a compaction's summary,
    and the kind of prompt it is."""
    marks: dict[str, JSONValue] = {}
    if record.get("isMeta"):
        marks["is_meta"] = True
    if record.get("isCompactSummary"):
        marks["compact_summary"] = True
    origin = record.get("origin")
    if isinstance(origin, Mapping) and isinstance(origin.get("kind"), str):
        marks["prompt_origin"] = origin["kind"]
    return marks


# --------------------------------------------------------------------------- shared with stream-json


def add_assistant_message(
    builder: ConversationBuilder, message: Mapping[str, Any], where: str, timestamp: float | None
) -> None:
    """One assistant record/event (an API response), read by the Anthropic adapter.

    Records of the same response (``message.id``) join one item.
    """
    field_of(builder.source, message, "content", list, f"{where}.message")
    content = _without_empty_text(builder, message["content"], where)
    if message["content"] and not content:  # a streamed response's record of an empty block: the others have theirs
        return
    reply = read_reply(builder, "anthropic", {**message, "content": content}, f"{where}.message")
    meta: dict[str, JSONValue] = {"model": message["model"]} if isinstance(message.get("model"), str) else {}
    if reply.usage is not None and message.get("model") != SYNTHETIC_MODEL:
        meta["usage"] = reply.usage.to_dict()
    if reply.stop is not None:
        meta["stop"] = reply.stop
    response_id = message["id"] if isinstance(message.get("id"), str) else None
    for item in reply.conversation:
        builder.add_item(item, where, timestamp, meta, response_id=response_id)


def add_user_message(
    builder: ConversationBuilder,
    message: JSONObject,
    where: str,
    timestamp: float | None,
    tool_use_result: object = None,
    meta: JSONObject | None = None,
) -> None:
    """One user record/event, read by the Anthropic adapter: tool results become tool items, the rest a user item."""
    opening = not builder.started
    recorded = message.get("content")
    content, unmatched = _without_unmatched_results(builder, _without_empty_text(builder, recorded, where))
    for output in unmatched:
        opener = EARLIER_OUTPUT if opening else LOST_CALL_OUTPUT
        observation = {"role": "user", "content": [{"type": "text", "text": opener}, *output]}
        for item in read_wire(builder, "anthropic", [observation], f"{where}.message"):
            builder.add_item(item, where, timestamp, meta)
    if unmatched and not opening:
        builder.meta["unmatched_results"] = builder.meta.get("unmatched_results", 0) + len(unmatched)
        logger.warning("%s: a tool result answers no call the file holds (its call's record is missing): "
                       "kept as an observation", where)
    if recorded and not content:  # every block was another call's output, or empty
        return
    items = read_wire(builder, "anthropic", [{"role": "user", "content": content}], f"{where}.message")
    results = sum(item.role == "tool" for item in items)
    facts = tool_result_extra(tool_use_result) if results == 1 else {}
    for item in items:
        builder.add_item(item, where, timestamp, meta, facts if item.role == "tool" else None)


EARLIER_OUTPUT = "[Output of a tool call made before this recording begins]"
"""The opening given to a tool result found at the very start of a recording, kept as a user message: a transcript
that continues a session recorded in another file (resumed, ``--continue``) can open with the result of a call made
in that file. It is still what the model saw; sent as a tool result it would answer no call (a hard API error), so
it is kept as an observation (:mod:`contextfold.reading.harness` reads this opening as one, never as the person)."""

LOST_CALL_OUTPUT = "[Output of a tool call whose record this recording lost]"
"""The opening given to a tool result further in whose call the file does not hold (a record lost to an interrupted
write): kept, as :data:`EARLIER_OUTPUT` is, rather than refusing the whole session over one record, as the
recording's calls without a result are answered (:func:`contextfold.replay.run.answered`)."""


def _without_unmatched_results(builder: ConversationBuilder, content: object) -> tuple[object, list[list[object]]]:
    """``content`` without the tool results that answer no call recorded before them, and the content of each.

    Results are already placed after their calls (:func:`~._order.after_parents`), so such a result answers a call
    the file does not hold: one made in the file a resumed session continues (at the opening), or one whose record
    the file lost (an interrupted write, a checkout that rewrote the transcript)."""
    if not isinstance(content, list):
        return content, []
    kept: list[object] = []
    unmatched: list[list[object]] = []
    for block in content:
        call_id = result_call_id(block)  # an id that is not a string: the adapter's to refuse
        if call_id is not None and call_id not in builder.recorded_call_ids():
            unmatched.append(_output_blocks(block.get("content")))
        else:
            kept.append(block)
    return kept, unmatched


def _output_blocks(output: object) -> list[object]:
    """A tool result's content as message blocks, without empty text: an empty output (a command that printed
    nothing) is a valid tool result but an invalid text block, and it says nothing the opening does not."""
    blocks = list(output) if isinstance(output, list) else [{"type": "text", "text": str(output or "")}]
    return [block for block in blocks if not empty_text(block)]


def _without_empty_text(builder: ConversationBuilder, content: object, where: str) -> object:
    """``content`` without its empty text blocks, at the top and in tool results' content.

    Claude Code records them as they came: a tool (an MCP server's) that returned an empty text block, a streamed
    response's record of an empty first block. The API refuses an empty text block in a request, so the model was
    never sent one; refusing the whole session over it lost 3 of 30 transcripts of one gathering. Counted in the
    conversation's meta and logged; anything else malformed is still the adapter's to refuse."""
    if not isinstance(content, list):
        return content
    dropped = 0
    kept: list[object] = []
    for block in content:
        if empty_text(block):
            dropped += 1
        elif isinstance(block, Mapping) and block.get("type") == "tool_result" and isinstance(block.get("content"), list):
            inner = [part for part in block["content"] if not empty_text(part)]
            dropped += len(block["content"]) - len(inner)
            kept.append({**block, "content": inner} if len(inner) < len(block["content"]) else block)
        else:
            kept.append(block)
    if dropped:
        builder.meta["empty_text_blocks"] = builder.meta.get("empty_text_blocks", 0) + dropped
        logger.info("%s: %d empty text block(s) left out (the API refuses them; the model was not sent them)",
                    where, dropped)
    return kept


def tool_result_extra(raw: object) -> dict[str, JSONValue]:
    """The short structured facts of ``toolUseResult`` (Read's nested ``file`` included)."""
    extra = small_scalars(raw, RESULT_COPIES)
    if isinstance(raw, Mapping) and isinstance(raw.get("file"), Mapping):
        for key, value in small_scalars(raw["file"], RESULT_COPIES).items():
            extra.setdefault(key, value)
    return extra
