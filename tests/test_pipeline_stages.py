"""Each compaction stage on its own: what it changes, what it must leave alone."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from contextfold import conversation as c
from contextfold.boundary import choose_cut
from contextfold.conversation import Conversation, Header, Item, Summary, Text, ToolCall, ToolSpec
from contextfold.lookback import tools as history_tools
from contextfold.pipeline import compact
from contextfold.pipeline.base import Budget, Policy
from contextfold.pipeline.economics import first_change, verdict
from contextfold.pipeline.stages.budget import allowance_chars, budget_outputs
from contextfold.pipeline.stages.clear import clear
from contextfold.pipeline.stages.persist import persist
from contextfold.pipeline.stages.selective import selective
from contextfold.pipeline.stages.snip import snip, superseded
from contextfold.pipeline.stages.summarize import summarize
from contextfold.pipeline.stages.truncate import truncate
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.tokens import Estimator

EST = Estimator()
HEADER = Header(system=(Item("system", (Text("You are careful."),)),), tools=(ToolSpec("bash", "run"),))


def make_budget(policy: Policy | None = None, **kw: object) -> Budget:
    defaults: dict = {
        "policy": policy or Policy(), "window_tokens": 10_000, "trigger_tokens": 5_000, "count": EST.conversation,
        "count_item": EST.item, "summarizer": ExtractiveSummarizer(), "count_text": EST.text,
    }
    defaults.update(kw)
    return Budget(**defaults)


def bash(cid: str, command: str) -> Item:
    return c.assistant("", [ToolCall(cid, "bash", {"command": command})])


def session(*rounds: tuple[str, str], task: str = "Fix src/app.py") -> Conversation:
    items = [c.user(task)]
    for k, (command, output) in enumerate(rounds):
        items += [bash(f"c{k}", command), c.tool(f"c{k}", output)]
    return Conversation(items, HEADER)


def test_persist_writes_owner_only_file_named_by_id_and_leaves_a_preview(tmp_path: Path) -> None:
    big = "line of output\n" * 5_000
    conv = session(("cat big.log", big))
    out, events = persist(conv, make_budget(results_dir=tmp_path / "results"))
    path = tmp_path / "results" / f"{conv[2].id}.txt"
    assert path.read_text() == big
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    preview = out[2].text  # the header offers bash only: the preview names the file, not a tool it lacks
    assert f"saved to {path}" in preview and "_history" not in preview
    assert preview.startswith("line of output") and len(preview) < 4_000
    assert out[2].id == conv[2].id and out.validate() == []
    assert [e.action for e in events] == ["persisted"] and events[0].saved_tokens > 10_000
    offered = conv.with_items(conv, replace(HEADER, tools=(*HEADER.tools, *history_tools.SPECS)))
    out, _ = persist(offered, make_budget(results_dir=tmp_path / "offered"))
    assert f'read_history("{conv[2].id}"' in out[2].text and "saved to" not in out[2].text


def test_persist_degrades_to_a_preview_when_the_disk_fails(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    conv = session(("cat big.log", "x" * 40_000))
    out, events = persist(conv, make_budget(results_dir=blocker / "sub"))
    assert len(out[2].text) < 4_000
    assert {e.action for e in events} == {"persisted", "disk_failed"}


@pytest.mark.parametrize("limit", ["chars", "tokens"])
def test_an_output_over_either_persist_limit_is_persisted(tmp_path: Path, limit: str) -> None:
    limits = {"persist_max_chars": 1_000, "persist_max_tokens": 10**9} if limit == "chars" else \
        {"persist_max_chars": 10**9, "persist_max_tokens": 200}
    policy = Policy(preview_head_chars=200, preview_tail_chars=100, persist_whole_tail_fraction=0, **limits)
    conv = session(("cat big.log", "line of output\n" * 200))  # 3,000 characters, about 800 tokens
    out, events = persist(conv, make_budget(policy=policy, results_dir=tmp_path))
    assert [e.action for e in events] == ["persisted"] and len(out[2].text) < 1_000


def test_a_preview_shows_the_error_lines_of_the_part_it_leaves_out_unless_a_source_file_was_read() -> None:
    """A CI log's failing step is far from both of its ends: the preview quotes the omitted part's last error lines
    (``##[error]`` included) verbatim; what a read of a source file returned is code, and gets none."""
    log = ("Check\tstep ok\n" * 2_000 + "Check\t##[error]No changeset found. Run 'npm run changeset'.\n"
           + "Check\t##[error]Process completed with exit code 1.\n" + "Check\tcleanup ok\n" * 2_000)
    out, _ = persist(session(("gh run view 7 --log", log)), make_budget())
    preview = out[2].text
    assert ("[contextfold: the omitted part's last error lines, verbatim:]\n"
            "Check\t##[error]No changeset found. Run 'npm run changeset'.\n"
            "Check\t##[error]Process completed with exit code 1.\n[contextfold: end of the omitted part]") in preview
    source = "x = 1\n" * 3_000 + "raise ValueError('error: bad total')\n" + "y = 2\n" * 3_000
    read = Conversation([c.user("Fix it"), c.assistant("", [ToolCall("r1", "read_file", {"path": "src/app.py"})]),
                         c.tool("r1", source)], HEADER)
    out, _ = persist(read, make_budget())
    assert "lines omitted" in out[2].text and "error lines" not in out[2].text


def test_persist_describes_base64_payloads() -> None:
    payload = "iVBORw0KGgo" + "A" * 60_000
    out, _ = persist(session(("screenshot", payload)), make_budget())
    assert "base64 payload" in out[2].text and "PNG image" in out[2].text


def test_cheap_stages_only_look_at_new_items() -> None:
    conv = session(("cat a", "y" * 60_000), ("cat b", "z" * 60_000))
    out, _ = truncate(conv, make_budget(new_from=3))
    assert out[2] is conv[2] and len(out[4].text) < 51_000


def test_truncate_keeps_head_and_tail_with_a_marker() -> None:
    text = "HEAD" + "m" * 100_000 + "TAIL"
    out, events = truncate(session(("cat x", text)), make_budget())
    kept = out[2].text
    assert kept.startswith("HEAD") and kept.endswith("TAIL") and "characters" in kept and len(kept) < 51_000
    assert events[0].stage == "truncate"
    over, _ = truncate(session(("cat y", "n" * 60_000)), make_budget())  # a little over the 50,000 cap
    assert len(over[2].text) < 51_000


def test_budget_steps_down_with_utilization() -> None:
    assert allowance_chars(0.4, Policy().budget_steps) is None
    assert allowance_chars(0.55, Policy().budget_steps) == 30_000
    assert allowance_chars(0.9, Policy().budget_steps) == 15_000
    conv = session(*[(f"cat f{k}", "w " * 20_000) for k in range(5)])
    out, _ = budget_outputs(conv, make_budget(window_tokens=60_000, policy=Policy(budget_steps=((0.5, 1_000),))))
    sizes = [len(out[i].text) for i in range(2, len(out), 2)]
    assert all(s < 1_100 for s in sizes[:2]) and all(s == 40_000 for s in sizes[2:])  # the 3 recent rounds keep theirs


def test_snip_replaces_superseded_reads_but_keeps_the_calls() -> None:
    conv = session(
        ("cat src/app.py", "old content"),
        ("sed -i 's/a/b/' src/app.py", ""),
        ("cat src/app.py", "new content"),
        ("grep -rn foo .", "hits 1"),
        ("grep -rn bar .", "hits 2"),
    )
    assert superseded(conv, keep_searches=1) == {2: "src/app.py was edited afterwards", 8: "an older search; 1 newer ones are kept"}
    out, events = snip(conv, make_budget(policy=Policy(snip_keep_search_results=1)))
    assert "superseded" in out[2].text and out[1] is conv[1]
    assert out[6].text == "new content" and out.validate() == []
    assert set(events[0].items) == {conv[2].id, conv[8].id}
    every_search, _ = snip(conv, make_budget(policy=Policy(snip_keep_search_results=0)))
    assert "superseded" in every_search[8].text and every_search[10].text == "hits 2"  # the latest output stays



def test_an_output_snipped_again_for_the_same_reason_is_the_same_item() -> None:
    """A compaction snips at each rung it tries: the placeholder is made once and counted once."""
    conv = session(("cat src/app.py", "old content"), ("sed -i 's/a/b/' src/app.py", ""), ("cat src/app.py", "new"))
    first, _ = snip(conv, make_budget())
    again, _ = snip(conv, make_budget())
    assert "superseded" in first[2].text and again[2] is first[2]


def test_a_read_of_another_part_of_a_file_supersedes_no_earlier_part_but_a_whole_read_does() -> None:
    # A saved output too long to read at once, read in pages: the second page snipped the first as "read again",
    # and the design notes the agent was writing from were gone.
    def read(cid: str, **arguments: object) -> Item:
        return c.assistant("", [ToolCall(cid, "Read", {"file_path": "notes.md", **arguments})])
    items = [c.user("Write the redesign plan from notes.md"),
             read("p1", offset=1, limit=200), c.tool("p1", "1\tColour: #c53030 for alerts"),
             read("p2", offset=200, limit=200), c.tool("p2", "200\tIcons: 28dp"),
             read("p3", view_range=[1, 50]), c.tool("p3", "1\tColour: #c53030 for alerts"),
             read("p4", offset=1, limit=200), c.tool("p4", "1\tColour: #c53030 for alerts")]
    conv = Conversation(items, HEADER)
    assert superseded(conv, keep_searches=3) == {2: "notes.md was read again afterwards"}  # the very same page again
    whole = Conversation([*items, read("p5"), c.tool("p5", "the whole file")], HEADER)
    assert set(superseded(whole, keep_searches=3)) == {2, 4, 6, 8}

EVERY_OLD_OUTPUT = Policy(clear_keep_recent_rounds=0, clear_min_savings_tokens=0)
"""Clears every output but the latest once a compaction is due (under the trigger the current turn is spared)."""


def test_clear_waits_for_a_cold_cache_or_a_large_saving() -> None:
    conv = session(*[(f"python t{k}.py", f"out {k} " * 300) for k in range(8)])
    policy = Policy(clear_keep_recent_rounds=3, clear_min_savings_tokens=100_000)
    unchanged, events = clear(conv, make_budget(policy=policy, idle_s=10))
    assert unchanged is conv and events == []
    cold, events = clear(conv, make_budget(policy=policy, idle_s=3_600))
    cleared = [i for i in range(len(cold)) if "cleared" in cold[i].text]
    assert cleared == [2, 4, 6, 8, 10]  # all but the three recent rounds, in one batch
    assert len(events) == 1 and cold.validate() == []


def test_a_larger_window_keeps_more_recent_rounds_whole() -> None:
    # A report the agent read six rounds ago, in a 200k window where the request is a twentieth of it: a cold cache
    # cleared it (3 rounds kept at every window) and the agent's next reply quoted it.
    rounds = session(*[(f"python t{k}.py", f"out {k} " * 300) for k in range(12)])
    conv = Conversation([*rounds, c.user("now make t11 pass")], HEADER)  # the rounds are an earlier turn
    policy = Policy(clear_keep_recent_rounds=3, clear_min_savings_tokens=100_000)

    def cleared_at(window: int) -> list[int]:
        out, _ = clear(conv, make_budget(policy=policy, window_tokens=window, trigger_tokens=window * 9 // 10,
                                         idle_s=3_600))
        return [i for i in range(len(out)) if "cleared" in out[i].text]

    assert cleared_at(32_000) == cleared_at(64_000) == [2, 4, 6, 8, 10, 12, 14, 16, 18]  # 3 rounds kept
    assert cleared_at(128_000) == [2, 4, 6, 8, 10, 12]  # 6
    assert cleared_at(200_000) == [2, 4, 6]  # 9
    fixed = replace(policy, clear_keep_rounds_window_tokens=None)
    assert make_budget(policy=fixed, window_tokens=200_000).clear_keep_rounds == 3


def test_cleared_output_keeps_its_last_error_line_and_the_latest_output_is_never_cleared() -> None:
    latest = "src/app.py\n" * 400  # far larger than a placeholder: clearing it would save tokens
    conv = session(("pytest", "collected 3\n" + "test_x.py .\n" * 200 + "E   AssertionError: totals differ\n1 failed"),
                   ("ls -R", latest))
    out, _ = clear(conv, make_budget(policy=EVERY_OLD_OUTPUT, compaction_due=True))
    assert "1 failed" in out[2].text and "cleared" in out[2].text
    assert out[4].text == latest


def test_a_cleared_traceback_keeps_the_exception_it_ended_on_with_its_frame_not_its_header() -> None:
    # The exception's own line names no "Error" (django's AppRegistryNotReady): the traceback header is the only error
    # line the output has, and the placeholder used to keep that header and the line above it, which say nothing.
    run = ("<returncode>1</returncode>\n<output>\nTesting RenameField with ForeignKey to_field...\n"
           "Traceback (most recent call last):\n" + '  File "/testbed/x.py", line 3, in <module>\n    f()\n' * 60
           + '  File "/testbed/django/apps/registry.py", line 140, in check_models_ready\n'
           '    raise AppRegistryNotReady("Models aren\'t loaded yet.")\n'
           "django.core.exceptions.AppRegistryNotReady: Models aren't loaded yet.\n</output>")
    conv = session(("python test_rename_simple.py", run), ("ls -R", "src/app.py\n" * 400))
    out, _ = clear(conv, make_budget(policy=EVERY_OLD_OUTPUT, compaction_due=True))
    cleared = out[2].text
    assert "cleared" in cleared and "Testing RenameField" not in cleared
    assert ('  File "/testbed/django/apps/registry.py", line 140, in check_models_ready\n'
            '    raise AppRegistryNotReady("Models aren\'t loaded yet.")\n'
            "django.core.exceptions.AppRegistryNotReady: Models aren't loaded yet.") in cleared
    conv = session(("python test_rename_simple.py", run), ("pytest", "E   AssertionError: totals differ\n1 failed"),
                   ("ls -R", "src/app.py\n" * 400))
    out, _ = clear(conv, make_budget(policy=EVERY_OLD_OUTPUT, compaction_due=True))
    assert "It reported: django.core.exceptions.AppRegistryNotReady: Models aren't loaded yet." in out[2].text  # older


def test_the_newest_output_showing_an_error_keeps_it_with_its_frame_when_cleared() -> None:
    # A CI log whose call succeeded, its failing step far from its end; an older failed run; then a long listing.
    log = ("step: checkout ok\n" * 50 + "Comment metrics\tresponse: 403\nComment metrics\turl: /repos/x/issues/4\n"
           "Comment metrics\t##[error]Unhandled error: HttpError: Resource not accessible by integration\n"
           + "Post job cleanup ok\n" * 300)
    conv = session(("pytest", "test_x.py .\n" * 200 + "E   AssertionError: totals differ\n1 failed"), ("gh run view 7 --log", log),
                   ("ls -R", "src/app.py\n" * 400))
    out, _ = clear(conv, make_budget(policy=EVERY_OLD_OUTPUT, compaction_due=True))
    cleared_log = out[4].text
    assert "cleared" in cleared_log and "Post job cleanup" not in cleared_log
    assert ("Comment metrics\tresponse: 403\nComment metrics\turl: /repos/x/issues/4\nComment metrics\t##[error]Unhandled "
            "error: HttpError: Resource not accessible by integration") in cleared_log
    assert "It reported: 1 failed" in out[2].text  # an older failure keeps its line only


def test_a_cleared_test_run_keeps_the_assertion_above_its_short_summary() -> None:
    # pytest piped through tail (the call did not fail): its tally's two lines above are the summary's banner and the
    # FAILED entry, which say which test failed; the assertion above them says how, and is what the agent fixes.
    run = ("    with pytest.raises(ValidationError):\n         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
           "E   Failed: DID NOT RAISE <class 'pydantic_core._pydantic_core.ValidationError'>\n"
           "=========================== short test summary info ============================\n"
           "FAILED tests/test_models.py::TestOutcome::test_none_return_raises\n1 failed, 94 passed in 0.32s")
    conv = session(("pytest tests/test_models.py -q 2>&1 | tail -6", run), ("ls -R", "src/app.py\n" * 400))
    out, _ = clear(conv, make_budget(policy=EVERY_OLD_OUTPUT, compaction_due=True))
    assert "cleared" in out[2].text
    assert ("E   Failed: DID NOT RAISE <class 'pydantic_core._pydantic_core.ValidationError'>\n"
            "=========================== short test summary info ============================\n"
            "FAILED tests/test_models.py::TestOutcome::test_none_return_raises\n1 failed, 94 passed in 0.32s") in out[2].text


def test_an_error_line_in_a_source_file_read_is_no_error_shown() -> None:
    source = "def check():\n    total = 1\n    print('Error: totals differ')\n" + "    pass\n" * 300
    conv = Conversation([c.user("Fix the totals check"), c.assistant("", [ToolCall("r1", "read", {"path": "src/app.py"})]),
                         c.tool("r1", source), bash("c2", "ls -R"), c.tool("c2", "src/app.py\n" * 400)], HEADER)
    out, _ = clear(conv, make_budget(policy=EVERY_OLD_OUTPUT, compaction_due=True))
    assert "cleared" in out[2].text and "error" not in out[2].text.lower()


def test_mask_mode_masks_every_turn_regardless_of_savings() -> None:
    conv = session(*[(f"echo {k}", f"o{k} " * 100) for k in range(5)])
    out, events = clear(conv, make_budget(policy=Policy(mask_window_rounds=2, clear_min_savings_tokens=10**9)))
    assert events and events[0].action == "masked" and "cleared" in out[2].text and out[8].text.startswith("o3")


def test_selective_applies_rules_lowest_priority_first_and_stops_when_it_fits() -> None:
    items = [c.user("task")]
    for k in range(6):
        items += [Item("assistant", (c.Thinking("deep " * 400, "sig"), ToolCall(f"c{k}", "bash", {}))), c.tool(f"c{k}", "r " * 500)]
    conv = Conversation(items, HEADER)
    total = EST.conversation(conv)
    out, events = selective(conv, make_budget(target_tokens=total - 1_000))
    assert [e.action for e in events] == ["drop:thinking"]
    assert out.validate() == [] and EST.conversation(out) <= total - 1_000
    assert any(isinstance(b, c.Thinking) for b in out[-2].blocks)  # the newest thinking is kept


def test_selective_removes_images_from_outputs_and_later_messages_but_never_from_the_task() -> None:
    picture = c.Image(data="iVBORw0KGgo=", media_type="image/png")
    task = Item("user", (Text("Make the page look like this mockup"), picture))
    items = [task]
    for k in range(4):
        shot = c.ToolResult(f"c{k}", (Text(f"shot {k}"), picture))
        items += [bash(f"c{k}", f"screenshot {k}"), Item("tool", (shot,))]
    items += [Item("user", (Text("and like this"), picture)), bash("c9", "ls"), c.tool("c9", "a b")]
    conv = Conversation(items, HEADER)
    out, events = selective(conv, make_budget(target_tokens=1))
    (images,) = [e for e in events if e.action == "truncate:image"]
    assert set(images.items) == {conv[i].id for i in (2, 4, 6, 8, 9)}  # older outputs and the later message
    assert out[0] == task and any(isinstance(b, c.Image) for b in out[0].blocks)


def test_boundary_never_splits_a_round_and_prefers_a_cut_before_a_user_message() -> None:
    conv = session(*[(f"echo {k}", "x " * 200) for k in range(6)])
    items = list(conv.items)
    items.insert(7, c.user("also check the docs"))
    conv = Conversation(items, HEADER)
    cut = choose_cut(conv, start=1, tail_budget_tokens=EST.items(conv.items[7:]), count_item=EST.item)
    assert cut is not None and cut.index == 7 and "before a user message" in cut.reasons
    starts = {u[0] for u in conv.units()}
    for budget_tokens in range(50, 2_000, 37):
        cut = choose_cut(conv, start=1, tail_budget_tokens=budget_tokens, count_item=EST.item)
        assert cut is not None and cut.index in starts and cut.index > 1
        tail = EST.items(conv.items[cut.index:])
        assert tail <= budget_tokens or cut.index == max(starts), (budget_tokens, tail)  # the last unit always stays


def text_mode_session(steps: int) -> Conversation:
    """A mini-swe-agent run: each reply ends with one fenced command, its output comes back as a user message."""
    items = [c.user("Fix src/app.py so that the tests pass")]
    for k in range(steps):
        items += [c.assistant(f"THOUGHT: step {k}.\n\n```bash\ncat part{k}.py\n```"),
                  c.user(f"<returncode>0</returncode>\n<output>\n{'x = 1  ' * 60}\n</output>")]
    return Conversation(items, HEADER)


def test_boundary_never_cuts_between_a_text_command_and_its_output() -> None:
    """A cut before the output would score as "before a user message" and "after assistant text", and open the
    verbatim tail with an output whose command was summarized away."""
    conv = text_mode_session(8)
    for budget_tokens in range(50, 2_500, 41):
        cut = choose_cut(conv, start=1, tail_budget_tokens=budget_tokens, count_item=EST.item)
        assert cut is not None and conv[cut.index].role == "assistant", (budget_tokens, cut)


def test_a_cut_before_a_text_mode_format_error_is_not_a_turn_boundary() -> None:
    """The harness's "provide EXACTLY ONE action" answers a reply that ran nothing, and the loop goes on: neither
    "after assistant text" nor "before a user message" (which made such a cut the best of a text-mode run)."""
    items = list(text_mode_session(6).items)
    items[7:7] = [c.assistant("THOUGHT: I should think about this more."),
                  c.user("Please always provide EXACTLY ONE action in triple backticks, found 0 actions.")]
    conv = Conversation(items, HEADER)
    cut = choose_cut(conv, start=1, tail_budget_tokens=EST.items(items[8:]), count_item=EST.item)
    assert cut is not None and cut.index == 8 and cut.reasons[1:] == ()


def test_summarize_of_a_text_mode_run_keeps_each_command_with_its_output() -> None:
    conv = text_mode_session(10)
    out, _ = summarize(conv, make_budget(tail_tokens=700))
    tail = [item for item in out.items if item.id in {i.id for i in conv.items[1:]}]
    assert tail and tail[0].role == "assistant" and "```bash" in tail[0].text
    assert tail == list(conv.items[len(conv) - len(tail):])


def test_summarize_keeps_task_first_injects_a_user_summary_and_restores_files() -> None:
    conv = session(
        ("cat src/app.py", "def total():\n    return 1\n"),
        ("sed -i 's/1/2/' src/app.py", ""),
        ("pytest", "E   AssertionError: 2 != 3\n1 failed"),
        *[(f"echo {k}", "noise " * 300) for k in range(6)],
    )
    out, events = summarize(conv, make_budget(tail_tokens=400))
    assert out.header is conv.header and out[0] is conv[0]
    summary = out[1]
    assert summary.role == "user" and isinstance(summary.blocks[0], Summary)
    assert "src/app.py" in summary.text and "AssertionError: 2 != 3" in summary.text
    assert out[2].provenance.restored and "def total()" in out[2].text
    assert out.validate() == [] and out[-1] is conv[-1]
    event = next(e for e in events if e.stage == "summarize")
    assert event.stage == "summarize" and event.data["span_items"] > 0 and event.saved_tokens > 0


def test_compact_escalates_instead_of_looping() -> None:
    conv = session(*[(f"echo {k}", "z " * 3_000) for k in range(6)])
    out, events, fits = compact(conv, make_budget(), target_tokens=3_500)
    assert fits and EST.conversation(out) <= 3_500
    assert len([e for e in events if e.action == "summarized"]) <= 3
    assert out.validate() == []


class Overshooting:
    """A summarizer that ignores its target: its summary is as long as what it summarizes, less a little."""

    name = "overshooting"
    offline = True

    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, request):
        self.calls += 1
        result = ExtractiveSummarizer().summarize(request)
        wanted = int(0.9 * sum(EST.item(item) for item in request.items))
        return replace(result, text=result.text + " note" * max(wanted - EST.text(result.text), 0))


def test_a_summary_that_misses_its_target_is_not_made_again_with_a_shorter_tail() -> None:
    """The tail is chosen before the one summarizer call; an overshoot goes on to the per-kind rules, since
    another summary of (nearly) the same span would be paid for and thrown away."""
    conv = session(*[(f"echo {k}", "z " * 3_000) for k in range(6)])
    summarizer = Overshooting()
    out, events, fits = compact(conv, make_budget(summarizer=summarizer), target_tokens=3_500)
    assert summarizer.calls == 1
    assert [e.action for e in events if e.stage == "summarize"] == ["summarized"]
    assert not fits and EST.conversation(out) < EST.conversation(conv) and out.validate() == []


def test_economics_counts_the_rewrite_against_the_reads_it_saves() -> None:
    conv = session(*[(f"echo {k}", "v " * 2_000) for k in range(10)])
    cleared, _ = clear(conv, make_budget(policy=Policy(clear_min_savings_tokens=0)))
    assert first_change(conv, cleared) == 2
    early = verdict(conv, cleared, make_budget(requests_sent=0, policy=Policy(min_horizon_requests=1)))
    late = verdict(conv, cleared, make_budget(requests_sent=100))
    assert late.pays and late.benefit_usd > early.benefit_usd
    assert not verdict(conv, conv, make_budget(requests_sent=100)).pays
    cold = verdict(conv, cleared, make_budget(idle_s=10_000, policy=Policy(min_horizon_requests=1)))
    assert cold.pays and cold.cost_usd == 0


def test_an_edit_is_credited_only_with_the_requests_before_the_next_summary() -> None:
    conv = session(*[(f"echo {k}", "v " * 2_000) for k in range(10)])
    cleared, _ = clear(conv, make_budget(policy=Policy(clear_min_savings_tokens=0)))
    after = EST.conversation(cleared)
    far = verdict(conv, cleared, make_budget(requests_sent=100, trigger_tokens=after + 500_000,
                                             growth_tokens_per_request=1_000))
    near = verdict(conv, cleared, make_budget(requests_sent=100, trigger_tokens=after + 2_000,
                                              growth_tokens_per_request=1_000))
    assert far.horizon_requests == 50 and far.pays  # a session of 100 requests reaches 50 more two times in three
    assert near.horizon_requests == 2 and not near.pays  # the summary two requests away would save the same anyway


def test_stages_never_touch_the_header_or_share_mutations() -> None:
    conv = session(*[(f"cat f{k}.py", "q " * 30_000) for k in range(4)])
    snapshot = json.dumps([i.text for i in conv])
    budget = make_budget(policy=replace(Policy(), clear_min_savings_tokens=0, persist_max_chars=100), idle_s=10_000)
    for stage in (persist, truncate, budget_outputs, snip, clear, selective, summarize):
        out, _ = stage(conv, budget)
        assert out.header is conv.header
    assert json.dumps([i.text for i in conv]) == snapshot


@pytest.mark.parametrize("stage", [persist, truncate, budget_outputs, snip, clear, selective, summarize])
def test_a_stage_with_nothing_to_do_returns_its_input(stage) -> None:
    conv = session(("echo hi", "hi"))
    out, events = stage(conv, make_budget())
    assert out is conv and events == []


def test_a_cut_output_and_a_kept_line_end_between_words() -> None:
    """A stage's head-and-tail cut, and a line a placeholder keeps for the name it holds, never end inside a word
    ("type a messa"): the cut moves back to the space before it."""
    from contextfold.pipeline.edits import head_tail
    from contextfold.pipeline.importance import References, referenced_lines
    from contextfold.summarizers._text import mid_word

    text = "Click the box and type a message to the support team, then press send. " * 40
    cut = head_tail(text, 200, 100)
    head, _, rest = cut.partition("\n[contextfold")
    tail = rest.partition("]\n")[2]
    assert not mid_word(text, len(head)) and text.startswith(head)
    assert text.endswith(tail) and not mid_word(text, len(text) - len(tail))
    refs = References(uses={"support_form.tsx": 1.0}, last={"support_form.tsx": 0})
    long_line = "In support_form.tsx the user can " + "type a message to the support team " * 12
    (kept,) = referenced_lines(long_line, refs, 1_000)
    assert kept.endswith("…") and not mid_word(long_line, len(kept) - 1) and long_line.startswith(kept[:-1])


def test_a_cleared_test_run_keeps_the_tally_it_ended_on() -> None:
    """How the last run went outlives clearing: the placeholder keeps the tally line verbatim, on a line of its own,
    and a summary written after the clearing still reports it as the last test run."""
    from contextfold.pipeline.stages.clear import output_lines, placeholder
    from contextfold.summarizers._facts import Facts

    conv = Conversation()
    conv.append(c.user("Make the linter pass"))
    conv.append(c.assistant("", [ToolCall("t", "bash", {"command": "npm run lint"})]))
    conv.append(c.tool("t", "> pkg@0.2.2 lint\n> eslint .\n\n/repo/scripts/version.mjs\n  15:1  error  Replace tab\n\n"
                            "✖ 52 problems (52 errors, 0 warnings)\n"
                            "  52 errors and 0 warnings potentially fixable with the `--fix` option.\n"))
    items = list(conv.items)
    cleared = placeholder(items[2], 300, "clear")
    assert "52 errors and 0 warnings potentially fixable with the `--fix` option." in output_lines(cleared.text)
    facts = Facts()
    facts.read([*items[:2], cleared])
    assert facts.last_test == {"command": "$ npm run lint",
                               "line": "52 errors and 0 warnings potentially fixable with the `--fix` option."}


def test_a_cleared_output_that_did_not_fail_is_no_error_for_quoting_one() -> None:
    """A test run piped through ``tail`` exits 0 and shows an error; its placeholder quotes that error. Read again,
    the placeholder is not a failed call whose "error" is contextfold's own note."""
    from contextfold.actions import item_failure_line
    from contextfold.pipeline.stages.clear import placeholder
    from contextfold.summarizers._facts import Facts

    conv = Conversation()
    conv.append(c.user("Make the migration test pass"))
    conv.append(c.assistant("", [ToolCall("t", "bash", {"command": "python -m django test migrations 2>&1 | tail -5"})]))
    conv.append(c.tool("t", "<returncode>0</returncode>\n<output>\n  File \"/testbed/django/apps/registry.py\", line 135\n"
                            "    raise AppRegistryNotReady(\"Apps aren't loaded yet.\")\n"
                            "django.core.exceptions.AppRegistryNotReady: Apps aren't loaded yet.\n</output>"))
    items = list(conv.items)
    shown = ["    raise AppRegistryNotReady(\"Apps aren't loaded yet.\")",
             "django.core.exceptions.AppRegistryNotReady: Apps aren't loaded yet."]
    cleared = placeholder(items[2], 300, "clear", error=shown)
    assert "It showed this error" in cleared.text and item_failure_line(cleared) is None
    facts = Facts()
    facts.read([*items[:2], cleared])
    assert facts.errors == []


def test_a_cleared_log_of_error_lines_quotes_its_cause_and_a_cleared_format_check_its_files_in_order() -> None:
    """A script logging ``[ERROR]`` lines is quoted by the cause its last run of them opens with, not by the line it
    printed last; prettier's verdict by itself and the files it listed above it, in order."""
    script = ("[INFO] Checking buildpool\n" * 40 + "[ERROR] Insufficient space in buildpool: 9GB free, 10GB required\n"
              "[ERROR] Pre-flight checks failed\n[ERROR] Fix the issues above and try again\n"
              "[18:36:16] To destroy dataset only: zfs destroy -r buildpool/builds\n<returncode>1</returncode>")
    check = ("[warn] CLAUDE.md\n[warn] src/app.ts\n[warn] src/lib/util.ts\n[warn] Code style issues found in 3 files. "
             "Run Prettier with --write to fix.\n\n> app@0.2.2 format:check\n> prettier --check .\n\n"
             + "Checking formatting...\n" * 40 + "<returncode>1</returncode>")
    conv = session(("./build.sh", script), ("npm run format:check", check), ("pytest", "E   AssertionError: x\n1 failed"),
                   ("ls -R", "src/app.py\n" * 400))
    out, _ = clear(conv, make_budget(policy=EVERY_OLD_OUTPUT, compaction_due=True))
    assert "It reported: [ERROR] Insufficient space in buildpool: 9GB free, 10GB required" in out[2].text
    assert ("It reported:\n[warn] CLAUDE.md\n[warn] src/app.ts\n[warn] src/lib/util.ts\n[warn] Code style issues found in "
            "3 files. Run Prettier with --write to fix.\n") in out[4].text


def test_a_cleared_output_that_gives_the_calls_input_back_keeps_no_tally_of_it() -> None:
    plan = "# Self-test\n" + "Step.\n" * 300 + "It prints:\n    SUMMARY: 14 passed, 1 failed, 1 warning\n"
    conv = Conversation([c.user("Add a self-test"), c.assistant("", [ToolCall("x1", "ExitPlanMode", {"plan": plan})]),
                         c.tool("x1", "User has approved your plan.\n\n## Approved Plan:\n" + plan, False), bash("c2", "ls -R"),
                         c.tool("c2", "src/app.py\n" * 400)], HEADER)
    out, _ = clear(conv, make_budget(policy=EVERY_OLD_OUTPUT, compaction_due=True))
    assert "cleared" in out[2].text and "14 passed" not in out[2].text
    unflagged = conv.with_items([*conv.items[:2], c.tool("x1", conv.items[2].text), *conv.items[3:]])
    out, _ = clear(unflagged, make_budget(policy=EVERY_OLD_OUTPUT, compaction_due=True))
    assert "cleared" in out[2].text and "14 passed" not in out[2].text  # nor quoted as the error it reported


def test_a_delegated_agents_report_is_kept_whole_while_the_request_is_under_the_trigger(tmp_path: Path) -> None:
    """A sub-agent's design (a ``Task`` output, written for this test in the shape of Claude Code's) is the work
    the agent acts on next, and no read fetches it again: cut to its head on arrival at a third of the trigger, the
    plan the agent then wrote had none of its tables. A shell output of the same size still goes to disk."""
    design = "## Storage\n" + "".join(f"CREATE TABLE t_{k} (id INTEGER PRIMARY KEY, name TEXT);\n" for k in range(400))
    delegate = c.assistant("", [ToolCall("t1", "Task", {"subagent_type": "Plan", "prompt": "Design the schema"})])
    conv = Conversation([c.user("Design the analytics store"), delegate, c.tool("t1", design)], HEADER)
    budget = make_budget(results_dir=tmp_path, trigger_tokens=50_000, window_tokens=64_000,
                         policy=Policy(persist_whole_tail_fraction=0))  # an output is never sent whole for its room
    out, events = persist(conv, budget)
    assert out[2].text == design and not events
    log = session(("cat schema.log", design))
    out, events = persist(log, budget)
    assert out[2].text != design and events[0].action == "persisted"
    over = replace(budget, trigger_tokens=1_000)
    assert persist(conv, over)[0][2].text != design  # past the trigger, it goes like any output


def test_a_cleared_report_of_a_delegated_agent_keeps_its_substance() -> None:
    """A sub-agent's audit (a ``Task`` output, written for this test in the shape of Claude Code's: its own calls
    written out as text, then its findings) cleared to its lines in use left the next summary a few of its lines;
    the placeholder keeps its conclusions instead, without the calls it wrote out."""
    from contextfold.pipeline.stages.clear import REPORT_INTRO, placeholder

    calls = "<claude:function_calls>\n<claude:invoke name=\"bash\">\ngrep -rn nspawn .\n</claude:invoke>\n" \
            "</claude:function_calls>\n" * 60
    findings = ("## Findings\n- systemd-nspawn is used twice, in build.sh:execute_module()\n"
                "- Replace it with arch-chroot; mount /proc and /sys first\n")
    delegate = c.assistant("", [ToolCall("t1", "Task", {"subagent_type": "Patcher", "prompt": "Audit nspawn use"})])
    conv = Conversation([c.user("migrate the build to arch-chroot"), delegate, c.tool("t1", calls + findings)], HEADER)
    cleared = placeholder(conv[2], 3_000, "clear")
    assert REPORT_INTRO in cleared.text and findings.strip() in cleared.text and "claude:invoke" not in cleared.text


def test_clearing_before_a_summary_clears_the_oldest_outputs_only_until_there_is_room() -> None:
    # Ten files read, one a round: the agent rewrites them from what it read. Over the trigger, clearing every
    # output older than three rounds made room for twice what was needed, and took the newer reads the agent was
    # about to write from; the oldest ones alone make the room the clearing is asked for.
    conv = session(*[(f"cat src/mod{k}.py", f"def handler_{k}(x):\n    return x + {k}\n" * 60) for k in range(10)])
    budget = make_budget(trigger_tokens=8_000)
    out, events, fits = compact(conv, budget, target_tokens=8_000)
    shown = {item.id: item.text for item in out}
    cleared = [i for i, item in enumerate(conv) if "output cleared" in shown.get(item.id, "")]
    assert fits and not any(e.stage == "summarize" for e in events)
    assert EST.conversation(conv) > 8_000 >= EST.conversation(out) / budget.policy.clear_first_max_fraction
    assert cleared == [2, 4, 6, 8]  # the oldest, until there was room
    assert shown[conv[10].id] == conv[10].text and shown[conv[14].id] == conv[14].text  # older than 3 rounds: whole


def _delegated(cid: str, report: str) -> list[Item]:
    """A ``Task`` call and its report, in the shape of Claude Code's (written for these tests)."""
    call = c.assistant("", [ToolCall(cid, "Task", {"subagent_type": "Planner", "prompt": "Plan the module split"})])
    return [call, c.tool(cid, report)]


PLAN = "## Modules\n" + "".join(f"- `modules/part_{k}.sh`: consolidates add-{k}a.sh and add-{k}b.sh\n" for k in range(120))
"""A sub-agent's plan: a list the agent copies, line by line, into the document it writes next."""


def test_the_newest_report_of_a_delegated_agent_is_not_cut_by_the_budget_for_older_outputs() -> None:
    # Cut to its head and tail like any older output, the list the agent went on to copy from lost its middle;
    # a shell output of the same size, as old, is still cut.
    items = [c.user("Consolidate the build scripts"), *_delegated("t1", PLAN)]
    items += [bash("c1", "cat notes.log"), c.tool("c1", PLAN), c.user("Go ahead, write it up")]
    items += [x for k in range(2, 6) for x in (bash(f"c{k}", f"echo {k}"), c.tool(f"c{k}", "ok"))]
    conv = Conversation(items, HEADER)
    policy = Policy(budget_steps=((0.0, 1_000),), report_whole_fraction=0.1)
    budget = make_budget(window_tokens=60_000, trigger_tokens=50_000, policy=policy)
    out, _ = budget_outputs(conv, budget)
    assert out[2].text == PLAN and len(out[4].text) < 1_100
    cut, _ = budget_outputs(conv, replace(budget, policy=replace(policy, report_whole_fraction=0)))
    assert len(cut[2].text) < 1_100  # with no room for reports, it is cut like any output


def test_clearing_spares_the_newest_report_of_a_delegated_agent_while_it_fits_whole() -> None:
    # Cleared, the report kept 2,000 characters of its conclusions; the list the agent copied from was gone.
    items = [c.user("Consolidate the build scripts"), *_delegated("t1", PLAN)]
    items += [bash("c1", "cat notes.log"), c.tool("c1", PLAN)]
    items += [x for k in range(2, 6) for x in (bash(f"c{k}", f"echo {k}"), c.tool(f"c{k}", "ok"))]
    conv = Conversation(items, HEADER)
    out, _ = clear(conv, make_budget(window_tokens=60_000, trigger_tokens=50_000, compaction_due=True,
                                     policy=replace(EVERY_OLD_OUTPUT, report_whole_fraction=0.1)))
    assert out[2].text == PLAN and "output cleared" in out[4].text


def test_a_summary_keeps_the_newest_report_of_a_delegated_agent_in_its_tail_when_it_still_reaches_its_target() -> None:
    # The policy's tail began after the report: the summary carried a few of its lines, and the agent's next edit
    # copied forty of them. A longer tail that keeps it verbatim still brings the request under the target.
    items = [x for k in range(12) for x in (c.user(f"Step {k}: what does src/old{k}.sh do?"),
                                            c.assistant(f"It echoes {k}.\n" * 400))]
    items += [*_delegated("t1", PLAN), c.assistant("Writing CONSOLIDATION.md from the plan.")]
    items += [x for k in range(12, 16) for x in (bash(f"c{k}", f"echo {k}"), c.tool(f"c{k}", "ok"))]
    conv = Conversation(items, HEADER)
    budget = make_budget(window_tokens=40_000, trigger_tokens=12_000, policy=Policy(tail_fraction=0.06, report_whole_fraction=0.1))
    out, events, fits = compact(conv, budget, target_tokens=8_000)
    assert fits and any(e.action == "summarized" for e in events)
    assert any(item.text == PLAN for item in out)


def test_a_short_report_a_cleared_placeholder_keeps_whole_takes_no_room_from_the_newest_long_one() -> None:
    # An agent started in the background reports its id alone; cleared, its placeholder keeps all of it. It neither
    # counts as the newest report nor pulls a summary's tail back to its round.
    from contextfold.summarizers._reports import reports_kept_whole

    items = Conversation([c.user("Consolidate the build scripts"), *_delegated("t1", PLAN),
                          *_delegated("t2", "agentId: a1 (running)")], HEADER).items
    kept = reports_kept_whole(items, EST.item, EST.item(items[2]))
    assert kept == {2}
    assert reports_kept_whole(items, EST.item, 0) == frozenset()


SPEC = "Build the order book exactly to this spec:\n" + "".join(
    f"- `contracts/Book{k}.sol`: function match{k}(uint256 orderId) settles side {k} at the quoted price\n"
    for k in range(100))
"""A request pasted in whole (a specification): the agent writes its files from these lines, one by one."""


def test_a_summary_keeps_the_persons_latest_long_request_in_its_tail_when_it_still_reaches_its_target() -> None:
    # The policy's tail began after the person's pasted specification: the summary quoted its opening lines, and
    # the files the agent went on to write from the rest were written from memory. A tail that starts at the
    # request, when the work since fits the policy's tail, still brings the request under the target.
    items = [x for k in range(12) for x in (c.user(f"Step {k}: what does src/old{k}.sh do?"),
                                            c.assistant(f"It echoes {k}.\n" * 400))]
    items += [c.user(SPEC), c.assistant("Writing the contracts from the spec.")]
    items += [x for k in range(12, 16) for x in (bash(f"c{k}", f"echo {k}"), c.tool(f"c{k}", "ok"))]
    conv = Conversation(items, HEADER)
    budget = make_budget(window_tokens=40_000, trigger_tokens=12_000, policy=Policy(tail_fraction=0.06))
    assert EST.item(items[24]) > budget.tail_budget_tokens  # the policy's tail alone leaves the request out
    out, events, fits = compact(conv, budget, target_tokens=8_000)
    assert fits and any(e.action == "summarized" for e in events)
    assert any(item.text == SPEC for item in out)


def test_the_persons_latest_request_does_not_pull_back_a_tail_past_more_work_than_the_policys_tail() -> None:
    # Once the agent's rounds since the request outgrow the policy's tail, they are what it goes on from: the tail
    # stays the policy's, though one from the request would still reach the target.
    items = [x for k in range(12) for x in (c.user(f"Step {k}: what does src/old{k}.sh do?"),
                                            c.assistant(f"It echoes {k}.\n" * 400))]
    items += [c.user(SPEC)]
    items += [x for k in range(4) for x in (c.assistant(f"Contract {k} written; next.\n" * 120,
                                                        [ToolCall(f"c{k}", "bash", {"command": f"forge build {k}"})]),
                                            c.tool(f"c{k}", "ok"))]
    conv = Conversation(items, HEADER)
    budget = make_budget(window_tokens=40_000, trigger_tokens=12_000, policy=Policy(tail_fraction=0.06))
    assert sum(EST.item(item) for item in items[25:]) > budget.tail_budget_tokens
    out, events, fits = compact(conv, budget, target_tokens=8_000)
    assert fits and any(e.action == "summarized" for e in events)
    assert not any(item.text == SPEC for item in out)


def test_a_request_a_summary_quotes_whole_does_not_lengthen_the_tail() -> None:
    # Its opening lines are all of it: the summary keeps it verbatim, and a longer tail would only cost.
    from contextfold.pipeline.escalate import request_tail_tokens

    history = [x for k in range(3) for x in (c.user(f"Step {k}: what does src/old{k}.sh do?"),
                                             c.assistant(f"It echoes {k}.\n" * 40))]
    work = [bash("c1", "forge build"), c.tool("c1", "ok")]
    budget = make_budget(window_tokens=40_000, trigger_tokens=12_000, policy=Policy(tail_fraction=0.06))
    short = Conversation([*history, c.user("Now write the contracts from the design above."), *work], HEADER)
    assert request_tail_tokens(short, budget) == 0
    pasted = Conversation([*history, c.user(SPEC), *work], HEADER)
    assert request_tail_tokens(pasted, budget) == EST.items(pasted.items[6:])


def test_a_placeholder_is_made_once_for_the_same_references() -> None:
    """A compaction clears the same outputs with the same references up to three times: the placeholder is made
    once; other arguments, or other references, make another."""
    from contextfold.pipeline.importance import References
    from contextfold.pipeline.stages.clear import placeholder

    items = list(session(("cat src/app.py", "def total_v2():\n    return 1\n" * 40),
                         ("grep -n total_v2 src/app.py", "1: def total_v2():")).items)
    refs = References.of(items)
    first = placeholder(items[2], 500, "clear", refs, 400)
    assert placeholder(items[2], 500, "clear", refs, 400) is first
    assert placeholder(items[2], 500, "clear", refs, 0) is not first
    other = References()
    other.read(items)
    again = placeholder(items[2], 500, "clear", other, 400)
    assert again is not first and again == first


def test_a_request_after_a_bare_path_stays_verbatim_in_front_of_the_summary() -> None:
    """The person typed a path, the agent asked what to do, then came the request: the summary follows the request,
    which (with the exchange before it) is kept whole, as a first request is."""
    request = ("Add a --dry-run flag to the sync command that prints each copy it would make.\n"
               "Keep the output format of the real run and exit with status 0.\n"
               "Cover it with a test in tests/test_sync.py.")
    opening = [c.user("./sync"), c.assistant("The ./sync folder holds sync.py and tests/. What should I do?"),
               c.user(request)]
    rounds = [("cat sync.py", "def sync(src, dst):\n    copy(src, dst)\n"),
              *[(f"echo {k}", "noise " * 300) for k in range(6)]]
    items = [*opening, *session(*rounds).items[1:]]
    conv = Conversation(items, HEADER)
    out, _ = summarize(conv, make_budget(tail_tokens=400))
    assert list(out.items[:3]) == opening and out[3].kind == "summary"
