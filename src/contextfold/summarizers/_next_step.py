"""What the agent was heading to next, read off a span's facts: section 9 of the extractive summary.

The step is the person's latest request when they spoke last or asked after the todo list was written, else the
todo item in progress or next, else a plan the agent stated and has not acted on yet (the section its heading or
label opens), else the last error still open, unless the agent reported past it or the person asked on since.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..actions import READ, SEARCH
from ..reading import message_says_something
from ._facts import Facts
from ._records import ErrorFacts
from ._text import shorten

_FORWARD = re.compile(r"\b(next|then|let me|let's|I'll|I will|I need to|going to|should|remaining)\b", re.IGNORECASE)
"""Words of a sentence that says what comes next. Not "now": "the token is now kept" reports what is done ("Now
let me…" says it with "let me")."""
_SENTENCE_END = re.compile(r"(?<=[.!?:])\s+|\n+")
SAID_LAST = "As the assistant said last: "
_HEADING = re.compile(r"#{1,6}\s")
_RULE = re.compile(r"\s*(?:-{3,}|\*{3,}|_{3,})\s*$")
"""A Markdown heading and a horizontal rule: where a section of the assistant's message begins and ends."""
_LABEL = re.compile(r"[\s*_>]*[^\n]{1,40}?:[\s*_]*$")
"""A line that only announces what follows it ("**NEXT:**", "Next steps for the deploy:")."""
_LATEST_REQUEST = "Go on with the user's latest request (the errors above that are still open came before it): "
_REQUEST_AFTER_TODOS = "Go on with the user's latest request (made after the todo list above was last written): "
_REQUEST_WENT_ON = "Go on with the user's latest request (the messages kept below are the work on it so far): "
_REQUEST_AFTER_LOOKUP = "Go on with the user's latest request (the agent went on past the failed lookup above): "


def asking(messages: Sequence[str]) -> int:
    """The number (1-based) of the person's latest message that says something, past the first: a bare "continue"
    or "yes" goes on with the request before it, which is kept like the latest too."""
    return next((n for n in range(len(messages), 1, -1) if message_says_something(messages[n - 1])), len(messages))


def error_source(error: ErrorFacts) -> str:
    return shorten(error.source, 200)


def without_plan(facts: Facts) -> str:
    """The assistant's last message without the plan section 9 quotes from it (its last forward-looking
    sentence): the two sections said the same sentence one after the other."""
    said = facts.last_assistant or ""
    step = next_step(facts)
    if step is None or step[0] != SAID_LAST:
        return said
    head, _, tail = said.rpartition(step[1])
    return f"{head.rstrip()}\n{tail.strip()}".strip()


def _section_under(said: str, sentence: str) -> str | None:
    """``sentence``, or when it is a Markdown heading ("## Next Up", "## Remaining") or a label ("**NEXT:**", "Next
    steps for the deploy:"), the section it opens in ``said``: it names no step, the lines under it (up to the next
    heading or rule; a label's, up to its paragraph's end) are the plan. ``None`` when nothing is under it: a label
    a template leaves empty ("**NEXT:**" ending the message) is no step."""
    heading = bool(_HEADING.match(sentence))
    if not heading and not _LABEL.match(sentence):
        return sentence
    lines = said[said.rfind(sentence):].split("\n")
    end = next((n for n, line in enumerate(lines[1:], 1) if _HEADING.match(line) or _RULE.match(line)
                or (not heading and not line.strip())), len(lines))
    plan = "\n".join(lines[:end]).strip()
    return plan if plan != sentence.strip() else None


def next_step(facts: Facts) -> tuple[str, str] | None:
    """The step the conversation was heading to, as its lead and its text: an unanswered user (one the kept tail
    shows the agent answering is the request it goes on with: begun, not done), a request of the
    person's made after the todo list was last written and after the agent last wrote to them (the agent is working
    on it, and the list's open items are older work), an open todo, a
    plan stated (not one the kept tail shows the agent went on past), an open error (not one of a scratch script it has left behind for another; and not when it ended
    its turn with words written after it: it read the failure and reported where the work stands, "all done", and
    the failure is no step it was heading to; or when the person asked something since: their latest request, which
    the agent was working on, outranks an older error, which stays listed open in section 4; nor a read or search
    that found nothing which the agent wrote on after and went past: the person's latest request is the step). The lead is kept whole
    and only the text may shrink (a shrunk lead, "As the
    assistant said l[…]", spent the part's tokens on saying nothing).

    ``None`` when there is none of these: the section is left out. A summary is written while the agent is
    still working, so "nothing stated" never means "done", and saying so could end the work early.
    """
    if facts.user_spoke_last and facts.user_messages:  # the kept tail may show the work on it begun: not done
        return (_REQUEST_WENT_ON, facts.user_messages[asking(facts.user_messages) - 1]) if facts.went_on else \
            ("Answer the user's latest message: ", facts.user_messages[-1])
    if facts.request_open and facts.todos and facts.user_messages:  # asked after the list: the list is older work
        return _REQUEST_AFTER_TODOS, facts.user_messages[asking(facts.user_messages) - 1]
    for status, lead in (("in_progress", "Continue the task in progress: "), ("pending", "Start the next pending task: ")):
        todo = next((t for t in facts.todos or () if t["status"] == status), None)
        if todo is not None:
            return lead, todo["text"]
    # what the assistant announced and then did is no next step: only a plan it has not acted on yet is
    sentences = [] if facts.acted_since_said or facts.went_on else _SENTENCE_END.split(facts.last_assistant or "")
    stated = [s.strip() for s in sentences if _FORWARD.search(s)]
    plan = next((p for s in reversed(stated) if (p := _section_under(facts.last_assistant or "", s))), None)
    if plan is not None:
        return SAID_LAST, plan
    last = facts.last_error
    reported_since = facts.said_since_error and not facts.acted_since_said  # its last words came after the error
    if last is not None and last.resolved is None and not last.retired and not reported_since:
        if facts.asked_since_error and facts.user_messages:  # the person asked on since: the work turned to that
            return _LATEST_REQUEST, facts.user_messages[asking(facts.user_messages) - 1]
        if last.kind in (READ, SEARCH) and facts.said_since_error:  # a lookup found nothing; the agent said so and
            # went on looking elsewhere: a path that is not there is no step it was heading to
            return (_REQUEST_AFTER_LOOKUP, facts.user_messages[asking(facts.user_messages) - 1]) \
                if facts.user_messages else None
        return "Resolve the last error, from ", f"`{error_source(last)}`: {last.line}"
    return None

