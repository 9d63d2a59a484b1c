"""The session reader: what the messages of a session are, read once, below everything that acts on them.

Today it answers *who speaks* in a user-role message (the person, the
harness, a tool's output, a demonstration), what the person's own words
are, and which replies the harness wrote in the assistant's place (an API
error, a usage limit); the pipeline's task, the summaries' quotes of the user and the replay's
``asked`` measure all ask it, so they agree. It also reads the commands of an
agent that calls no tools as calls and their outputs (:mod:`.text_mode`), and which files the latest turn names as
what it works on next (:mod:`.in_hand`).
"""

from .harness import (
    EMPTY_BLOCK,
    LOCAL_COMMANDS,
    declined,
    RULES,
    STAND_INS,
    WRAPPERS,
    Rule,
    Speaker,
    matching_rule,
    stand_in,
    typed_command,
    without_wrappers,
)
from .in_hand import in_hand, latest_naming, names, slashed
from .own import MARK, POINTER, own_line, without_own_lines
from .request import OPENING_LINES, asks_something, first_request, message_says_something, opening, says_something
from .speaker import (UserReading, added_by_contextfold, agent_words, heading_of, is_person, is_stand_in_reply,
                      read_text, reading_of, reasoning_in_calls)
from .text_mode import TEXT_TOOL, answers_reply, rejects_reply, text_call, text_result

__all__ = ["EMPTY_BLOCK", "LOCAL_COMMANDS", "MARK", "OPENING_LINES", "POINTER", "RULES", "STAND_INS", "TEXT_TOOL", "WRAPPERS", "Rule", "Speaker", "UserReading", "added_by_contextfold", "agent_words", "answers_reply", "asks_something", "declined", "first_request", "heading_of", "in_hand", "is_person",
           "is_stand_in_reply", "latest_naming", "matching_rule", "message_says_something", "names", "opening", "own_line", "read_text", "reading_of", "reasoning_in_calls", "rejects_reply", "says_something", "slashed", "stand_in", "text_call",
           "text_result", "typed_command", "without_own_lines", "without_wrappers"]
