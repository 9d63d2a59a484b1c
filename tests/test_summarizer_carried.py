"""What a summary carries of texts another writer made of the work: a delegated agent's report, a harness's own
continuation summary (issue 28: both were cut to a line or dropped)."""

from __future__ import annotations

from collections.abc import Sequence

from contextfold.conversation import Header, Item, ToolCall, assistant, tool, user
from contextfold.summarizers import ExtractiveSummarizer, SummaryRequest
from contextfold.summarizers.prompts import render_span
from contextfold.tokens import heuristic_tokens

REPORT = """I'll look at the payment code first.

<bash>
grep -rn "round(" src/pay/
</bash>

```bash
cat > /tmp/probe.py << 'EOF'
print(round(2.675, 2))
EOF
```

## Audit of src/pay

### Findings
1. **Double rounding**: `src/pay/ledger.py` rounds each line and then the total
2. **Float money**: `src/pay/invoice.py` keeps amounts as float
- The refunds path is clean

### Recommended order
1. Switch `src/pay/invoice.py` to Decimal
2. Remove the per-line rounding in `src/pay/ledger.py`

All checks done; nothing was changed."""


def summarize(items: Sequence[Item], target: int = 1_500) -> str:
    request = SummaryRequest(items, Header(), target, heuristic_tokens, None)
    return ExtractiveSummarizer().summarize(request).text


def delegated(name: str, arguments: dict[str, str]) -> list[Item]:
    return [
        user("Audit the payment code for rounding bugs, using a sub-agent."),
        assistant("Sending an auditor.", [ToolCall("t1", name, arguments)]),
        tool("t1", REPORT),
        assistant("The auditor is done; next I switch the invoice to Decimal."),
    ]


def test_a_delegated_agents_report_keeps_its_findings_points_and_paths() -> None:
    text = summarize(delegated("Task", {"subagent_type": "auditor", "description": "Audit rounding",
                                        "prompt": "Audit src/pay for rounding bugs."}))
    assert "1. **Double rounding**: `src/pay/ledger.py` rounds each line and then the total" in text
    assert "2. **Float money**: `src/pay/invoice.py` keeps amounts as float" in text
    assert "1. Switch `src/pay/invoice.py` to Decimal" in text
    assert "### Recommended order" in text
    assert "grep -rn" not in text.split("its substance:")[1]  # the calls the sub-agent wrote out are its input
    assert "print(round(2.675, 2))" not in text  # code in a fenced block is no finding


def test_any_delegate_tool_counts_not_only_claude_codes_task() -> None:
    text = summarize(delegated("delegate", {"agent": "BrowsingAgent", "inputs": "audit src/pay"}))
    assert "2. Remove the per-line rounding in `src/pay/ledger.py`" in text


def test_only_a_report_no_request_has_come_after_keeps_a_place_in_a_small_summary() -> None:
    later = [user("Forget the audit: rename the module billing/ to payments/ and update every import of it, "
                  "including the ones in scripts/ and docs/."),
             assistant("Renaming.", [ToolCall("m1", "Bash", {"command": "git mv billing payments"})]), tool("m1", "")]
    in_use = summarize(delegated("Task", {"subagent_type": "auditor"}), target=200)
    moved_on = summarize([*delegated("Task", {"subagent_type": "auditor"}), *later], target=200)
    assert "Double rounding" in in_use
    assert "Double rounding" not in moved_on


CONTINUATION = """This session is being continued from a previous conversation that ran out of context. \
The conversation is summarized below:
Analysis:
Let me go through the conversation chronologically, noting every request.

Summary:
1. **Primary Request and Intent:**
   The user asked to migrate the billing service from float to Decimal, keeping the public API of billing/api.py.

2. **Key Technical Concepts:**
   - Decimal quantize with ROUND_HALF_EVEN

3. **Files and Code Sections:**
   - `billing/money.py`: new Money type wrapping Decimal

4. **Errors and fixes:**
   - `TypeError: unsupported operand type(s) for +: 'float' and 'Decimal'` in billing/tax.py: fixed by wrapping rates

7. **Pending Tasks:**
   - Port billing/invoices.py to Money

8. **Current Work:**
   Porting billing/invoices.py, the last module still on float.
Please continue the conversation from where we left it off without asking the user any further questions. \
Continue with the last task that you were asked to work on."""


def continued(first: Item) -> list[Item]:
    return [
        first,
        assistant("Porting the invoices now.", [ToolCall("r1", "Read", {"file_path": "billing/invoices.py"})]),
        tool("r1", "     1→total = sum(float(x) for x in lines)"),
        user("also keep the CSV export working"),
        assistant("Will do.", [ToolCall("e1", "Edit", {"file_path": "billing/invoices.py", "old_string": "float(x)",
                                                        "new_string": "Money(x)"})]),
        tool("e1", "The file billing/invoices.py has been updated."),
    ]


def test_a_continuation_summary_that_opens_the_span_is_carried_by_its_sections() -> None:
    text = summarize(continued(user(CONTINUATION)))
    assert "migrate the billing service from float to Decimal" in text
    assert "Port billing/invoices.py to Money" in text
    assert "TypeError: unsupported operand type(s) for +: 'float' and 'Decimal'" in text
    assert "Let me go through the conversation chronologically" not in text  # its analysis is the model's notes
    assert "without asking the user any further questions" not in text
    assert "The user's first request in this part, verbatim:\nalso keep the CSV export working" in text


def test_a_long_continuation_summary_keeps_every_lasting_sections_heading_within_a_small_target() -> None:
    padded = CONTINUATION.replace("   - Decimal quantize with ROUND_HALF_EVEN",
                                  "\n".join(f"   - concept {n}: " + "detail " * 30 for n in range(40)))
    text = summarize(continued(user(padded)), target=1_000)
    for heading in ("1. **Primary Request and Intent:**", "4. **Errors and fixes:**", "7. **Pending Tasks:**"):
        assert heading in text
    assert "Port billing/invoices.py to Money" in text


def test_what_a_continuation_summary_was_doing_and_meant_to_do_next_is_not_carried() -> None:
    """Its "Current Work" and "Optional Next Step" were the state of the moment it was written: the messages after
    it, quoted or summarized anew, say what became of them; its requests, files, errors and pending tasks stay true."""
    with_next = CONTINUATION.replace("Please continue",
                                     "9. **Optional Next Step:**\n   Run the invoice tests.\nPlease continue")
    text = summarize(continued(user(with_next)))
    assert "Porting billing/invoices.py, the last module still on float" not in text
    assert "**Current Work:**" not in text and "Run the invoice tests" not in text
    assert "Port billing/invoices.py to Money" in text
    assert "`billing/money.py`: new Money type wrapping Decimal" in text


FILES = "\n".join(f"""   - `billing/module_{n}.py`: ported to Money
     - kept the signature of charge_{n}
     ```python
     def charge_{n}(amount: Money) -> Money:
         return amount.quantize(CENTS)
     ```""" for n in range(12))


def test_a_continuation_summary_cut_small_names_each_file_before_the_details_and_code_under_them() -> None:
    """Cut to a few lines a section, a summary says what each section held: its outer points (every file it names)
    first, the points under them next, code quoted in fenced blocks (the files hold it) only with the room left."""
    files = CONTINUATION.replace("   - `billing/money.py`: new Money type wrapping Decimal", FILES)
    text = summarize(continued(user(files)), target=400)
    quoted = text.split("An earlier summary said:")[1]
    assert all(f"`billing/module_{n}.py`: ported to Money" in quoted for n in range(6))
    assert "return amount.quantize(CENTS)" not in quoted
    assert "`TypeError: unsupported operand type(s) for +: 'float' and 'Decimal'`" in quoted


def test_of_two_continuation_summaries_only_the_newest_is_carried() -> None:
    """Each continuation summary the harness writes summarizes all before it, the earlier summary included: the
    newest holds what the older did, and quoting the older too only spends the summary on headings cut short."""
    older = CONTINUATION.replace("migrate the billing service from float to Decimal", "audit the billing service")
    span = [user(older), assistant("Auditing.", [ToolCall("a1", "Read", {"file_path": "billing/api.py"})]),
            tool("a1", "def charge(amount): ..."), *continued(user(CONTINUATION))]
    text = summarize(span)
    assert text.count("An earlier summary said:") == 1
    assert "migrate the billing service from float to Decimal" in text
    assert "audit the billing service" not in text


def test_a_model_summarizer_gets_a_continuation_summary_as_the_earlier_summary_to_carry() -> None:
    """As the span's oldest unit it would be the first left out when the span does not fit the summarizer's window,
    and read as one more message rather than the record the new summary must carry forward."""
    span = render_span(continued(user(CONTINUATION)))
    assert span.earlier_summary is not None
    assert "Port billing/invoices.py to Money" in span.earlier_summary
    assert "Porting billing/invoices.py, the last module still on float" not in span.earlier_summary
    assert not any("This session is being continued" in unit for unit in span.units)


MARKDOWN_CONTINUATION = """This session is being continued from a previous conversation that ran out of context. \
The conversation is summarized below:
Summary:
## 1. Primary Request and Intent
1. **Initial Request:** "move the exports to the CSV writer"
2. **Second Request:** "and keep the old column order"

## 3. Files and Code Sections
### `exporter/csv_writer.py`
**Why important:** writes every export
```python
# Columns in the old order
COLUMNS = ["id", "amount"]
```

## 8. Current Work
**Immediately before the summary:**
1. **Completed:** wrote CsvWriter.header
**Most recent step:** editing exporter/legacy.py

## 9. Optional Next Step
Run the exporter tests.
Please continue the conversation from where we left it off without asking the user any further questions."""


def test_a_markdown_summarys_sections_are_its_outer_headings_not_the_bold_points_under_them() -> None:
    text = summarize(continued(user(MARKDOWN_CONTINUATION)))
    quoted = text.split("An earlier summary said:")[1]
    assert '2. **Second Request:** "and keep the old column order"' in quoted
    assert "`exporter/csv_writer.py`" in quoted
    assert "wrote CsvWriter.header" not in quoted and "editing exporter/legacy.py" not in quoted
    assert "Run the exporter tests" not in quoted
