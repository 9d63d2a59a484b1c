"""persist: a tool output too large for the context goes to disk; a preview stays.

Runs on new items only, before they are ever sent, so it never breaks the
cached prefix. The file name comes from the item id alone (the id itself
when it is plain, else a hash of it: see
:func:`~contextfold.private_files.safe_name`), in an owner-only folder that
must not be a link, written whole under a temporary name and renamed into
place (:func:`~contextfold.private_files.write_new`), and the preview says
how to read the rest. If the disk fails or the folder is unsafe, the output
is cut to the same preview without a path and the event says so (and the
log): the transcript still holds the whole output. With
``Policy.persist_min_fill_fraction`` it waits for the request to fill: an
output goes to disk only when the request, with it whole, is past that share
of the trigger; under it the output the agent just fetched, which its next
reply quotes, is sent whole (issue 28: a README read whole to be rewritten was
cut to a preview at 14k of a 32k window). A delegated agent's report (the
output of a ``Task`` tool) waits for the request to fill whatever that
setting: it is the work product of the sub-agent's many turns, which no read
fetches again, and the agent acts on it next (a 27k-character design cut to
its first 2,000 characters, the sub-agent's own tool calls, at 14k of a 32k
window, as the agent wrote the plan from it).

An oversized output that arrived for this request is sent whole when a
compaction of older turns can make its room: while the request's such outputs,
newest first, take at most ``Policy.persist_whole_tail_fraction`` of the tail a
summary keeps verbatim (:attr:`~contextfold.pipeline.base.Budget.whole_output_tokens`).
The summary due at this request then pays for it (it keeps the last round whole),
and at a later request the output is an old one, cleared or summarized as any
other. Only past that bound is it previewed on arrival (issue 28: a file read
previewed as it arrived, at 11k of a 32k window, while the agent's next replies
edited from its lines). Once such an output is older than the latest round and
a compaction is due, it is the first to go: :func:`persist_old` previews it
before any other output is cleared or any turn summarized (a 48,000-character
file sent whole for its own request, then cleared with the whole session's
smaller reads at the next trigger, had cost every one of them).

:func:`offload` does the same when an item is added, before the transcript
or the history hold it, so a large output lives outside the history only:
in a stored session, as a blob of its store named by the SHA-256 of its
bytes (``provenance.offloaded.blob``; the JSONL folder keeps it as a file, its path in
``provenance.offloaded.saved_to``), so any worker that resumes the session reads it back
and retention removes it with the session; with an explicit results folder,
as a file there (:mod:`contextfold.pipeline.offload_store` keeps it, and its
:func:`~contextfold.pipeline.offload_store.saved_output` reads either back). An output too large even for a
transcript record that cannot be saved either becomes an error result that
still answers its call (:class:`~contextfold.errors.OutputNotStored`). With
``persist_min_fill_fraction`` set, :func:`offload` leaves the output whole in
the history (up to :data:`MAX_KEPT_CHARS`) and the stage decides, with the
request in hand.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ...actions import error_lines, result_action
from ...conversation import Conversation, Header, Item, Offloaded
from ...errors import OutputNotStored, StoreError, UnsafePath
from ...events import Event
from ...lookback.names import HISTORY_TOOLS, names_history_tools
from ...summarizers._outputs import file_content
from ...summarizers._reports import is_report
from ...summarizers._text import clip
from ..base import Budget, Policy
from ..edits import MARK, apply_changes, head_tail, is_compacted, recent_round_start, result_text, tool_items, with_result
from ..offload_store import Blobs, save_output

STAGE = "persist"
MAX_KEPT_CHARS = 8 * 1024 * 1024
"""An output longer than this that cannot be saved is not kept whole anywhere (a transcript record holds
32 MiB, up to 4 bytes a character): it becomes an error result with its preview."""
PREVIEW_ERROR_LINES = 6
"""The last error lines of an output's omitted part that its preview shows (a CI log's failing step is
often far from both ends)."""
PREVIEW_ERROR_CHARS = 300
log = logging.getLogger(__name__)
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/=\r\n]{2000,}")


def _binary_descriptor(text: str) -> str | None:
    """A short description if most of ``text`` is one base64 (or similar binary-as-text) payload."""
    match = max(_BASE64_RUN.finditer(text), key=lambda m: len(m.group(0)), default=None)
    if match is None or len(match.group(0)) < len(text) * 0.6:
        return None
    payload = match.group(0)
    kind = "PNG image" if payload.lstrip().startswith("iVBOR") else "JPEG image" if payload.lstrip().startswith("/9j/") else "binary data"
    return f"{MARK}: base64 payload of about {len(payload) * 3 // 4:,} bytes ({kind}) replaced by this note]"


def is_oversized(item: Item, policy: Policy, count_item: Callable[[Item], int]) -> bool:
    """A tool output too large to send whole (a preview goes instead)."""
    result = item.tool_result
    if item.role != "tool" or result is None or result.tool_name in HISTORY_TOOLS or is_compacted(item):
        return False
    text = result_text(item)
    return len(text) > policy.persist_max_chars or count_item(item) > policy.persist_max_tokens


def waits_for_fill(item: Item, policy: Policy) -> bool:
    """Whether the stage, with the request in hand, decides whether ``item`` goes: with
    ``persist_min_fill_fraction`` set, and for a delegated agent's report always (see the module doc)."""
    return bool(policy.persist_min_fill_fraction) or is_report(item)


def persisted(item: Item, policy: Policy, header: Header, results_dir: str | os.PathLike[str] | None,
              blobs: Blobs | None = None) -> tuple[Item, str | None]:
    """``item`` with its output kept in the session's ``blobs`` (else saved in ``results_dir``) and replaced
    by a preview saying where; and why keeping it failed, if it did (the preview then says nowhere). ``header``
    is the request's: the preview names the history tools only as :func:`names_history_tools` says."""
    text = result_text(item)
    failure, saved, digest = None, None, None
    try:
        if blobs is not None:
            digest = blobs.put_blob(text.encode("utf-8", "surrogatepass"))
            saved = blobs.blob_path(digest)  # a path only where blobs are files
        elif results_dir is not None:
            saved = save_output(results_dir, item.id, text)
    except (OSError, UnsafePath, StoreError) as error:
        log.warning("could not save the output of item %.80r; only a preview is kept: %s", item.id, error)
        failure = str(error)
    where = _where(item, text, saved, names_history_tools(policy, header))
    result = with_result(item, _preview(text, policy, where, item), STAGE)
    if digest is None and saved is None:
        return result, failure
    offloaded = Offloaded(blob=digest, saved_to=None if saved is None else str(saved))
    return replace(result, provenance=replace(result.provenance, offloaded=offloaded)), failure


def _where(item: Item, text: str, saved: Path | None, history_tools: bool) -> str:
    """How the agent reads the rest: the history tools by the item's ref when it has them (the history keeps
    the whole output, in the store or the saved file), else the saved file's path, else nothing."""
    if history_tools:
        return (f'full output ({len(text):,} characters) kept: read_history({json.dumps(item.id)}, "START-END") '
                f"reads its lines, search_history finds them")
    if saved is not None:
        return f"full output ({len(text):,} characters) saved to {saved}; read parts of it with your file tools"
    return ""


def offload(item: Item, policy: Policy, header: Header, results_dir: Path | None,
            count_item: Callable[[Item], int], blobs: Blobs | None = None,
            whole_tokens: int = 0) -> tuple[Item, list[Event]]:
    """At add time: an oversized output goes to the session's blobs (or disk) now, and only its preview is
    kept (see the module doc). The blob is durable before the item naming it is recorded. ``header`` is the
    one the item will be sent with (what tools the agent has decides what the preview tells it to call).
    An output of at most ``whole_tokens`` (the session's :func:`~contextfold.pipeline.base.whole_output_tokens`)
    may be sent whole: it stays whole in the history, and the stage decides with the request in hand."""
    if not is_oversized(item, policy, count_item):
        return item, []
    text = result_text(item)
    for_the_stage = ((waits_for_fill(item, policy) or count_item(item) <= whole_tokens)
                     and len(text) <= MAX_KEPT_CHARS)  # decided with the request
    if (results_dir is not None or blobs is not None) and not for_the_stage:
        saved, failure = persisted(item, policy, header, results_dir, blobs)
        if failure is None:
            return saved, [Event(STAGE, "persisted", (item.id,), detail=f"saved {len(text):,} characters on arrival")]
    if len(text) <= MAX_KEPT_CHARS:
        return item, []  # kept whole; the stage cuts it before it is sent
    error = OutputNotStored(f"the output of item {item.id!r} ({len(text):,} characters) is too large to keep and "
                            f"could not be saved either; only its head and tail were kept")
    log.warning("%s", error)
    result = with_result(item, f"[{type(error).__name__}: {error}]\n{_preview(text, policy, '', item)}", STAGE)
    output = result.tool_result
    if output is not None:
        result = result.with_blocks((replace(output, is_error=True),))
    return result, [Event(STAGE, "not_stored", (item.id,), detail=str(error))]


def _preview(text: str, policy: Policy, where: str, item: Item) -> str:
    p = policy
    descriptor = _binary_descriptor(text)
    if descriptor is not None:
        return f"{descriptor}\n{where}"
    note = f"; {where}" if where else ""
    middle = None if file_content(result_action(item)) else _omitted_errors
    return head_tail(text, p.preview_head_chars, p.preview_tail_chars, note, middle)


def _omitted_errors(omitted: str) -> str:
    """The last error lines the omitted part of an output reported, verbatim (a CI log's failing step, a test
    run's first traceback): without them a preview of a long log says nothing of what failed. None for what a
    read of a source file returned (an error line there is code)."""
    lines = error_lines(omitted)[-PREVIEW_ERROR_LINES:]
    if not lines:
        return ""
    shown = "\n".join(clip(line, PREVIEW_ERROR_CHARS) for line in lines)
    return f"{MARK}: the omitted part's last error lines, verbatim:]\n{shown}\n{MARK}: end of the omitted part]\n"


def persist(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
    fill = budget.policy.persist_min_fill_fraction
    tokens = budget.count(conversation)
    if fill and tokens <= fill * budget.trigger_tokens:
        return conversation, []  # room for the outputs the agent just fetched, whole: its next reply quotes them
    chosen: list[int] = []
    room = budget.whole_output_tokens
    for index, item in reversed(list(tool_items(conversation, range(budget.new_from, len(conversation))))):
        if not is_oversized(item, budget.policy, budget.count_item):
            continue
        if tokens <= budget.trigger_tokens and is_report(item):
            continue  # a delegated agent's report, whole while there is room: the agent acts on it next
        size = budget.count_item(item)
        if size <= room:
            room -= size
            continue  # whole, newest first: older turns are compacted to make its room, not the output cut
        chosen.append(index)
    return _previewed(conversation, budget, sorted(chosen), "oversized outputs")


def persist_old(conversation: Conversation, budget: Budget) -> tuple[Conversation, list[Event]]:
    """The outputs too large to send whole that went whole for their own request (:func:`persist`), older than
    the latest round, to disk with a preview: what a due compaction takes first (:mod:`..escalate`)."""
    chosen = [index for index, item in tool_items(conversation, range(recent_round_start(conversation, 1)))
              if is_oversized(item, budget.policy, budget.count_item)]
    return _previewed(conversation, budget, chosen, "oversized outputs, now old")


def _previewed(conversation: Conversation, budget: Budget, indices: list[int],
               what: str) -> tuple[Conversation, list[Event]]:
    """The outputs at ``indices`` saved and replaced by their previews; a ``disk_failed`` event for those that
    could not be saved (their previews say nowhere)."""
    changes: dict[int, Item] = {}
    failures: list[str] = []
    for index in indices:
        changes[index], failure = persisted(conversation[index], budget.policy, conversation.header, budget.results_dir)
        if failure is not None:
            failures.append(f"{conversation[index].id}: {failure}")
    conversation, events = apply_changes(conversation, budget, changes, STAGE, "persisted", f"{len(changes)} {what}")
    if failures:
        events.append(Event(STAGE, "disk_failed", tuple(f.split(":", 1)[0] for f in failures), detail="; ".join(failures)))
    return conversation, events
