"""The session reader: what the messages of a session are, read once, below everything that acts on them.

Today it answers *who speaks* in a user-role message (the person, the
harness, a tool's output, a demonstration) and what the person's own words
are; the pipeline's task, the summaries' quotes of the user and the replay's
``asked`` measure all ask it, so they agree.
"""

from .harness import RULES, WRAPPERS, Rule, Speaker, matching_rule, without_wrappers
from .speaker import UserReading, added_by_contextfold, is_person, read_text, reading_of

__all__ = ["RULES", "WRAPPERS", "Rule", "Speaker", "UserReading", "added_by_contextfold", "is_person",
           "matching_rule", "read_text", "reading_of", "without_wrappers"]
