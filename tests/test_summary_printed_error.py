"""What failed last, as the tool printed it: the summary's errors section carries the last error message an output
printed, under its frame, when the calls after it failed by their exit status alone or it sat mid-line."""

from __future__ import annotations

from collections.abc import Sequence

from contextfold.conversation import Conversation, Header, Item, ToolCall, assistant, tool, user
from contextfold.pipeline.stages.clear import placeholder
from contextfold.summarizers import SECTION_TITLES, ExtractiveSummarizer, SummaryRequest
from contextfold.summarizers._outputs import error_frame, printed_error
from contextfold.tokens import heuristic_tokens


def errors_section(items: Sequence[Item]) -> str:
    text = ExtractiveSummarizer().summarize(SummaryRequest(items, Header(), 4_000, heuristic_tokens, None)).text
    start = text.index(f"## 4. {SECTION_TITLES[3]}")
    end = text.find("\n## ", start + 1)
    return text[start: end if end != -1 else len(text)]


SYNC_FAILED = ("python sync.py", 'exit code 1\nTraceback (most recent call last):\n  File "sync.py", line 9, in fetch\n'
               "    data = json.loads(body)\njson.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)", True)
"""A script that failed on an exception, with its frame."""


def session(*calls: tuple[str, str, bool | None]) -> Conversation:
    c = Conversation()
    c.append(user("Get the sync service healthy again."))
    for n, (command, output, is_error) in enumerate(calls):
        c.append(assistant("", [ToolCall(f"c{n}", "bash", {"command": command})]))
        c.append(tool(f"c{n}", output, is_error))
    return c


def test_an_exception_stays_in_the_summary_with_its_frame_when_later_calls_fail_by_exit_status_alone() -> None:
    c = session(SYNC_FAILED,
                ("curl -s localhost:9999/health", "exit code 7", True),
                ("curl -s localhost:9999/ready", "exit code 56", True))
    errors = errors_section(c.items)
    frame = ['    File "sync.py", line 9, in fetch', "        data = json.loads(body)",
             "    json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)"]
    assert "\n".join(frame) in errors
    assert "- Last error (unresolved), from `$ curl -s localhost:9999/ready`:" in errors  # what failed last, still


def test_an_exception_named_mid_line_above_a_stack_is_what_failed_not_the_stacks_last_frame() -> None:
    c = session(("node explore.mjs", "exit code 1\nCurrent URL: https://crm.example/mail\nFound navigation links:\n"
                                     "page.evaluate: TypeError: el.className.substring is not a function\n"
                                     "    at eval (<anonymous>:7:27)\n    at explore (explore.mjs:24:29)", True))
    errors = errors_section(c.items)
    assert ("    Current URL: https://crm.example/mail\n    Found navigation links:\n"
            "    page.evaluate: TypeError: el.className.substring is not a function") in errors


def test_an_error_an_output_printed_without_failing_outlives_a_later_bare_failure() -> None:
    log = ("INFO odoo.modules.loading: loading views/crm_view.xml\nERROR odoo.modules.registry: Failed to load registry\n"
           "TypeError: post_init_hook() missing 1 required positional argument: 'registry'\n"
           "INFO odoo.service.server: Initiating shutdown")
    c = session(("odoo -u search_leads --stop-after-init", log, None), ("systemctl restart odoo", "exit code 4", True))
    errors = errors_section(c.items)
    assert ("    ERROR odoo.modules.registry: Failed to load registry\n"
            "    TypeError: post_init_hook() missing 1 required positional argument: 'registry'") in errors


def test_printed_error_is_the_last_message_not_code_that_names_an_exception() -> None:
    assert printed_error('log.error("Error: retrying")\n    except ValueError:\nok') is None
    assert printed_error("npm error errno -13\nnpm error Error: EACCES: permission denied, mkdir '/usr/lib/pnpm'\n"
                         "npm error A complete log of this run can be found in: /root/.npm/_logs/x.log") == (
        "npm error Error: EACCES: permission denied, mkdir '/usr/lib/pnpm'", ("npm error errno -13",))
    traceback = ('Traceback (most recent call last):\n  File "t.py", line 2, in <module>\n    except KeyError:\n'
                 "shop.errors.RoundingProblem: amount is not a Decimal")  # an exception not named *Error: its traceback's end
    assert printed_error(traceback) == ("shop.errors.RoundingProblem: amount is not a Decimal",
                                        ('  File "t.py", line 2, in <module>', "    except KeyError:"))


def test_a_file_the_agent_read_is_no_error_printed() -> None:
    c = session(("npm run build", "exit code 1", True))
    c.append(assistant("", [ToolCall("r", "Read", {"file_path": "/repo/src/save.ts"})]))
    c.append(tool("r", "  12→    console.error('Error saving to database:', err);\n  13→    return { error: err };"))
    assert "Error saving" not in errors_section(c.items)


def test_an_exception_outlives_the_clearing_of_its_output() -> None:
    """Clearing keeps a failed output's failure and frame in its provenance: the summary reads them from there."""
    c = session(("python sync.py", 'exit code 1\nTraceback (most recent call last):\n  File "sync.py", line 9, in fetch\n'
                                   "    data = json.loads(body)\n"
                                   "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n", True),
                ("curl -s localhost:9999/health", "exit code 7", True))
    items = list(c.items)
    items[2] = placeholder(items[2], 300, "clear")
    assert "File \"sync.py\"" not in items[2].text  # an older failure's placeholder quotes its line only
    assert ('    File "sync.py", line 9, in fetch\n        data = json.loads(body)\n'
            "    json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)") in errors_section(items)


def test_a_printed_error_that_was_fixed_since_says_what_fixed_it() -> None:
    c = session(SYNC_FAILED,
                ("python sync.py", "synced 12 rows", False),
                ("curl -s localhost:9999/health", "exit code 7", True))
    errors = errors_section(c.items)
    assert "(resolved: a later run of `python sync.py` succeeded), from `$ python sync.py`:" in errors
    assert "    json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)" in errors


def test_a_cleared_output_that_printed_an_error_without_failing_quotes_it_and_the_summary_reads_it_there() -> None:
    lint = ("src/ui/widget.tsx\n  210:7  error  'formatPrice' is assigned a value but never used\n" * 20
            + "✖ 38 problems (1 error, 37 warnings)\n0 errors and 10 warnings potentially fixable with the `--fix` option.\n"
            + 'error: script "lint" exited with code 1')
    c = session(("bun run lint", lint, False), ("curl -s localhost:9999/health", "exit code 7", True))
    items = list(c.items)
    items[2] = placeholder(items[2], 900, "clear")
    block = ("✖ 38 problems (1 error, 37 warnings)\n0 errors and 10 warnings potentially fixable with the `--fix` option.\n"
             'error: script "lint" exited with code 1')
    assert ". It printed this error:\n" + block + "\n]" in items[2].text and "formatPrice" not in items[2].text
    assert "\n".join(f"    {line}" for line in block.splitlines()) in errors_section(items)


def test_the_error_message_an_output_reported_is_framed_rather_than_said_twice() -> None:
    c = session(("python probe.py", 'exit code 1\nTraceback (most recent call last):\n  File "<string>", line 2, in <module>\n'
                                    "    import onnx\nModuleNotFoundError: No module named 'onnx'", True),
                ("curl -s localhost:9999/health", "exit code 7", True))  # a bare exit status: no frame of its own
    errors = errors_section(c.items)
    assert errors.count("ModuleNotFoundError: No module named 'onnx'") == 1
    assert ('    File "<string>", line 2, in <module>\n        import onnx\n'
            "    ModuleNotFoundError: No module named 'onnx'") in errors


def test_an_error_in_the_captured_output_of_a_background_command_is_an_error_shown_not_code() -> None:
    """A harness writes a background command's output to a file (Claude Code's ``tasks/<id>.output``) and the agent
    reads it to see how the server it started is doing: an error there is what went wrong, kept under its frame in
    the summary and in the read's placeholder."""
    server_log = ("web:dev: ready in 812 ms\nweb:dev: [build] transform error: Unexpected token in src/cart.tsx\n"
                  "web:dev:   Plugin: build:import-check\n  web:dev:   File: src/pages/cart.tsx:14:9\n"
                  "web:dev: 10:02:11 [server] Internal server error: Cannot resolve module \"@/lib/price\"\n")
    c = session(("tail -20 /tmp/agent-runs/shop/tasks/b41c9e.output", server_log, False))
    frame = ("    web:dev:   Plugin: build:import-check\n      web:dev:   File: src/pages/cart.tsx:14:9\n"
             "    web:dev: 10:02:11 [server] Internal server error: Cannot resolve module \"@/lib/price\"")
    assert frame in errors_section(c.items)
    cleared = placeholder(c.items[2], 300, "clear")
    assert 'Internal server error: Cannot resolve module "@/lib/price"' in cleared.text


def test_an_error_printed_first_keeps_the_exit_status_above_it_as_its_frame() -> None:
    """A failed call's output opens with the harness's exit status (Claude Code's ``Exit code 2``) and the error comes
    right under it: that line is the frame, kept above the error; an error deep in its output keeps the two lines
    above it, not the exit status."""
    c = session(("cd web && if test -f .env; then cp .env .env.bak", "Exit code 2\n/bin/sh: eval: line 3: syntax error: "
                 "unexpected end of file", True),
                ("curl -s localhost:9999/health", "exit code 7", True))
    assert "    Exit code 2\n    /bin/sh: eval: line 3: syntax error: unexpected end of file" in errors_section(c.items)
    deep = "Exit code 1\nbuilding web\nstep 3 of 4\nwebpack: compiling src/app.ts\nerror: cannot find module './cart'"
    assert error_frame(deep, "error: cannot find module './cart'") == ["step 3 of 4", "webpack: compiling src/app.ts"]
