"""Codex CLI session files (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{timestamp, type, payload}``, ``type`` one of

- ``session_meta``: the session (``meta["session_id"]``, ``cwd``,
  ``cli_version``, ``originator``, ``forked_from_id``...); its instructions
  (``base_instructions.text``, or ``instructions`` in older versions) are
  ``Header.system``. A fork or a subagent's file repeats its parent's
  ``session_meta`` after its own: only the first one counts.
- ``response_item``: the model's input and output items, exactly as the
  Responses API has them, so they are read by the Responses adapter (the one
  reader of that format; what it does not model survives as Opaque blocks):
  ``message`` (``developer`` messages before any turn form the header),
  ``reasoning``, ``function_call`` / ``custom_tool_call`` and their
  ``*_output`` items paired by ``call_id``, ``web_search_call`` (a server-side
  call whose result the model saw directly, kept in the assistant turn).
  ``local_shell_call`` and ``tool_search_call`` carry a ``call_id`` answered
  by a later output item, so they become a ``local_shell`` /
  ``tool_search`` call here. ``ghost_snapshot`` (an undo point, not sent to
  the model) is counted as skipped.
- ``event_msg``: what the UI was told. The conversation in it
  (``user_message``, ``agent_message``, ``agent_reasoning``, command and patch
  ends) repeats the ``response_item`` records, so it is counted as skipped;
  a ``user_message`` does say which user message the person typed (the
  others are the harness's: AGENTS.md instructions, environment context, a
  turn-aborted note), so that item is marked ``meta["prompt_origin"] = "human"``
  (not in a subagent's file, whose turns its parent agent wrote);
  ``token_count`` puts the usage of the response it follows
  (``info.last_token_usage``) on that response's assistant item and ends it;
  ``error`` / ``stream_error`` go to ``Header.meta["errors"]``.
- ``turn_context``: the model, effort and cwd of the turn that follows; the
  model goes to the assistant items' ``meta["model"]``.
- ``compacted``: a compaction; its summary is a user item marked
  ``meta["compact_summary"]`` (what Codex puts in the place of the history it
  dropped). A compaction made by the provider (``/responses/compact``) has no
  summary text: its ``replacement_history`` holds the provider's ``compaction``
  item (encrypted), read by the Responses adapter as a Summary, which is that
  marked item; the rest of that history (the person's messages, kept) is in
  the file already.

Rollouts written before the envelope existed (Codex CLI of mid 2025) open
with a bare header (``{id, timestamp, instructions, git}``, read as the
``session_meta``) and hold bare response items between
``{"record_type": "state"}`` markers (counted as skipped); they are read the
same way.

One model response spans several records (reasoning, text, parallel calls):
they form one assistant item, closed by the response's ``token_count``, the
outputs of all its calls (rollouts before the envelope have no token counts),
a user message or a compaction. A message
recorded while the response's calls await their outputs (the note Codex adds
when a command is approved) is placed after those outputs, so that every call
stays next to its result. A record type
not known yet is skipped and counted in ``Header.meta["unknown_records"]``; a
response item of a type the adapter does not model is kept as an Opaque block.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..adapters.openai_responses.wire import ITEM_TYPES
from ..conversation import Conversation, Item, JSONObject, Summary, Text, ToolCall
from ..errors import SessionFormatError
from ._common import ConversationBuilder, Source, call_arguments, field_of, kind_of, read_wire, unix_time
from .codex_exec import codex_usage

FORMAT = "codex-rollout"
RECORD_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
RESPONSES = "responses"
"""The adapter that reads ``response_item`` payloads."""
CALLS_WITH_OUTPUT = {"local_shell_call": "local_shell", "tool_search_call": "tool_search"}
"""Item types that are a call answered by a later output item, and the tool name they get."""
OUTPUTS = frozenset({"tool_search_output"})
"""Output items the Responses adapter does not pair (it reads them as Opaque user items)."""
NOT_SENT = frozenset({"ghost_snapshot"})
"""Response items Codex records but never sends to the model."""
LEGACY_ITEMS = ITEM_TYPES | {"local_shell_call"}
"""Response items a rollout written before the envelope opens with (detection looks for one, or a state marker)."""
SESSION_FIELDS = ("cwd", "cli_version", "originator", "model_provider", "forked_from_id")
META_FIELDS = ("agent_nickname", "agent_role")


def matches(source: Source) -> bool:
    record = source.first_record
    if record is None or "timestamp" not in record:
        return False
    if isinstance(record.get("payload"), Mapping):
        return _is_one_of(record.get("type"), RECORD_TYPES)
    return _legacy_header(record) and any(
        r is not None and ("record_type" in r or _is_one_of(r.get("type"), LEGACY_ITEMS))
        for r in source.leading_records(3)[1:]
    )


def _is_one_of(kind: object, kinds: frozenset[str]) -> bool:
    return isinstance(kind, str) and kind in kinds


def _legacy_header(record: JSONObject) -> bool:
    """The first line of a rollout written before the envelope: the session, bare."""
    return isinstance(record.get("id"), str) and not {"type", "payload", "role"} & record.keys()


def load(source: Source) -> list[Conversation]:
    return [_Rollout(source).run()]


class _Rollout:
    def __init__(self, source: Source) -> None:
        self.source = source
        self.builder = ConversationBuilder(source, f"{source.name}:0", {"format": FORMAT})
        self.meta_seen = False
        self.model: str | None = None
        self.subagent = False
        self.responses = 0
        self.response_open = False
        self.awaiting: set[str] = set()  # call ids of the response in progress without their output yet
        self.deferred: list[tuple[Item, str, float | None]] = []  # messages recorded while calls await outputs

    def run(self) -> Conversation:
        first = self.source.first_record
        legacy = first is not None and _legacy_header(first)
        for number, record in self.source.records():
            where = f"line {number}"
            kind = kind_of(self.source, record, "type", where)
            timestamp = unix_time(record.get("timestamp"))
            if legacy and "payload" not in record:
                self._legacy(record, where, timestamp)
                continue
            if kind not in RECORD_TYPES:
                self.builder.skip_unknown(kind or "(no type)")
                continue
            payload = field_of(self.source, record, "payload", Mapping, where)
            where = f"{where}.payload"
            if kind == "session_meta":
                self._session(payload)
            elif kind == "response_item":
                self._response_item(payload, where, timestamp)
            elif kind == "event_msg":
                self._event(payload, where)
            elif kind == "turn_context":
                self._turn_context(payload)
            else:
                self._compacted(payload, where, timestamp)
        self._flush()
        return self.builder.build()

    # -- records
    def _legacy(self, record: JSONObject, where: str, timestamp: float | None) -> None:
        """A line of a rollout written before the envelope: the bare header, a state marker or a response item."""
        if "record_type" in record:
            self.builder.skip(f"record_type/{record['record_type']}")
        elif not self.meta_seen and _legacy_header(record):
            self._session(record)
        else:
            self._response_item({k: v for k, v in record.items() if k != "timestamp"}, where, timestamp)

    def _session(self, meta: JSONObject) -> None:
        if self.meta_seen:  # a fork's or subagent's copy of its parent's
            self.builder.skip("session_meta/parent")
            return
        self.meta_seen = True
        source = meta.get("source")
        self.subagent = isinstance(source, Mapping) and "subagent" in source
        fields = self.builder.meta
        if isinstance(meta.get("id"), str):
            fields["session_id"] = meta["id"]
        fields.update({k: meta[k] for k in (*SESSION_FIELDS, *META_FIELDS) if isinstance(meta.get(k), str)})
        base = meta.get("base_instructions")
        instructions = base.get("text") if isinstance(base, Mapping) else meta.get("instructions")
        if isinstance(instructions, str) and instructions:
            self.builder.add_system(instructions)

    def _turn_context(self, context: JSONObject) -> None:
        model = context.get("model")
        if isinstance(model, str):
            self.model = model
            self.builder.meta.setdefault("model", model)
        self.builder.skip("turn_context")

    def _compacted(self, compacted: JSONObject, where: str, timestamp: float | None) -> None:
        summary = compacted.get("message")
        if summary is not None and not isinstance(summary, str):
            raise self.source.error(f"{where}.message", f"expected a string, found a {type(summary).__name__}")
        self._flush()
        self._end_response()
        if summary:
            self.builder.add_user([Text(summary)], timestamp, {"compact_summary": True})
            return
        kept = compacted.get("replacement_history") or []
        if not isinstance(kept, list):
            raise self.source.error(f"{where}.replacement_history", f"expected a list, found a {type(kept).__name__}")
        summaries = self._summaries_in(kept, f"{where}.replacement_history")
        for item in summaries:  # the rest of the history it kept (the person's messages) is in the file already
            self.builder.add_item(item, where, timestamp, {"compact_summary": True})
        if not summaries:
            self.builder.skip("compacted/without summary")

    def _summaries_in(self, kept: list[Any], where: str) -> list[Item]:
        """The items of a compaction's replacement history that hold its summary. The history is read only to
        find it: an entry the adapter cannot take there (an output of a call this file never recorded) is
        counted in ``skipped``, not a reason to refuse the file."""
        summaries = []
        for index, entry in enumerate(kept):
            try:
                items = read_wire(self.builder, RESPONSES, [entry], f"{where}[{index}]")
            except SessionFormatError:
                self.builder.skip("compacted/replacement item not read")
                continue
            summaries += [item for item in items if any(isinstance(block, Summary) for block in item.blocks)]
        return summaries

    def _event(self, event: Mapping[str, Any], where: str) -> None:
        kind = kind_of(self.source, event, "type", where) or "(no type)"
        if kind == "token_count":
            info = event.get("info")
            usage = info.get("last_token_usage") if isinstance(info, Mapping) else None
            if self.response_open and isinstance(usage, Mapping) and self.builder.set_usage(codex_usage(usage)):
                self._end_response()
            else:
                self.builder.skip("event_msg/token_count")
        elif kind in ("error", "stream_error"):
            self.builder.meta.setdefault("errors", []).append(event.get("message"))
        else:
            if kind == "user_message" and isinstance(event.get("message"), str) and not self.subagent:
                self.builder.mark_user(event["message"], {"prompt_origin": "human"})
            self.builder.skip(f"event_msg/{kind}")

    def _response_item(self, payload: JSONObject, where: str, timestamp: float | None) -> None:
        kind = kind_of(self.source, payload, "type", where)
        if kind in NOT_SENT:
            self.builder.skip(f"response_item/{kind}")
        elif kind in CALLS_WITH_OUTPUT:
            call_id = field_of(self.source, payload, "call_id", str, where)
            arguments, raw = call_arguments(payload.get("action", payload.get("arguments")))
            self._assistant(Item("assistant", (ToolCall(call_id, CALLS_WITH_OUTPUT[kind], arguments, raw),)), where,
                            timestamp)
        elif kind in OUTPUTS:
            call_id = field_of(self.source, payload, "call_id", str, where)
            output = {k: v for k, v in payload.items() if k not in ("type", "call_id")}
            self.builder.add_result(call_id, json.dumps(output, ensure_ascii=False), where, None, timestamp)
            self._answered(call_id)
        elif kind is None and payload.get("role") is None:
            self.builder.skip_unknown("response_item/(no type)")
        else:
            for item in read_wire(self.builder, RESPONSES, [payload], where):
                if item.role == "assistant":
                    self._assistant(item, where, timestamp)
                elif item.role == "tool":
                    self._output(item, where, timestamp)
                elif self.awaiting:
                    self.deferred.append((item, where, timestamp))
                else:
                    self._end_response()
                    self.builder.add_item(item, where, timestamp)

    # -- responses
    def _assistant(self, item: Item, where: str, timestamp: float | None) -> None:
        """Blocks of the response in progress: one assistant item per response, whatever lies between."""
        if not self.response_open:  # a new response: calls of the last one still waiting will not be answered
            self._flush()
        self.awaiting.update(block.id for block in item.blocks if isinstance(block, ToolCall))
        self.response_open = True
        meta = {k: v for k, v in item.meta.items() if k != "segments"}  # each record's own: the writer derives them
        if self.model is not None:
            meta["model"] = self.model
        self.builder.add_item(replace(item, meta=meta), where, timestamp, response_id=f"response{self.responses}")

    def _output(self, item: Item, where: str, timestamp: float | None) -> None:
        self.builder.add_item(item, where, timestamp)
        result = item.tool_result
        if result is not None:
            self._answered(result.call_id)

    def _answered(self, call_id: str) -> None:
        self.awaiting.discard(call_id)
        if not self.awaiting:  # the model answers outputs in a response of its own
            self._flush()
            self._end_response()

    def _flush(self) -> None:
        """The messages held back while calls awaited their outputs, now after them."""
        self.awaiting.clear()
        deferred, self.deferred = self.deferred, []
        if deferred:
            self._end_response()
        for item, where, timestamp in deferred:
            self.builder.add_item(item, where, timestamp)

    def _end_response(self) -> None:
        if self.response_open:
            self.responses += 1
            self.response_open = False
