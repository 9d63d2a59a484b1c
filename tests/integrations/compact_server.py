"""The scripted model of the ``compact_context`` tests: it reads a few chunks, asks for a compaction, checks it came.

:class:`CompactServer` is a :class:`~scripted_server.ToolLoopServer` (every
request checked against its format, the task present, within the window)
with another script, and it is the summarizer's model too (the integration
is given a :func:`summarizer` pointed at it), so the summary request is seen:

1. ``read_chunk`` for chunks 0 to :data:`ROUNDS` - 1, one per request: about
   half the trigger of the 8,000-token window, under it (nothing compacts by
   itself);
2. ``compact_context`` with :data:`FOCUS`;
3. the next request must be the compacted one: the tool's answer accepted the
   request, a summary written by this server (:data:`SUMMARY`) is in it and
   chunk 0 is not; and a summary request came in between, with the focus in
   it. Then :data:`FINAL`.

What went wrong is in :attr:`CompactServer.missed`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from scripted_server import TOOL, ToolLoopServer

from contextfold.summarizers.llm import ModelSummarizer
from contextfold.summarizers.prompts import SYSTEM_PROMPT
from contextfold.testing.scripted import Call, Seen, Turn

ROUNDS = 4
FOCUS = "keep the ERROR lines of chunks 0-3 and the request ids FOCUS-7731"
SUMMARY = "SUMMARY-OF-CHUNKS-0-TO-3: chunk 0 to 3 read; next, answer with the ERROR count."
FINAL = "Compacted when asked, then answered."
_SUMMARY_SIGN = SYSTEM_PROMPT[:60]


def summarizer(server: ToolLoopServer) -> ModelSummarizer:
    """A model summarizer whose requests go to ``server`` (Chat Completions), its own prompt (not riding the agent's)."""
    return ModelSummarizer(provider="openai", model="gpt-4.1-mini", base_url=server.base_url("openai"),
                           api_key="test", max_retries=0, ride_cache=False, timeout_s=30.0)


class CompactServer(ToolLoopServer):
    """The server (see the module docstring)."""

    def __init__(self) -> None:
        self.missed: list[str] = []
        self.summary_requests: list[str] = []
        self.compacted_request: str | None = None
        super().__init__(rounds=ROUNDS)

    @staticmethod
    def _is_summary(body: Mapping[str, Any]) -> bool:
        return _SUMMARY_SIGN in json.dumps(body)

    def _check(self, provider: str, body: Mapping[str, Any]) -> list[str]:
        return [] if self._is_summary(body) else super()._check(provider, body)

    def _script(self, seen: Seen) -> Turn:
        if self._is_summary(seen.body):
            self.summary_requests.append(json.dumps(seen.body))
            return Turn(f"<summary>\n{SUMMARY}\n</summary>")
        if seen.step < self.rounds:
            return Turn(f"Reading chunk {seen.step}.", (Call(TOOL, {"chunk": seen.step}),))
        if seen.step == self.rounds:
            return Turn("Chunks read: compacting before the count.", (Call("compact_context", {"focus": FOCUS}),))
        if seen.step == self.rounds + 1:
            body = json.dumps(seen.body)
            self.compacted_request = body
            if not any("Compaction accepted" in result for result in seen.results):
                self.missed.append(f"compact_context was not accepted: {seen.results!r:.300}")
            if SUMMARY not in body:
                self.missed.append("the request after compact_context holds no summary")
            if "== chunk 0 ==" in body:
                self.missed.append("chunk 0 is still in the request after compact_context")
            if not any(FOCUS in request for request in self.summary_requests):
                self.missed.append("no summary request carried the focus")
        return Turn(FINAL)
