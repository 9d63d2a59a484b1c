"""Never over the window: small windows, huge outputs, an open breaker, and the typed error when nothing fits."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_context import SYSTEM, TOOLS, turn
from test_pipeline_stages import EST, make_budget, session

from contextfold import conversation as c
from contextfold.context import Context
from contextfold.errors import ContextOverflow
from contextfold.limits import ModelLimits, compaction_threshold
from contextfold.pipeline import compact
from contextfold.pipeline.base import Policy
from contextfold.pipeline.stages.fit import fit_window, window_limit
from contextfold.pipeline.step import Steward
from contextfold.tokens import TokenCounter
from contextfold.usage import Usage


def test_fit_brings_a_request_under_the_window_cutting_the_latest_output_last() -> None:
    conv = session(*[(f"cat f{k}.py", "old line\n" * 300) for k in range(4)], ("cat huge.log", "row\n" * 4_000))
    budget = make_budget(window_tokens=2_000)
    out, events = fit_window(conv, budget)
    assert EST.conversation(out) <= window_limit(budget) and out.validate() == []
    assert out[0] is conv[0] and {e.stage for e in events} >= {"selective", "fit"}
    assert out[-1].text.startswith("row\n") and "omitted" in out[-1].text  # head and tail of the latest output


def test_the_margin_grows_with_what_the_count_only_estimated() -> None:
    """A request the provider never reported on is an estimate, and the estimate of a new kind of text falls short
    by up to a tenth (a skill file of Markdown loaded into the latest turn went out 6 % over its count, over a 16k
    window): the window's margin covers a little new text, a tenth of what is estimated covers a lot of it."""
    conv = session(("cat notes.md", "A paragraph of the design notes, line by line.\n" * 160))
    window = int(EST.conversation(conv) / 0.95)  # the request is at 95 % of the window
    reported = make_budget(window_tokens=window)  # the counter knows no more than the flat margin
    assert fit_window(conv, reported) == (conv, [])
    estimated = make_budget(window_tokens=window, count_estimated=EST.conversation)  # all of it an estimate
    assert window_limit(estimated, conv) == window - int(0.10 * EST.conversation(conv)) < window_limit(reported)
    out, events = fit_window(conv, estimated)
    assert EST.conversation(out) <= window_limit(estimated, conv) and {e.stage for e in events} >= {"fit"}


def test_a_counter_says_how_much_of_its_count_is_estimated() -> None:
    counter = TokenCounter()
    first = session(("ls", "a.py"))
    assert counter.estimated_tokens(first) == counter.count(first)  # nothing reported yet
    counter.record_usage(Usage(prompt_tokens=5_000), first)
    grown = first.with_items([*first.items, *session(("cat a.py", "x = 1\n" * 50)).items[1:]])
    assert counter.estimated_tokens(grown) == counter.count(grown) - 5_000  # only what was added since
    note = c.user("Summary of the earlier work: the parser reads the config file and checks each key.")
    compacted = first.with_items([first.items[0], note])  # no longer extends the report: only the new text is unread
    assert counter.estimated_tokens(compacted) == round(counter.ratio * EST.item(note)) > 0


def test_a_task_larger_than_the_window_is_a_typed_error_naming_the_smallest_request() -> None:
    conv = session(("ls", "a"), task="Do this: " + "word " * 3_000)
    with pytest.raises(ContextOverflow) as raised:
        fit_window(conv, make_budget(window_tokens=1_000))
    assert raised.value.window_tokens == 1_000 and raised.value.smallest_tokens > 1_000
    assert "smallest request" in str(raised.value)


def test_a_request_inside_the_window_but_over_the_counting_margin_says_so() -> None:
    """The error names the limit it missed: a smallest request of 980 tokens is under a 1,000-token window, and
    "over the 1,000-token window" would read as a miscount; the limit is the window less the margin kept free."""
    error = ContextOverflow(980, 1_000, "the task alone is this large", 970)
    assert "over the 970 tokens that surely fit the 1,000-token window" in str(error)
    assert "over the 1,000-token window:" in str(ContextOverflow(1_200, 1_000, "the task alone is this large", 970))


@pytest.mark.parametrize("window", [4_000, 8_000, 16_000, 20_000, 32_000, 128_000])
def test_the_trigger_is_inside_the_window_at_every_window(window: int) -> None:
    trigger = Steward(Policy()).trigger_tokens(ModelLimits(window, 4_096))
    assert window // 4 <= trigger <= window - min(4_096, window // 4)  # the reply's room stays free
    assert trigger >= compaction_threshold(ModelLimits(window, 4_096))  # never earlier than the margin alone


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(min_value=1, max_value=6_000), min_size=5, max_size=25), st.sampled_from([3_000, 6_000]))
def test_no_request_goes_over_the_window_whatever_the_outputs(sizes: list[int], window: int) -> None:
    context = Context(window_tokens=window, max_output_tokens=1_000, clock=lambda: None,
                      policy=Policy(persist_max_tokens=10**9, persist_max_chars=10**9, truncate_max_chars=10**9))
    context.add([{"role": "user", "content": "Fix the bug in f1.py"}], system=SYSTEM, tools=TOOLS)
    for k, size in enumerate(sizes):
        context.add(turn(k, "x " * size))
        view = context.prepare_view()
        assert context.counter.count(view) <= window and view.validate() == []


def test_an_open_breaker_is_an_event_and_a_warning_and_never_lets_a_request_overflow(
    caplog: pytest.LogCaptureFixture,
) -> None:
    task = "Fix it. " + "context " * 2_800  # ~2,800 tokens: over the trigger (2,600), so no summary can reach it
    context = Context(window_tokens=4_000, max_output_tokens=1_000, clock=lambda: None,
                      policy=Policy(min_summary_messages=2))
    context.add([{"role": "user", "content": task}], system=SYSTEM, tools=TOOLS)
    with caplog.at_level(logging.WARNING, logger="contextfold"):
        for k in range(12):
            context.add(turn(k, "y " * 400))
            view = context.prepare_view()
            assert context.counter.count(view) <= 4_000
    assert context.breaker_open
    assert any(e.action == "breaker_open" for e in context.events)
    assert any("automatic compaction is off" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("window", [400_000, 1_000_000])
def test_a_forced_compaction_never_returns_a_larger_request(window: int) -> None:
    conv = session(("ls", "a.py"), ("cat a.py", "x = 1"))
    budget = make_budget(window_tokens=window, trigger_tokens=window // 2, force_summary=True)
    out, events, fits = compact(conv, budget, budget.trigger_tokens)
    assert out is conv and fits and [e.action for e in events] == ["skipped"]
    big = session(*[(f"cat f{k}.py", "line of code\n" * 400) for k in range(30)])
    out, _, _ = compact(big, replace(budget, tail_tokens=2_000), budget.trigger_tokens)
    assert EST.conversation(out) < EST.conversation(big)


def test_a_log_the_person_pastes_whole_into_the_latest_turn_is_cut_to_what_they_report_not_refused() -> None:
    context = Context(window_tokens=4_000, max_output_tokens=1_000, clock=lambda: None)
    context.add([{"role": "user", "content": "Deploy the service"}], system=SYSTEM, tools=TOOLS)
    for k in range(3):
        context.add(turn(k, "y " * 300))
    log = "\n".join([*(f"12:00:{k:02d} step {k} ok" for k in range(300)), "##[error]Permission denied on registry",
                     *(f"12:01:{k:02d} cleanup {k}" for k in range(300))])
    context.add([{"role": "user", "content": f"the deploy failed - {log}\n - what is left to do?"}])
    view = context.prepare_view()  # ContextOverflow before: the latest round alone was over the window
    assert context.counter.count(view) <= 4_000 and view.validate() == []
    pasted = view[-1].text
    assert pasted.startswith("the deploy failed - 12:00:00 step 0 ok")  # what they report, from its opening
    assert "##[error]Permission denied on registry" in pasted and "what is left to do?" in pasted
    assert "cut to fit the window" in pasted and len(pasted) < len(log)
    assert any(item.text == "Deploy the service" for item in view)  # the task is never cut
    assert any(e.action == "cut_longest_message" for e in context.events)
    assert log in context.history[-1].text  # the whole message is kept in the history


def test_a_file_written_whole_in_the_latest_round_is_cut_in_its_arguments_not_refused() -> None:
    """An agent that wrote a file whole in one call, replayed at a smaller window than it ran in (or on a small
    model), leaves a round over the window once everything else is at its least: the call's arguments are the
    agent's own output, already carried out, so their long text is cut head and tail and the call stays
    well-formed; the task and the person's words are not touched."""
    context = Context(window_tokens=4_000, max_output_tokens=1_000, clock=lambda: None)
    context.add([{"role": "user", "content": "Write the service's config"}], system=SYSTEM, tools=TOOLS)
    for k in range(3):
        context.add(turn(k, "y " * 300))
    body = "\n".join(f"setting_{k} = {k}  # the value the service reads at start" for k in range(600))
    context.add([{"role": "assistant", "content": [
        {"type": "tool_use", "id": "w1", "name": "write_file", "input": {"path": "config.py", "content": body}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "w1", "content": "wrote config.py (600 lines)"}]}])
    view = context.prepare_view()  # ContextOverflow before: the write's arguments alone were over the window
    assert context.counter.count(view) <= 4_000 and view.validate() == []
    (call,) = [call for item in view for call in item.tool_calls if call.id == "w1"]
    assert call.arguments["path"] == "config.py" and "omitted" in str(call.arguments["content"])
    assert str(call.arguments["content"]).startswith("setting_0 = 0") and call.raw_arguments is None
    assert any(item.text == "Write the service's config" for item in view)  # the task is never cut
    assert any(e.action == "cut_call_arguments" for e in context.events)
    assert body in [call.arguments["content"] for item in context.history for call in item.tool_calls
                    if call.id == "w1"]  # the whole call is kept in the history


def test_parallel_writes_in_the_latest_round_are_cut_one_after_another_until_the_request_fits() -> None:
    """A turn that writes several files at once in parallel calls: cutting the longest call's arguments alone
    leaves the round over the window, so the next longest is cut too, each call still well-formed."""
    context = Context(window_tokens=4_000, max_output_tokens=1_000, clock=lambda: None)
    context.add([{"role": "user", "content": "Write the four service configs"}], system=SYSTEM, tools=TOOLS)
    for k in range(2):
        context.add(turn(k, "y " * 300))
    bodies = {f"w{n}": "\n".join(f"setting_{n}_{k} = {k}  # read at start" for k in range(200 + n)) for n in range(4)}
    context.add([{"role": "assistant", "content": [
        {"type": "tool_use", "id": call, "name": "write_file", "input": {"path": f"{call}.py", "content": body}}
        for call, body in bodies.items()]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": f"wrote {call}.py"}
                                     for call in bodies]}])
    view = context.prepare_view()
    assert context.counter.count(view) <= 4_000 and view.validate() == []
    assert sum(e.action == "cut_call_arguments" for e in context.events) >= 2
    calls = [call for item in view for call in item.tool_calls if call.id in bodies]
    assert [call.arguments["path"] for call in calls] == [f"{call}.py" for call in bodies]
