"""The structured extractive summarizer: sections, facts kept, size, determinism, merging across compactions."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from contextfold.actions import EDIT, classify, failure_line
from contextfold.conversation import (UNANSWERED_TEXT, Conversation, Header, Item, Provenance, Summary, ToolCall, assistant,
                                      tool, user)
from contextfold.importers import load
from contextfold.pipeline.stages.clear import placeholder
from contextfold.summarizers import SECTION_TITLES, ExtractiveSummarizer, SummaryRequest, summary_preamble
from contextfold.summarizers._outputs import MANIFEST_HEAD_LINES, manifest_head
from contextfold.summarizers._said import names_in
from contextfold.reading import is_person
from contextfold.synthetic import generate_session
from contextfold.tokens import heuristic_tokens

SUMMARIZER = ExtractiveSummarizer()


def summarize(
    items: Sequence[Item],
    target: int = 4_000,
    instructions: str | None = None,
    count: Callable[[str], int] = heuristic_tokens,
) -> tuple[str, dict]:
    result = SUMMARIZER.summarize(SummaryRequest(items, Header(), target, count, instructions))
    return result.text, dict(result.state)


def ledger_session() -> Conversation:
    """Three errors: one fixed by a re-run, one by editing the file its traceback names, one left open."""
    c = Conversation()
    c.append(user("Fix the ledger totals in src/ledger.py and keep the migration check passing."))
    c.append(assistant("Running the tests first.", [ToolCall("c1", "bash", {"command": "npm test -- ledger"})]))
    c.append(tool("c1", "exit code 1\nFAIL ledger.spec.js\nAssertionError: expected 10 to equal 12", True))
    c.append(assistant("", [ToolCall("c2", "bash", {"command": "python scripts/report.py"})]))
    c.append(tool("c2", 'exit code 1\nTraceback (most recent call last):\n  File "src/report.py", line 3, in total\n'
                        "ZeroDivisionError: division by zero", True))
    c.append(assistant("", [ToolCall("c3", "edit_file", {"path": "src/report.py", "old": "a / b", "new": "a / b if b else 0"})]))
    c.append(tool("c3", "Edited src/report.py"))
    c.append(assistant("", [ToolCall("c4", "edit_file", {"path": "src/ledger.py", "old": "round(x)", "new": "round(x, 2)"})]))
    c.append(tool("c4", "Edited src/ledger.py"))
    c.append(assistant("", [ToolCall("c5", "bash", {"command": "npm test -- ledger"})]))
    c.append(tool("c5", "exit code 0\nPASS ledger.spec.js"))
    c.append(assistant("", [ToolCall("c6", "bash", {"command": "python scripts/migrate.py --check"})]))
    c.append(tool("c6", "exit code 2\nmigrate: error: unknown table 'ledger_v2'", True))
    c.append(assistant("", [ToolCall("c7", "todo_write", {"todos": [
        {"content": "Fix ledger rounding", "status": "completed"},
        {"content": "Repair the migration check", "status": "in_progress"},
        {"content": "Update the changelog", "status": "pending"},
    ]})]))
    c.append(tool("c7", "Todos updated."))
    c.append(user("Also keep the public API of src/ledger.py unchanged, please."))
    c.append(assistant("Rounding is fixed. Next I will look at the migration check and the ledger_v2 table."))
    return c


def section(text: str, number: int) -> str:
    """The body of section ``number`` (1-based); sections with nothing to show are left out, so the next one
    is whichever heading follows."""
    start = text.index(f"## {number}. {SECTION_TITLES[number - 1]}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


STUB = re.compile(r"…\s*\d+ (?:more|earlier)|\(\d+\)\s*$", re.MULTILINE)
"""A line standing for content it does not show: "… 30 more identifiers", "Commands that changed the system (3)"."""


def assert_every_section_has_content(text: str) -> None:
    assert not STUB.search(text), STUB.search(text)
    bodies = re.split(r"^## \d+\. .+$", text, flags=re.MULTILINE)[1:]
    assert all(body.strip() for body in bodies), text


def expected_facts(items: Sequence[Item]) -> tuple[list[str], list[str], str | None]:
    """User messages, edited paths and the last error line, read off the items independently of the summarizer."""
    messages = [i.text for i in items if i.role == "user" and is_person(i)]
    edited: dict[str, None] = {}
    calls = {c.id: c for i in items for c in i.tool_calls}
    last_error = None
    for item in items:
        for call in item.tool_calls:
            if classify(call).kind == EDIT:
                edited.update(dict.fromkeys(classify(call).paths))
        result = item.tool_result
        if result is not None:
            line = failure_line(result.text, result.is_error, classify(calls[result.call_id]).kind)
            last_error = line if line is not None else last_error
    return messages, list(edited), last_error


def head(message: str, chars: int = 40) -> str:
    return message.replace("\r\n", "\n").strip()[:chars]


# --------------------------------------------------------------------------- structure and facts


def test_sections_in_order_each_once() -> None:
    text, _ = summarize(generate_session(rounds=60).items)
    headings = re.findall(r"^## (\d+)\. (.+)$", text, re.MULTILINE)
    numbered = [(str(n), title) for n, title in enumerate(SECTION_TITLES, 1)]
    assert len(headings) >= 6 and headings == [h for h in numbered if h in headings]
    assert_every_section_has_content(text)


def test_names_in_a_megabyte_of_slashes_and_dots_are_found_in_one_pass() -> None:
    """Found by summarizing a hostile task: the path pattern, tried again at each character of a run of slashes,
    dots or digits, rescanned the rest of it (a task of 60,000 took 7.5 s to summarize at 500 tokens); a megabyte
    would not return in the lifetime of the test. Paths and names around the run are still found."""
    slashes, digits = "/." * 300_000, "7" * 300_000
    found = names_in(f"see {slashes} {digits} then src/app/main.py and parse_config, #12")
    assert found == ["src/app/main.py", "parse_config", "#12"]


def test_an_empty_span_shows_no_empty_section() -> None:
    text, state = summarize([])
    assert re.findall(r"^## (\d+)\. (.+)$", text, re.MULTILINE) == []
    json.dumps(state)


def test_no_stated_plan_leaves_the_next_step_out_rather_than_calling_the_work_done() -> None:
    """A summary is written mid-work: with no plan, todo, question or open error to point at, section 9 is left
    out (it used to say the work "appears complete", which could make the agent stop)."""
    c = Conversation()
    c.append(user("Find where the config loader reads environment variables."))
    c.append(assistant("Listing the package.", [ToolCall("c1", "bash", {"command": "ls src/app"})]))
    c.append(tool("c1", "config.py\nmain.py"))
    c.append(assistant("The loader is in config.py.", [ToolCall("c2", "bash", {"command": "grep -n environ src/app/config.py"})]))
    c.append(tool("c2", "12:    value = os.environ.get(name)"))
    text, _ = summarize(c.items)
    assert "Optional Next Step" not in text and "complete" not in text
    assert "grep -n environ src/app/config.py" in text
    assert_every_section_has_content(text)


def test_facts_of_a_small_session() -> None:
    items = ledger_session().items
    text, _ = summarize(items)
    assert "Fix the ledger totals in src/ledger.py" in section(text, 1)
    files = section(text, 3)
    assert "`src/ledger.py`" in files and "`src/report.py`" in files
    assert "round(x, 2)" in files  # the new text of the last edit
    errors = section(text, 4)
    assert "    migrate: error: unknown table 'ledger_v2'" in errors  # the last error line, verbatim, on its own line
    assert "Last error (unresolved)" in errors
    assert re.search(r"\[resolved: a later run of `npm test -- ledger` succeeded\] `\$ npm test -- ledger`", errors)
    assert re.search(r"\[resolved: src/report.py was edited afterwards\] `\$ python scripts/report.py`", errors)
    assert "Also keep the public API of src/ledger.py unchanged, please." in section(text, 6)
    pending = section(text, 7)
    assert "- [in progress] Repair the migration check" in pending
    assert "- [pending] Update the changelog" in pending
    assert "Completed (1): Fix ledger rounding" in pending
    assert "Next I will look at the migration check" in section(text, 8)
    assert "Continue the task in progress: Repair the migration check" in section(text, 9)


def test_a_failed_edit_still_names_its_path() -> None:
    c = ledger_session()
    c.append(assistant("", [ToolCall("c8", "Edit", {"file_path": "src/api.py", "old_string": "x", "new_string": "y"})]))
    c.append(tool("c8", "old_string not found in src/api.py", True))
    text, _ = summarize(c.items)
    assert "`src/api.py`: 1 edit failed" in section(text, 3)
    assert "    old_string not found in src/api.py" in section(text, 4)


def test_an_output_cleared_before_the_summary_is_quoted_by_its_failure_not_by_the_placeholder() -> None:
    """The clear stage replaces an old output by a note quoting its failure inside the note; the summary names the
    failure itself (it quoted the whole note, "[contextfold: output cleared…", as the last error)."""
    c = Conversation()
    c.append(user("Publish the workflow files."))
    c.append(assistant("Reading the folder.", [ToolCall("c1", "Read", {"file_path": "/tmp/solver"})]))
    c.append(tool("c1", "EISDIR: illegal operation on a directory, read", True))
    c.items[-1] = placeholder(c.items[-1], 17, "clear")
    text, _ = summarize(c.items)
    errors = section(text, 4)
    assert "    EISDIR: illegal operation on a directory, read\n" in errors + "\n"
    assert "[contextfold" not in errors


def findings_session(last: str) -> Conversation:
    """Forty reads, each with a stated finding (they fill a small summary's budget), then the message ``last``."""
    c = Conversation()
    c.append(user("RenameField leaves a ForeignKey's to_field pointing at the old name; fix it in django/db/migrations."))
    for n in range(40):
        c.append(assistant(f"I found that field_{n} is set from remote_field.field_name in operations/fields.py line "
                           f"{n * 20}, which keeps the old name.",
                           [ToolCall(f"c{n}", "bash", {"command": f"sed -n '{n * 20},{n * 20 + 20}p' operations/fields.py"})]))
        c.append(tool(f"c{n}", "\n".join(f"    field_{n}_{k} = remote_field.field_name  # line {k}" for k in range(20))))
    c.append(assistant(last))
    return c


def test_a_stated_plan_survives_a_small_target_whole() -> None:
    """Under a small target the next step was cut to "As the assistant said l[… 46 characters omitted …]ute_to_class:"
    (half of them, at 16k on the corpus): its lead is kept whole now, and a one-sentence plan with it."""
    plan = "Let me check the ManyToOneRel constructor in django/db/models/fields/reverse_related.py:"
    text, _ = summarize(findings_session("The rename leaves field_name stale. " + plan).items, target=300)
    assert f"As the assistant said last: {plan}" in section(text, 9)


def test_the_plan_is_said_once_in_the_next_step_not_again_in_current_work() -> None:
    """Section 8 showed the last message and section 9 quoted its last sentence again, one after the other: the
    plan is section 9's, and section 8 keeps the rest of the message (or leaves the message out when it was only
    the plan)."""
    plan = "Let me check the ManyToOneRel constructor in django/db/models/fields/reverse_related.py:"
    finding = "The rename leaves field_name stale because set_field_name keeps the old value."
    text, _ = summarize(findings_session(f"{finding} {plan}").items, target=2_000)
    assert text.count(plan) == 1 and plan in section(text, 9)
    assert finding in section(text, 8)
    text, _ = summarize(findings_session(plan).items, target=2_000)
    assert text.count(plan) == 1 and "The assistant's last message" not in section(text, 8)


def test_the_last_message_is_shown_with_enough_of_it_to_say_something_or_left_out() -> None:
    """Cut to its 24-token floor the last message read "The issue is that Mod [… 176 characters omitted …]
    ModelStates:" (8 of 26 on the corpus at 16k); the plan it ends on is the next step either way."""
    last = ("The issue is that ModelState instances in the autodetector tests are built before the app registry is ready, "
            "so related_model raises AppRegistryNotReady when the rename runs; the state has to be rendered first. "
            "Let me check the test_autodetector.py file to see how it creates ModelStates:")
    text, _ = summarize(findings_session(last).items, target=200)
    if "The assistant's last message:" in text:
        shown = section(text, 8).split("The assistant's last message:\n", 1)[1]
        assert len(re.sub(r" \[… [\d,]+ characters omitted …\] ", "", shown)) >= 120
    assert "Let me check the test_autodetector.py file to see how it creates ModelStates:" in section(text, 9)


def test_unanswered_user_sets_the_next_step() -> None:
    c = ledger_session()
    c.append(user("Wait: what about the audit log?"))
    text, _ = summarize(c.items)
    assert "came after that and is not answered yet" in section(text, 8)
    assert "Answer the user's latest message: Wait: what about the audit log?" in section(text, 9)


def test_last_error_line_and_edited_paths_on_the_synthetic_session() -> None:
    items = generate_session().items
    messages, edited, last_error = expected_facts(items)
    assert last_error is not None and edited
    for target in (1_000, 4_000):
        text, _ = summarize(items, target)
        assert f"\n    {last_error}\n" in text
        assert all(path in text for path in edited)
        assert all(head(m) in text for m in messages)


def test_every_user_message_survives_a_small_target_by_its_head() -> None:
    c = Conversation()
    for n in range(30):
        c.append(user(f"Request {n:02d}: please handle case {n} carefully. " + "Details follow. " * 120 + f"End of {n:02d}."))
        c.append(assistant(f"Noted {n}."))
    text, _ = summarize(c.items, 1_500)
    assert heuristic_tokens(text) <= 1_500
    for n in range(30):
        assert f"Request {n:02d}: please" in text
    assert text.count("characters omitted") >= 29  # shortened, not dropped


def test_a_session_of_hundreds_of_user_turns_stays_within_its_target() -> None:
    """Every head kept whatever the target made such a summary several times its target: the newest requests keep
    theirs, older ones show as the budget allows (the state still carries every one)."""
    c = Conversation()
    for n in range(300):
        c.append(user(f"Request {n:03d}: the parser reads the config file and checks each key. " * 4))
        c.append(assistant(f"Done with {n}."))
    text, state = summarize(c.items, 2_400)
    assert heuristic_tokens(text) <= 2_400
    assert "Request 000" in text and "Request 299" in text and "Request 290" in text
    assert len(state["user_messages"]) == 300


# --------------------------------------------------------------------------- size


@pytest.mark.parametrize(("target", "span"), [(500, 120), (2_000, None), (8_000, None)])
def test_target_respected_on_the_synthetic_session(target: int, span: int | None) -> None:
    items = generate_session().items[:span]
    text, _ = summarize(items, target)
    assert heuristic_tokens(text) <= target
    assert heuristic_tokens(text) >= min(target, heuristic_tokens(summarize(items, 100_000)[0])) * 0.8  # uses the room


def test_target_respected_with_another_counter() -> None:
    def chars_over_three(text: str) -> int:
        return len(text) // 3

    text, _ = summarize(generate_session().items, 1_200, count=chars_over_three)
    assert chars_over_three(text) <= 1_200


def test_floor_is_kept_when_the_target_is_impossible() -> None:
    items = generate_session().items
    messages, edited, last_error = expected_facts(items)
    text, _ = summarize(items, 50)
    assert_every_section_has_content(text)
    assert all(head(m, 25) in text for m in messages)
    assert all(path in text for path in edited)
    assert f"\n    {last_error}\n" in text
    assert heuristic_tokens(text) < 1_500  # everything else gave way


CORPUS_SESSIONS = (
    "mini-swe-agent/pylint-dev__astroid-1333.traj.json",
    "claude-code-transcript/python-to-rust-port/transcript.jsonl",
    "hive-mind-solve-logs/session-1-log.txt",
    "codex-tui/binary-size-log.jsonl",
)


@pytest.mark.parametrize("relative", CORPUS_SESSIONS)
def test_target_respected_on_corpus_sessions(corpus_dir: Path, relative: str) -> None:
    items = load(corpus_dir / relative)[0].items
    messages, edited, last_error = expected_facts(items)
    smallest = heuristic_tokens(summarize(items, 1)[0])  # what must stay whatever the target
    for target in (500, 2_000, 8_000):
        text, _ = summarize(items, target)
        assert heuristic_tokens(text) <= max(target, smallest)
        assert all(head(m, 25) in text for m in messages)
        assert all(path in text for path in edited)
        assert last_error is None or f"\n    {last_error}" in text
        assert_every_section_has_content(text)


# --------------------------------------------------------------------------- determinism, merging, focus


def test_deterministic() -> None:
    first = summarize(generate_session(rounds=80).items, 2_000)
    again = summarize(generate_session(rounds=80).items, 2_000)
    assert first == again


def test_facts_survive_three_consecutive_compactions() -> None:
    conversation = generate_session()
    items = list(conversation.items)
    starts = [start for start, _ in conversation.units()]
    cuts = [next(s for s in starts if s >= len(items) * k // 3) for k in (1, 2)]
    chunks = [items[: cuts[0]], items[cuts[0] : cuts[1]], items[cuts[1] :]]
    previous: Item | None = None
    for chunk in chunks:
        span = ([previous] if previous else []) + chunk
        text, state = summarize(span, 2_000)
        stored = json.loads(json.dumps(state))  # the pipeline keeps it in the transcript as JSON
        previous = Item("user", (Summary(text, len(span), extra={"state": stored}),))
    messages, edited, last_error = expected_facts(items)
    assert len(messages) > 3
    assert all(head(m) in text for m in messages)
    assert all(path in text for path in edited)
    assert f"\n    {last_error}\n" in text
    assert state["items"] == len(items)
    assert len(state["user_messages"]) == len(messages)


def test_an_earlier_summary_without_our_state_is_carried_as_text() -> None:
    earlier = Item("user", (Summary("The team agreed to use Decimal everywhere.", 40),))
    text, state = summarize([earlier, *ledger_session().items])
    assert "An earlier summary said:\nThe team agreed to use Decimal everywhere." in section(text, 5)
    assert state["items"] == 57  # the 40 it covered plus these 17
    again, _ = summarize([Item("user", (Summary(text, 57, extra={"state": state}),))])
    assert "The team agreed to use Decimal everywhere." in again


def test_instructions_are_put_first_and_favour_what_they_mention() -> None:
    c = Conversation()
    topics = ["billing", "invoices", "shipping", "returns", "search", "accounts"]
    for topic in topics:
        c.append(user(f"About {topic}: " + f"the {topic} flow needs care. " * 150))
        c.append(assistant(f"Working on {topic}."))
    plain, _ = summarize(c.items, 1_200)
    focused, _ = summarize(c.items, 1_200, instructions="Focus on the invoices work")
    assert focused.startswith("Focus requested by the user: Focus on the invoices work\n")

    def kept(text: str, topic: str) -> int:
        line = next(l for l in section(text, 6).splitlines() if f"About {topic}:" in l)
        return len(line) - len(line[line.index("[…") : line.index("…]")]) if "[…" in line else len(line)

    assert kept(focused, "invoices") > 1.5 * kept(plain, "invoices")
    assert heuristic_tokens(focused) <= 1_200


def test_instructions_reorder_lists_without_losing_a_path() -> None:
    items = generate_session().items
    _, edited, _ = expected_facts(items)
    text, _ = summarize(items, 900, instructions="focus on src/shop/tax.py")
    listed = "\n".join(line for line in section(text, 3).splitlines() if line.startswith("- "))
    assert listed.startswith(("- `src/shop/tax.py`", "- Changed (or tried to): src/shop/tax.py,"))  # first, however short
    assert all(path in listed for path in edited)
    assert len(re.findall(r"src/shop/tax\.py\b", listed)) == 1


def test_preamble() -> None:
    assert "continued from an earlier conversation" in summary_preamble()
    assert "/tmp/session.jsonl" in summary_preamble("/tmp/session.jsonl")
    assert "/tmp" not in summary_preamble()


# --------------------------------------------------------------------------- lines, not counts


def scratch_session() -> Conversation:
    """A harness nag, a scratch script that failed and was abandoned, findings, a test run, a failing traceback."""
    c = Conversation()
    c.append(user("No tool calls found in the response. Every response MUST include at least one tool call."))
    c.append(assistant("", [ToolCall("s1", "bash", {"command": "cat > probe_a.py <<'EOF'\nimport shop\nshop.run()\nEOF\npython probe_a.py"})]))
    c.append(tool("s1", "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n  File \"probe_a.py\", line 2\n"
                        "AttributeError: module 'shop' has no attribute 'run'\n</output>"))
    c.append(assistant("The cause is that `shop.totals.sum_cents` rounds each line before adding them up.",
                       [ToolCall("s2", "bash", {"command": "cat > probe_b.py <<'EOF'\nfrom shop.totals import sum_cents\nEOF\npython probe_b.py"})]))
    c.append(tool("s2", "<returncode>0</returncode>\n<output>\n1999\n</output>"))
    c.append(assistant("I'll fix `sum_cents` in src/shop/totals.py to round once, at the end.",
                       [ToolCall("s3", "bash", {"command": "cd /repo && python -m pytest tests/test_totals.py -q"})]))
    c.append(tool("s3", "<returncode>1</returncode>\n<output>\nF.\nTraceback (most recent call last):\n"
                        '  File "/repo/src/shop/totals.py", line 41, in sum_cents\n'
                        "    return round_half_even(amount_v2)\n"
                        "shop.errors.RoundingProblem: amount_v2 is not a Decimal\n1 failed, 1 passed in 0.12s\n</output>"))
    return c


def test_a_harness_nag_is_not_the_users_request() -> None:
    text, state = summarize(scratch_session().items)
    assert "No tool calls found" not in text and state["user_messages"] == [] and state["harness_messages"] == 1
    assert "## 1. " not in text  # the request is not in this span: nothing stands in for it


def test_last_error_keeps_its_failing_frame_and_the_test_run_its_result_line() -> None:
    text, _ = summarize(scratch_session().items)
    errors = section(text, 4)
    frame = ['    File "/repo/src/shop/totals.py", line 41, in sum_cents', "        return round_half_even(amount_v2)",
             "    shop.errors.RoundingProblem: amount_v2 is not a Decimal"]
    assert "\n".join(frame) in errors and "Traceback (most recent call last)" not in errors
    assert "- Last test run: `$ cd /repo && python -m pytest tests/test_totals.py -q` → 1 failed, 1 passed in 0.12s" in text


def test_errors_of_an_abandoned_scratch_script_are_retired() -> None:
    text, state = summarize(scratch_session().items)
    assert "has no attribute 'run'" not in section(text, 4)
    assert [e["retired"] for e in state["errors"]] == [True, False]


def test_findings_are_the_assistants_own_lines_newest_first() -> None:
    text, _ = summarize(scratch_session().items)
    findings = section(text, 2)
    fix = findings.index("- I'll fix `sum_cents` in src/shop/totals.py to round once, at the end.")
    cause = findings.index("- The cause is that `shop.totals.sum_cents` rounds each line before adding them up.")
    assert fix < cause


def test_a_finding_names_the_call_whose_output_it_followed() -> None:
    text, _ = summarize(scratch_session().items)
    assert ("- The cause is that `shop.totals.sum_cents` rounds each line before adding them up. "
            "(after `$ cat > probe_a.py <<EOF; python probe_a.py`)") in section(text, 2)


def test_the_newest_finding_outlives_file_lists_and_counts_in_a_small_summary() -> None:
    c = scratch_session()
    for k in range(12):  # many changed files, many commands: what a small budget used to spend itself on
        c.append(assistant("", [ToolCall(f"w{k}", "bash", {"command": f"sed -i 's/a/b/' src/shop/part{k}.py"})]))
        c.append(tool(f"w{k}", "<returncode>0</returncode>\n<output>\n</output>"))
    c.append(assistant("Wait, I see it! Let me look at it again. The bug is that `sum_cents` rounds before adding.",
                       [ToolCall("z", "bash", {"command": "cat src/shop/totals.py"})]))
    c.append(tool("z", "<returncode>0</returncode>\n<output>\ndef sum_cents(xs): ...\n</output>"))
    text, _ = summarize(c.items, 200)
    assert "- Wait, I see it! The bug is that `sum_cents` rounds before adding. (after `$ sed -i" in section(text, 2)
    assert "Let me look" not in section(text, 2) and "changed 1×" not in text


def test_last_actions_show_the_line_their_result_ended_on() -> None:
    text, _ = summarize(scratch_session().items)
    assert "- $ cat > probe_b.py <<EOF; python probe_b.py → 1999" in section(text, 8)


def test_a_read_among_the_last_actions_is_named_without_the_line_its_range_stopped_at() -> None:
    c = scratch_session()
    c.append(assistant("", [ToolCall("r", "bash", {"command": "nl -ba src/shop/core.py | sed -n '720,820p'"})]))
    c.append(tool("r", "<returncode>0</returncode>\n<output>\n" + "\n".join(f"   {n}\tx = {n}" for n in range(720, 821))
                  + "\n</output>"))
    current = section(summarize(c.items)[0], 8)
    assert "- $ nl -ba src/shop/core.py | sed -n '720,820p'\n" in current + "\n"
    assert "x = 820" not in current


def test_the_projects_changed_files_come_before_the_scripts_the_agent_wrote_and_ran() -> None:
    """A bash agent's changed files were listed newest first, so a reader met probe scripts first and the
    project's fix last (or, in a small summary, only in the list of names): the project's files come first now,
    with their last change, and a probe says it was run."""
    c = Conversation()
    c.append(user("Fix the rounding in src/shop/totals.py."))
    c.append(assistant("", [ToolCall("e", "bash", {"command": "sed -i 's/round(x)/x/' src/shop/totals.py"})]))
    c.append(tool("e", "<returncode>0</returncode>\n<output>\n</output>"))
    for k in range(3):
        c.append(assistant("", [ToolCall(f"p{k}", "bash", {"command": f"cat > probe_{k}.py <<'EOF'\nimport shop\nEOF\npython probe_{k}.py"})]))
        c.append(tool(f"p{k}", "<returncode>0</returncode>\n<output>\nok\n</output>"))
    c.append(assistant("", [ToolCall("f", "bash", {"command": "cat > fix_totals.py <<'EOF'\nx = 1\nEOF\npython fix_totals.py"})]))
    c.append(tool("f", "<returncode>0</returncode>\n<output>\n</output>"))
    c.append(assistant("", [ToolCall("w", "bash", {"command": "cat > /tmp/patch.py <<'EOF'\nx = 1\nEOF"})]))
    c.append(tool("w", "<returncode>0</returncode>\n<output>\n</output>"))
    files = section(summarize(c.items)[0], 3)
    assert files.index("`src/shop/totals.py`") < files.index("`/tmp/patch.py`") < files.index("`probe_2.py`")
    assert "- `/tmp/patch.py`: created, changed 1×" in files
    assert "- `src/shop/totals.py`: changed 1×\n" in files  # running fix_totals.py is no run of totals.py
    assert "Last change to `src/shop/totals.py`" in files
    assert "- `probe_2.py`: created, changed 1×, ran as a script" in files


def test_a_last_action_ends_on_what_the_command_printed_not_on_swe_agents_framing() -> None:
    """SWE-agent appends its open file, its directory and its prompt to every observation, and glues its end mark
    to the last line: "→ bash-$" said nothing about what a curl returned."""
    c = scratch_session()
    c.append(assistant("", [ToolCall("u", "bash", {"command": "curl -s http://web.test/cgi-bin/hello.pl"})]))
    c.append(tool("u", "Hello World from Perl!///PROCESS-DONE:0:PROCESS-DONE///\n(Open file: n/a)\n"
                       "(Current directory: /ctf)\nbash-$"))
    current = section(summarize(c.items)[0], 8)
    assert "- $ curl -s http://web.test/cgi-bin/hello.pl → Hello World from Perl!\n" in current + "\n"


def test_an_issue_fetched_with_a_tool_is_the_task_as_it_arrived() -> None:
    c = Conversation()
    c.append(user("Solve issue 52."))
    c.append(assistant("", [ToolCall("g1", "Bash", {"command": "gh issue view 52 --repo acme/shop"})]))
    c.append(tool("g1", "title:\tTotals off by one cent\nstate:\tOPEN\n--\nsum_cents() rounds every line; round once at the end."))
    text, _ = summarize(c.items)
    request = section(text, 1)
    assert "The issue as the agent fetched it (`$ gh issue view 52 --repo acme/shop`), verbatim:" in request
    assert "sum_cents() rounds every line; round once at the end." in request


@pytest.mark.parametrize("target", [200, 800, 3_000])
def test_no_section_stands_over_a_count(target: int) -> None:
    for items in (generate_session().items, scratch_session().items, ledger_session().items):
        assert_every_section_has_content(summarize(items, target)[0])


def test_a_cleared_output_is_not_quoted_as_the_issue() -> None:
    c = Conversation()
    c.append(user("Solve issue 52."))
    c.append(assistant("", [ToolCall("g1", "Bash", {"command": "gh issue view 52"})]))
    cleared = tool("g1", "[contextfold: output cleared to save context (5,716 tokens); the call is kept]")
    c.append(Item(cleared.role, cleared.blocks, provenance=Provenance(compacted="clear")))
    text, _ = summarize(c.items)
    assert "output cleared" not in text and "The issue as the agent fetched it" not in text


def test_an_error_a_ci_log_showed_far_from_its_end_is_the_last_error_shown() -> None:
    """A log whose call succeeded reports its failing step mid-way: the summary quotes it with the lines above it;
    an error-looking line in a source file the agent read is code, not an error."""
    log = ("Verify\tstep ok\n" * 40 + "Verify\tresponse: 403\nVerify\turl: /repos/x/issues/4\n"
           "Verify\t##[error]Unhandled error: HttpError: Resource not accessible by integration\n"
           + "Verify\tPost job cleanup ok\n" * 400)
    c = Conversation()
    c.append(user("Make the PR checks pass."))
    c.append(assistant("", [ToolCall("c1", "bash", {"command": "gh run view 7 --log"})]))
    c.append(tool("c1", log, False))
    c.append(assistant("", [ToolCall("c2", "read_file", {"path": "src/check.py"})]))
    c.append(tool("c2", "def check():\n    print('Error: totals differ')\n"))
    text, _ = summarize(c.items)
    assert "The last error an output showed (its call did not fail), from `$ gh run view 7 --log`:" in text
    assert ("    Verify\tresponse: 403\n    Verify\turl: /repos/x/issues/4\n    Verify\t##[error]Unhandled error: "
            "HttpError: Resource not accessible by integration") in text
    assert "totals differ" not in text


def test_a_manifest_the_agent_read_keeps_its_head_through_its_scripts() -> None:
    """The scripts of a package.json are the commands the agent runs next to check its work: the summary keeps the
    head of the manifest through them, as read (with the reader's line numbers), even in a tiny summary; what
    follows the scripts block is left out."""
    manifest = ('     1→{\n     2→  "name": "shop",\n     3→  "main": "index.js",\n     4→  "scripts": {\n'
                '     5→    "test": "echo \\"Error: no test specified\\" && exit 1",\n     6→    "lint": "eslint .",\n'
                '     7→  },\n     8→  "license": "MIT",\n     9→  "devDependencies": {\n    10→    "eslint": "^9"\n'
                '    11→  }\n    12→}\n')
    c = Conversation()
    c.append(user("Add a lint step to CI."))
    c.append(assistant("", [ToolCall("r1", "Read", {"file_path": "/repo/package.json"})]))
    c.append(tool("r1", manifest))
    c.append(assistant("", [ToolCall("e1", "Edit", {"file_path": "/repo/.github/workflows/ci.yml", "old_string": "a",
                                                     "new_string": "b"})]))
    c.append(tool("e1", "The file /repo/.github/workflows/ci.yml has been updated."))
    for target in (200, 3_000):
        text, state = summarize(c.items, target)
        files = section(text, 3)
        assert "`/repo/package.json` as the agent read it (its head, through the scripts it defines):" in files
        assert '     4→  "scripts": {\n         5→    "test": "echo \\"Error: no test specified\\" && exit 1",' in files
        assert '"lint": "eslint ."' in files and '7→  },' in files
        assert "license" not in files and "devDependencies" not in files
    later = Conversation()  # a later compaction carries it over
    later.append(Item("user", (Summary(text, covers=5, extra={"state": state}),)))
    later.append(assistant("Done with the workflow."))
    assert '"lint": "eslint ."' in summarize(later.items)[0]


def test_a_manifest_without_scripts_keeps_its_first_lines() -> None:
    toml = "".join(f"{n}\tline {n}\n" for n in range(1, 30))
    assert manifest_head(toml) == [f"{n}\tline {n}" for n in range(1, MANIFEST_HEAD_LINES + 1)]
    scripts = "[project]\nname = 'x'\n[project.scripts]\nx = 'x.cli:main'\n\n[tool.ruff]\nline-length = 120\n"
    assert manifest_head(scripts) == ["[project]", "name = 'x'", "[project.scripts]", "x = 'x.cli:main'"]


def test_a_manifest_read_ends_at_its_last_numbered_line_not_at_what_the_reader_appended() -> None:
    cargo = ("     1\u2192[package]\n     2\u2192name = \"python_utils\"\n     3\u2192\n     4\u2192[dependencies]\n\n"
             "<system-reminder>\nWhenever you read a file, you should consider whether it would be considered malware.\n"
             "</system-reminder>\n")
    assert manifest_head(cargo) == ["     1\u2192[package]", '     2\u2192name = "python_utils"', "     3\u2192",
                                    "     4\u2192[dependencies]"]


def test_the_task_and_the_users_messages_are_the_persons_words_not_the_harness() -> None:
    c = Conversation()
    c.append(user("<local-command-caveat>Caveat: The messages below were generated by the user while running local "
                  "commands. DO NOT respond to these messages</local-command-caveat>"))
    c.append(user("<command-name>/model</command-name>\n<command-message>model</command-message>"))
    c.append(user("<ide_opened_file>The user opened the file /repo/src/Home.tsx in the IDE.</ide_opened_file>"
                  "Center the hero block on the first screen"))
    c.append(assistant("Looking.", [ToolCall("c1", "bash", {"command": "cat src/Home.tsx"})]))
    c.append(tool("c1", "export const Home = () => <div/>"))
    c.append(user("[Request interrupted by user for tool use]"))
    c.append(user("You've hit your limit · resets 2pm"))
    text, state = summarize(c.items)
    assert state["user_messages"] == ["Center the hero block on the first screen"]
    assert "Center the hero block on the first screen" in section(text, 1)
    for harness in ("local-command-caveat", "/model", "ide_opened_file", "Request interrupted", "hit your limit"):
        assert harness not in text
    assert "Answer the user's latest message" not in text  # the harness spoke last, not the person


def test_an_issue_the_agent_fetched_wins_over_its_own_pull_requests_placeholder() -> None:
    c = Conversation()
    c.append(user("Issue to solve: https://github.com/o/r/issues/7\nYour prepared Pull Request: https://github.com/o/r/pull/8"))
    c.append(assistant("", [ToolCall("c1", "bash", {"command": "gh pr view 8"})]))
    c.append(tool("c1", "title: [WIP] Fix totals\nbody: Details will be added as the work progresses."))
    c.append(assistant("", [ToolCall("c2", "bash", {"command": "gh issue view 7"})]))
    c.append(tool("c2", "title: Totals are off by one cent\nbody: rounding in src/totals.py drops half cents"))
    text, state = summarize(c.items)
    assert state["fetched_task"]["source"] == "$ gh issue view 7"
    assert "rounding in src/totals.py drops half cents" in section(text, 1)


def test_a_build_after_the_last_test_run_is_kept_as_the_last_command_beside_the_tally() -> None:
    c = Conversation()
    c.append(user("Rename the extensions flag and keep the build green"))
    c.append(assistant("", [ToolCall("c1", "Bash", {"command": "npm test"})]))
    c.append(tool("c1", "PASS src/flags.test.ts\n  flags\n    ✓ reads env (3 ms)\n\nTests:       12 passed, 12 total"))
    c.append(assistant("", [ToolCall("c2", "Bash", {"command": "cd /repo && npx tsc --noEmit"})]))
    c.append(tool("c2", "src/server.ts(41,7): error TS2322: Type 'string' is not assignable to type 'boolean'.\nExit code 2", True))
    text, state = summarize(c.items)
    assert state["last_test"]["line"] == "Tests:       12 passed, 12 total"  # the tally stays the last test run
    assert ("- Last build or check command since: `$ cd /repo && npx tsc --noEmit` → exit code 2; its output ended: "
            "src/server.ts(41,7): error TS2322: Type 'string' is not assignable to type 'boolean'.") in section(text, 5)
    c.append(assistant("", [ToolCall("c3", "Bash", {"command": "npm test"})]))
    c.append(tool("c3", "PASS src/flags.test.ts\n\nTests:       13 passed, 13 total"))
    _, state = summarize(c.items)
    assert state["last_run"] is None  # a newer tally is where the agent stands


def test_a_status_check_of_a_pull_request_is_not_the_task_as_it_arrived() -> None:
    c = Conversation()
    c.append(user("Merge PR #2 once it is green, then delete the other branches"))
    c.append(assistant("", [ToolCall("c1", "Bash", {"command": "gh pr view 2 --json state,mergedAt"})]))
    c.append(tool("c1", '{"mergedAt":"2026-01-13T19:24:36Z","state":"MERGED"}'))
    text, state = summarize(c.items)
    assert state["fetched_task"] is None
    assert "mergedAt" not in section(text, 1)
    c.append(assistant("", [ToolCall("c2", "Bash", {"command": "gh issue view 7 --json title,body"})]))
    c.append(tool("c2", '{"title":"Branches pile up","body":"delete merged branches after a release"}'))
    _, state = summarize(c.items)
    assert state["fetched_task"]["source"] == "$ gh issue view 7 --json title,body"  # the text itself is the task


def test_a_plan_the_assistant_announced_and_then_carried_out_is_not_the_next_step() -> None:
    c = Conversation()
    c.append(user("Fix the failing totals test"))
    c.append(assistant("Let me check the totals module.", [ToolCall("c1", "bash", {"command": "cat src/totals.py"})]))
    c.append(tool("c1", "def total(xs): return sum(xs)"))
    text, _ = summarize(c.items)
    assert f"## 9. {SECTION_TITLES[8]}" not in text  # nothing is next that was not already done
    c.append(assistant("The sum ignores discounts. Next I will add the discount to total()."))
    text, _ = summarize(c.items)
    assert "Next I will add the discount to total()." in section(text, 9)


def test_a_test_run_that_passed_closes_the_failures_of_earlier_test_runs() -> None:
    c = Conversation()
    c.append(user("Make the totals tests pass"))
    c.append(assistant("", [ToolCall("c1", "bash", {"command": "python -m pytest tests/test_totals.py -q"})]))
    c.append(tool("c1", "E   AssertionError: 10 != 12\n1 failed in 0.1s\n<returncode>1</returncode>", True))
    c.append(assistant("", [ToolCall("c2", "bash", {"command": "cd /repo && pytest -q"})]))
    c.append(tool("c2", "12 passed in 0.4s\n<returncode>0</returncode>"))
    _, state = summarize(c.items)
    assert state["errors"][0]["resolved"] == "a later test run passed: `cd /repo && pytest -q`"


def test_a_test_run_that_passed_closes_only_the_failures_it_ran_again() -> None:
    c = Conversation()
    c.append(user("Make the totals and tax tests pass"))
    c.append(assistant("", [ToolCall("c1", "bash", {"command": "python -m pytest tests/test_tax.py -q"})]))
    c.append(tool("c1", "E   AssertionError: 0.2 != 0.19\n1 failed in 0.1s\n<returncode>1</returncode>", True))
    c.append(assistant("", [ToolCall("c2", "bash", {"command": "python -m pytest tests/test_totals.py::test_sum -q"})]))
    c.append(tool("c2", "E   AssertionError: 10 != 12\n1 failed in 0.1s\n<returncode>1</returncode>", True))
    c.append(assistant("", [ToolCall("c3", "bash", {"command": "python -m pytest tests/test_totals.py -q 2>&1 | tail -3"})]))
    c.append(tool("c3", "4 passed in 0.2s\n<returncode>0</returncode>"))
    _, state = summarize(c.items)
    tax, totals = state["errors"]
    assert tax["resolved"] is None  # a pass of the totals tests says nothing of the tax test's failure
    assert totals["resolved"] == "a later test run passed: `python -m pytest tests/test_totals.py -q 2>&1 | tail -3`"


@pytest.mark.parametrize("text", ["frameworks/" * 60, "阅读代码仓库，现在网页的首页第一屏底部背景有偏移" * 20,
                                  "https://s.apifox.cn/ee8820dc-c11f-4abc-9def-123456789abc" * 3,
                                  "</command-name>" * 40,
                                  "the login fails again " * 30 + "client.js:25661 unsupported_grant_type"])
@pytest.mark.parametrize("size", [30, 90, 400])
def test_a_shortened_text_is_cut_between_words(text: str, size: int) -> None:
    from contextfold.summarizers._text import cut, mid_word

    head_end, tail_start = cut(text, size)
    assert not mid_word(text, head_end) and not mid_word(text, tail_start)


def test_an_issue_whose_output_was_cleared_is_still_the_task_by_the_lines_the_placeholder_kept() -> None:
    from contextfold.pipeline.importance import References

    c = Conversation()
    c.append(user("Issue to solve: https://github.com/o/r/issues/47"))
    c.append(assistant("", [ToolCall("c1", "Bash", {"command": "gh issue view https://github.com/o/r/issues/47"})]))
    c.append(tool("c1", "title: Double typing in the cover letter\nbody: we type the message twice in fillCoverLetter()\n"
                        + "noise line\n" * 400))
    c.append(assistant("Fixing fillCoverLetter() so it types once.", [ToolCall("c2", "Read", {"file_path": "src/a.js"})]))
    c.append(tool("c2", "function fillCoverLetter() {}"))
    c.items[2] = placeholder(c.items[2], 2_000, "clear", References.of(c.items), keep_chars=400)
    text, state = summarize(c.items)
    assert state["fetched_task"]["source"].endswith("(output cleared since; the lines it kept)")
    assert "fillCoverLetter()" in section(text, 1)


def test_the_opening_lines_of_a_long_first_request_are_kept_whole() -> None:
    c = Conversation()
    c.append(user("<objective>\nDisplay the complete GSD command reference.\n\nOutput ONLY the reference content "
                  "below. Do NOT add:\n- Project-specific analysis of the repository\n"
                  + "A reference line that goes on about one command and its options at length.\n" * 800))
    for n in range(12):
        c.append(assistant(f"The reference fails because part{n}.md is missing its `--flag{n}` entry, so I must add it.",
                           [ToolCall(f"c{n}", "bash", {"command": f"python check.py part{n}.md"})]))
        c.append(tool(f"c{n}", f"Traceback (most recent call last):\n  File \"check.py\", line {n}\nKeyError: 'flag{n}'", True))
    c.append(user("Also list the aliases of every command in the reference, one per line, please."))
    text, _ = summarize(c.items, target=260)
    opening_lines = ["Display the complete GSD command reference.", "Output ONLY the reference content below. Do NOT add:",
                     "- Project-specific analysis of the repository"]
    assert all(line in section(text, 1) for line in opening_lines)


def test_a_first_request_of_a_few_numbered_points_keeps_every_point_whole_in_a_small_summary() -> None:
    """Its opening is all of it (the points are one unbroken thought, no line of them says much on its own): cut to
    the opening's floor it lost its last two points, which said what the person wanted the work to produce."""
    points = ["Continue the CRM follow-up project and read plans/follow-up.md first, then my notes below.",
              "1. The report you produced is not good enough: " + "the layout must improve and every chat message "
              "with a customer (text, stickers, images, files) must be captured, nothing skipped; " * 6,
              "2. Is there a better approach than me checking each customer's progress by hand every day?",
              "3. I want a plan that solves the follow-up problem, not a pile of information about it.",
              "4. Search GitHub for projects that do this which we could borrow from."]
    c = Conversation()
    c.append(user("\n".join(points)))
    for n in range(14):
        c.append(assistant(f"Reading the scraper output for customer {n} to see what it missed.",
                           [ToolCall(f"c{n}", "bash", {"command": f"node scraper.mjs --customer {n}"})]))
        c.append(tool(f"c{n}", f"customer {n}: 18 messages, 3 images, 1 file\n" + "message line\n" * 60))
    text, _ = summarize(c.items, target=300)
    assert heuristic_tokens("\n".join(points)) > 200  # over the opening's floor
    assert all(point in section(text, 1) for point in points)


def test_an_error_cleared_while_open_keeps_its_failing_frame() -> None:
    """A placeholder quotes only the failure line; the summary of a later span still shows what failed where (the
    two lines above the exception), as the output showed it before it was cleared."""
    c = Conversation()
    c.append(user("Fix the import of the separability module"))
    c.append(assistant("", [ToolCall("c1", "bash", {"command": "cd /testbed && python -c 'import pkg.separable'"})]))
    c.append(tool("c1", "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n"
                        '  File "/testbed/pkg/utils/exceptions.py", line 11, in <module>\n'
                        "    from erfa import ErfaError, ErfaWarning  # noqa\n"
                        "    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
                        "ModuleNotFoundError: No module named 'erfa'\n</output>", True))
    c.append(assistant("Line 2826 is in the class that sets `_separable = True`.",
                       [ToolCall("c2", "bash", {"command": "grep -n _separable pkg/core.py"})]))
    c.append(tool("c2", "2826:    _separable = True"))
    items = list(c.items)
    items[2] = placeholder(items[2], 200, "clear")
    assert "from erfa import" not in items[2].text  # the placeholder itself keeps the line only
    text, state = summarize(items)
    assert state["errors"][0]["frame"] == ["    from erfa import ErfaError, ErfaWarning  # noqa",
                                           "    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"]
    assert "from erfa import ErfaError, ErfaWarning" in section(text, 4)


def test_a_read_of_a_missing_file_closes_when_the_agent_reads_it_where_it_is() -> None:
    """Claude Code's Read of a guessed path fails ("File does not exist."), Glob finds the file elsewhere and the
    agent reads it there: the error is closed, not shown open for the rest of the session."""
    c = Conversation()
    c.append(user("Fix the header layout"))
    c.append(assistant("", [ToolCall("c1", "Read", {"file_path": "/repo/src/Header.tsx"})]))
    c.append(tool("c1", "<tool_use_error>File does not exist.</tool_use_error>", True))
    c.append(assistant("", [ToolCall("c2", "Glob", {"pattern": "**/Header.tsx"})]))
    c.append(tool("c2", "/repo/src/components/Header.tsx"))
    c.append(assistant("", [ToolCall("c3", "Read", {"file_path": "/repo/src/components/Header.tsx"})]))
    c.append(tool("c3", "     1→export function Header() {}"))
    text, state = summarize(c.items)
    assert state["errors"][0]["resolved"] == "the file was found and read at /repo/src/components/Header.tsx"
    assert "unresolved" not in section(text, 4)


def test_a_tool_refusal_without_an_error_flag_is_the_last_error() -> None:
    """A chat export of a Claude Code session drops the error flag: the tool's refusal (``<tool_use_error>``) is still
    the call's failure, and the summary gives it as the last error, open, with its message."""
    c = Conversation()
    c.append(user("Scaffold the monorepo"))
    c.append(assistant("", [ToolCall("t1", "TaskCreate", {"title": "Scaffold", "description": "all files"})]))
    c.append(tool("t1", "<tool_use_error>InputValidationError: TaskCreate failed due to the following issues:\n"
                        "The required parameter `subject` is missing</tool_use_error>"))
    c.append(assistant("", [ToolCall("b1", "Bash", {"command": "mkdir -p repo/backend"})]))
    c.append(tool("b1", "(Bash completed with no output)"))
    text, _ = summarize(c.items)
    assert "<tool_use_error>InputValidationError: TaskCreate failed due to the following issues:" in section(text, 4)


REPORT = "\n".join([
    "(base) PS C:\\code\\shop-web> bash deploy.sh",
    *[f"deploy.sh: line {n}: $'\\r': command not found" for n in range(2, 40, 2)],
    ": invalid option5: set: -",
    "set: usage: set [-abefhkmnptuvxBCEHPT] [-o option-name] [--] [-] [arg ...]",
    "deploy.sh: line 70: syntax error: unexpected end of file",
    "(base) PS C:\\code\\shop-web>",
    "on windows",
])
"""A person's report: the terminal they pasted (an error at its end), then what they add on the last line."""


def test_a_persons_long_report_is_cut_to_what_failed_and_what_they_say_not_its_first_and_last_words() -> None:
    """An older message cut short keeps its last line and the error it pastes, on line boundaries; its middle goes."""
    c = Conversation([user("Deploy the shop front-end to the staging server with deploy.sh.")])
    c.append(assistant("Deployed.", []))
    c.append(user(REPORT))
    for n in range(12):
        c.append(assistant(f"Fixed the line endings of part {n} of deploy.sh and checked it runs.", []))
        c.append(user(f"Thanks, now part {n + 1}: keep the staging URL in the config, not in the script. " * 3))
    text, state = summarize(c.items, 700)
    quoted = text.split("## 6. All user messages")[1].split("\n## ")[0]
    entry = quoted.split("\n2. ")[1].split("\n3. ")[0]
    assert "characters omitted" in entry  # it was cut
    assert entry.rstrip().endswith("on windows")
    assert "deploy.sh: line 70: syntax error" in entry
    assert all(line in REPORT.split("\n") or line.startswith("[…") or line.endswith("…") for line in entry.split("\n"))
    assert state["user_messages"][1] == REPORT  # the state keeps it whole


def test_a_command_that_names_a_file_the_agent_wrote_without_running_it_retires_no_error() -> None:
    """``git add notes.md && git commit … && git push`` names a file the agent wrote; it runs no script of the agent's,
    so its failure (a push the remote declined) is no error of an abandoned scratch script: it stays open, shown
    with the lines above its last one (what was declined and why), while the error after it was resolved."""
    c = Conversation([user("Document the rename in notes.md and push it.")])
    c.append(assistant("", [ToolCall("w1", "Write", {"file_path": "/repo/notes.md", "content": "# Notes\n"})]))
    c.append(tool("w1", "File created successfully at: /repo/notes.md"))
    c.append(assistant("", [ToolCall("w2", "Write", {"file_path": "/repo/README.md", "content": "# Shop\n"})]))
    c.append(tool("w2", "File created successfully at: /repo/README.md"))
    c.append(assistant("", [ToolCall("b1", "Bash", {"command": "git add notes.md && git commit -m 'docs' && git push"})]))
    c.append(tool("b1", "Exit code 1\n[main 1a2b3c4] docs\nremote: error: GH013: Repository rule violations found for "
                        "refs/heads/main.\nTo https://example.test/shop.git\n ! [remote rejected] main -> main (push declined "
                        "due to repository rule violations)\nerror: failed to push some refs to 'https://example.test/shop.git'",
                  True))
    c.append(assistant("", [ToolCall("b2", "Bash", {"command": "git add README.md && git pull"})]))
    c.append(tool("b2", "Exit code 128\nhint: use --rebase or --no-rebase\nfatal: Need to specify how to reconcile "
                        "divergent branches.", True))
    c.append(assistant("", [ToolCall("b3", "Bash", {"command": "git add README.md && git pull"})]))
    c.append(tool("b3", "Already up to date."))
    text, state = summarize(c.items)
    assert [e["retired"] for e in state["errors"]] == [False, False]
    errors = text.split("## 4. Errors and fixes")[1].split("\n## ")[0]
    assert ("- [unresolved] `$ git add notes.md && git commit -m 'docs' && git push`:\n"
            "    To https://example.test/shop.git\n"
            "    ! [remote rejected] main -> main (push declined due to repository rule violations)\n"
            "    error: failed to push some refs to 'https://example.test/shop.git'") in errors


def test_a_shell_error_names_its_script_and_an_edit_of_it_resolves_the_error() -> None:
    """``bash -n deploy.sh`` reports ``deploy.sh: line 18: syntax error …``: the script it names is the file involved,
    so the edit that follows resolves the error instead of leaving it open for the rest of the session."""
    c = Conversation([user("Fix the syntax errors in the deployment scripts.")])
    c.append(assistant("", [ToolCall("b1", "Bash", {"command": "cd /srv/build && bash -n deploy.sh"})]))
    c.append(tool("b1", "deploy.sh: line 18: syntax error near unexpected token `}'\ndeploy.sh: line 18: `}'", True))
    c.append(assistant("", [ToolCall("e1", "Edit", {"file_path": "/srv/build/deploy.sh", "old_string": "}\n}",
                                                    "new_string": "}"})]))
    c.append(tool("e1", "The file /srv/build/deploy.sh has been updated."))
    _, state = summarize(c.items)
    assert state["errors"][0]["resolved"] == "/srv/build/deploy.sh was edited afterwards"


def test_what_an_edit_tool_shows_back_of_the_file_is_no_error_shown() -> None:
    """Claude Code's Edit shows the changed lines back under a reader's gutter; ``} catch (error: any) {`` there is
    the file's code, not "the last error an output showed"."""
    c = Conversation([user("Show a toast instead of the dialog after signing up.")])
    c.append(assistant("", [ToolCall("e1", "Edit", {"file_path": "/app/src/pages/SignupPage.tsx", "old_string": "setOpen(true)",
                                                    "new_string": "showToast('ok')"})]))
    c.append(tool("e1", "The file /app/src/pages/SignupPage.tsx has been updated. Here's the result of running `cat -n` "
                        "on a snippet of the edited file:\n   184→        }, 3000);\n   185→      }\n"
                        "   186→    } catch (error: any) {\n   187→      setApiError(error.message);"))
    text, state = summarize(c.items)
    assert state["shown_error"] is None
    assert "catch (error" not in text


def test_an_error_the_agent_reported_on_in_its_last_words_is_no_next_step() -> None:
    """A read of a file that is not there, then the agent's closing report to the person: the next step is not to
    "resolve" that read (the error stays listed as it was); an error after the agent's last words still is."""
    c = Conversation([user("Keep the login after a page refresh.")])
    c.append(assistant("", [ToolCall("r1", "Read", {"file_path": "/app/src/services/authService.js"})]))
    c.append(tool("r1", "<tool_use_error>File does not exist.</tool_use_error>", True))
    c.append(assistant("", [ToolCall("e1", "Edit", {"file_path": "/app/src/store/auth.ts", "old_string": "a", "new_string": "b"})]))
    c.append(tool("e1", "The file /app/src/store/auth.ts has been updated."))
    c.append(assistant("Done: the token is now kept in localStorage and read back when the app starts.", []))
    text, _ = summarize(c.items)
    assert "## 9. Optional Next Step" not in text
    assert "Last error (unresolved), from `Read /app/src/services/authService.js`" in text
    c.append(user("Now it logs me out after five minutes."))
    c.append(assistant("", [ToolCall("b1", "Bash", {"command": "npm test"})]))
    c.append(tool("b1", "Exit code 1\nFAIL src/store/auth.test.ts\nError: expected token to be kept", True))
    text, _ = summarize(c.items)
    assert "Resolve the last error, from `$ npm test`" in text


def test_an_output_a_stage_replaced_keeps_its_failure_line_and_a_repeated_failure_is_listed_once() -> None:
    """A failed search that snip replaced with its placeholder fails with the line it reported, never with the
    placeholder's words; the same call failing the same way twice is one entry of section 4."""
    from contextfold.pipeline.edits import with_result

    c = Conversation([user("Map the web-terminal repository.")])
    for n in (1, 2):
        c.append(assistant("", [ToolCall(f"g{n}", "Glob", {"pattern": "**/*.md", "path": "/Users/me/Projects/web-terminal"})]))
        c.append(tool(f"g{n}", "Path does not exist: /Users/me/Projects/web-terminal", True))
    snipped = with_result(c.items[2], "[contextfold: output snipped, superseded: an older search; 3 newer ones are kept]",
                          "snip", keep_media=False)
    items = [*c.items[:2], snipped, *c.items[3:]]
    text, state = summarize(items)
    assert [e["line"] for e in state["errors"]] == ["Path does not exist: /Users/me/Projects/web-terminal"] * 2
    errors = text.split("## 4. Errors and fixes")[1].split("\n## ")[0]
    assert "output snipped" not in errors
    assert errors.count("Path does not exist: /Users/me/Projects/web-terminal") == 1


def test_a_script_a_command_writes_is_the_last_change_to_the_script_not_to_the_file_it_then_changes() -> None:
    """``cat > fix.py <<EOF … EOF; python fix.py``: the here-document is fix.py's text; src/tools.py, which fix.py
    rewrites, was changed by the command."""
    command = ("cd /testbed && cat > fix.py <<'EOF'\nwith open('src/tools.py') as f:\n    text = f.read()\n"
               "with open('src/tools.py', 'w') as f:\n    f.write(text.replace('a / b', 'a / b if b else 0'))\nEOF\npython fix.py")
    c = Conversation([user("Fix the division by zero in src/tools.py.")])
    c.append(assistant("", [ToolCall("b1", "bash", {"command": command})]))
    c.append(tool("b1", "<returncode>0</returncode>\n<output>\n</output>"))
    _, state = summarize(c.items)
    assert state["files"]["fix.py"]["last_change"].startswith("with open('src/tools.py') as f:")
    assert state["files"]["src/tools.py"]["last_change"] == "$ cd /testbed && cat > fix.py <<EOF; python fix.py"


def test_a_call_the_person_declined_with_a_reason_is_their_request_not_an_open_error() -> None:
    """Claude Code's rejection of a call carries the person's reason ("use pnpm"): that is what they asked, among
    their messages and the next step; the declined call is no error to resolve."""
    c = Conversation([user("Add an HTTP client to the front-end.")])
    c.append(assistant("", [ToolCall("b1", "Bash", {"command": "npm install axios --legacy-peer-deps"})]))
    c.append(tool("b1", "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a "
                        "file edit, the new_string was NOT written to the file). The user provided the following reason "
                        "for the rejection:  use pnpm wherever you can", True))
    text, state = summarize(c.items)
    assert state["user_messages"] == ["Add an HTTP client to the front-end.", "use pnpm wherever you can"]
    assert state["errors"] == []
    assert "Answer the user's latest message: use pnpm wherever you can" in text


def test_a_bare_continue_keeps_the_request_it_continues_like_the_latest() -> None:
    """"continue" says nothing of its own: the request before it (a script pasted to integrate) keeps its opening
    lines as the latest message does, where an older message keeps only its head."""
    script = "\n".join(["Integrate this into the existing kernel and the final build", "#!/bin/bash",
                        "# Extra steps to ensure remote management stays disabled",
                        *[f"systemctl mask remote-agent-{n}.service  # keep agent {n} off" for n in range(60)], "done"])
    c = Conversation([user("Build the live CD with the Dell blocking module.")])
    for n in range(8):
        c.append(assistant(f"Built stage {n} of the image and checked its log.", []))
        c.append(user(f"Stage {n} looks fine; keep the kernel config from the previous build for stage {n + 1}. " * 4))
    c.append(assistant("Done with the stages.", []))
    c.append(user(script))
    c.append(assistant("Starting the integration.", []))
    c.append(user("continue"))
    text, _ = summarize(c.items, 600)
    quoted = text.split("## 6. All user messages")[1].split("\n## ")[0]
    for line in script.split("\n")[:3]:
        assert line in quoted


def test_clearing_quotes_no_error_from_the_file_an_edit_tool_showed_back() -> None:
    """The newest output that shows an error is never an edit's echo of the file: ``{ error: 'Method not allowed' }``
    there is code (clearing quoted it under "It showed this error")."""
    from contextfold.pipeline.stages.clear import last_error

    c = Conversation([user("Accept only POST in the Slack events handler.")])
    c.append(assistant("", [ToolCall("e1", "Edit", {"file_path": "/app/api/events.ts", "old_string": "a", "new_string": "b"})]))
    c.append(tool("e1", "The file /app/api/events.ts has been updated. Here's the result of running `cat -n` on a snippet "
                        "of the edited file:\n    29→  // Only accept POST\n    30→  if (req.method !== 'POST') {\n"
                        "    31→    return res.status(405).json({ error: 'Method not allowed' });"))
    assert last_error(c.items) is None


def test_a_check_that_echoes_the_failed_checks_it_ran_closes_their_failure() -> None:
    """A hive-mind run: a chain of checks failed on formatting; after a fix, ``npm run check`` passed, and npm's echo
    shows it ran the same chain. The chain's failure is closed (it stayed "Last error (unresolved)")."""
    chain = 'npm run lint && npm run format:check && npm run check:file-size && echo "All local CI checks passed"'
    c = Conversation()
    c.append(user("Keep package-lock.json in sync with package.json"))
    c.append(assistant("", [ToolCall("c1", "Bash", {"command": chain})]))
    c.append(tool("c1", "[warn] CLAUDE.md\n[warn] Code style issues found in the above file.\n\n> app@0.2.2 lint\n"
                        "> eslint .\n\n> app@0.2.2 format:check\n> prettier --check .\n\nChecking formatting...", True))
    c.append(assistant("", [ToolCall("c2", "Bash", {"command": "npm run format && echo fixed"})]))
    c.append(tool("c2", "> app@0.2.2 format\n> prettier --write .\n\nCLAUDE.md 4ms\nfixed"))
    c.append(assistant("", [ToolCall("c3", "Bash", {"command": 'npm run check && echo "All local CI checks passed"'})]))
    c.append(tool("c3", "> app@0.2.2 check\n> npm run lint && npm run format:check && npm run check:file-size\n\n"
                        "> app@0.2.2 lint\n> eslint .\n\nAll matched files use Prettier code style!\n"
                        "All local CI checks passed"))
    text, state = summarize(c.items)
    assert state["errors"][0]["resolved"] == ('a later check that ran it again passed: '
                                              '`npm run check && echo "All local CI checks passed"`')
    assert "unresolved" not in section(text, 4)


def test_a_check_that_ran_other_checks_leaves_the_failure_open() -> None:
    c = Conversation()
    c.append(user("Fix the build"))
    c.append(assistant("", [ToolCall("c1", "Bash", {"command": "npm run build 2>&1 | tail -5"})]))
    c.append(tool("c1", "src/a.ts(3,1): error TS2304: Cannot find name 'x'.", True))
    c.append(assistant("", [ToolCall("c2", "Bash", {"command": "npm run lint"})]))
    c.append(tool("c2", "> app@1.0.0 lint\n> eslint .\n"))
    _, state = summarize(c.items)
    assert state["errors"][0]["resolved"] is None  # a lint pass says nothing of the build's failure


def test_the_last_failure_of_a_scratch_script_left_behind_is_neither_open_nor_next() -> None:
    """A mini-swe-agent run: ``test_golden_section.py`` failed on an import, and the agent went on to write and run
    other probes that printed what they caught without failing. The failed probe stayed "Last error (unresolved)"
    and "Resolve the last error" was the next step for three compactions."""
    c = Conversation()
    c.append(user("golden-section search fails when upper and lower bounds are equal"))
    c.append(assistant("", [ToolCall("p1", "bash", {"command": "cat > test_golden_section.py <<'EOF'\nimport pvlib\nEOF\n"
                                                               "python test_golden_section.py"})]))
    c.append(tool("p1", "<returncode>1</returncode>\n<output>\nAttributeError: Module 'scipy' has no attribute 'misc'\n"
                        "</output>"))
    c.append(assistant("", [ToolCall("p2", "bash", {"command": "cat > test_golden_simple.py <<'EOF'\nprint(3)\nEOF\n"
                                                               "python test_golden_simple.py"})]))
    c.append(tool("p2", "<returncode>0</returncode>\n<output>\nresult: [3. 3. 3.]\n</output>"))
    text, state = summarize(c.items)
    assert state["errors"][0]["retired"]
    assert "- Last error (left behind: the agent has run another script of its own since)" in section(text, 4)
    assert "unresolved" not in text and "Resolve the last error" not in text


def test_an_issue_fetched_as_one_json_line_keeps_each_point_it_makes_once_its_output_is_cleared() -> None:
    """A hive-mind run fetched its issue with ``gh issue view --json``: one line, its two points then an HTML snapshot
    of 12,000 characters. Cleared, the placeholder kept a 600-character cut of that line (the lines in use), and
    every summary quoted the task as "…we should only type a…" and a stray "]": the second point was gone."""
    from contextfold.pipeline.importance import References

    body = ("Issue 1:\\n\\nDouble typing - we should only type a message if the textarea is empty.\\n\\n"
            "Issue 2:\\n\\nWe should stop on the limit (200 job applications in 24 hours), and wait at least 1 hour."
            "\\n\\nThat HTML snapshot can help us to detect the limit reached.\\n\\n```\\n"
            + '\\u003cdiv class=\\"magritte-grow-limiter___ANaBL_9-0-4\\"\\u003e' * 200)
    c = Conversation()
    c.append(user("Issue to solve: https://github.com/o/r/issues/47\nProceed."))
    c.append(assistant("", [ToolCall("c1", "Bash", {"command": "gh issue view https://github.com/o/r/issues/47 "
                                                                 "--json title,body,comments"})]))
    c.append(tool("c1", '{"body":"See screenshot:\\n\\n' + body + '","comments":[],"title":"Double typing"}'))
    c.append(assistant("Reading typeMessage() to fix the double typing.", [ToolCall("c2", "Read", {"file_path": "a.js"})]))
    c.append(tool("c2", "function typeMessage() {}"))
    c.items[2] = placeholder(c.items[2], 5_000, "clear", References.of(c.items), keep_chars=600)
    text, state = summarize(c.items)
    task = section(text, 1)
    assert "We should stop on the limit (200 job applications in 24 hours)" in task
    assert not state["fetched_task"]["text"].endswith("\n]")  # the placeholder's closing bracket is not the issue's


def test_a_pass_of_one_test_does_not_close_the_failure_of_its_whole_suite() -> None:
    """A Codex run: ``cargo test -p codex-core --all-features`` failed; a later run of one of its tests passed, and the
    two commands share most of their words: the suite's failure was shown resolved "by a later run"."""
    c = Conversation()
    c.append(user("complete the merge"))
    c.append(assistant("", [ToolCall("t1", "shell", {"command": "cargo test -p codex-core --all-features"})]))
    c.append(tool("t1", "     Running unittests src/lib.rs\nerror: test failed, to rerun pass `-p codex-core --lib`\n"
                        "exit code 101"))
    c.append(assistant("", [ToolCall("t2", "shell", {"command": "cargo test -p codex-core "
                                                                 "shell::tests::test_current_shell_detects_zsh -- --nocapture"})]))
    c.append(tool("t2", "test shell::tests::test_current_shell_detects_zsh ... ok\n\ntest result: ok. 1 passed; 0 failed\n"
                        "exit code 0"))
    _, state = summarize(c.items)
    assert state["errors"][0]["resolved"] is None


def test_an_agent_that_reasons_in_its_calls_arguments_is_heard() -> None:
    """moatless-tools writes no text: each action carries its reasoning in ``scratch_pad``. Its summaries had no
    finding and no last message: that the edit introduced a lint error on `unicode` was nowhere."""
    c = Conversation()
    c.append(user("Unicode method names cause UnicodeDecodeError for some requests in Python 2.7.2"))
    c.append(assistant("", [ToolCall("m1", "PlanToCode", {
        "scratch_pad": "The change has been applied, but it introduced a lint error due to the use of `unicode`. "
                       "I will import `six` and check `isinstance(method, six.string_types)` instead.",
        "action": "modify", "file_path": "requests/sessions.py", "span_id": "Session.request"})]))
    c.append(tool("m1", '{"instructions": "Import the `six` library", "file_path": "requests/sessions.py"}'))
    text, state = summarize(c.items)
    assert "it introduced a lint error due to the use of `unicode`" in state["last_assistant"]
    assert "it introduced a lint error due to the use of `unicode`" in text


def test_an_issue_as_the_rest_api_returns_it_is_read_by_its_title_and_body() -> None:
    from contextfold.summarizers._outputs import issue_text

    api = '{"number": 7, "title": "Crash on empty cart", "body": "Steps:\\n1. empty the cart", "comments": 3}'
    assert issue_text(api) == "# Crash on empty cart\n\nSteps:\n1. empty the cart"
    gh = '{"body": "It fails", "comments": [{"author": {"login": "ana"}, "body": "Me too"}], "title": "Fails"}'
    assert issue_text(gh) == "# Fails\n\nIt fails\n\nComment by ana:\nMe too"
    assert issue_text("title:\tFails\nstate:\tOPEN") == "title:\tFails\nstate:\tOPEN"  # gh's text form as it is


def test_a_request_the_person_made_after_an_open_error_is_the_next_step_and_the_error_stays_open() -> None:
    """A build fails on a missing plugin; the person then asks something else and the agent works on that: the next
    step is their latest request that says something ("sure" goes on with it), not the older error, which is still
    listed as open. An error after their request is the next step again."""
    c = Conversation([user("Add the dark mode toggle to the settings page.")])
    c.append(assistant("", [ToolCall("b1", "Bash", {"command": "npm run build"})]))
    c.append(tool("b1", "Exit code 1\nError: Cannot find module 'vite-plugin-svgr'", True))
    c.append(assistant("The build needs vite-plugin-svgr, which is not installed.", []))
    c.append(user("how do i test it? by starting the web server?"))
    c.append(assistant("Yes, shall I start it?", []))
    c.append(user("sure"))
    c.append(assistant("", [ToolCall("s1", "Bash", {"command": "npm run dev &"})]))
    c.append(tool("s1", "VITE v5.0.0  ready in 300 ms"))
    text, _ = summarize(c.items)
    step = text.split("## 9. Optional Next Step", 1)[1]
    assert "how do i test it? by starting the web server?" in step
    assert "Resolve the last error" not in step
    assert "Error: Cannot find module 'vite-plugin-svgr'" in text.split("## 9.")[0]  # still listed, as open
    c.append(assistant("", [ToolCall("b2", "Bash", {"command": "npm run preview"})]))
    c.append(tool("b2", "Exit code 1\nError: listen EADDRINUSE: address already in use :::4173", True))
    text, _ = summarize(c.items)
    assert "Resolve the last error, from `$ npm run preview`" in text.split("## 9. Optional Next Step", 1)[1]


def test_a_lookup_that_found_nothing_and_that_the_agent_went_past_is_no_next_step() -> None:
    """A Glob in a folder that is not there; the agent says so and goes on looking elsewhere: the person's latest
    request is the next step, not "resolve" a path that does not exist (which stays listed, as open). A failed build
    in its place is still the step."""
    def session(call: ToolCall, failed: str) -> Conversation:
        c = Conversation([user("Does web-terminal really get its live data from analytics_clickhouse?")])
        c.append(assistant("Let me look.", []))
        c.append(user("you should be leaning on our systemmap work!"))
        c.append(assistant("", [call]))
        c.append(tool(call.id, failed, True))
        c.append(assistant("That is not there. Let me check the systemmap notes instead.",
                           [ToolCall("r1", "Read", {"file_path": "/Users/n/Knowledge/systems/web-terminal/context.md"})]))
        c.append(tool("r1", "# web-terminal\nData: RocksDB (hot state) and ClickHouse (historical)"))
        return c

    text, _ = summarize(session(ToolCall("g1", "Glob", {"pattern": "**/ai.md", "path": "/Users/n/work"}),
                                "<tool_use_error>Directory does not exist: /Users/n/work</tool_use_error>").items)
    step = text.split("## 9. Optional Next Step", 1)[1]
    assert "Resolve the last error" not in step and "you should be leaning on our systemmap work!" in step
    assert "Directory does not exist: /Users/n/work" in text.split("## 9.")[0]  # still listed
    text, _ = summarize(session(ToolCall("b1", "Bash", {"command": "npm run build"}),
                                "Exit code 1\nError: Cannot find module 'vite'").items)
    assert "Resolve the last error, from `$ npm run build`" in text.split("## 9. Optional Next Step", 1)[1]


def test_a_path_not_there_is_resolved_when_the_agent_finds_it_elsewhere_or_in_another_letter_case() -> None:
    """A Glob in a folder that is not there, then ``find``, then a Glob in the real folder of that name; a Read of
    ``bgp-red-team.md`` that does not exist, then of ``BGP-RED-TEAM.md``: neither error is open any more."""
    c = Conversation([user("Compare our ai.md for web-terminal with their AI.md, then fix bgp-red-team.md.")])
    c.append(assistant("", [ToolCall("g1", "Glob", {"pattern": "**/*AI.md*", "path": "/Users/n/Projects/web-terminal"})]))
    c.append(tool("g1", "<tool_use_error>Directory does not exist: /Users/n/Projects/web-terminal</tool_use_error>", True))
    c.append(assistant("", [ToolCall("f1", "Bash", {"command": "find /Users/n -maxdepth 4 -type d -name web-terminal"})]))
    c.append(tool("f1", "/Users/n/Documents/github/web-terminal"))
    c.append(assistant("", [ToolCall("g2", "Glob", {"pattern": "**/*AI.md*", "path": "/Users/n/Documents/github/web-terminal"})]))
    c.append(tool("g2", "/Users/n/Documents/github/web-terminal/AI.md"))
    c.append(assistant("", [ToolCall("r1", "Read", {"file_path": "/home/u/agents/bgp-red-team.md"})]))
    c.append(tool("r1", "<tool_use_error>File does not exist.</tool_use_error>", True))
    c.append(assistant("", [ToolCall("r2", "Read", {"file_path": "/home/u/agents/BGP-RED-TEAM.md"})]))
    c.append(tool("r2", "     1→---\n     2→name: bgp-red-team"))
    _, state = summarize(c.items)
    assert [e["resolved"] for e in state["errors"]] == [
        "it was found at /Users/n/Documents/github/web-terminal",
        "the file was found and read at /home/u/agents/BGP-RED-TEAM.md",
    ]


def test_the_latest_request_keeps_its_opening_when_the_requests_have_no_room_for_every_head() -> None:
    """A small summary of a session of long slash-command templates: older requests show as the room allows, the
    latest keeps the lines that say what it asks (its first lines that say something), not a cut of its first."""
    template = ("<objective>\n{what} using parallel agents to produce structured documents.\n\n"
                "This command spawns several agents that each look at one part of the project.\n"
                "Output: a folder with the documents, one per part of the project.\n<process>\n" +
                "\n".join(f"Step {n}: read the files of part {n} and write down what each of them does." for n in range(40)) +
                "\n</process>")
    c = Conversation([user(template.format(what="Show the command reference"))])
    for what in ("Initialize a new project", "Create a roadmap of the phases", "Analyze the existing codebase"):
        c.append(assistant("Working on it.", []))
        c.append(user(template.format(what=what)))
    text, _ = summarize(c.items, target=300)
    latest = text.split("## 6. All user messages", 1)[1]
    assert "Analyze the existing codebase using parallel agents to produce structured documents." in latest
    assert "This command spawns several agents that each look at one part of the project." in latest
    assert "Output: a folder with the documents, one per part of the project." in latest


def test_a_read_of_a_folder_is_resolved_by_a_read_of_a_file_in_it() -> None:
    """Claude Code's Read of a folder fails (EISDIR); the agent lists it and reads the files in it: that failure is
    no open error any more."""
    folder = "/Users/n/github/geyser/ExportBlock-Part-1"
    c = Conversation([user("Add the context from the Notion export to ai.md.")])
    c.append(assistant("", [ToolCall("r1", "Read", {"file_path": folder})]))
    c.append(tool("r1", "EISDIR: illegal operation on a directory, read", True))
    c.append(assistant("", [ToolCall("r2", "Read", {"file_path": f"{folder}/Rollout Plan.html"})]))
    c.append(tool("r2", "     1→<html><head><title>Rollout Plan</title>"))
    _, state = summarize(c.items)
    assert state["errors"][-1]["resolved"] == f"a path inside it was read afterwards: {folder}/Rollout Plan.html"


def test_a_plan_stated_as_a_heading_is_the_section_it_heads() -> None:
    """The assistant's closing report puts what is left under "## Remaining": the next step is that section, not the
    bare heading."""
    c = Conversation([user("Write an ai.md for every repo of the system map.")])
    c.append(assistant("## Done\n\n- ceremony\n- nanochat-deploy\n\n## Remaining\n\n- web-terminal-frontend-tests\n"
                       "- team-skills\n\n---\n\nReady for the Notion content to compare with geyser's ai.md.", []))
    text, _ = summarize(c.items)
    step = text.split("## 9. Optional Next Step", 1)[1]
    assert "## Remaining\n\n- web-terminal-frontend-tests\n- team-skills" in step
    assert "Ready for the Notion" not in step


def test_an_edit_whose_call_names_no_file_is_listed_by_the_file_its_diff_names() -> None:
    """moatless-tools' EditCode edits the file of its state: its arguments hold only the new code, and its output the
    diff it applied; that file is one the session changed."""
    edit = ToolCall("e1", "EditCode", {"content": "<replace>\n        method = to_native_string(method)\n</replace>"})
    applied = json.dumps({"message": "Applied the change to requests/sessions.py.",
                          "diff": "--- requests/sessions.py\n+++ requests/sessions.py\n@@ -310,6 +310,7 @@\n"
                                  "+        method = to_native_string(method)\n"})
    items = [user("Unicode method names cause UnicodeDecodeError in requests 2.0"),
             assistant("", [ToolCall("p1", "PlanToCode", {"action": "modify", "file_path": "requests/sessions.py",
                                                          "instructions": "Convert the method to a native string."})]),
             tool("p1", json.dumps({"instructions": "Convert the method to a native string."})),
             assistant("", [edit]), tool("e1", applied)]
    text, _ = summarize(items)
    assert "`requests/sessions.py`" in section(text, 3) and "to_native_string(method)" in section(text, 3)


def test_a_todo_update_that_failed_is_settled_by_the_next_one_that_worked() -> None:
    """Each todo update writes the whole list: one that got no result (a record the harness lost) is no open error
    once the next update went through."""
    todos = [{"content": "Write the registry", "status": "in_progress", "activeForm": "Writing"}]
    items = [user("Map the repositories into a registry"),
             assistant("", [ToolCall("t1", "TodoWrite", {"todos": todos})]), tool("t1", UNANSWERED_TEXT, True),
             assistant("", [ToolCall("t2", "TodoWrite", {"todos": todos})]),
             tool("t2", "Todos have been modified successfully."),
             assistant("", [ToolCall("w1", "Write", {"file_path": "registry.md", "content": "# Registry\n"})]),
             tool("w1", "File created successfully at: registry.md")]
    errors = section(summarize(items)[0], 4)
    assert "unresolved" not in errors and "Last error (resolved: a later call of TodoWrite succeeded)" in errors


def test_a_plan_given_back_by_its_approval_is_no_test_run() -> None:
    """ExitPlanMode's output quotes the approved plan whole, with the example output it shows: that tally is the
    call's input given back, not a run's result, and its "1 failed" no failure (Claude Code flags no result of it)."""
    plan = "# Self-test\n\nRun `bun pai-test.ts`; it prints:\n\n    SUMMARY: 14 passed, 1 failed, 1 warning\n"
    items = [user("Add a self-test to PAI"), assistant("", [ToolCall("x1", "ExitPlanMode", {"plan": plan})]),
             tool("x1", "User has approved your plan. You can now start coding.\n\n## Approved Plan:\n" + plan),
             assistant("Writing the validator.", [ToolCall("w1", "Write", {"file_path": "pai-test.ts", "content": "x"})]),
             tool("w1", "File created successfully at: pai-test.ts")]
    text = summarize(Conversation(items).items)[0]  # each result linked to its call, as in a view
    assert "Last test run" not in text and "## 4." not in text  # nor its "1 failed" an error of the call


def test_a_request_made_after_the_todo_list_is_the_next_step_not_the_lists_open_item() -> None:
    """The agent reported, the person asked for something new, the agent started on it: the summary's next step is
    that request, not the older list's pending item; a bare "ok" asks nothing new."""
    todos = [{"content": "Create the SystemMap skill", "status": "completed", "activeForm": "Creating"},
             {"content": "Test skill by running Discover on a repo", "status": "pending", "activeForm": "Testing"}]

    def session(request: str) -> list[Item]:
        return [user("Build a skill that maps our repositories"),
                assistant("", [ToolCall("t1", "TodoWrite", {"todos": todos})]), tool("t1", "Todos have been modified"),
                assistant("Done. The SystemMap skill is built; want me to test it on a repo?"), user(request),
                assistant("", [ToolCall("b1", "Bash", {"command": "ls -la ~/github/"})]), tool("b1", "bonkbot\nweb-api\n")]

    assert "Go on with the user's latest request (made after the todo list above was last written): do the sibling " \
           "repo bonkbot" in section(summarize(session("do the sibling repo bonkbot"))[0], 9)
    assert "Start the next pending task: Test skill by running Discover" in section(summarize(session("ok"))[0], 9)


def test_a_package_added_with_another_manager_of_its_ecosystem_settles_the_failed_install() -> None:
    """npm could not resolve the tree; the person asked for pnpm, and pnpm added the package: the install is done."""
    failed = ("npm error code ERESOLVE\nnpm error ERESOLVE unable to resolve dependency tree\n"
              "npm error A complete log of this run can be found in: /home/u/.npm/_logs/debug-0.log")
    items = [user("Add an axios API client"), assistant("", [ToolCall("n1", "Bash", {"command": "npm install axios"})]),
             tool("n1", failed, True), user("use pnpm"),
             assistant("", [ToolCall("p1", "Bash", {"command": "pnpm add axios"})]), tool("p1", "+ axios 1.7.9\nDone in 2.1s"),
             assistant("Now the client.", [ToolCall("w1", "Write", {"file_path": "src/api/client.ts", "content": "x"})]),
             tool("w1", "File created successfully at: src/api/client.ts")]
    errors = section(summarize(items)[0], 4)
    assert "unresolved" not in errors and "resolved: a later run of `pnpm add axios` succeeded" in errors


def test_asking_a_failed_program_for_its_usage_does_not_settle_the_failure() -> None:
    items = [user("Add a self-test to PAI"),
             assistant("", [ToolCall("r1", "Bash", {"command": "bun .claude/Hooks/pai-test.ts"})]),
             tool("r1", "Exit code 1\n✗ Cross-References\nSome tests failed. Run with --verbose for details.", True),
             assistant("", [ToolCall("r2", "Bash", {"command": "bun .claude/Hooks/pai-test.ts --help"})]),
             tool("r2", "Usage: pai-test.ts [--quick] [--verbose]")]
    errors = section(summarize(items)[0], 4)
    assert "Last error (unresolved), from `$ bun .claude/Hooks/pai-test.ts`" in errors


def test_a_text_mode_run_is_read_by_its_commands_and_their_outputs() -> None:
    """mini-swe-agent calls no tools: each reply ends with one fenced bash block and the next user message is its
    output. Read as calls, the run shows the file its command changed, the failure and the test run; a reply with
    two blocks is answered by a format error and ran nothing."""
    items = [user("<pr_description>\nTotals are off by one in src/ledger.py\n</pr_description>"),
             assistant("THOUGHT: Fix the bound, then run the tests.\n\n```bash\nsed -i 's/n - 1/n/' src/ledger.py && "
                       "python -m pytest tests/test_ledger.py -q\n```"),
             user("<returncode>1</returncode>\n<output>\n    def test_total():\n>       assert total([1, 2]) == 3\n"
                  "E       AssertionError: assert 2 == 3\n1 failed, 4 passed in 0.12s\n</output>"),
             assistant("THOUGHT: Two ways.\n\n```bash\ncat src/ledger.py\n```\n\n```bash\nls\n```"),
             user("Please always provide EXACTLY ONE action in triple backticks, found 2 actions."),
             assistant("THOUGHT: Look at the loop.\n\n```bash\nsed -n 1,20p src/ledger.py\n```"),
             user("<returncode>0</returncode>\n<output>\ndef total(xs):\n    return sum(xs[:len(xs) - 1])\n</output>")]
    text = summarize(items)[0]
    assert "`src/ledger.py`" in section(text, 3)
    assert "E       AssertionError: assert 2 == 3" in section(text, 4)
    assert "1 failed, 4 passed in 0.12s" in section(text, 5)
    assert "`$ ls`" not in text and "cat src/ledger.py" not in text  # the reply with two blocks ran neither


def test_a_file_a_patch_script_writes_is_changed_when_the_script_runs() -> None:
    script = ("import re\nsrc = open('astropy/units/format/cds.py').read()\nsrc = src.replace('a', 'b')\n"
              "with open('astropy/units/format/cds.py', 'w') as f:\n    f.write(src)\nprint('Successfully updated')\n")
    items = [user("Fix the CDS unit parser"),
             assistant("", [ToolCall("w1", "bash", {"command": f"cat <<'EOF' > update_cds.py\n{script}EOF"})]),
             tool("w1", "<returncode>0</returncode>\n<output>\n</output>"),
             assistant("", [ToolCall("r1", "bash", {"command": "python update_cds.py"})]),
             tool("r1", "<returncode>0</returncode>\n<output>\nSuccessfully updated\n</output>")]
    files = section(summarize(items)[0], 3)
    assert "`astropy/units/format/cds.py`: changed 1×" in files
    assert "(written by running its script: `python update_cds.py`)" in files


def test_an_error_the_kept_tail_shows_fixed_is_not_open_above_it() -> None:
    """The summary goes above the items kept verbatim after its span: an error one of them settles (the same
    command run again, and working) is shown resolved, not sent as the open error the tail contradicts."""
    c = Conversation()
    c.append(user("Deploy the build from the deploy branch, then go back to main."))
    c.append(assistant("", [ToolCall("c1", "bash", {"command": "git checkout main"})]))
    c.append(tool("c1", "error: The following untracked working tree files would be overwritten by checkout:\n"
                        "\t.claude/settings.local.json\nAborting", True))
    c.append(assistant("Removing the local settings file first.", [ToolCall("c2", "bash", {"command": "git status"})]))
    c.append(tool("c2", "On branch deploy\nUntracked files:\n\t.claude/settings.local.json"))
    c.append(assistant("", [ToolCall("c3", "bash", {"command": "git checkout main"})]))
    c.append(tool("c3", "Switched to branch 'main'"))
    span = c.items[1:5]
    alone = SUMMARIZER.summarize(SummaryRequest(span, Header(), 4_000, heuristic_tokens)).text
    assert "Last error (unresolved), from `$ git checkout main`" in alone  # the span alone cannot know
    told = SUMMARIZER.summarize(SummaryRequest(span, Header(), 4_000, heuristic_tokens, next_request=c)).text
    assert "Last error (unresolved)" not in told
    assert "Last error (resolved: a later run of `git checkout main` succeeded), from `$ git checkout main`" in told


def test_a_next_step_the_kept_tail_shows_done_is_not_the_next_step() -> None:
    """The summary goes above the items kept verbatim after its span: a todo the tail's list marks completed is no task
    to continue (the tail's list is the latest state: its first open item is), and a plan the agent stated last in the
    span and then acted on in the tail is no step still ahead."""
    c = Conversation()
    c.append(user("Add rate limiting to the upload endpoint."))
    c.append(assistant("", [ToolCall("t1", "TodoWrite", {"todos": [
        {"content": "Add the limiter middleware", "status": "in_progress"},
        {"content": "Write tests for the limiter", "status": "pending"}]})]))
    c.append(tool("t1", "Todos updated."))
    c.append(assistant("", [ToolCall("e1", "edit_file", {"path": "src/upload.py", "old": "app = App()",
                                                         "new": "app = App(limiter=Limiter(10))"})]))
    c.append(tool("e1", "Edited src/upload.py"))
    c.append(assistant("", [ToolCall("t2", "TodoWrite", {"todos": [
        {"content": "Add the limiter middleware", "status": "completed"},
        {"content": "Write tests for the limiter", "status": "in_progress"}]})]))
    c.append(tool("t2", "Todos updated."))
    span = c.items[1:5]
    alone = SUMMARIZER.summarize(SummaryRequest(span, Header(), 4_000, heuristic_tokens)).text
    assert "Continue the task in progress: Add the limiter middleware" in section(alone, 9)  # the span alone cannot know
    told = SUMMARIZER.summarize(SummaryRequest(span, Header(), 4_000, heuristic_tokens, next_request=c)).text
    assert section(told, 9).endswith("\nContinue the task in progress: Write tests for the limiter")
    assert "[in progress] Add the limiter middleware" not in told

    c = Conversation()
    c.append(user("Why does the upload endpoint reject large files?"))
    c.append(assistant("", [ToolCall("r1", "bash", {"command": "grep -rn max_body src/"})]))
    c.append(tool("r1", "src/upload.py:3: max_body = 1_000_000"))
    c.append(assistant("The cap is set in src/upload.py. Let me check how the config loader overrides max_body."))
    c.append(assistant("", [ToolCall("r2", "bash", {"command": "cat src/config/loader.py"})]))
    c.append(tool("r2", "def load():\n    return {'max_body': env('MAX_BODY')}"))
    span = c.items[1:4]
    alone = SUMMARIZER.summarize(SummaryRequest(span, Header(), 4_000, heuristic_tokens)).text
    assert "Let me check how the config loader overrides max_body." in section(alone, 9)
    told = SUMMARIZER.summarize(SummaryRequest(span, Header(), 4_000, heuristic_tokens, next_request=c)).text
    assert "## 9." not in told or "Let me check" not in section(told, 9)

    c.append(user("Make max_body configurable per route instead."))
    c.append(assistant("", [ToolCall("r3", "bash", {"command": "grep -rn route_config src/"})]))
    c.append(tool("r3", "src/routes.py:9: route_config = {}"))
    span = c.items[1:7]
    alone = SUMMARIZER.summarize(SummaryRequest(span, Header(), 4_000, heuristic_tokens)).text
    assert "came after that and is not answered yet" in alone
    assert "Answer the user's latest message: Make max_body configurable per route instead." in section(alone, 9)
    told = SUMMARIZER.summarize(SummaryRequest(span, Header(), 4_000, heuristic_tokens, next_request=c)).text
    assert "not answered yet" not in told and "Answer the user's latest message" not in told  # the tail answers it
    assert "Go on with the user's latest request" in section(told, 9)  # begun, not done
    assert "Make max_body configurable per route instead." in section(told, 9)


def test_a_text_mode_reply_that_ran_its_command_states_no_step_ahead() -> None:
    """A mini-swe-agent reply says what it will do and runs it in the same message (its one ``bash`` block): the
    words announced the command that ran, so they are no next step."""
    items = [user("Fix the autodoc warning for private members."),
             assistant("THOUGHT: I'll open the importer module to see how members are listed.\n\n```bash\n"
                       "cat sphinx/ext/autodoc/importer.py\n```"),
             user("<returncode>0</returncode>\n<output>\ndef get_object_members(subject):\n    pass\n</output>")]
    text, _ = summarize(items)
    assert "## 9." not in text or "I'll open the importer module" not in section(text, 9)


def test_a_label_the_plan_is_under_is_no_step_and_an_empty_one_none() -> None:
    """"**Next steps for the deploy:**" announces the lines under it, which are the plan; a "**NEXT:**" a template
    leaves empty at the end of the message names nothing."""
    task = user("Deploy the voice server.")
    listed = assistant("The image is built.\n\n**Next steps for the deploy:**\n1. Push the image to the registry\n"
                       "2. Restart the service\n\nTell me if the port changes.")
    assert "1. Push the image to the registry\n2. Restart the service" in section(summarize([task, listed])[0], 9)
    empty = assistant("The voice server answers on port 8888 and speaks again.\n\n**NEXT:**")
    text, _ = summarize([task, empty])
    assert "## 9." not in text or "**NEXT:**" not in section(text, 9)


def test_a_run_that_exits_zero_and_prints_failures_resolves_nothing() -> None:
    """A script that runs the tests in-process exits 0 while its tally says "1 failed": the failure before it is not
    resolved by it (the summary said "resolved: a later run … succeeded" over a run that printed the same failure)."""
    c = Conversation()
    c.append(user("Make tests/test_autodoc.py pass."))
    c.append(assistant("", [ToolCall("c1", "bash", {"command": "pytest -q tests/test_autodoc.py"})]))
    c.append(tool("c1", "exit code 1\nFAILED tests/test_autodoc.py::test_private - AssertionError\n1 failed, 12 passed", True))
    c.append(assistant("", [ToolCall("c2", "bash", {"command": "pytest -q tests/test_autodoc.py"})]))
    c.append(tool("c2", "exit code 0\nFAILED tests/test_autodoc.py::test_private - AssertionError\n1 failed, 12 passed in 0.27s"))
    text, _ = summarize(c.items)
    assert "(resolved" not in section(text, 4) and "[resolved" not in section(text, 4)
    script = Conversation([c[0]])  # an error of another kind (the script's own syntax) such a run does settle
    script.append(assistant("", [ToolCall("s1", "bash", {"command": "python3 run_autodoc.py"})]))
    script.append(tool("s1", 'exit code 1\n  File "run_autodoc.py", line 3\nSyntaxError: invalid syntax', True))
    script.append(assistant("", [ToolCall("s2", "bash", {"command": "python3 run_autodoc.py"})]))
    script.append(tool("s2", "exit code 0\nFAILED tests/test_autodoc.py::test_private\n1 failed, 12 passed in 0.27s"))
    assert "resolved: a later run of `python3 run_autodoc.py` succeeded" in section(summarize(script.items)[0], 4)
    c.append(assistant("", [ToolCall("c3", "bash", {"command": "pytest -q tests/test_autodoc.py"})]))
    c.append(tool("c3", "13 passed in 0.31s"))
    assert "resolved: a later run of `pytest -q tests/test_autodoc.py` succeeded" in section(summarize(c.items)[0], 4)


def test_a_file_put_back_with_git_checkout_resolves_the_error_it_caused() -> None:
    """``git checkout -- FILE`` puts the file back as the last commit has it: a change to that file, so the error an
    edit of it caused (an IndentationError naming it) is no longer open."""
    c = Conversation()
    c.append(user("Document inherited attributes in autodoc."))
    c.append(assistant("", [ToolCall("c1", "bash", {"command": "python -m py_compile sphinx/ext/autodoc/__init__.py"})]))
    c.append(tool("c1", 'exit code 1\n  File "sphinx/ext/autodoc/__init__.py", line 770\n    found_attr = None\n'
                        "IndentationError: unexpected indent", True))
    c.append(assistant("", [ToolCall("c2", "bash", {"command": "git checkout -- sphinx/ext/autodoc/__init__.py"})]))
    c.append(tool("c2", "exit code 0"))
    errors = section(summarize(c.items)[0], 4)
    assert "resolved: sphinx/ext/autodoc/__init__.py was edited afterwards" in errors, errors


def test_an_edit_refused_until_the_file_is_read_is_settled_by_reading_it() -> None:
    """Claude Code refuses an Edit of a file not read yet in the session: a precondition, met by the Read that follows
    (whether the edit is then made again or, as the person asked, not at all), not an error left open."""
    path = "/repo/services/handset/mocks/service.go"
    c = Conversation()
    c.append(user("Add the inStock field to the handset variants."))
    c.append(assistant("", [ToolCall("e1", "Edit", {"file_path": path, "old_string": "a", "new_string": "b"})]))
    c.append(tool("e1", "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>",
                  True))
    c.append(assistant("", [ToolCall("r1", "Read", {"file_path": path})]))
    c.append(tool("r1", "     1\tpackage mocks\n"))
    errors = section(summarize(c.items)[0], 4)
    assert f"resolved: {path} was read afterwards" in errors and "unresolved" not in errors, errors


def test_the_agents_last_message_a_bare_reply_after_the_summary_answers_is_kept_whole() -> None:
    # The tail opened with "yes": the summary had cut the proposal it agreed to to a few words each side of an
    # omission marker, and the agent went on to implement lines it could no longer see.
    proposal = "Here is the plan for the claim cache; shall I go ahead?\n" + "".join(
        f"{k}. `claimRefs[key{k}]` holds the tasks of claim {k}; release it when the set is empty\n" for k in range(6))
    c = Conversation()
    c.append(user("Design the claim cache with me."))
    for k in range(8):
        c.append(assistant(f"Notes on part {k}: " + "the informer resyncs every ten minutes. " * 30))
        c.append(user(f"What about part {k + 1}?"))
    c.append(assistant(proposal))
    c.append(user("yes"))
    span = c.items[1:-1]
    told = SUMMARIZER.summarize(SummaryRequest(span, Header(), 250, heuristic_tokens, next_request=c)).text
    assert proposal.strip() in told
    asked = Conversation([*c.items[:-1], user("Go ahead but keep the set per queue, not per task")])
    told = SUMMARIZER.summarize(SummaryRequest(span, Header(), 250, heuristic_tokens, next_request=asked)).text
    assert proposal.strip() not in told  # a reply that says something is the request: the proposal is its context


def test_a_finding_the_agent_wrote_as_a_bullet_is_listed_with_one_marker() -> None:
    c = Conversation()
    c.append(user("Why does the build pick the wrong host?"))
    c.append(assistant("", [ToolCall("c1", "Read", {"file_path": "flake.nix"})]))
    c.append(tool("c1", "nixosConfigurations.nixos = ./systems/personal-laptop;"))
    c.append(assistant("Two problems:\n- The flake references `./systems/personal-laptop` instead of `./hosts/nixos`, "
                       "which is wrong for this machine."))
    findings = section(summarize(c.items)[0], 2)
    assert "- The flake references `./systems/personal-laptop`" in findings and "- - " not in findings


def test_the_first_request_quoted_is_the_first_message_that_says_something_not_a_bare_path_before_it() -> None:
    """A person who opened with a path the agent asked about: section 1 quotes the request that followed, whole up to
    what a first request keeps, and names the path; the later messages are numbered as they came."""
    request = ("Turn the notes folder into a static site with one page per note.\n"
               "Link every page from an index sorted by date, newest first.\n"
               "Use only the standard library and put the generator in build.py.\n"
               "The pages need a shared stylesheet with a readable serif font.")
    c = Conversation()
    c.append(user("./notes"))
    c.append(assistant("The ./notes folder holds 40 Markdown files. What would you like to do with them?"))
    c.append(user(request))
    c.append(assistant("", [ToolCall("c1", "bash", {"command": "ls notes | head"})]))
    c.append(tool("c1", "2024-01-03-trip.md\n2024-02-11-bread.md"))
    c.append(user("Also skip drafts whose name starts with an underscore"))
    text, _ = summarize(c.items, target=300)
    first = section(text, 1)
    assert 'after "./notes"' in first and all(line in first for line in request.split("\n")[:3])
    users = section(text, 6)
    assert "2. (the first request, quoted in section 1)" in users and "3. Also skip drafts" in users


def test_a_first_request_of_long_paragraphs_keeps_its_opening_lines_whole_in_a_small_summary() -> None:
    """A specification typed as a few long paragraphs says what it asks in its first three: a summary, the only place
    it lives once summarized, keeps them whole however small its target (a head of the first was all it kept)."""
    points = [f"{n}. The {name} module reads every note under notes/ and " + "keeps its title, date and tags; " * 25
              for n, name in ((1, "index"), (2, "search"), (3, "render"), (4, "publish"))]
    c = Conversation()
    c.append(user("\n".join(points)))
    c.append(assistant("", [ToolCall("c1", "bash", {"command": "ls notes"})]))
    c.append(tool("c1", "a.md\nb.md"))
    text, _ = summarize(c.items, target=200)
    assert all(point in section(text, 1) for point in points[:3])
