"""When a summary is due and where it cuts: the message-count trigger, the minimum span, topic changes."""

from __future__ import annotations

from test_context import started, turn
from test_pipeline_stages import EST, HEADER, bash, make_budget, session

from contextfold import conversation as c
from contextfold.boundary import choose_cut
from contextfold.conversation import Conversation, ToolCall
from contextfold.pipeline.base import Policy
from contextfold.pipeline.stages.summarize import summarize


def summaries(context) -> list:
    return [e for e in context.events if e.stage == "summarize" and e.action == "summarized"]


def test_over_500_messages_a_summary_is_due_however_few_tokens_they_take() -> None:
    for policy, expected in ((Policy(), True), (Policy(trigger_messages=None), False)):
        context, _ = started(policy=policy, window_tokens=200_000)
        for k in range(260):  # 521 messages, a few thousand tokens: far under the token trigger
            context.add(turn(k, f"ok {k}"))
        view = context.prepare_view()
        assert context.counter.count(view) < context.trigger_tokens
        assert bool(summaries(context)) is expected
        if expected:
            verbatim = [item for item in view.items[1:] if not item.provenance.by_contextfold]
            assert len(verbatim) <= 250 and view.validate() == []  # the task, contextfold's notes, half the trigger
        else:
            assert len(view) == 521


def test_no_automatic_summary_of_fewer_than_10_messages_and_no_failure_counted() -> None:
    context, _ = started(policy=Policy(trigger_tokens=800, economic_summaries=False))
    for k in range(1, 5):  # 8 messages after the task, well over the trigger
        context.add(turn(k, "w " * 400))
        context.prepare()
    assert context.counter.count(context.view()) > 800 and not summaries(context)
    assert context.steward.failures == 0 and not context.breaker_open
    for k in range(5, 7):  # now 12 messages: a summary of at least 10 of them
        context.add(turn(k, "w " * 400))
        context.prepare()
    (event,) = summaries(context)
    assert event.data["span_items"] >= 10 and not event.data["below_min_messages"]


def test_a_manual_compact_may_summarize_fewer_messages_and_says_so() -> None:
    context, _ = started(policy=Policy(economic_summaries=False))
    for k in range(1, 4):
        context.add(turn(k, "v " * 600))
    events = context.compact()
    (event,) = [e for e in events if e.action == "summarized"]
    assert event.data["span_items"] < 10 and event.data["below_min_messages"]
    assert "manual compact" in event.detail and "minimum of 10" in event.detail


def test_a_short_span_is_summarized_when_the_window_is_at_stake() -> None:
    conv = session(*[(f"cat f{k}.py", "line\n" * 500) for k in range(3)])
    assert summarize(conv, make_budget(window_tokens=50_000, trigger_tokens=1_000))[1] == []
    out, events = summarize(conv, make_budget(window_tokens=1_500, trigger_tokens=1_000))
    event = events[-1]
    assert event.action == "summarized" and event.data["below_min_messages"] and "over the window" in event.detail
    assert EST.conversation(out) < EST.conversation(conv)


def test_the_cut_prefers_a_message_that_switches_topic() -> None:
    rounds = [(f"cat f{k}.py", "x " * 150) for k in range(8)]
    items = list(session(*rounds).items)
    items.insert(9, c.user("Also print the result."))  # before round 4
    items.insert(14, c.user("Now let's write the docs for it."))  # before round 6
    conv = Conversation(items, HEADER)
    tail = EST.items(conv.items[9:])  # a budget both cuts fit
    cut = choose_cut(conv, start=1, tail_budget_tokens=tail, count_item=EST.item)
    assert cut is not None and cut.index == 14 and "the topic switches" in cut.reasons


def test_the_cut_prefers_where_the_files_and_tools_in_play_change() -> None:
    def edit(cid: str, path: str) -> c.Item:
        return c.assistant("", [ToolCall(cid, "str_replace_editor", {"command": "str_replace", "path": path})])

    items = [c.user("Fix src/app.py, then document it")]
    for k in range(6):
        items += [edit(f"a{k}", "src/app.py"), c.tool(f"a{k}", "edited " * 60)]
    for k in range(4):
        items += [bash(f"b{k}", f"grep -n term docs/guide{k}.md"), c.tool(f"b{k}", "found " * 60)]
    conv = Conversation(items, HEADER)
    shift = 13  # the first grep over the docs
    tail = EST.items(conv.items[shift - 4 :])  # room for two more rounds of edits too
    cut = choose_cut(conv, start=1, tail_budget_tokens=tail, count_item=EST.item)
    assert cut is not None and cut.index == shift and "new files and tools in play" in cut.reasons
    plain = choose_cut(conv, start=1, tail_budget_tokens=tail, count_item=EST.item, min_index=shift + 2)
    assert plain is not None and "new files and tools in play" not in plain.reasons
