"""Aider ``.aider.chat.history.md`` chat histories.

Each ``# aider chat started at <local time>`` line starts a session, i.e. a
conversation (``meta["started_at"]``: that time read as UTC, since the file
does not say the zone). Within a session, lines are

- ``#### <text>``: user input; consecutive lines are one message (slash
  commands such as ``/add`` included, as typed);
- ``> <text>``: aider's console (model banner, token counts, confirmation
  prompts, commit notices). It is not sent to the model, so it makes no item;
  its lines are kept in ``meta["console"]`` of the item they follow (of the
  header before the first item), trailing markdown line breaks removed;
- anything else: the assistant's reply, ``<thinking-content-...>`` sections
  as thinking blocks (an unclosed one, from an interrupted reply, runs to the
  end of the reply).

Aider edits files itself from the SEARCH/REPLACE or whole-file blocks in the
reply; each console line ``Applied edit to <path>`` is turned into a call
``ToolCall(name="apply_edit", arguments={"path"})``, added to the reply it
follows, and a result with that line, so applied edits count as tool calls.
The file keeps no per-turn timestamps, no ``/run`` output and no file
contents sent to the model, so those are absent. The banner's model name
(``Main model:`` / ``Model:``) goes to ``Header.meta["model"]`` and on every
assistant item. A line of a reply that happens to start with ``#### `` or
``> `` cannot be told from user input or console output; the file format
gives no way to.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..conversation import Block, Conversation, JSONValue, Text, Thinking, ToolCall
from ._common import ConversationBuilder, Source, unix_time

FORMAT = "aider"
SESSION = re.compile(r"^# aider chat started at (.*\S|.)\s*$")
"""The header of a session: what follows, trailing blanks left out. Not ``(.+?)\\s*$``: each step of a lazy
group tries the blanks after it again, quadratic in a line of blanks with a character after them (a line of
30,000 took 12 s)."""
MODEL = re.compile(r"^(?:Main model|Model): (\S+) with (\S+) edit format")
APPLIED = re.compile(r"^Applied edit to (.+)$")
THINKING_OPEN = re.compile(r"^<thinking-content-[0-9a-f]+>\s*$")
THINKING_CLOSE = re.compile(r"^</thinking-content-[0-9a-f]+>\s*$")


def matches(source: Source) -> bool:
    return (
        source.document is None
        and re.search(r"^# aider chat started at ", source.text[:50000], re.MULTILINE) is not None
    )


def load(source: Source) -> list[Conversation]:
    conversations: list[Conversation] = []
    for start, lines in _sessions(source.lines):
        header = SESSION.match(lines[0])
        meta: dict[str, JSONValue] = {"format": FORMAT}
        if header:
            meta.update(started_at=unix_time(header.group(1)), started_at_local=header.group(1))
            lines = lines[1:]
            start += 1
        builder = ConversationBuilder(source, f"{source.name}:{len(conversations)}", meta)
        _Session(builder).read(lines, start)
        conversations.append(builder.build())
    return conversations


def _sessions(lines: list[str]) -> Iterator[tuple[int, list[str]]]:
    """``(1-based first line, lines)`` per session; text before the first header is a session too."""
    starts = [i for i, line in enumerate(lines) if SESSION.match(line)]
    if not starts or any(line.strip() for line in lines[: starts[0]]):
        starts.insert(0, 0)
    for n, begin in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        yield begin + 1, lines[begin:end]


def _kind(line: str) -> str:
    if line.startswith("#### ") or line.rstrip() == "####":
        return "user"
    if line.startswith("> ") or line.rstrip() == ">":
        return "console"
    return "reply"


def _runs(lines: list[str]) -> Iterator[tuple[str, list[str]]]:
    """Consecutive lines of one kind; blank lines join replies, and end user and console runs.

    A bare ``>`` inside a reply is the reply's: aider writes each console line with its marker space and the
    markdown break (an empty one as ``">  "``), so a lone ``>`` is a line of the reply's code, the close of a tag
    whose attributes span lines (``<Layout\n  title="..."\n>``). Read as console, it cut the reply in two."""
    kind, run = "", list[str]()
    for line in lines:
        this = "reply" if not line.strip() or (kind == "reply" and line.rstrip("\r\n") == ">") else _kind(line)
        if this != kind and run:
            yield kind, run
            run = []
        kind = this
        run.append(line)
    if run:
        yield kind, run


class _Session:
    def __init__(self, builder: ConversationBuilder) -> None:
        self.builder = builder
        self.edits = 0

    def read(self, lines: list[str], first_line: int) -> None:
        line = first_line
        for kind, run in _runs(lines):
            where = f"line {line}"
            if kind == "user":
                self.builder.add_user([Text("\n".join(_strip(text, 5) for text in run))])
            elif kind == "console":
                self._console([_strip(text, 2) for text in run], where)
            else:
                blocks = _reply_blocks(run)
                if blocks:
                    self.builder.add_assistant(blocks, where, meta=self._model_meta())
            line += len(run)

    def _model_meta(self) -> dict[str, JSONValue]:
        model = self.builder.meta.get("model")
        return {"model": model} if model else {}

    def _console(self, lines: list[str], where: str) -> None:
        for text in lines:
            model = MODEL.match(text)
            if model:
                self.builder.meta.setdefault("model", model.group(1))
                self.builder.meta.setdefault("edit_format", model.group(2))
        paths = [m.group(1) for m in map(APPLIED.match, lines) if m]
        calls = []
        for path in paths:
            self.edits += 1
            calls.append(ToolCall(f"aider-edit-{self.edits}", "apply_edit", {"path": path}))
        if calls:
            self.builder.add_assistant(calls, where, meta=self._model_meta(), merge=True)
        if not self.builder.annotate_last("console", lines):
            self.builder.meta.setdefault("console", []).extend(lines)
        for call in calls:
            self.builder.add_result(call.id, f"Applied edit to {call.arguments['path']}", where)


def _strip(line: str, prefix: int) -> str:
    """A user or console line without its marker and the trailing two-space line break."""
    return line[prefix:].rstrip()


def _reply_blocks(run: list[str]) -> list[Block]:
    blocks: list[Block] = []
    text: list[str] = []
    thinking: list[str] | None = None

    def flush(parts: list[str], kind: type) -> None:
        body = "\n".join(parts).strip("\n")
        if body.strip():
            blocks.append(kind(body))

    for line in run:
        if thinking is None and THINKING_OPEN.match(line):
            flush(text, Text)
            text, thinking = [], []
        elif thinking is not None and THINKING_CLOSE.match(line):
            flush(thinking, Thinking)
            thinking = None
        elif thinking is not None:
            thinking.append(line)
        else:
            text.append(line)
    if thinking is not None:
        flush(thinking, Thinking)
    flush(text, Text)
    return blocks
