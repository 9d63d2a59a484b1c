"""The ``--requests`` dump: every request a replay sent, one JSON object per line.

It holds everything the replay's figures are computed from, so that
:func:`contextfold.replay.check.recount` can recompute them from the file
alone. The fields of a line:

``step``
    the request point, numbered from 0;
``index``
    the index (in the recording's items) of the recorded reply the step precedes;
``t``
    the request's time in unix seconds, ``null`` when the recording has no times;
``kind``
    ``"agent"``, or ``"summarizer"`` for a request a strategy made to summarize;
``output_tokens``
    the reply's tokens: for the agent, the recorded reply counted with the
    replay's tokenizer; for a summarizer, what its usage reported (0 when unknown);
``tools``
    the tool definitions, in Chat Completions form;
``messages``
    the messages in Chat Completions form, system items first (``to_openai``);
``summaries``
    the positions in ``messages`` of the summaries a strategy wrote (read as
    none when absent), which the recount prices as LLM calls
    (:mod:`.summary_price`).

Lines are in the order the requests were sent: a step's summarizer requests
before its agent request.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from ..conversation import JSONValue
from ..errors import SessionFormatError
from ..private_files import replace_file
from .render import Message

_FIELDS: dict[str, type | tuple[type, ...]] = {
    "step": int,
    "index": int,
    "t": (int, float, type(None)),
    "kind": str,
    "output_tokens": int,
    "tools": list,
    "messages": list,
}


@dataclass(frozen=True)
class DumpedRequest:
    """One line of a dump, read back."""

    step: int
    index: int
    time_s: float | None
    kind: str
    output_tokens: int
    tools: list[dict[str, JSONValue]]
    messages: list[dict[str, JSONValue]]
    summaries: tuple[int, ...] = ()


class RequestWriter:
    """Writes a dump line by line; each message's JSON was made once, when its item was rendered.

    Used as a context manager. The dump holds the conversation, so it is
    owner-only and replaces the file at ``path`` atomically when the block
    ends (:func:`~contextfold.private_files.replace_file`); a replay that
    fails leaves the old file as it was.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._stack = ExitStack()
        self._file = io.TextIOWrapper(self._stack.enter_context(replace_file(self.path)), encoding="utf-8")

    def __enter__(self) -> RequestWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._file.flush()
        self._stack.__exit__(kind, error, traceback)

    def write(
        self,
        *,
        step: int,
        index: int,
        time_s: float | None,
        kind: str,
        output_tokens: int,
        tools_json: str,
        messages: Sequence[Message],
        summaries: Sequence[int] = (),
    ) -> None:
        head = json.dumps({"step": step, "index": index, "t": time_s, "kind": kind, "output_tokens": output_tokens,
                           "summaries": list(summaries)})
        body = ",".join(m.json for m in messages)
        self._file.write(f'{head[:-1]}, "tools": {tools_json}, "messages": [{body}]}}\n')


def read_requests(path: str | os.PathLike[str]) -> Iterator[DumpedRequest]:
    """Every request of a dump, in order; a malformed line raises :class:`SessionFormatError` naming it."""
    with Path(path).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as error:
                raise SessionFormatError(str(path), f"line {number}", f"not JSON: {error.msg}") from None
            if not isinstance(data, dict):
                raise SessionFormatError(str(path), f"line {number}", "a request line is a JSON object")
            for name, kind in _FIELDS.items():
                if not isinstance(data.get(name), kind) or isinstance(data.get(name), bool):
                    raise SessionFormatError(str(path), f"line {number}, field {name!r}", "missing or of the wrong type")
            summaries = data.get("summaries", [])
            if not isinstance(summaries, list) or not all(
                isinstance(n, int) and not isinstance(n, bool) and 0 <= n < len(data["messages"]) for n in summaries
            ):
                raise SessionFormatError(str(path), f"line {number}, field 'summaries'", "positions of messages expected")
            yield DumpedRequest(data["step"], data["index"], data["t"], data["kind"], data["output_tokens"],
                                data["tools"], data["messages"], tuple(summaries))
