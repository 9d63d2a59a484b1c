"""Codex CLI TUI session recordings (``CODEX_TUI_RECORD_SESSION`` JSON Lines).

Each record is ``{ts, dir, kind, ...}``. Most of a recording is screen
traffic: redraw requests, history inserts, log lines, approval ops and the
streamed deltas of messages and command output. Those are skipped by design
(counted in ``Header.meta["skipped"]``); the conversation comes from

- ``session_configured`` events: each starts a conversation (``/new`` starts
  another), with ``session_id``, ``model`` and ``reasoning_effort``;
- key presses: the user's prompts exist only as keystrokes, replayed here on
  a small line editor (characters, backspace, enter; only ``Press`` events,
  as releases repeat them; control chords ignored); a submitted line not
  starting with ``/`` is a user item timed at its Enter;
- ``agent_reasoning`` / ``agent_message`` (the final texts, not the deltas);
- ``exec_command_begin``/``end`` -> ``ToolCall(name="shell", arguments=
  {"command": argv, "cwd"})`` and its output (``stdout`` then ``stderr``;
  ``exit_code``, ``duration_s`` in ``extra``); ``patch_apply_begin``/``end``
  -> ``ToolCall(name="apply_patch", arguments={"changes"})``, ``is_error``
  when the patch failed;
- ``token_count``: the usage of the response it follows, on its assistant item.

A record kind or event type not listed here (a newer Codex) is skipped and
counted in ``Header.meta["unknown_records"]`` (``kind/<kind>``,
``event/<type>``) with a warning, never a refusal of the recording; a known
event that is malformed still raises.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..conversation import Conversation, JSONObject, JSONValue, Text, Thinking, ToolCall
from ._common import ConversationBuilder, Source, field_of, kind_of, unix_time
from .codex_exec import codex_usage

FORMAT = "codex-tui"
SCREEN_KINDS = frozenset({"app_event", "insert_history", "log_line", "op", "slash_command", "session_end"})
SCREEN_EVENTS = frozenset(
    {
        "agent_reasoning_delta",
        "agent_reasoning_raw_content_delta",
        "agent_reasoning_section_break",
        "agent_message_delta",
        "exec_command_output_delta",
        "exec_approval_request",
        "apply_patch_approval_request",
        "turn_diff",
        "task_started",
        "task_complete",
        "shutdown_complete",
        "background_event",
        "get_history_entry_response",
    }
)
CONVERSATION_EVENTS = frozenset(
    {
        "agent_reasoning",
        "agent_message",
        "exec_command_begin",
        "patch_apply_begin",
        "exec_command_end",
        "patch_apply_end",
        "token_count",
        "error",
        "stream_error",
    }
)
"""The events the conversation is made of (``session_configured`` opens one)."""
_KEY = re.compile(
    r"code: (?:Char\('((?:\\.|[^'\\])+)'\)|(\w+)(?:\([^)]*\))?), modifiers: KeyModifiers\(([^)]*)\), kind: (\w+)"
)
_RUST_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}


def matches(source: Source) -> bool:
    record = source.first_record
    return record is not None and {"ts", "dir", "kind"} <= record.keys()


def load(source: Source) -> list[Conversation]:
    return _Recording(source).run()


class _Composer:
    """The TUI's input line, replayed from key presses."""

    def __init__(self) -> None:
        self.chars: list[str] = []

    def key(self, event: str) -> str | None:
        """Apply one key event; the submitted line on Enter, else ``None``."""
        match = _KEY.search(event)
        if match is None or match.group(4) not in ("Press", "Repeat"):
            return None
        char, code, modifiers = match.group(1), match.group(2), match.group(3)
        if "CONTROL" in modifiers or "ALT" in modifiers:
            return None
        if char is not None:
            self.chars.append(_rust_char(char))
        elif code == "Backspace" and self.chars:
            self.chars.pop()
        elif code == "Enter" and "SHIFT" in modifiers:
            self.chars.append("\n")
        elif code == "Enter":
            line, self.chars = "".join(self.chars), []
            return line or None
        return None


def _rust_char(text: str) -> str:
    """A character as Rust's ``Debug`` prints it (``'\\''``, ``'\\u{301}'``)."""
    if not text.startswith("\\"):
        return text
    if text.startswith("\\u{"):
        return chr(int(text[3:-1], 16))
    return _RUST_ESCAPES.get(text[1], text[1])


class _Recording:
    def __init__(self, source: Source) -> None:
        self.source = source
        self.opened: list[ConversationBuilder] = []
        self.defaults: dict[str, JSONValue] = {}
        self.pending_prompts: list[tuple[str, float | None]] = []
        self.composer = _Composer()
        self.noise: Counter[str] = Counter()
        """Records skipped before the first session opened, counted into it when it does."""
        self.unknown: Counter[str] = Counter()

    def run(self) -> list[Conversation]:
        for number, record in self.source.records():
            where = f"line {number}"
            kind = kind_of(self.source, record, "kind", where)
            timestamp = unix_time(record.get("ts"))
            if kind == "codex_event":
                payload = field_of(self.source, record, "payload", Mapping, where)
                self._event(field_of(self.source, payload, "msg", Mapping, f"{where}.payload"), timestamp, where)
            elif kind == "key_event":
                line = self.composer.key(str(record.get("event", "")))
                if line is not None and not line.startswith("/"):
                    self._prompt(line, timestamp)
            elif kind == "session_start":
                self.defaults = {k: record[k] for k in ("model", "reasoning_effort", "cwd") if k in record}
            elif kind in SCREEN_KINDS:
                self._skip(kind)
            else:
                self._skip_unknown(f"kind/{kind}")
        if self.pending_prompts:  # typed, but no session ever started
            self._open({})
        return [builder.build() for builder in self.opened]

    def _skip(self, what: str) -> None:
        if self.opened:
            self.opened[-1].skip(what)
        else:
            self.noise[what] += 1

    def _skip_unknown(self, what: str) -> None:
        if self.opened:
            self.opened[-1].skip_unknown(what)
        else:
            self.unknown[what] += 1

    def _prompt(self, text: str, timestamp: float | None) -> None:
        if self.opened:
            self.opened[-1].add_user([Text(text)], timestamp)
        else:
            self.pending_prompts.append((text, timestamp))

    def _open(self, event: JSONObject) -> None:
        meta = {"format": FORMAT, **self.defaults}
        meta.update({k: event[k] for k in ("session_id", "model", "reasoning_effort") if k in event})
        builder = ConversationBuilder(self.source, f"{self.source.name}:{len(self.opened)}", meta)
        builder.skipped.update(self.noise)
        builder.unknown.update(self.unknown)
        self.noise, self.unknown = Counter(), Counter()
        self.opened.append(builder)
        for text, timestamp in self.pending_prompts:
            builder.add_user([Text(text)], timestamp)
        self.pending_prompts = []

    def _event(self, msg: JSONObject, timestamp: float | None, where: str) -> None:
        kind = kind_of(self.source, msg, "type", f"{where}.payload.msg")
        if kind == "session_configured":
            self._open(msg)
            return
        if kind in SCREEN_EVENTS:
            self._skip(str(kind))
            return
        if kind not in CONVERSATION_EVENTS:
            self._skip_unknown(f"event/{kind}")
            return
        if not self.opened:
            self._open({})
        builder = self.opened[-1]
        if kind == "agent_reasoning":
            builder.add_assistant([Thinking(str(msg.get("text", "")))], where, timestamp, merge=True)
        elif kind == "agent_message":
            builder.add_assistant([Text(str(msg.get("message", "")))], where, timestamp, merge=True)
        elif kind in ("exec_command_begin", "patch_apply_begin"):
            builder.add_assistant([_call(self.source, msg, where)], where, timestamp, merge=True)
        elif kind in ("exec_command_end", "patch_apply_end"):
            call_id = field_of(self.source, msg, "call_id", str, where)
            output = "\n".join(str(msg[k]) for k in ("stdout", "stderr") if msg.get(k))
            builder.add_result(
                call_id, output, where, True if msg.get("success") is False else None, timestamp, _result_extra(msg)
            )
        elif kind == "token_count":
            if not builder.set_usage(codex_usage(msg)):
                builder.skip("token_count_unattached")
        else:  # error, stream_error
            builder.meta.setdefault("errors", []).append(msg.get("message"))


def _call(source: Source, msg: JSONObject, where: str) -> ToolCall:
    call_id = field_of(source, msg, "call_id", str, where)
    if msg["type"] == "patch_apply_begin":
        return ToolCall(call_id, "apply_patch", {"changes": msg.get("changes") or {}})
    return ToolCall(call_id, "shell", {"command": msg.get("command"), "cwd": msg.get("cwd")})


def _result_extra(msg: Mapping[str, Any]) -> dict[str, JSONValue]:
    extra: dict[str, JSONValue] = {}
    if msg.get("exit_code") is not None:
        extra["exit_code"] = msg["exit_code"]
    duration = msg.get("duration")
    if isinstance(duration, Mapping):
        extra["duration_s"] = duration.get("secs", 0) + duration.get("nanos", 0) / 1e9
    if isinstance(msg.get("success"), bool):
        extra["success"] = msg["success"]
    return extra
