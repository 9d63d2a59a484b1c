"""search_history / read_history: what the agent gets back from its own compacted history, and what it never gets."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fuzzing import deep
from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold import Context, Policy, ToolCall, Storage
from contextfold.conversation import Conversation, Header, Opaque, ToolSpec, assistant, tool, user
from contextfold.errors import HistoryQueryError, HistoryRefNotFound, InvalidPattern
from contextfold.lookback import history as lookback
from contextfold.lookback.pattern import MAX_PATTERN_CHARS, compile_query
from contextfold.lookback.names import names_history_tools


def _session(context: Context, outputs: int = 30, lines: int = 40, *, offer: bool = False) -> list[str]:
    """A session of numbered file reads; returns the ids of the output items. ``offer``: the requests offer the
    agent the history tools."""
    context.add([user("find where the retry budget is set")], tools=context.history_tools() if offer else None)
    ids = []
    for n in range(outputs):
        context.add([assistant("", [ToolCall(f"c{n}", "read_file", {"path": f"src/mod{n}.py"})])])
        body = "\n".join(f"{k:>6}\tvalue_{n}_{k} = {n * 1000 + k}" for k in range(1, lines + 1))
        ids += [item.id for item in context.add([tool(f"c{n}", body)])]
    return ids


# --------------------------------------------------------------------------- the matcher

@pytest.mark.parametrize("pattern, line, matches", [
    ("(a+)+$", "a" * 20_000 + "!", False),          # exponential in a backtracking engine
    ("(a|aa)*c", "a" * 20_000, False),
    ("(x+x+)+y", "x" * 20_000, False),
    ("(.*a){20}!", "a" * 5_000, False),
    ("(.*a){20}", "a" * 5_000, True),
])
def test_catastrophic_patterns_are_answered_not_backtracked(pattern: str, line: str, matches: bool) -> None:
    # Python's re would not return from the first four in the lifetime of the test; the automaton steps once a character
    assert (compile_query(pattern, regex=True).search(line) is not None) is matches


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["ab", "a|b", "a*b", "(ab)+c", "[a-c]{2,3}d", "^a.c", "b$", "a?b?c", "[^a]b", r"\d+x",
                        r"(?:ab|ba)+$", "a{2}", r"\w\s\w", "x{", ".b."]),
       st.text(alphabet="abcdx 1{", max_size=12))
def test_the_subset_agrees_with_python_re(pattern: str, line: str) -> None:
    assert (compile_query(pattern, regex=True).search(line) is not None) == (re.search(pattern, line) is not None)


@pytest.mark.parametrize("pattern", [r"(a)\1", "(?=a)b", "(?<=a)b", r"\bword", "(a", "a)", "*a", "[ab", "a{999}", ""])
def test_patterns_outside_the_subset_are_typed_errors(pattern: str) -> None:
    with pytest.raises(InvalidPattern) as raised:
        compile_query(pattern, regex=True)
    assert raised.value.field == "query"


def test_a_megabyte_pattern_is_refused_before_it_is_read() -> None:
    with pytest.raises(InvalidPattern, match=f"at most {MAX_PATTERN_CHARS:,}"):
        compile_query("(a" * 500_000, regex=True)


def test_a_literal_query_is_not_read_as_a_pattern() -> None:
    assert compile_query("f(x)[0]*", regex=False).search("y = f(x)[0]*2") is not None
    assert compile_query("f(x)[0]*", regex=False).search("y = fx0") is None
    assert compile_query("Retry", regex=False, ignore_case=True).search("the retry budget") is not None


# --------------------------------------------------------------------------- search_history

def test_a_value_only_a_compacted_output_held_is_found_with_its_provenance() -> None:
    context = Context(window_tokens=50_000, policy=Policy(tail_max_trigger_fraction=0.1))  # lean's tail: the
    ids = _session(context)  # session's early outputs are summarized, not kept verbatim
    context.compact()
    assert not any(item.id == ids[3] for item in context.view().items), "the output was compacted away"
    assert "value_3_17 " not in str(context.prepare())
    found = context.search_history("value_3_17")
    assert f"--- {ids[3]} · turn 4 · output of read_file" in found
    assert "(file src/mod3.py)" in found and "line 17 of 40 (file line 17)" in found
    assert ">   17|     17\tvalue_3_17 = 3017" in found
    assert "value_3_15" in found and "value_3_19" in found and "value_3_20" not in found  # two lines of context


def test_items_the_view_still_holds_whole_are_searched_only_when_nothing_else_matches() -> None:
    context = Context(window_tokens=500_000)
    ids = _session(context, outputs=3)
    found = context.search_history("value_1_5 ")
    assert "these are in items still in your context" in found and f"--- {ids[1]} · turn 2" in found
    assert "no line of the session's history matches (" in context.search_history("no such value")


def test_newest_first_within_limit_and_token_budget() -> None:
    history = Conversation()
    history.append(user("task"))
    for n in range(5):
        history.append(assistant("", [ToolCall(f"c{n}", "bash", {"command": f"run {n}"})]))
        history.append(tool(f"c{n}", "\n".join(f"hit {n}.{k}" for k in range(50))))
    result = lookback.search_history(history, "hit", limit=7)
    assert result.matches == 7 and [h.ref for h in result.hits] == [history.items[-1].id] * 7
    small = lookback.search_history(history, "hit", limit=100, budget_tokens=200)
    assert 0 < len(small.hits) < small.matches and "not shown (token budget)" in small.text
    with pytest.raises(HistoryQueryError, match="limit"):
        lookback.search_history(history, "hit", limit=0)


def test_the_time_bound_stops_a_search_and_says_so() -> None:
    history = Conversation([user("task"), *[user(f"line {n}") for n in range(10)]])
    ticks = iter(range(100))
    result = lookback.search_history(history, "line", clock=lambda: float(next(ticks)), deadline_s=3)
    assert result.stopped == "time" and result.items_searched < result.items_total


def test_a_long_line_is_shown_around_its_match() -> None:
    history = Conversation([user("x" * 10_000 + "NEEDLE" + "y" * 10_000)])
    result = lookback.search_history(history, "NEEDLE")
    assert "NEEDLE" in result.text and len(result.text) < 1_500


# --------------------------------------------------------------------------- read_history

def test_read_history_gives_lines_verbatim_and_says_what_follows() -> None:
    context = Context(window_tokens=50_000)
    ids = _session(context, outputs=2)
    text = context.read_history(ids[1], "10-12")
    assert text.splitlines()[1:] == [f"{k:>6}\tvalue_1_{k} = {1000 + k}" for k in (10, 11, 12)]
    rest = context.read_history(ids[1], "39-")
    assert rest.splitlines()[-1] == "    40\tvalue_1_40 = 1040" and "follow" not in rest


def test_an_offloaded_output_is_searched_and_read_whole(tmp_path: Path) -> None:
    context = Context(window_tokens=50_000, storage=Storage(results_dir=tmp_path / "results"))
    context.add([user("task"), assistant("", [ToolCall("c1", "bash", {"command": "make test"})])])
    output = "\n".join(f"case {k}: {'ok' if k != 3_333 else 'FAILED: expected 17, got 18'}" for k in range(6_000))
    (item,) = context.add([tool("c1", output)])
    preview = context.history.items[-1].text
    assert "case 3000: ok" not in preview, "the history holds only the preview"
    assert "case 3333: FAILED" in preview, "the preview quotes the last error line of the part it leaves out"
    found = context.search_history("FAILED: expected")
    assert f"--- {item.id}" in found and "line 3334 of 6000" in found and "offloaded" in found
    assert context.read_history(item.id, "3334").splitlines()[1] == "case 3333: FAILED: expected 17, got 18"


@pytest.mark.parametrize("answered_by", ["context", "framework"])
def test_a_long_read_of_an_offloaded_output_is_kept_whole_not_offloaded_again(tmp_path: Path, answered_by: str) -> None:
    """A read_history result near its own bound (40,000 characters) is over the offload threshold (30,000): it
    goes to the agent whole, whether the Context answered the call or a framework ran the tool and handed back
    a plain result, not as another preview asking it to read again."""
    context = Context(window_tokens=200_000, storage=Storage(results_dir=tmp_path / "results"))
    context.add([user("task"), assistant("", [ToolCall("c1", "bash", {"command": "make test"})])])
    (item,) = context.add([tool("c1", "\n".join(f"case {k}: " + "detail " * 20 for k in range(6_000)))])
    call = ToolCall("h1", "read_history", {"ref": item.id, "lines": "1-400"})
    context.add([assistant("", [call])])
    if answered_by == "context":
        answer = context.answer_tool_call(call)
        assert answer is not None
    else:
        answer = tool("h1", context.read_history(item.id, "1-400"))
    assert len(answer.text) > Policy().persist_max_chars
    (kept,) = context.add([answer])
    assert kept.text == answer.text and "case 250: " in kept.text
    assert not any(e.stage == "persist" for e in context.events if kept.id in e.items)


def test_an_offloaded_output_whose_file_is_gone_is_read_as_its_preview(tmp_path: Path) -> None:
    context = Context(window_tokens=50_000, storage=Storage(results_dir=tmp_path / "results"))
    context.add([user("task"), assistant("", [ToolCall("c1", "bash", {"command": "make test"})])])
    (item,) = context.add([tool("c1", "\n".join(f"case {k}" for k in range(8_000)))])
    for saved in (tmp_path / "results").iterdir():
        saved.unlink()
    assert "case 4000" not in context.read_history(item.id) and "no longer available" in context.read_history(item.id, "1-")


@pytest.mark.parametrize("ref", ["../etc/passwd", "/etc/passwd", "it_0000000000000000", "session_x/it_1", "", None, 7,
                                 deep(3_000), pytest.param(10**5_000, id="5000 digits")])
def test_a_ref_outside_the_session_is_a_typed_error(ref: object) -> None:
    """The last two found by fuzzing: the message quoting a ref nested 3,000 deep raised RecursionError, one of a
    number of 5,000 digits ValueError (Python prints no integer that long)."""
    context = Context(window_tokens=50_000)
    _session(context, outputs=1)
    with pytest.raises(HistoryQueryError) as raised:
        context.read_history(ref, None)  # type: ignore[arg-type]
    assert raised.value.field == "ref"


def test_a_ref_of_another_session_is_not_found() -> None:
    first, second = Context(window_tokens=50_000), Context(window_tokens=50_000)
    ids = _session(first, outputs=1)
    _session(second, outputs=1)
    with pytest.raises(HistoryRefNotFound):
        second.read_history(ids[0])


@pytest.mark.parametrize("lines", ["0-3", "5-2", "a-b", [1], True, "1-2-3", {"from": 1}, deep(3_000), [deep(3_000), 1],
                                   pytest.param(10**5_000, id="5000 digits")])
def test_bad_line_ranges_are_typed_errors(lines: object) -> None:
    """The last three found by fuzzing: quoting them (or the line past the end) raised RecursionError or ValueError."""
    context = Context(window_tokens=50_000)
    ids = _session(context, outputs=1)
    with pytest.raises(HistoryQueryError) as raised:
        context.read_history(ids[0], lines)  # type: ignore[arg-type]
    assert raised.value.field == "lines"


@pytest.mark.parametrize(("name", "arguments", "field"), [
    (["search_history"], {"query": "x"}, "name"), pytest.param(10**5_000, {"query": "x"}, "name", id="5000 digits"),
    ("search_history", {"query": "x", ("t",): 1, 2: "y"}, "int key"),
])
def test_a_call_of_any_shape_is_a_typed_error(name: object, arguments: object, field: str) -> None:
    """Found by fuzzing call_history_tool: a name that was a list raised TypeError (unhashable), one of 5,000
    digits ValueError, and keys that were not strings TypeError (sorting a tuple beside an int)."""
    with pytest.raises(HistoryQueryError) as raised:
        Context(window_tokens=50_000).call_history_tool(name, arguments)  # type: ignore[arg-type]
    assert raised.value.field == field


# --------------------------------------------------------------------------- offered to the agent

def test_tool_specs_in_each_provider_format() -> None:
    context = Context(window_tokens=50_000)
    assert [t["name"] for t in context.history_tools("anthropic")] == ["search_history", "read_history"]
    assert [t["function"]["name"] for t in context.history_tools("openai")] == ["search_history", "read_history"]
    assert "input_schema" in context.history_tools()[0]


def test_an_answered_call_is_a_result_item_the_conversation_accepts() -> None:
    context = Context(window_tokens=50_000, policy=Policy())
    _session(context)
    context.compact()
    call = ToolCall("h1", "search_history", {"query": "value_2_7 "})
    context.add([assistant("", [call])])
    answer = context.answer_tool_call(call)
    assert answer is not None and answer.tool_result is not None and not answer.tool_result.is_error
    context.add([answer])
    request = context.prepare()
    assert "value_2_7 = 2007" in str(request["messages"][-1])
    assert context.answer_tool_call(ToolCall("h2", "bash", {"command": "ls"})) is None


@pytest.mark.parametrize("arguments, field", [
    ({}, "query"), ({"query": 5}, "query"), ({"query": "x", "limit": "many"}, "limit"),
    ({"query": "x", "colour": "red"}, "colour"), ({"query": "(?=x)", "regex": True}, "query"),
])
def test_a_bad_call_is_an_error_result_naming_the_argument(arguments: dict[str, object], field: str) -> None:
    context = Context(window_tokens=50_000)
    answer = context.answer_tool_call(ToolCall("h1", "search_history", arguments))
    assert answer is not None and answer.tool_result is not None and answer.tool_result.is_error
    assert f"argument {field!r}" in answer.tool_result.text


# --------------------------------------------------------------------------- the agent knows they exist

def test_a_summary_ends_with_the_refs_it_replaces_and_a_preview_names_its_ref(tmp_path: Path) -> None:
    context = Context(window_tokens=50_000, storage=Storage(results_dir=tmp_path / "results"))
    ids = _session(context, offer=True)
    context.compact()
    summary = next(item for item in context.view().items if item.kind == "summary")
    last_line = summary.text.rstrip().splitlines()[-1]
    assert last_line.startswith("Earlier details are still in the history: search_history(")
    first, last = re.findall(r'read_history\("(it_[0-9a-f]+)"\)', last_line)
    assert context.history.items.index(next(i for i in context.history.items if i.id == first)) == 1
    assert last in ids and "value_" in context.read_history(last)
    context.add([assistant("", [ToolCall("big", "bash", {"command": "make"})])])
    (item,) = context.add([tool("big", "row\n" * 20_000)])
    preview = context.prepare_view().items[-1].text
    assert f'read_history("{item.id}", "START-END")' in preview and str(tmp_path) not in preview


def test_without_history_tools_the_preview_names_the_file_and_the_summary_no_ref(tmp_path: Path) -> None:
    context = Context(window_tokens=50_000,
                      storage=Storage(results_dir=tmp_path / "results"), policy=Policy(history_tools=False))
    _session(context)
    context.compact()
    assert "read_history" not in str(context.prepare())
    context.add([assistant("", [ToolCall("big", "bash", {"command": "make"})])])
    context.add([tool("big", "row\n" * 20_000)])
    assert str(tmp_path / "results") in context.prepare_view().items[-1].text


def test_by_default_a_request_that_does_not_offer_the_tools_never_names_them(tmp_path: Path) -> None:
    """``"auto"``: a model told to call a tool it lacks calls it, and its framework answers with an error."""
    context = Context(window_tokens=50_000, storage=Storage(results_dir=tmp_path / "results"))
    _session(context)
    context.add([assistant("", [ToolCall("big", "bash", {"command": "make"})])])
    context.add([tool("big", "row\n" * 20_000)])
    context.compact()
    request = str(context.prepare())
    assert any(e.stage == "summarize" and e.action == "summarized" for e in context.events)
    assert "search_history" not in request and "read_history" not in request
    assert f"saved to {tmp_path / 'results'}" in context.prepare_view().items[-1].text


@pytest.mark.parametrize("provider", ["anthropic", "openai", "responses", "gemini"])
def test_auto_sees_the_tools_offered_in_each_format(provider: str) -> None:
    context = Context(window_tokens=50_000, provider=provider)
    _session(context, offer=True)
    context.compact()
    assert "read_history(" in context.view().items[1].text


def test_only_both_tools_offered_count_and_true_names_them_without_an_offer() -> None:
    header = Header(tools=(ToolSpec("search_history"),))
    assert not names_history_tools(Policy(), header) and names_history_tools(Policy(history_tools=True), header)
    mixed = Opaque({"function_declarations": [{"name": "read_history"}, {"name": "search_history"}],
                    "google_search": {}}, "gemini")
    assert names_history_tools(Policy(), Header(tools=(mixed,)))
    custom = Opaque({"type": "custom", "custom": {"name": "read_history"}}, "openai")
    assert names_history_tools(Policy(), Header(tools=(custom, ToolSpec("search_history"))))
    assert not names_history_tools(Policy(history_tools=False), Header(tools=(mixed,)))


def test_the_history_tools_own_calls_and_results_are_not_searched() -> None:
    context = Context(window_tokens=500_000)
    _session(context, outputs=2)
    context.compact()
    call = ToolCall("h1", "search_history", {"query": "value_0_3 "})
    context.add([assistant("", [call])])
    first = context.answer_tool_call(call)
    assert first is not None
    context.add([first])
    again = context.search_history("value_0_3 ")
    assert again.count("\n--- ") == first.text.count("\n--- ") == 1  # the earlier search is not a second source
