"""Importance, the survival check, adaptive compression and the price of forgetting."""

from __future__ import annotations

import re

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st
from test_pipeline_stages import EST, HEADER, bash, make_budget, session

from contextfold import conversation as c
from contextfold.conversation import Conversation, Header, Item, Provenance, readable_text
from contextfold.pipeline.base import Policy
from contextfold.pipeline.compression import MAX_SHARE, MIN_SHARE, summary_share
from contextfold.pipeline.economics import forgetting_usd, re_read_usd, summary_call_usd, verdict
from contextfold.pipeline.edits import with_result
from contextfold.pipeline.importance import References, item_tokens, line_index, referenced_lines, specific_tokens
from contextfold.pipeline.restore import EDITED, STALE, WROTE, restored_item
from contextfold.pipeline.stages.clear import clear
from contextfold.pipeline.stages.summarize import summarize
from contextfold.pipeline.stages.survival import EXCERPTS_TITLE, missing, needs, note_text, survive
from contextfold.summarizers._facts import Facts
from contextfold.summarizers.base import SUMMARY_PREAMBLE
from contextfold.summarizers.prompts import render_span

SPECIFIC = re.compile(r"[0-9_./:]|[a-z][A-Z]")


@given(st.text(alphabet="abcXYZ_./:-019 \n", max_size=200))
def test_specific_tokens_are_identifiers_paths_and_values_never_plain_words(text: str) -> None:
    for token in specific_tokens(text):
        assert len(token) >= 4 and token in text and SPECIFIC.search(token)
        assert not token.endswith((".", ":", "-", "/"))
    assert specific_tokens("the quick brown fox") == frozenset()
    assert specific_tokens("see src/app.py:12 and parseValue, not plain") == {"src/app.py:12", "parseValue"}


def test_references_weigh_uses_by_agent_and_user_with_recency_not_tool_outputs() -> None:
    conv = session(
        ("cat src/app.py", "only_in_output_9 appears here"),
        ("grep -n total_v2 src/app.py", "12: total_v2 = 1"),
        ("grep -n total_v2 src/app.py", "12: total_v2 = 1"),
    )
    refs = References.of(conv.items)
    assert refs.weight("only_in_output_9") == 0.0  # shown by a tool, never used
    assert refs.weight("src/app.py") > refs.weight("total_v2") > 1.5  # the task (a user turn counts more) and 3 calls
    older = References.of([*conv.items, *[c.assistant(f"step {k}") for k in range(200)]])
    assert older.weight("total_v2") < refs.weight("total_v2")  # unused for a long time: it fades
    assert refs.ranked()[0] == "src/app.py"


def test_references_are_read_once_for_a_request_whose_outputs_were_replaced() -> None:
    """Outputs weigh nothing: a request with placeholders in place of outputs has the references of the request it
    was made from, and is not read again (each clearing stage asks with its own placeholders); a changed turn of
    the agent's is read."""
    conv = session(
        ("cat src/app.py", "only_in_output_9 appears here\n" * 50),
        ("grep -n total_v2 src/app.py", "12: total_v2 = 1"),
    )
    refs = References.of(conv.items)
    outputs = [k for k, item in enumerate(conv.items) if item.tool_result is not None]
    cleared = list(conv.items)
    cleared[outputs[0]] = with_result(cleared[outputs[0]], "[cleared]", "clear")
    assert References.of(cleared) is refs
    fresh = References()
    fresh.read(cleared)
    assert fresh == refs
    said = list(cleared)
    said[outputs[0] - 1] = c.assistant("now src/other.py", said[outputs[0] - 1].tool_calls)
    assert References.of(said) is not refs and References.of(said).weight("src/other.py") > 0


def test_cleared_output_keeps_the_lines_the_agent_went_on_to_use() -> None:
    listing = "\n".join(f"line {k}: nothing to see" for k in range(300)) + "\nconfig/settings_prod.yaml: the one\n"
    conv = session(
        ("ls -R", listing),
        ("cat config/settings_prod.yaml", "debug: false"),
        *[(f"echo {k}", "x") for k in range(4)],
    )
    out, events = clear(conv, make_budget(policy=Policy(clear_min_savings_tokens=0, clear_keep_recent_rounds=1),
                                          compaction_due=True))
    assert events and "output cleared" in out[2].text
    assert "config/settings_prod.yaml: the one" in out[2].text and "line 17:" not in out[2].text


def test_an_outputs_line_index_keeps_the_lines_its_text_would() -> None:
    """The index an output keeps (line numbers, not copies of its lines) finds the lines reading the text does."""
    output = "total_v2 = 1\nnothing here\n  src/app.py sums total_v2  \nsrc/app.py:12 ok\nworker_3 idle\n"
    conv = session(("grep -n total_v2 src/app.py", output))
    item = conv[2]
    assert line_index(item) == {"total_v2": (0, 2), "src/app.py": 2, "src/app.py:12": 3, "worker_3": 4}
    refs = References.of(conv.items)  # the task names src/app.py, the call total_v2 and src/app.py
    text = item.tool_result.text
    for budget in (200, 30, 5):
        from_index = referenced_lines(text, refs, budget, item_tokens(item), line_index(item))
        assert from_index == referenced_lines(text, refs, budget)
    assert referenced_lines(text, refs, 200, item_tokens(item), line_index(item)) == ["total_v2 = 1", "src/app.py sums total_v2"]
    assert referenced_lines(text, refs, 30, item_tokens(item), line_index(item)) == ["src/app.py sums total_v2"]  # the heavier
    assert referenced_lines(text, refs, 5, item_tokens(item), line_index(item)) == []


def test_survival_puts_back_what_a_summary_dropped_within_its_budget() -> None:
    conv = session(
        ("cat src/shop/tax_rules.py", "RATE_TABLE_2024 = {...}"),
        ("grep -n RATE_TABLE_2024 src/shop/tax_rules.py", "3: RATE_TABLE_2024"),
        ("pytest tests/test_tax.py", "E   ValueError: rate missing for region eu_west_3\n1 failed"),
        *[(f"echo {k}", "noise " * 200) for k in range(6)],
    )
    before = needs(conv, 0)
    assert "RATE_TABLE_2024" in before.references[:5]
    assert any("eu_west_3" in e.lines or "1 failed" in e.lines for e in before.errors)
    out, events = summarize(conv, make_budget(tail_tokens=300))
    text = "\n".join(readable_text(item) for item in out.items)
    assert "RATE_TABLE_2024" in text and "src/shop/tax_rules.py" in text
    assert out.validate() == [] and out[-1] is conv[-1]
    assert not missing(before, text).references[:5]
    note = [item for item in out.items if item.provenance.survival]
    if note:  # what the summary already carried needs no note
        assert any(e.stage == "survival" and e.action == "restored" for e in events)
        assert EST.item(note[0]) <= make_budget().policy.survival_max_tokens + 10


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet="abcdef_0123456789./", min_size=4, max_size=30), min_size=1, max_size=400),
       st.integers(min_value=20, max_value=2_000))
def test_survival_note_never_exceeds_its_cap(references: list[str], cap: int) -> None:
    lost = missing(needs(Conversation([c.user("task")], HEADER), 0), "")
    lost.references = [r for r in dict.fromkeys(references) if specific_tokens(r)]
    removed = [c.assistant(f"The value of {r} matters here.\n{r}") for r in lost.references]
    text = note_text(lost, cap, EST.text, removed)
    assert text is None or EST.text(text) <= cap


def test_survival_puts_back_lines_with_where_they_came_from_never_a_list_of_names() -> None:
    grep = "src/pay/ledger.py:41:    total_cents = round_half_even(amount_v2)\nsrc/pay/ledger.py:57:    return total_cents"
    conv = session(
        ("grep -rn round_half_even src/pay", grep),
        *[(f"python -c 'from pay.ledger import round_half_even; print(round_half_even({k}))'", str(k)) for k in range(3)],
        ("pytest tests/test_ledger.py -q", "tests/test_ledger.py::test_cents_v3 PASSED\n1 passed"),
        *[(f"echo {k}", "noise " * 200) for k in range(6)],
    )
    before = needs(conv, 0)
    assert "round_half_even" in before.references[:3]
    assert "tests/test_ledger.py::test_cents_v3" in before.references  # seen in an output, not used yet
    dropped = conv.with_items([conv[0], *conv.items[-4:]])
    out, events = survive(conv, dropped, make_budget(), task_index=0)
    note = next(item.text for item in out.items if item.provenance.survival)
    assert "`$ grep -rn round_half_even src/pay` printed:\n    src/pay/ledger.py:41:    total_cents = round_half_even(amount_v2)" in note
    assert "`$ pytest tests/test_ledger.py -q` printed:\n    tests/test_ledger.py::test_cents_v3 PASSED" in note
    for line in note.splitlines()[1:]:
        assert line.count(", ") < 3, line  # lines as they were, not a comma-separated list of names
    assert [e.action for e in events] == ["restored"] and out.validate() == []


def test_an_open_error_comes_back_once_under_the_call_that_showed_it() -> None:
    """A failing check run twice shows the same line twice: the note puts it back once, under the newest call that
    showed it (which command failed, not only what it printed)."""
    failing = "Coq Verification\tfail\t18s\thttps://example.test/runs/77"
    conv = session(
        ("gh pr checks 4 --watch", f"Lean Verification\tpass\t7s\n{failing}\nexit code 1"),
        *[(f"echo {k}", "noise " * 200) for k in range(3)],
        ("sleep 30 && gh pr checks 4", f"Lean Verification\tpass\t7s\n{failing}\nexit code 1"),
        *[(f"echo {k}", "noise " * 200) for k in range(3)],
    )
    before = needs(conv, 0)
    assert [e.source for e in before.errors] == ["$ sleep 30 && gh pr checks 4"]
    out, _ = survive(conv, conv.with_items([conv[0], *conv.items[-2:]]), make_budget(), task_index=0)
    note = next(item.text for item in out.items if item.provenance.survival)
    assert note.count(failing) == 1
    block = note.split("`$ sleep 30 && gh pr checks 4` showed:\n", 1)[1].split("\n")
    assert f"    {failing}" in block[:3]  # the failing row, after the lines above it


def test_a_long_line_is_cut_at_a_sentence_or_word_and_says_so() -> None:
    """The excerpt of a long line starts where a reader can: the sentence holding the name, or a word's start
    marked with "…", never in the middle of a word as if the agent had written it so."""
    filler = " ".join(f"word{k}" for k in range(60))
    said = f"{filler}. Then the upload handler reads upload_param_v2 twice. The rest is noise."
    one_sentence = f"{filler} and then the upload handler reads upload_param_v2 twice"
    for line, expected in ((said, "… Then the upload handler reads upload_param_v2 twice."), (one_sentence, "… word")):
        lost = missing(needs(Conversation([c.user("task")], HEADER), 0), "")
        lost.references = ["upload_param_v2"]
        text = note_text(lost, 400, EST.text, [c.assistant(line)])
        assert text is not None
        excerpt = text.split("The agent said:\n    ", 1)[1]
        assert excerpt.startswith(expected), excerpt
        assert "upload_param_v2" in excerpt


def test_a_name_the_system_prompt_teaches_is_not_put_back() -> None:
    """A harness's syntax the agent writes in every edit (``end_of_edit``) is in the system prompt of every request:
    the compaction did not lose it, and a note line holding it would tell the agent nothing."""
    rounds = [(f"edit {k}:{k}\nvalue_{k} = compute_total_v{k}()\nend_of_edit", "File updated.") for k in range(4)]
    rounds += [(f"echo {k}", "noise " * 200) for k in range(6)]
    conv = session(*rounds)
    assert "end_of_edit" in needs(conv, 0).references[:5]  # the agent used it more than any other name
    taught = Header(system=(Item("system", (c.Text("Close each edit with a line end_of_edit."),)),), tools=HEADER.tools)
    for header, kept in ((HEADER, True), (taught, False)):
        conv = Conversation(conv.items, header)
        out, _ = survive(conv, conv.with_items([conv[0], *conv.items[-2:]]), make_budget(), task_index=0)
        note = next(item.text for item in out.items if item.provenance.survival)
        assert ("end_of_edit" in note) is kept, note
        assert "compute_total_v3" in note


def test_an_earlier_notes_excerpts_keep_their_source_and_its_error_block_is_no_source() -> None:
    """A later note quotes an earlier note's excerpts under the headers they had; the earlier note's error block is
    found again from the errors themselves, never quoted under its heading as if it were where a line came from."""
    earlier = (f"[contextfold: checked after compaction]\nUnresolved errors, newest first:\n"
               f"    ValueError: bad rate_eu_west_3\n{EXCERPTS_TITLE}\n"
               f"`$ grep -n tax_table_v2 src/tax.py` printed:\n    12: tax_table_v2 = load_rates()")
    note_item = Item("user", (c.Text(earlier),), provenance=Provenance(survival=True))
    lost = missing(needs(Conversation([c.user("task")], HEADER), 0), "")
    lost.references = ["tax_table_v2", "rate_eu_west_3"]
    text = note_text(lost, 400, EST.text, [note_item])
    assert text is not None
    assert "`$ grep -n tax_table_v2 src/tax.py` printed:\n    12: tax_table_v2 = load_rates()" in text
    assert "Unresolved errors" not in text and "rate_eu_west_3" not in text


def test_a_cleared_outputs_note_line_is_never_quoted_as_what_the_command_printed() -> None:
    """A cleared output's first line is contextfold's placeholder; the lines it kept of the output are the output's."""
    conv = session(("gh pr checks 4", "x"))
    cleared = with_result(conv[2], "[contextfold: output cleared to save context (452 tokens); the call is kept. It "
                          "reported: coq_verification_job fail]\n. Lines of it still in use:\nlean_build_job pass 7s\n]",
                          "clear")
    lost = missing(needs(Conversation([c.user("task")], HEADER), 0), "")
    lost.references = ["coq_verification_job", "lean_build_job"]
    text = note_text(lost, 400, EST.text, [cleared])
    assert text is not None and "`$ gh pr checks 4` printed:\n    lean_build_job pass 7s" in text
    assert "output cleared" not in text


def test_a_second_summary_never_quotes_the_first_ones_pointer_as_a_line_in_use() -> None:
    """The first summary ends on contextfold's pointer to the history (its refs are contextfold's ids): after a
    second summary replaces it, the note puts back the session's lines it held, never that pointer, and the ids
    are no names the agent used."""
    pointer = ('Earlier details are still in the history: search_history("text") finds their lines; this summary '
               'replaces 31 items, read_history("it_42aeb842d21bb6c6") to read_history("it_9d0e11a2b3c4d5e6").')
    text = f"{SUMMARY_PREAMBLE}\n\n## 2. Findings and Decisions\n- refund_ledger_v2 rounds the refund twice, once per line\n\n{pointer}"
    first = Item("user", (c.Summary(text, covers=31, preamble=len(SUMMARY_PREAMBLE) + 2),),
                 provenance=Provenance(summary=True))
    conv = session(*[(f"echo {k}", "noise " * 200) for k in range(6)])
    conv = conv.with_items([conv[0], first, *conv.items[1:]])
    references = needs(conv, 0).references
    assert "refund_ledger_v2" in references
    assert not any(ref.startswith("it_") or ref.endswith("_history") for ref in references), references
    out, _ = survive(conv, conv.with_items([conv[0], *conv.items[-2:]]), make_budget(), task_index=0)
    note = next(item.text for item in out.items if item.provenance.survival)
    assert "An earlier summary said:\n    - refund_ledger_v2 rounds the refund twice, once per line" in note
    assert "Earlier details" not in note and "it_42aeb842d21bb6c6" not in note


def test_an_earlier_summary_is_carried_without_the_preamble_and_pointer_contextfold_wrote_around_it() -> None:
    """A summary without contextfold's state (a model's) is carried by the next one as its summarizer wrote it: the
    preamble and the pointer to the history were contextfold's, about the request that summary went into."""
    pointer = 'Earlier details are still in the history: search_history("text") finds their lines.'
    text = f"{SUMMARY_PREAMBLE}\n\nThe refund rounds twice in refund_ledger_v2.\n\n{pointer}"
    first = Item("user", (c.Summary(text, covers=9, preamble=len(SUMMARY_PREAMBLE) + 2),),
                 provenance=Provenance(summary=True))
    facts = Facts()
    facts.read([first])
    assert facts.earlier_summaries == ["The refund rounds twice in refund_ledger_v2."]
    assert render_span([first]).earlier_summary == "The refund rounds twice in refund_ledger_v2."


def test_an_old_todo_list_is_no_source_of_lines_in_use() -> None:
    """An earlier todo call's items carry the statuses they had then ("in_progress" for a task since done): the note
    quotes an old list's item names, never a status (the plan's latest state is its open plan items)."""
    todo = c.assistant("", [c.ToolCall("t0", "TodoWrite", {"todos": [
        {"content": "Migrate the billing_v2 routes", "status": "in_progress"}]})])
    lost = missing(needs(Conversation([c.user("task")], HEADER), 0), "")
    lost.references = ["billing_v2", "in_progress"]
    said = c.assistant("The billing_v2 routes moved to src/routes/billing.py, every one of them.")
    text = note_text(lost, 400, EST.text, [todo, said])
    assert text is not None and "The agent said:\n    The billing_v2 routes moved" in text
    assert "in_progress" not in text and "TodoWrite" not in text
    lost.references = ["billing_v2"]
    text = note_text(lost, 400, EST.text, [todo])  # the list's item names still serve a name in use
    assert text is not None and "A todo list the agent wrote named:\n    Migrate the billing_v2 routes" in text


def test_survival_adds_nothing_when_nothing_is_missing_and_is_off_at_zero() -> None:
    conv = session(("cat a_file.py", "x = 1"), ("echo done", "ok"))
    same, events = survive(conv, conv, make_budget(), task_index=0)
    assert same is conv and events == []
    dropped = conv.with_items(conv.items[:1])
    off, events = survive(conv, dropped, make_budget(policy=Policy(survival_max_tokens=0)), task_index=0)
    assert off is dropped and events == []


def test_summary_share_follows_content() -> None:
    searches = session(*[(f"grep -rn thing{k} .", "a.py:1: thing\n" * 50) for k in range(6)])
    edits = session(*[(f"sed -i 's/a/b/' f{k}.py", "Traceback\nValueError: broken\nexit code 1") for k in range(6)])
    sparse = summary_share(searches.items[1:], EST.item)
    dense = summary_share(edits.items[1:], EST.item)
    assert MIN_SHARE <= sparse < dense <= MAX_SHARE


def test_economics_prices_the_summarizer_call_and_the_re_reads_of_what_is_still_used() -> None:
    conv = session(
        ("cat src/core/engine_v2.py", "def run_engine_v2(): ...\n" * 200),
        *[("grep -n run_engine_v2 src/core/engine_v2.py", "1: def run_engine_v2") for _ in range(3)],
        *[(f"echo {k}", "noise " * 300) for k in range(6)],
    )
    budget = make_budget(tail_tokens=300)
    out, _ = summarize(conv, budget)
    assert summary_call_usd(conv, out, budget) > 0
    assert summary_call_usd(conv, out, make_budget(policy=Policy(price_summaries=False))) == 0  # offline, not priced
    cleared_all = conv.with_items([conv[0], conv[-2], conv[-1]])  # drops the read the agent keeps using
    cleared_noise = conv.with_items([item for k, item in enumerate(conv.items) if not 10 <= k < 18])
    assert re_read_usd(conv, cleared_all, budget) > re_read_usd(conv, cleared_noise, budget) >= 0
    decision = verdict(conv, out, budget)
    assert decision.cost_usd >= decision.summary_call_usd + decision.re_read_usd > 0


def test_a_summary_is_charged_for_the_far_context_it_drops_and_clearing_is_not() -> None:
    conv = session(*[(f"cat notes_{k}.txt", f"line {k}: " + "fact " * 300) for k in range(8)])
    budget = make_budget(tail_tokens=300, policy=Policy(economic_summary_rereads=1.0))
    out, _ = summarize(conv, budget)
    dropped = sum(budget.count_item(item) for item in conv.items if item not in out.items)
    charged = forgetting_usd(conv, out, budget)
    assert dropped > 0 and charged == pytest.approx(dropped * budget.policy.prices_in_effect.cache_write_per_mtok / 1e6)
    assert forgetting_usd(conv, out, make_budget(tail_tokens=300, policy=Policy(economic_summary_rereads=3.0))) == (
        pytest.approx(3 * charged))
    free = make_budget(tail_tokens=300)  # the default: off
    assert forgetting_usd(conv, out, free) == 0
    assert verdict(conv, out, budget).cost_usd == pytest.approx(verdict(conv, out, free).cost_usd + charged)
    cleared = conv.with_items([conv[0], conv[-2], conv[-1]])  # no summary: the outputs can be read again
    assert forgetting_usd(conv, cleared, budget) == 0


def test_restore_brings_back_only_files_in_use() -> None:
    used = [bash("c0", "cat src/hot_path.py"), c.tool("c0", "HOT = 1"), bash("c1", "cat src/cold_path.py"),
            c.tool("c1", "COLD = 1")]
    greps = [item for k in range(4) for item in (bash(f"u{k}", "grep -n HOT src/hot_path.py"), c.tool(f"u{k}", "1"))]
    conv = Conversation([c.user("task"), *used, *greps], HEADER)  # links each output to its call
    span = conv.items[1:]
    refs = References.of(conv.items)
    item = restored_item(span, [], max_files=5, file_tokens=500, total_tokens=5_000, count_text=EST.text,
                         refs=refs, min_weight=3.0)
    assert isinstance(item, Item) and "src/hot_path.py" in item.text and "cold_path" not in item.text


def test_a_file_the_agent_deleted_is_not_restored_as_last_seen() -> None:
    """Scratch scripts removed as a run ends (``rm repro_gfk.py``, in the span or in the kept tail) are gone: restored
    "as last seen" they read as files still there to run; one written again after its removal is there again."""
    wrote = [c.assistant("", [c.ToolCall("w0", "write_file", {"path": "/testbed/repro_gfk.py", "content": "print(1)"})]),
             c.tool("w0", "File written"),
             c.assistant("", [c.ToolCall("w1", "write_file", {"path": "/testbed/src/app.py", "content": "APP = 2"})]),
             c.tool("w1", "File written")]
    removed = [bash("r0", "cd /testbed && rm -f repro_gfk.py"), c.tool("r0", "")]
    again = [c.assistant("", [c.ToolCall("w2", "write_file", {"path": "/testbed/repro_gfk.py", "content": "print(2)"})]),
             c.tool("w2", "File written")]
    items = Conversation([c.user("task"), *wrote, *removed, *again], HEADER).items  # links each output to its call
    wrote, removed, again = items[1:5], items[5:7], items[7:]
    for span, tail in ((wrote + removed, []), (wrote, removed)):
        item = restored_item(span, tail, max_files=5, file_tokens=500, total_tokens=5_000, count_text=EST.text)
        assert isinstance(item, Item) and "/testbed/src/app.py" in item.text and "repro_gfk" not in item.text
    item = restored_item(wrote + removed + again, [], max_files=5, file_tokens=500, total_tokens=5_000, count_text=EST.text)
    assert isinstance(item, Item) and "print(2)" in item.text


def test_restore_brings_back_the_plan_put_to_the_user_unless_the_tail_shows_it() -> None:
    """Claude Code's ExitPlanMode: the agent's plan (an excerpt written for this test), approved, then the agent
    works from its files and values; a compaction right after approval kept none of them."""
    plan = "# API plan\n1. Create `.env.production` with VITE_API_BASE_URL=http://10.0.0.5:8000\n2. Add src/lib/api/client.ts"
    proposal = c.assistant("", [c.ToolCall("p1", "ExitPlanMode", {"plan": plan})])
    approved = c.tool("p1", "User has approved your plan. You can now start coding.")
    conv = Conversation([c.user("adapt the frontend to API.md"), proposal, approved, bash("b1", "npm install axios"),
                         c.tool("b1", "added 1 package")], HEADER)
    item = restored_item(conv.items[1:4], conv.items[4:], max_files=5, file_tokens=500, total_tokens=5_000,
                         count_text=EST.text)
    assert isinstance(item, Item) and plan in item.text
    earlier = Conversation([c.user("adapt the frontend to API.md"), c.assistant("Reading API.md first."), proposal,
                            approved], HEADER)
    assert restored_item(earlier.items[:2], earlier.items[2:], max_files=5, file_tokens=500, total_tokens=5_000,
                         count_text=EST.text) is None  # the call itself is still in the request


def test_a_todo_list_with_every_item_completed_is_not_restored_as_current() -> None:
    """A list the agent closed for an earlier request (Claude Code's TodoWrite, all ``completed``) is no plan of the
    request in hand: restored under "Current todo list" it read as one."""
    todo = c.assistant("", [c.ToolCall("t1", "TodoWrite", {"todos": [
        {"content": "Run DocGen for documentation", "status": "completed", "activeForm": "Generating documentation"}]})])
    conv = Conversation([c.user("run docgen"), todo, c.tool("t1", "ok"), c.user("now simplify the extensions")], HEADER)
    item = restored_item(conv.items[1:3], conv.items[3:], max_files=5, file_tokens=500, total_tokens=5_000,
                         count_text=EST.text)
    assert item is None or "Current todo list" not in item.text


def test_restore_shows_the_todo_list_as_lines() -> None:
    todo = c.assistant("", [c.ToolCall("t1", "TodoWrite", {"todos": [
        {"content": "Port the parser", "status": "completed", "activeForm": "Porting the parser"},
        {"content": "Run the tests", "status": "in_progress", "activeForm": "Running the tests"}]})])
    conv = Conversation([c.user("task"), todo, c.tool("t1", "ok")], HEADER)
    item = restored_item(conv.items[1:], [], max_files=5, file_tokens=500, total_tokens=5_000, count_text=EST.text)
    assert isinstance(item, Item)
    assert ("### Current todo list\n- [completed] Port the parser (active form: Porting the parser)\n"
            "- [in progress] Run the tests (active form: Running the tests)") in item.text
    assert "activeForm" not in item.text


def test_restore_brings_back_files_read_just_before_the_cut_though_no_later_turn_names_them_yet() -> None:
    """The person asks for a document on a repository; the agent reads its README and package.json in one round and
    goes on listing folders (a shape of a Claude Code transcript, written for this test). The summary took both
    reads, and no later call names them yet, so by weight alone neither came back: the agent wrote the document
    from neither."""
    readme, package = "# e2e-tests\nRun `npm run test:smoke` before a release.", '{"scripts": {"test:smoke": "playwright"}}'
    earlier = [bash(f"o{k}", f"cat docs/old_{k}.md") for k in range(4)]
    conv = Conversation([
        c.user("map the e2e-tests repo next"),
        *[item for k, call in enumerate(earlier) for item in (call, c.tool(f"o{k}", "1: TODO"))],
        c.assistant("", [c.ToolCall("r1", "bash", {"command": "cat e2e-tests/README.md"}),
                         c.ToolCall("r2", "bash", {"command": "cat e2e-tests/package.json"})]),
        c.tool("r1", readme), c.tool("r2", package),
        bash("l1", "ls e2e-tests/pages/"), c.tool("l1", "BasePage.ts\nLoginPage.ts"),
    ], HEADER)
    span, tail = conv.items[1:-2], conv.items[-2:]
    item = restored_item(span, tail, max_files=5, file_tokens=500, total_tokens=5_000, count_text=EST.text,
                         refs=References.of(conv.items), min_weight=3.0)
    assert isinstance(item, Item) and readme in item.text and package in item.text
    assert "old_0" not in item.text  # a file read rounds before is still left to its weight


def test_restore_brings_back_the_file_the_agent_just_wrote_whole_from_its_write_call() -> None:
    """The agent writes one hook, then the next from it (a shape of a Claude Code transcript, written for this test):
    the first hook's only copy is the ``Write`` call's ``content``, which the summary took; it comes back as the agent
    wrote it. A replacement (``old_string``) writes part of a file, and leaves the file to be read again."""
    hook = "#!/usr/bin/env bun\nasync function main(): Promise<void> {\n  for await (const chunk of Bun.stdin.stream()) {}\n}"
    conv = Conversation([
        c.user("add the two capture hooks"),
        c.assistant("", [c.ToolCall("w1", "Write", {"file_path": "hooks/capture-verdict.ts", "content": hook})]),
        c.tool("w1", "File created successfully at: hooks/capture-verdict.ts"),
        c.assistant("", [c.ToolCall("e1", "Edit", {"file_path": "hooks/settings.json", "old_string": "[]",
                                                     "new_string": '["capture-verdict.ts"]'})]),
        c.tool("e1", "The file hooks/settings.json has been updated."),
        bash("l1", "ls hooks"), c.tool("l1", "capture-verdict.ts\nsettings.json"),
    ], HEADER)
    item = restored_item(conv.items[1:5], conv.items[5:], max_files=5, file_tokens=500, total_tokens=5_000,
                         count_text=EST.text, refs=References.of(conv.items), min_weight=3.0)
    assert isinstance(item, Item) and f"### hooks/capture-verdict.ts{WROTE}\n{hook}" in item.text
    assert "settings.json" not in item.text


def test_restore_applies_the_agents_later_edits_to_the_file_it_read() -> None:
    """The agent reads a module, replaces one line, and its next edit will quote the new line as ``old_string`` (a
    shape of a Claude Code transcript, written for this test): restored as read, with a note that it was edited
    since, the line to quote was not in the request. Applied to the read, in its numbered form, it is; an edit
    whose old text the read does not hold leaves the read marked stale."""
    read = "     1→export const PORT = 8080;\n     2→export const HOST = 'localhost';\n     3→export const TTL = 60;"
    edit = c.ToolCall("e1", "Edit", {"file_path": "src/config.ts", "old_string": "export const HOST = 'localhost';",
                                     "new_string": "export const HOST = '0.0.0.0';\nexport const TLS = true;"})
    conv = Conversation([
        c.user("serve on every interface"),
        c.assistant("", [c.ToolCall("r1", "Read", {"file_path": "src/config.ts"})]), c.tool("r1", read),
        c.assistant("", [edit]), c.tool("e1", "The file src/config.ts has been updated."),
        bash("t1", "npm test"), c.tool("t1", "3 passed"),
    ], HEADER)
    item = restored_item(conv.items[1:5], conv.items[5:], max_files=5, file_tokens=500, total_tokens=5_000,
                         count_text=EST.text)
    assert isinstance(item, Item)
    assert (f"### src/config.ts{EDITED}\n     1→export const PORT = 8080;\n     2→export const HOST = '0.0.0.0';\n"
            "     3→export const TLS = true;\n     4→export const TTL = 60;") in item.text
    elsewhere = c.ToolCall("e1", "Edit", {"file_path": "src/config.ts", "old_string": "export const TTL = 30;",
                                          "new_string": "export const TTL = 90;"})
    stale = Conversation([*conv.items[:3], c.assistant("", [elsewhere]), c.tool("e1", "updated"), *conv.items[5:]],
                         HEADER)
    item = restored_item(stale.items[1:5], stale.items[5:], max_files=5, file_tokens=500, total_tokens=5_000,
                         count_text=EST.text)
    assert isinstance(item, Item) and f"### src/config.ts{STALE}\n{read}" in item.text


def test_restore_reads_a_text_mode_agents_commands_and_outputs() -> None:
    """mini-swe-agent's shape (written for this test): each reply runs one fenced bash block and the output comes
    back as a user message. The agent wrote a reproduction script with ``cat <<'EOF' > …`` and read a module with
    ``cat``; its next script copies the first's lines. Both come back, as they would for an agent calling tools."""
    script = "from django.test import TestCase\nclass ReproduceIssueTest(TestCase):\n    pass\n"
    write = f"THOUGHT: I'll write a reproduction script.\n\n```bash\ncat <<'EOF' > tests/queries/test_repro.py\n{script}EOF\n```"
    conv = Conversation([
        c.user("<pr_description>OuterRef in exclude() uses the wrong model</pr_description>"),
        c.assistant(write), c.user("<returncode>0</returncode>\n<output>\n</output>"),
        c.assistant("THOUGHT: Now the query code.\n\n```bash\ncat django/db/models/sql/where.py\n```"),
        c.user("<returncode>0</returncode>\n<output>\nclass WhereNode(tree.Node):\n    default = AND\n</output>"),
        c.assistant("THOUGHT: Run it.\n\n```bash\npython tests/runtests.py queries.test_repro\n```"),
        c.user("<returncode>1</returncode>\n<output>\nFAILED (errors=1)\n</output>"),
    ], Header())
    item = restored_item(conv.items[1:5], conv.items[5:], max_files=5, file_tokens=500, total_tokens=5_000,
                         count_text=EST.text)
    assert isinstance(item, Item)
    assert f"### tests/queries/test_repro.py{WROTE}\n{script}" in item.text
    assert "class WhereNode(tree.Node):" in item.text
