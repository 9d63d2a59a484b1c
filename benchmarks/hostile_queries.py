"""How long the history tools take to answer hostile calls, on a long session (issue 22's bar: 100 ms each).

    python benchmarks/hostile_queries.py [--outputs 300]

Builds a session of ``--outputs`` tool outputs of 40 lines each (the lines
full of ``a`` s a backtracking engine chokes on), compacts it, and times each
hostile call through ``Context.call_history_tool``: catastrophic-backtracking
patterns, a 1 MB pattern, refs naming another session or a path. Prints one
JSON object: per call, the milliseconds (the slowest of three runs) and what
came back (``error: <type>`` or the number of matching lines).
"""

from __future__ import annotations

import argparse
import json
import re
import time

from contextfold import Context, ToolCall
from contextfold.conversation import assistant, tool, user
from contextfold.errors import HistoryQueryError

CALLS: list[tuple[str, str, dict[str, object]]] = [
    ("nested quantifier (a+)+$", "search_history", {"query": "(a+)+$", "regex": True}),
    ("alternation (a|aa)*c", "search_history", {"query": "(a|aa)*c", "regex": True}),
    ("(.*a){20}!", "search_history", {"query": "(.*a){20}!", "regex": True}),
    ("back-reference", "search_history", {"query": r"(a*)*\1", "regex": True}),
    ("1 MB pattern", "search_history", {"query": "(a" * 500_000, "regex": True}),
    ("1 MB literal", "search_history", {"query": "a" * 1_000_000}),
    ("another session's ref", "read_history", {"ref": "it_0123456789abcdef"}),
    ("path ref", "read_history", {"ref": "../../etc/passwd"}),
    ("absolute path ref", "read_history", {"ref": "/etc/passwd", "lines": "1-10"}),
]


def session(outputs: int) -> Context:
    context = Context(window_tokens=64_000)
    context.add([user("task")])
    for n in range(outputs):
        context.add([assistant("", [ToolCall(f"c{n}", "bash", {"command": f"step {n}"})])])
        context.add([tool(f"c{n}", "\n".join("a" * 300 + f" {n}.{k}" for k in range(40)))])
    context.compact()
    return context


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--outputs", type=int, default=300)
    args = parser.parse_args()
    context = session(args.outputs)
    figures: dict[str, dict[str, object]] = {}
    for name, tool_name, arguments in CALLS:
        slowest, answer = 0.0, ""
        for _ in range(3):
            started = time.perf_counter()
            try:
                text = context.call_history_tool(tool_name, arguments)
                found = re.match(r"search_history\(.*?\): (\d+) matching", text)
                answer = f"{found.group(1) if found else 0} matching lines"
            except HistoryQueryError as error:
                answer = f"error: {type(error).__name__}"
            slowest = max(slowest, time.perf_counter() - started)
        figures[name] = {"ms": round(slowest * 1000, 1), "answer": answer}
    print(json.dumps({"items_in_history": len(context.history), "calls": figures}, indent=1))


if __name__ == "__main__":
    main()
