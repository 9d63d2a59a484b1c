"""The scripted model of the history-tool tests: it reads chunks until its history was compacted, then looks back.

:class:`LookbackServer` is a :class:`~scripted_server.ToolLoopServer` (every
request checked against its format, the task present, within the window)
with another script:

1. ``read_chunk`` for chunks 0 to ``rounds - 1``, one per request; the
   framework's tool returns :func:`lookback_chunk`, where chunk 1 alone holds
   :data:`NEEDLE` and the last chunk is :data:`BIG_LINES` lines long, more
   than contextfold sends whole (it is offloaded: the request holds a preview
   naming its ref);
2. when :data:`NEEDLE` is no longer in the request (compaction took chunk 1
   out; if it is still there the test would prove nothing, which is a
   failure) and a summary names ``search_history`` (the agent was offered
   it: its summaries must say so), ``search_history`` for it;
3. ``read_history`` on the big output, by the ref its preview names, lines
   :data:`READ_LINES` (with ``offloaded=False``, for a framework whose
   requests carry every output whole, the last chunk is an ordinary one and
   ``read_history`` reads the needle's line by the ref the search gave);
4. :data:`FINAL`.

Each step checks that the previous call's answer reached the request: the
matching line with the needle, then the exact lines read. What went wrong is
in :attr:`LookbackServer.missed`.
"""

from __future__ import annotations

import json
import re

from scripted_server import TOOL, ToolLoopServer, chunk_text

from contextfold.testing.scripted import Call, Seen, Turn

NEEDLE = "rollback token RB-7731-QX"
ROUNDS = 10
BIG_LINES = 3_000
READ_LINES = (2_001, 2_002)
FINAL = "Looked back: found the token and read the offloaded rows."


def lookback_chunk(chunk: int, offloaded: bool = True) -> str:
    """The framework tool's output: a log chunk, the needle in chunk 1, the last chunk an oversized listing."""
    if chunk == ROUNDS - 1 and offloaded:
        return f"== chunk {chunk} ==\n" + "\n".join(f"offloaded row {n} of {BIG_LINES}" for n in range(1, BIG_LINES))
    text = chunk_text(chunk)
    return text + f"\n{NEEDLE} issued for chunk 1" if chunk == 1 else text


class LookbackServer(ToolLoopServer):
    """The server (see the module docstring)."""

    def __init__(self, *, offloaded: bool = True) -> None:
        self.missed: list[str] = []
        self.big_ref: str | None = None
        self.offloaded = offloaded
        super().__init__(rounds=ROUNDS)

    def _script(self, seen: Seen) -> Turn:
        body = json.dumps(seen.body)
        if seen.step < self.rounds:
            return Turn(f"Reading chunk {seen.step}.", (Call(TOOL, {"chunk": seen.step}),))
        if seen.step == self.rounds:
            if NEEDLE in body:
                self.missed.append("chunk 1 is still in the request: compaction did not take it out")
            if "search_history(" not in body:
                self.missed.append("no summary in the request names search_history: the agent does not know it")
            found = re.search(r'read_history\((?:\\*")+(it_[0-9a-f]+)(?:\\*")+, (?:\\*")+START-END', body)
            if self.offloaded and (found is None or f"offloaded row {READ_LINES[0] - 1} " in body):
                self.missed.append("the big output was sent whole, or its preview names no ref")
            self.big_ref = found.group(1) if found else ""
            return Turn("Looking back.", (Call("search_history", {"query": NEEDLE}),))
        if seen.step == self.rounds + 1:
            result = "\n".join(seen.results)
            if not any(line.startswith(">") and NEEDLE in line for line in result.splitlines()):
                self.missed.append(f"search_history's line did not reach the request: {result[:400]!r}")
            if self.offloaded:
                lines = "{}-{}".format(*READ_LINES)
            else:  # the needle's line, by the ref and line the search gave
                hit = re.search(r"^--- (\S+) · .* · line (\d+) of", result, re.MULTILINE)
                self.big_ref, lines = (hit.group(1), hit.group(2)) if hit else ("", "1")
            return Turn("Reading the rows.", (Call("read_history", {"ref": self.big_ref or "", "lines": lines}),))
        if seen.step == self.rounds + 2:
            rows = "\n".join(seen.results).splitlines()[1:3]
            wanted = ([f"offloaded row {n - 1} of {BIG_LINES}" for n in READ_LINES] if self.offloaded
                      else [f"{NEEDLE} issued for chunk 1"])
            if rows != wanted:
                self.missed.append(f"read_history's lines did not reach the request: {seen.results!r:.400}")
        return Turn(FINAL)
