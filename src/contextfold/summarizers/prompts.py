"""What an LLM summarizer sends and how its answer is read: the prompts, the span as text, the answer's parts.

The model works in two phases: it first goes through the transcript inside
``<analysis>`` tags (a scratchpad, thrown away), then writes the summary
inside ``<summary>`` tags. Only the summary enters the conversation
(:func:`summary_from_answer`). Two styles of summary are offered:

* ``"structured"`` (default): the nine sections of
  :data:`~contextfold.summarizers.extractive.SECTION_TITLES`, the same ones the
  extractive summarizer fills, so either can follow the other;
* ``"continuation"``: five sections written as a hand-over note for whoever
  continues the task (:data:`CONTINUATION_TITLES`).

The span reaches the model as a plain-text transcript (:func:`render_units`),
one piece per atomic unit of the conversation, so that a request too long
for the summarizer's own window can drop its oldest units without splitting
a call from its result. An earlier summary in the span is passed separately,
as the earlier summary that the new one must carry forward: ours, and a
harness's own continuation summary (its sections that stay true), which as the
span's oldest unit would be the first left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..conversation import (
    Block,
    Conversation,
    Document,
    Image,
    Item,
    Opaque,
    RedactedThinking,
    Summary,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
)
from ..reading import Speaker, reading_of, without_own_lines
from ._reports import continuation_substance, is_continuation
from ._text import shorten, shorten_message
from .extractive import SECTION_TITLES

STRUCTURED, CONTINUATION = "structured", "continuation"
STYLES = (STRUCTURED, CONTINUATION)

CONTINUATION_TITLES = ("Task overview", "Current state", "Discoveries", "Next steps", "Context to preserve")
"""The sections of the continuation-style summary, in order."""

OUTPUT_CHARS = 20_000
"""Longest tool output or message passed to the summarizer whole; longer ones keep head and tail."""
ARGUMENT_CHARS = 2_000
"""Longest tool-call arguments (as JSON) passed whole."""
THINKING_CHARS = 1_500
"""Reasoning is shown shortened: its conclusions show in what the assistant did next."""
OMITTED_USER_CHARS = 400
"""Each user message of the units left out for room is still quoted, this far."""

SYSTEM_PROMPT = (
    "You write the hand-over summary of an AI agent's working session. The agent will continue from your "
    "summary alone: the part of the conversation you are given will no longer be visible to it. "
    "You have no tools. Do not call, request or imitate any tool call, and do not ask questions: "
    "answer with text only, in the format the user describes."
)

_GUIDANCE = {
    "Primary Request and Intent": (
        "everything the user asked for and why, with every constraint and preference they stated, verbatim where "
        "possible, including the text of an issue the assistant fetched with a tool"
    ),
    "Findings and Decisions": (
        "what the assistant found out and decided, newest first, quoting its own sentences that state them "
        "(which file and line, which value, which cause)"
    ),
    "Files and Code Sections": (
        "each file read, created or changed: its path and the lines that matter, quoted verbatim as "
        "`path:line: source line`, with the last change to each file as a code snippet"
    ),
    "Errors and fixes": (
        "the last error verbatim with the frame above it (the exception line and the failing frame, not the "
        "Traceback header), then each earlier error still open and what fixed the others; leave out errors of "
        "scratch scripts the assistant has abandoned"
    ),
    "Problem Solving": (
        "the last test command and its result line verbatim, the commands that changed the system, what was "
        "ruled out and what is still being investigated"
    ),
    "All user messages": (
        "every message the user wrote, in order, the latest one whole, quoted or very closely paraphrased; not "
        "tool output and not what the transcript labels [harness] (caveats, reminders, command echoes, interrupt "
        "and limit notices, format nags, earlier summaries)"
    ),
    "Pending Tasks": "what was asked for and is not finished",
    "Current Work": (
        "exactly what was being done at the end of the transcript: the last actions as `$ command` with the "
        "line their result ended on, naming files, functions and commands"
    ),
    "Optional Next Step": (
        "the next step, only if it follows directly from the user's latest request and the work in progress, "
        "and never an action the transcript shows already done; quote the words it rests on. If nothing is "
        "clearly next, say so"
    ),
    "Task overview": "what the user wants done, why, and the constraints and preferences they stated",
    "Current state": "what is finished, what is half done, and the state of files, tests and commands",
    "Discoveries": "what was learnt: causes found, approaches that failed and why, facts about the code or system",
    "Next steps": "the concrete next actions, in order, with the files and commands they involve",
    "Context to preserve": "exact identifiers, paths, error messages, user wording and decisions the continuation needs",
}

_ANALYSIS_STEP = (
    "First, inside <analysis></analysis> tags, go through the transcript from start to end and note what each "
    "user message asked, what the assistant did about it and why, which files and commands were involved, every "
    "error and its outcome, and where the work stood at the end. Check that nothing the user asked for is "
    "missing. This analysis is a scratchpad and will be discarded."
)


def section_titles(style: str) -> tuple[str, ...]:
    """The section headings a summary of ``style`` has, in order."""
    if style not in STYLES:
        raise ValueError(f"unknown summary style {style!r}; expected one of {', '.join(STYLES)}")
    return SECTION_TITLES if style == STRUCTURED else CONTINUATION_TITLES


def task_prompt(style: str, target_tokens: int, instructions: str | None = None, history_tools: bool = False) -> str:
    """The instructions that follow the transcript: the two phases, the sections, the length, the user's focus.
    Pointing at where a detail is serves an agent that can search its history (``history_tools``); one that cannot
    has only what the summary quotes."""
    titles = section_titles(style)
    sections = "\n".join(f"## {n}. {title}\n({_GUIDANCE[title]})" for n, title in enumerate(titles, 1))
    text = (
        f"Write the summary that will replace the transcript above.\n\n{_ANALYSIS_STEP}\n\n"
        f"Then, inside <summary></summary> tags, write the summary with exactly these {len(titles)} sections, "
        f"as markdown headings, in this order:\n\n{sections}\n\n"
        f"Keep the summary under about {target_tokens:,} tokens. Exact paths, identifiers, commands, error "
        "messages and the user's own words are worth more than description; quote lines verbatim with where "
        "they came from rather than listing names, leave out a section with nothing to say rather than "
        "writing a count or a placeholder, and leave out pleasantries. "
        "If an earlier summary is given, carry every fact it holds into the new summary unless the transcript "
        "shows it is no longer true. "
        + ("The agent can still search the transcript's exact lines (search_history), so name where details are "
           "rather than copying long output." if history_tools else
           "What the summary leaves out is gone from the agent's view, so quote the lines it will need rather than "
           "pointing at them.")
    )
    if instructions and instructions.strip():
        text += f"\n\nThe user gave these instructions for this summary; follow them:\n{instructions.strip()}"
    return text


def riding_instruction(style: str, target_tokens: int, instructions: str | None, kept_before: int,
                       kept_after: int, history_tools: bool = False) -> str:
    """The last user message of a summary request that is the agent's own conversation: who writes, what part.

    The conversation above it is the agent's; the summary replaces all of it
    but its first ``kept_before`` messages and its last ``kept_after``, which
    stay verbatim around the summary.
    """
    kept = [f"its first {_messages(kept_before)}"] if kept_before else []
    kept += [f"its last {_messages(kept_after)}"] if kept_after else []
    scope = ("Summarize the conversation above" + (f" except {' and '.join(kept)}, which stay verbatim around "
                                                  "your summary" if kept else "") + ".")
    return f"{SYSTEM_PROMPT}\n\n{scope}\n\n{task_prompt(style, target_tokens, instructions, history_tools)}"


def _messages(count: int) -> str:
    return "message" if count == 1 else f"{count} messages"


def frame(units: Sequence[str], earlier_summary: str | None, omitted: str | None) -> str:
    """The material part of the request: the earlier summary, then the transcript (with a note of what was left out)."""
    parts = []
    if earlier_summary:
        parts.append(f"<earlier_summary>\n{earlier_summary}\n</earlier_summary>")
    body = "\n\n".join(([omitted] if omitted else []) + list(units)) or "(no messages)"
    parts.append(f"<transcript>\n{body}\n</transcript>")
    return "\n\n".join(parts)


# --------------------------------------------------------------------------- the span as text


@dataclass(frozen=True)
class RenderedSpan:
    """A span as text: its earlier summary (if it began with one) and one piece of transcript per unit.

    ``unit_items`` counts the items of each unit; ``unit_user_messages`` holds
    the user messages of each unit, quoted when the unit has to be left out.
    """

    earlier_summary: str | None
    units: tuple[str, ...]
    unit_items: tuple[int, ...]
    unit_user_messages: tuple[tuple[str, ...], ...]


def render_span(items: Sequence[Item]) -> RenderedSpan:
    """The span as the summarizer reads it: roles, text, tool calls with arguments, outputs and errors."""
    earlier = [without_own_lines(b.body).strip() for item in items for b in item.blocks if isinstance(b, Summary)]
    continuations = [item for item in items if is_continuation(item)]
    if continuations:  # the harness's own summary: the newest holds the others; never left out as the oldest unit
        earlier.append(continuation_substance(continuations[-1].text))
    rest = [item for item in items
            if not any(isinstance(b, Summary) for b in item.blocks) and not is_continuation(item)]
    conversation = Conversation(rest)
    units, sizes, users = [], [], []
    for start, end in conversation.units():
        chunk = rest[start:end]
        units.append("\n\n".join(_render_item(item) for item in chunk))
        sizes.append(len(chunk))
        users.append(tuple(reading.words for reading in map(reading_of, chunk) if reading.person))
    return RenderedSpan("\n\n".join(earlier) or None, tuple(units), tuple(sizes), tuple(users))


def omission_note(items: int, user_messages: Sequence[str]) -> str:
    """What stands in for the oldest units when they do not fit: how many items, and their user messages."""
    note = (
        f"[The first {items} messages of this part of the conversation were left out: the summarizer's "
        "context window could not hold them."
    )
    if user_messages:
        note += f" The user messages among them, shortened:\n{quote_user_messages(user_messages)}\n"
    return note + "]"


def quote_user_messages(messages: Sequence[str]) -> str:
    """User messages as a list, each shortened to :data:`OMITTED_USER_CHARS`."""
    return "\n".join(f"- {shorten_message(text, OMITTED_USER_CHARS)}" for text in messages)


def _render_item(item: Item) -> str:
    result = item.tool_result
    if result is not None:
        status = " (error)" if result.is_error else ""
        name = f" {result.tool_name}" if result.tool_name else ""
        return f"[tool result{name} for {result.call_id}{status}]\n{shorten(_result_text(result).rstrip(), OUTPUT_CHARS)}"
    lines = [f"[{_speaker(item)}]"]
    for block in item.blocks:
        lines.append(_render_block(block))
    return "\n".join(line for line in lines if line)


def _speaker(item: Item) -> str:
    """Who an item's label names: a user-role message the person did not write is ``harness`` (or an
    observation, a demonstration), so the model never quotes it as the user's request."""
    if item.role != "user":
        return item.role
    speaker = reading_of(item).speaker
    return "user" if speaker is Speaker.PERSON else speaker.value


def _render_block(block: Block) -> str:
    if isinstance(block, Text):
        return shorten(block.text, OUTPUT_CHARS)
    if isinstance(block, ToolCall):
        arguments = json.dumps(dict(block.arguments), ensure_ascii=False, default=str)
        return f"-> call {block.name} ({block.id}): {shorten(arguments, ARGUMENT_CHARS)}"
    if isinstance(block, Thinking):
        return f"(reasoning) {shorten(block.thinking, THINKING_CHARS)}"
    if isinstance(block, RedactedThinking):
        return "(reasoning, redacted)"
    if isinstance(block, Image):
        return "[image]"
    if isinstance(block, Document):
        name = block.source.get("filename") or block.source.get("type")
        return f"[document: {name}]" if name else "[document]"
    if isinstance(block, Opaque):
        return f"[{block.data.get('type', 'unknown')} block]"
    return ""


def _result_text(result: ToolResult) -> str:
    if isinstance(result.content, str):
        return result.content
    return "\n".join(_render_block(block) for block in result.content)


# --------------------------------------------------------------------------- the answer

_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.DOTALL)
_ANALYSIS = re.compile(r"<analysis>.*?</analysis>", re.DOTALL)


def summary_from_answer(answer: str) -> str | None:
    """The text inside the answer's last complete ``<summary>`` tags, without any analysis; ``None`` if there is none."""
    found = _SUMMARY.findall(_ANALYSIS.sub("", answer))
    if not found:
        return None
    text = _ANALYSIS.sub("", found[-1]).strip()
    return text or None
