"""Receipts: every compaction says what it took out and how to read each item back, and the on_compaction hook."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfold import Context, Policy, ToolCall, Storage
from contextfold.conversation import assistant, tool, user
from contextfold.lookback.history import item_text
from contextfold.pipeline.consent import CompactionNotice, OnCompaction
from contextfold.pipeline.receipts import Receipt, receipts_in, stored_receipts
from contextfold.stores.transcript import Transcript

TASK = "find where the retry budget is set and raise it to five"
LATEST = "now also add a regression test for the retry budget please"


def _session(context: Context, rounds: int = 30, *, failing: int | None = None) -> None:
    """A task, ``rounds`` tool rounds (``failing``: that round's command fails and is never fixed), a last request."""
    context.add([user(TASK)])
    for n in range(rounds):
        if n == failing:
            context.add([assistant("", [ToolCall(f"c{n}", "bash", {"command": "pytest tests/test_retry.py"})])])
            context.add([tool(f"c{n}", "collected 3 items\nE   AssertionError: retry budget is 3, expected 5\n"
                                       "FAILED tests/test_retry.py::test_budget - AssertionError", is_error=True)])
        else:
            context.add([assistant("", [ToolCall(f"c{n}", "read_file", {"path": f"src/mod{n}.py"})])])
            context.add([tool(f"c{n}", "\n".join(f"{k:>6}\tvalue_{n}_{k} = {n * 1000 + k}" for k in range(1, 60)))])
        if n == rounds - 3:
            context.add([assistant("Done reading."), user(LATEST)])
        context.prepare()


def assert_refs_read_back(context: Context, receipt: Receipt) -> int:
    """Every reference of ``receipt`` returns the item it names, whole (the bar); how many were read."""
    by_id = {item.id: item for item in context.history.items}
    read = 0
    for taken in receipt.taken:
        if taken.read_history is None:
            assert not by_id.get(taken.ref), "an item the history holds has a reference"
            continue
        text = context.read_history(taken.ref)
        head, _, body = text.partition("\n")
        assert head.startswith(f"--- {taken.ref} "), head
        whole = "\n".join(item_text(by_id[taken.ref]).splitlines())  # its lines, as read_history numbers them
        shown = body.split("\n[lines ")[0]  # a long item is read in parts: the first part, verbatim
        assert whole.startswith(shown) and (shown or not whole.strip()), (taken.ref, shown[:200], whole[:200])
        read += 1
    return read


def test_an_automatic_summary_has_a_receipt_whose_references_read_back() -> None:
    context = Context(window_tokens=16_000, policy=Policy(clear_first_max_fraction=0.0))  # a summary, not clearing
    _session(context)
    receipts = receipts_in(context.events)
    assert receipts, "the session compacted"
    for receipt in receipts:
        assert receipt.tokens_after < receipt.tokens_before
        assert assert_refs_read_back(context, receipt) > 0
    summary = next(r for r in receipts if r.of_kind("summarized"))
    assert summary.occasion == "auto" and "summarize" in summary.stages
    assert summary.first_id == summary.taken[0].ref and summary.last_id == summary.taken[-1].ref
    assert summary.added, "the summary item is listed as written in"
    in_view = {item.id for item in context.view().items}
    assert set(summary.kept) - in_view == set() or len(receipts) > 1
    assert context.last_receipt == receipts[-1]


def test_the_checks_say_what_the_compacted_request_still_holds() -> None:
    context = Context(window_tokens=16_000)
    _session(context, failing=2)
    context.compact()
    checks = {check.name: check for check in context.last_receipt.checks}  # type: ignore[union-attr]
    assert checks["task"].present is True
    assert checks["latest_request"].present is True
    assert checks["open_errors"].present is not None, "the failed run was read as an open error"
    assert checks["open_errors"].present is True, checks["open_errors"].missing


def test_a_missing_error_is_named() -> None:
    from contextfold.pipeline.receipts import checks

    from contextfold.conversation import Conversation

    before = Conversation([user(TASK), assistant("", [ToolCall("c1", "bash", {"command": "make test"})]),
                           tool("c1", "Error: build failed in module retry", is_error=True)])
    after = Conversation([user(TASK)])
    found = {check.name: check for check in checks(before, after)}
    assert found["open_errors"].present is False
    assert any("build failed" in line for line in found["open_errors"].missing)
    assert found["task"].present is True


def test_a_receipt_is_in_the_transcript_and_reads_back(tmp_path: Path) -> None:
    context = Context(window_tokens=16_000, storage=Storage(transcript=tmp_path))
    _session(context, rounds=12)
    context.compact()
    receipt = context.last_receipt
    assert receipt is not None and receipt.occasion == "manual"
    context.close()
    stored = stored_receipts(Transcript.load(tmp_path / f"{context.session_id}.jsonl").events)
    assert stored and stored[-1] == receipt


def test_cleared_outputs_are_listed_with_their_references() -> None:
    context = Context(window_tokens=16_000)  # over the trigger, clearing old outputs is enough here
    _session(context)
    cleared = [t for r in receipts_in(context.events) for t in r.of_kind("cleared")]
    assert cleared, [r.headline() for r in receipts_in(context.events)]
    for receipt in receipts_in(context.events):
        assert_refs_read_back(context, receipt)


# --------------------------------------------------------------------------- on_compaction

def test_warn_is_told_before_each_automatic_compaction() -> None:
    told: list[CompactionNotice] = []
    context = Context(window_tokens=16_000, on_compaction=told.append)
    _session(context)
    automatic = [r for r in receipts_in(context.events) if r.occasion != "manual"]
    assert [n.receipt for n in told] == automatic
    assert all(n.mode == "warn" and not n.can_decline for n in told)


def test_ask_can_put_a_compaction_off_until_the_window_is_at_stake() -> None:
    asked: list[CompactionNotice] = []

    def decline(notice: CompactionNotice) -> str:
        asked.append(notice)
        return "decline"

    context = Context(window_tokens=16_000, on_compaction=OnCompaction(decline, "ask"))
    _session(context)
    declined = [e for e in context.events if e.stage == "receipt" and e.action == "declined"]
    assert declined and any(n.can_decline for n in asked)
    made = receipts_in(context.events)
    assert made, "once the window itself was at stake the compaction was made anyway"
    assert all(not n.can_decline for n in asked if n.receipt in made)


def test_a_callback_that_raises_lets_the_compaction_go_ahead() -> None:
    def broken(notice: CompactionNotice) -> None:
        raise RuntimeError("the UI is gone")

    context = Context(window_tokens=16_000, on_compaction=OnCompaction(broken, "ask"))
    _session(context)
    assert receipts_in(context.events)
    assert any(e.stage == "receipt" and e.action == "callback_failed" and "UI is gone" in e.detail
               for e in context.events)


def test_a_bad_hook_is_a_typed_error() -> None:
    from contextfold import InvalidPolicy

    with pytest.raises(InvalidPolicy, match="on_compaction"):
        Context(window_tokens=16_000, on_compaction=OnCompaction(print, "sometimes"))  # type: ignore[arg-type]


def test_sessions_show_lists_the_receipts(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from contextfold.cli import cli

    context = Context(window_tokens=16_000, storage=Storage(store=tmp_path, session_id="s1"))
    _session(context)
    receipts = receipts_in(context.events)
    context.close()
    shown = CliRunner().invoke(cli, ["sessions", "show", "--store", str(tmp_path), "s1", "--receipts"])
    assert shown.exit_code == 0, shown.output
    assert f"{len(receipts)} compaction receipt(s)" in shown.output
    first = receipts[0].taken[0]
    assert first.read_history is not None and first.read_history in shown.output
    as_json = CliRunner().invoke(cli, ["sessions", "show", "--store", str(tmp_path), "s1", "--receipts", "--json"])
    assert [Receipt.from_dict(r) for r in json.loads(as_json.stdout)["receipts"]] == receipts


def test_a_fault_in_the_receipt_keeps_the_compaction(monkeypatch: pytest.MonkeyPatch) -> None:
    from contextfold.pipeline import receipts

    def broken(*args: object) -> None:
        raise KeyError("a receipt bug")

    monkeypatch.setattr(receipts, "receipt_of", broken)
    context = Context(window_tokens=16_000)
    _session(context)
    assert any(e.stage == "clear" and e.items for e in context.events), "the compactions were made"
    assert any(e.stage == "receipt" and e.action == "failed" and "a receipt bug" in e.detail for e in context.events)
    assert context.last_receipt is None


def test_a_background_summary_put_in_has_a_receipt_and_is_told() -> None:
    told: list[CompactionNotice] = []
    policy = Policy(background_summaries="always", clear_first_max_fraction=0.0)
    context = Context(window_tokens=16_000, policy=policy, on_compaction=OnCompaction(told.append, "ask"))
    _session(context)
    context.settle()
    landed = [r for r in receipts_in(context.events) if r.occasion == "background"]
    assert landed and landed[0].of_kind("summarized")
    assert [n.can_decline for n in told if n.receipt in landed] == [False] * len(landed), "made already: told only"
    for receipt in landed:
        assert assert_refs_read_back(context, receipt) > 0


def test_a_damaged_stored_receipt_is_left_out_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    from contextfold.stores.transcript_reading import TranscriptEvent

    context = Context(window_tokens=16_000)
    _session(context, rounds=12)
    context.compact()
    good = context.last_receipt
    assert good is not None
    data = {**good.to_dict(), "added_in_a_later_version": 1}
    damaged = {key: value for key, value in good.to_dict().items() if key != "taken"}
    events = [TranscriptEvent(n, "receipt", {"action": "compaction", "data": d}, 0.0, 0)
              for n, d in enumerate([data, damaged, "nonsense"])]
    assert stored_receipts(events) == [good]
    assert "record 1 is left out" in caplog.text and "record 2 is left out" in caplog.text


def test_a_receipt_as_data_is_what_asdict_writes() -> None:
    """``to_dict`` shares the receipt's immutable fields instead of copying each id: the data is the same."""
    from dataclasses import asdict

    context = Context(window_tokens=16_000, policy=Policy(clear_first_max_fraction=0.0))
    _session(context, failing=2)
    receipt = context.last_receipt
    assert receipt is not None and receipt.taken and receipt.checks
    assert receipt.to_dict() == asdict(receipt)
    assert list(receipt.to_dict()) == list(asdict(receipt))
    assert Receipt.from_dict(json.loads(json.dumps(receipt.to_dict()))) == receipt
