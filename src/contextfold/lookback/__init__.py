"""Looking back: the agent searches and reads its own session's history (issue 22).

:mod:`.pattern` matches a query in linear time whatever it is;
:mod:`.history` searches and reads the history; :mod:`.tools` gives the two
tools' definitions and answers a call; :mod:`.offloaded` is where the whole
text of an offloaded output is read back. :class:`~contextfold.Context`
offers them to an agent loop (``history_tools``, ``answer_tool_call``).
"""

from .history import DEFAULT_LIMIT, SearchResult, read_history, search_history
from .tools import NAMES, READ, SEARCH, SPECS

__all__ = ["DEFAULT_LIMIT", "NAMES", "READ", "SEARCH", "SPECS", "SearchResult", "read_history", "search_history"]
