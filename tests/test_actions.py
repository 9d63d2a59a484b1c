"""The tool-call classifier: what a call did, what an edit wrote, and which outputs report a failure."""

from __future__ import annotations

import pytest

from contextfold.actions import (
    COMMAND,
    EDIT,
    OTHER,
    READ,
    SEARCH,
    TODO,
    classify,
    classify_command,
    command_outline,
    error_lines,
    failed,
    failure_line,
    reported_error_lines,
    return_code,
    written_text,
)
from contextfold.conversation import ToolCall


def call(name: str, **arguments: object) -> ToolCall:
    return ToolCall("c1", name, arguments)


# --------------------------------------------------------------------------- classify


@pytest.mark.parametrize(
    ("name", "arguments", "kind", "paths"),
    [
        ("Read", {"file_path": "/r/a.py"}, READ, ("/r/a.py",)),
        ("Edit", {"file_path": "/r/a.py", "old_string": "x", "new_string": "y"}, EDIT, ("/r/a.py",)),
        ("str_replace_editor", {"command": "view", "path": "/r/a.py"}, READ, ("/r/a.py",)),
        ("str_replace_editor", {"command": "str_replace", "path": "/r/a.py"}, EDIT, ("/r/a.py",)),
        ("TodoWrite", {"todos": []}, TODO, ()),
        ("Grep", {"pattern": "def main"}, SEARCH, ()),
        ("apply_patch", {"input": "*** Begin Patch\n*** Update File: src/x.py\n@@\n-a\n+b\n*** End Patch"}, EDIT, ("src/x.py",)),
        ("apply_patch", {"changes": {"/r/lib.rs": {"update": {"unified_diff": "@@\n-a\n+b"}}}}, EDIT, ("/r/lib.rs",)),
        ("read_file_v2", {"path": "/r/a.py"}, READ, ("/r/a.py",)),  # a tool's second version (Cursor's) is the same tool
        ("edit_file_v2", {"path": "/r/a.py"}, EDIT, ("/r/a.py",)),
    ],
)
def test_classify_tools(name: str, arguments: dict, kind: str, paths: tuple[str, ...]) -> None:
    action = classify(call(name, **arguments))
    assert (action.kind, action.paths) == (kind, paths)


@pytest.mark.parametrize(
    ("command", "kind", "paths"),
    [
        ("cat src/a.py", READ, ("src/a.py",)),
        ("sed -n '10,20p' src/a.py", READ, ("src/a.py",)),
        ("sed -i 's/a/b/' src/a.py", EDIT, ("src/a.py",)),
        ("grep -rn 'x > 1' src/", SEARCH, ()),
        ("echo 'a > b' > out.txt", EDIT, ("out.txt",)),  # the quoted ">" is text, the last one a redirection
        ('pip install "wrapt<1.14,>=1.11" 2>&1 | tail -5', COMMAND, ()),
        ("python -m pytest tests -q 2>&1 >/dev/null", COMMAND, ()),
    ],
)
def test_classify_shell_commands(command: str, kind: str, paths: tuple[str, ...]) -> None:
    action = classify(call("bash", command=command))
    assert (action.kind, action.paths) == (kind, paths)


def test_here_document_bodies_are_data_not_commands() -> None:
    script = "cd /repo && cat > fix.py << 'EOF'\nimport os\nif len(x) > 5:\n    cat('notes.txt')\npip install evil\nEOF\n"
    action = classify_command(script + "python3 fix.py")
    assert action.kind == EDIT
    assert action.paths == ("fix.py",)  # not "5", not notes.txt
    assert "import os" not in command_outline(script) and "pip install" not in command_outline(script)
    assert written_text(call("bash", command=script)) == "import os\nif len(x) > 5:\n    cat('notes.txt')\npip install evil\n"


def test_python_run_inline_that_writes_a_file_is_an_edit() -> None:
    script = "cat > fix.py <<'EOF'\nwith open('pkg/mod.py', 'w') as f:\n    f.write(src)\nEOF\npython fix.py"
    assert classify_command(script).paths == ("fix.py", "pkg/mod.py")
    assert classify_command("python -c \"from pathlib import Path; Path('a/b.txt').write_text('x')\"").paths == ("a/b.txt",)
    # the script is only written, not run: what it would write is not changed yet
    assert classify_command("cat > fix.py <<'EOF'\nopen('pkg/mod.py', 'w')\nEOF").paths == ("fix.py",)


def test_signature_ignores_cd_options_and_redirections() -> None:
    first = classify_command("cd /repo && python -m pytest tests/test_a.py -x -q 2>&1 | tail -5")
    again = classify_command("python -m pytest tests/test_a.py -q")
    assert first.signature == ("python", "pytest", "tests/test_a.py", "tail")
    assert again.signature == ("python", "pytest", "tests/test_a.py")


def test_shell_words_handle_quotes_and_unbalanced_input() -> None:
    assert classify_command("""sed -n '1,5p' "src/a.py" """).paths == ("src/a.py",)
    assert classify_command("cat 'unterminated").kind in (READ, COMMAND)  # no exception


# --------------------------------------------------------------------------- written_text


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("Edit", {"file_path": "a.py", "old_string": "x", "new_string": "y = 2"}, "y = 2"),
        ("MultiEdit", {"file_path": "a.py", "edits": [{"new_string": "first"}, {"new_string": "last"}]}, "last"),
        ("Write", {"file_path": "a.py", "content": "print(1)\n"}, "print(1)\n"),
        ("str_replace_editor", {"command": "create", "path": "a.py", "file_text": "x = 1"}, "x = 1"),
        ("apply_patch", {"changes": {"/r/lib.rs": {"update": {"unified_diff": "@@\n-old\n+new\n ctx"}}}}, "new"),
        ("apply_patch", {"input": "*** Begin Patch\n*** Update File: a.py\n@@\n-a\n+b\n+c\n*** End Patch"}, "b\nc"),
        ("apply_patch", {"changes": [{"path": "/r/main.v", "kind": "add"}]}, None),
        ("bash", {"command": "sed -i 's/a/b/' a.py"}, None),
    ],
)
def test_written_text(name: str, arguments: dict, expected: str | None) -> None:
    assert written_text(call(name, **arguments)) == expected


# --------------------------------------------------------------------------- failures


def test_error_lines_finds_real_errors_only() -> None:
    lines = [
        "test result: ok. 29 passed; 0 failed; 0 ignored",  # zero failures is a success
        "   12:    except OverflowError as error:",  # source code naming an error
        "error[E0308]: mismatched types",
        "Traceback (most recent call last):",
        "ValueError: bad rounding",
        "=== 2 failed, 30 passed in 1.2s ===",
    ]
    assert error_lines("\n".join(lines)) == [
        "error[E0308]: mismatched types",
        "Traceback (most recent call last):",
        "ValueError: bad rounding",
        "=== 2 failed, 30 passed in 1.2s ===",
    ]


def test_a_file_an_edit_shows_back_under_a_reader_gutter_reports_no_failure() -> None:
    """Claude Code's Edit echoes a snippet of the edited file under its ``  5→`` gutter (``cat -n`` under a tab): a
    line there that names an error is the file's code, so a successful edit is no failed call."""
    echoed = ("The file /repo/src/pages/RegisterPage.tsx has been updated. Here's the result of running `cat -n` on a "
              "snippet of the edited file:\n   181→        reset();\n   182→      }\n   183→    } catch (error: any) {\n"
              "   184→      setError(error.message);")
    assert not failed(echoed, None, EDIT)
    assert failure_line(echoed, None, EDIT) is None
    assert failed("<tool_use_error>String to replace not found in file.\nError: no match</tool_use_error>", None, EDIT)


def test_error_lines_agrees_with_a_plain_scan() -> None:
    """The keyword pre-filter finds exactly what matching every line with the full pattern finds."""
    from contextfold.actions import _ERROR_LINE

    lines = [
        "ok", "E       AssertionError: x", "E\t\tsomething", "bash: tree: command not found", "fatal: not a git repository",
        "ls: x: No such file or directory", "Permission denied", "  SomeError", "RuntimeError(", "FAILED tests/a.py",
        "panic: oh", "nothing here", "KeyError: 'k'", "3 failed", "Exception: boom",
    ]
    text = "\n".join(lines)
    plain = [line.strip() for line in text.splitlines() if _ERROR_LINE.search(line)]
    assert error_lines(text) == plain


def test_long_outputs_are_scanned_at_both_ends() -> None:
    middle = "\n".join(f"ValueError: in the middle, line {n}" for n in range(5_000))
    text = "bash: foo: command not found\n" + middle + "\nRuntimeError: at the end"
    lines = reported_error_lines(text)
    assert lines[0] == "bash: foo: command not found"
    assert lines[-1] == "RuntimeError: at the end"
    assert len(lines) < len(error_lines(text))


@pytest.mark.parametrize(
    ("text", "is_error", "kind", "expected"),
    [
        ("ValueError: boom", False, COMMAND, False),  # the source's flag is authoritative
        ("all fine", True, COMMAND, True),
        ("<returncode>0</returncode>\n<output>\nValueError: printed, not raised\n</output>", None, COMMAND, False),
        ("<returncode>2</returncode>\n<output>\n</output>", None, COMMAND, True),
        ("<returncode>1</returncode>\n<output>\n</output>", None, SEARCH, False),  # grep found nothing
        ("<returncode>1</returncode>\n<output>\ngrep: x: No such file or directory\n</output>", None, SEARCH, True),
        ("    1\tclass LedgerError(Exception):\n    2\tKeyError: raised below", None, READ, False),  # file content
        ("Error: not enough seats on flight HAT229", None, None, True),
    ],
)
def test_failed(text: str, is_error: bool | None, kind: str | None, expected: bool) -> None:
    assert failed(text, is_error, kind) is expected


def test_failure_line_is_the_last_error_line_verbatim() -> None:
    text = "exit code 1\nTraceback (most recent call last):\n  File \"a.py\", line 3\nZeroDivisionError: division by zero\n"
    assert failure_line(text, True, COMMAND) == "ZeroDivisionError: division by zero"
    assert failure_line("exit code 0\nall good", None, COMMAND) is None


def test_a_harness_timeout_is_the_failure_not_the_last_line_printed() -> None:
    """A command the harness killed reports that first; what it printed before is a status list (gh's checks)."""
    text = ("Command timed out after 2m 0s\nRefreshing checks status every 10 seconds.\n"
            "Isabelle Verification\tpending\t0\thttps://example.test/1\nLean Verification\tpass\t7s\thttps://example.test/2")
    assert failure_line(text, True, COMMAND) == "Command timed out after 2m 0s"
    assert error_lines("the connection timed out while fetching the index") == []  # prose, not a harness report


def test_test_runners_and_check_tables_report_their_failures_by_fail() -> None:
    """jest's ``FAIL file``, go's ``--- FAIL:`` and ``FAIL pkg``, gh's checks table (``name<TAB>fail<TAB>…``): the
    failure was the last line printed before (a passing check, a blank summary line)."""
    out = ("PASS src/a.test.js\nFAIL src/b.test.js\n  ● sums\n--- FAIL: TestSum (0.00s)\nFAIL\tgithub.com/x/y\t0.1s\n"
           "ok  \tgithub.com/x/z\t0.2s\nFAILURES are retried by failover")
    assert error_lines(out) == ["FAIL src/b.test.js", "--- FAIL: TestSum (0.00s)", "FAIL\tgithub.com/x/y\t0.1s"]
    checks = "Coq Verification\tfail\t18s\thttps://ci.test/1\nLean Verification\tpass\t7s\thttps://ci.test/2"
    assert failure_line(checks, True, COMMAND) == "Coq Verification\tfail\t18s\thttps://ci.test/1"


def test_a_path_that_is_not_a_string_is_no_path() -> None:
    """Found by fuzzing (seed 7): a change whose "path" was a number reached the replay's probes as a path."""
    call = ToolCall("c1", "apply_patch", {"changes": [{"path": -3}, {"path": "src/a.py"}, 5]})
    assert classify(call).paths == ("src/a.py",)


def test_failure_line_stands_in_when_no_error_line() -> None:
    assert failure_line("EISDIR: illegal operation on a directory, read", True, READ) == (
        "EISDIR: illegal operation on a directory, read"
    )
    # a failure by exit status alone: its last line is what the output ended on, not an error line of its own
    assert failure_line("<returncode>3</returncode>\n<output>\nwaiting...\n</output>", None, COMMAND) == (
        "exit code 3; its output ended: waiting..."
    )
    assert failure_line("<returncode>1</returncode>\n<output>\n=== Understanding ForeignKey ===\n</output>", None, COMMAND) == (
        "exit code 1; its output ended: === Understanding ForeignKey ==="
    )
    assert failure_line("<returncode>3</returncode>\n<output>\n</output>", None, COMMAND) == "exit code 3, no output"


def test_return_code() -> None:
    assert return_code("<returncode>127</returncode>\n<output>") == 127
    assert return_code("Exit code: 2\nboom") == 2
    assert return_code("no status here") is None


def test_a_search_that_matched_nothing_is_no_failure() -> None:
    from contextfold.actions import item_failure_line
    from contextfold.conversation import Conversation, ToolCall, assistant, tool

    def line(command: str, output: str) -> str | None:
        c = Conversation([assistant("", [ToolCall("c1", "bash", {"command": command})]), tool("c1", output)])
        return item_failure_line(c.items[1])

    assert line("grep -rn 'parse_totals' src/", "<returncode>1</returncode>\n<output>\n</output>") is None
    assert line("find . -name '*.py' | xargs grep -l parse_totals", "exit code 123") is None
    assert line("cat src/a.py | grep parse_totals", "<returncode>1</returncode>\n<output>\n</output>") is None
    assert line("grep -n x missing.py", "<returncode>2</returncode>\n<output>\ngrep: missing.py: No such file or "
                                        "directory\n</output>") is not None
    assert line("python check.py", "<returncode>1</returncode>\n<output>\n</output>") is not None


def test_a_source_line_holding_the_word_failed_is_no_error_line() -> None:
    from contextfold.actions import error_lines

    source = '    if job.status == "FAILED":\n        retry(job)\nprint(\'FAILED\')\n'
    assert error_lines(source) == []
    assert error_lines("FAILED tests/test_a.py::test_x - AssertionError\nFAILED (failures=1)") == [
        "FAILED tests/test_a.py::test_x - AssertionError", "FAILED (failures=1)"]


def test_a_warning_is_no_failure() -> None:
    """git's line-ending notes, ``npm WARN``, a compiler's and Python's warnings: a command that printed only these
    (and exited 0, or gave no status) did not fail, and none of them names a failure that did happen."""
    from contextfold.actions import WARNING_LINE

    git = ("warning: in the working copy of 'src/app.js', LF will be replaced by CRLF the next time Git touches it\n"
           "warning: in the working copy of 'package.json', LF will be replaced by CRLF the next time Git touches it")
    npm = "npm WARN deprecated inflight@1.0.6: This module is not supported, and leaks memory; an error: use lru-cache"
    python = "/srv/app/cli.py:12: DeprecationWarning: error handling via pkg_resources is deprecated\n  import pkg_resources"
    cc = "src/util.c:3:5: warning: unused variable 'error' [-Wunused-variable]"
    for text in (git, npm, python, cc):
        assert error_lines(text) == [], text
        assert failed(text, None, COMMAND) is False
        assert failure_line(f"exit code 0\n{text}", None, COMMAND) is None
    assert WARNING_LINE.match("E       DeprecationWarning: raised as an error by -W error") is None  # pytest's failure
    assert error_lines("warning: skipped\nerror: pathspec 'x' did not match any file(s) known to git") == [
        "error: pathspec 'x' did not match any file(s) known to git"]


def test_a_passing_test_whose_path_starts_with_error_is_no_error_line() -> None:
    """A Codex run's ``cargo test --all-features`` stopped mid-run: libtest's ``test error::tests::… ... ok`` (a Rust
    path, ``error::``) was its "last error", open and the next step to resolve; rustc's ``error:`` and GitHub Actions'
    ``::error::`` still are."""
    run = ("test bash::tests::rejects_trailing_operator_parse_error ... ok\n"
           "test error::tests::usage_limit_reached_error_formats_plus_plan ... ok\n"
           "     Running tests/sandbox.rs (target/debug/deps/sandbox-cc95a0f064c82d9d)")
    assert error_lines(run) == []
    assert failure_line("exit code 101\n" + run, None, COMMAND) == (
        "exit code 101; its output ended: Running tests/sandbox.rs (target/debug/deps/sandbox-cc95a0f064c82d9d)")
    assert error_lines("error: test failed, to rerun pass `-p codex-core --lib`") == [
        "error: test failed, to rerun pass `-p codex-core --lib`"]
    assert error_lines('echo "::error::Changeset file is missing"') == ['echo "::error::Changeset file is missing"']


def test_an_interrupted_command_is_named_by_the_interrupt_not_the_warnings_after_it() -> None:
    """Claude Code flags a command the person interrupted as an error; what it printed after the notice (a long run
    of git's line-ending warnings) is no failure line."""
    warnings = "".join(f"warning: in the working copy of 'assets/chunk-{n}.js', LF will be replaced by CRLF the next "
                       "time Git touches it\n" for n in range(400))
    text = "[Request interrupted by user for tool use]\n" + warnings
    assert failure_line(text, True, COMMAND) == "[Request interrupted by user for tool use]"
    assert failure_line("exit code 1\n" + warnings, None, COMMAND) == (  # only warnings: named by them all the same
        "exit code 1; its output ended: " + warnings.strip().splitlines()[-1])


def test_a_call_the_person_interrupted_failed_by_the_interrupt_unless_it_reported_an_error() -> None:
    text = "[Request interrupted by user for tool use]\nCollecting packages...\nDownloading numpy (18.3 MB)"
    assert failure_line(text, True, COMMAND) == "[Request interrupted by user for tool use]"
    text = "[Request interrupted by user for tool use]\nsrc/a.py:3: error: Name 'x' is not defined\nFound 1 error"
    assert failure_line(text, True, COMMAND) == "src/a.py:3: error: Name 'x' is not defined"


def test_a_tool_refusal_is_named_by_its_message_not_the_arguments_it_quotes() -> None:
    """Claude Code's ``<tool_use_error>`` for an Edit whose old text is not in the file opens with its message and then
    quotes the old text: its last line (file text under the closing tag) is no failure line."""
    text = ("<tool_use_error>String to replace not found in file.\nString: # 5. Copy build artifacts\n"
            "Write-Error \"Copying failed\"\n\n# 6. Commit and push</tool_use_error>")
    assert failure_line(text, True, EDIT) == "<tool_use_error>String to replace not found in file."
    one = "<tool_use_error>Error: No such tool available: AskUserQuestion</tool_use_error>"
    assert failure_line(one, True, None) == one  # a block of one line is its line, verbatim


def test_a_tool_refusal_is_a_failure_where_the_source_kept_no_error_flag() -> None:
    """A chat export of a Claude Code session keeps the tool's ``<tool_use_error>`` text but no error flag: the
    refusal is the call's failure all the same (named by its first line), whatever the tool, a read's included."""
    text = ("<tool_use_error>InputValidationError: TaskCreate failed due to the following issues:\n"
            "The required parameter `subject` is missing\nAn unexpected parameter `title` was provided</tool_use_error>")
    assert failed(text, None, OTHER)
    assert failure_line(text, None, OTHER) == ("<tool_use_error>InputValidationError: TaskCreate failed due to the "
                                               "following issues:")
    assert failed("<tool_use_error>File does not exist.</tool_use_error>", None, READ)
    assert not failed("<tool_use_error>File does not exist.</tool_use_error>", False, READ)  # the source's flag decides


def test_an_npm_failure_is_named_by_its_message_not_where_its_log_is() -> None:
    text = ("npm error code ERESOLVE\nnpm error ERESOLVE unable to resolve dependency tree\nnpm error\n"
            "npm error While resolving: app@0.1.0\nnpm error Found: eslint@9.38.0\nnpm error\n"
            "npm error For a full report see:\nnpm error /home/u/.npm/_logs/2025-10-30-eresolve-report.txt\n"
            "npm error A complete log of this run can be found in: /home/u/.npm/_logs/2025-10-30-debug-0.log")
    assert failure_line(text, True, COMMAND) == "npm error ERESOLVE unable to resolve dependency tree"
    assert failure_line("npm ERR! code E404\nnpm ERR! 404 Not Found - GET https://registry.npmjs.org/nope", True,
                        COMMAND) == "npm ERR! 404 Not Found - GET https://registry.npmjs.org/nope"


def test_a_program_that_logs_at_error_level_is_named_by_the_cause_its_last_error_run_opens_with() -> None:
    """A run of ``[ERROR]`` lines opens with its cause and goes on with consequences and advice; the last line printed
    (or the run's last line) names none: maven ends on ``[Help 1] http://…``, a script on "Fix the issues above"."""
    script = ("\x1b[0;36m[INFO]\x1b[0m Checking buildpool\n"
              "\x1b[0;31m[ERROR]\x1b[0m Insufficient space in buildpool: 9GB free, 10GB required\n"
              "\x1b[0;31m[ERROR]\x1b[0m Pre-flight checks failed\n"
              "\x1b[0;31m[ERROR]\x1b[0m Fix the issues above and try again\n"
              "\x1b[0;32m[18:36:16]\x1b[0m To destroy dataset only: zfs destroy -r buildpool/builds\n")
    assert failure_line(script, True, COMMAND) == \
        "\x1b[0;31m[ERROR]\x1b[0m Insufficient space in buildpool: 9GB free, 10GB required"
    maven = ("[INFO] Compiling 3 source files to /app/target/classes\n[ERROR] COMPILATION ERROR :\n"
             "[INFO] -------------------------------------------------------------\n"
             "[ERROR] /app/src/main/java/App.java:[12,5] cannot find symbol\n  symbol:   variable foo\n[INFO] BUILD FAILURE\n"
             "[ERROR] \n[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin:3.8.1:compile "
             "(default-compile) on project demo: Compilation failure\n"
             "[ERROR] /app/src/main/java/App.java:[12,5] cannot find symbol\n[ERROR] -> [Help 1]\n[ERROR] \n"
             "[ERROR] [Help 1] http://cwiki.apache.org/confluence/display/MAVEN/MojoFailureException\n<returncode>1</returncode>")
    assert failure_line(maven, None, COMMAND) == ("[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-"
                                                  "plugin:3.8.1:compile (default-compile) on project demo: Compilation failure")
    assert failure_line("[ERROR] Insufficient space\ndone\n", False, COMMAND) is None  # the call worked: no failure


def test_prettiers_verdict_is_the_failure_of_a_check_and_not_the_line_printed_after_it() -> None:
    """``prettier --check`` writes its verdict to stderr, which Claude Code puts before the output's stdout (the
    npm script's echo, ``Checking formatting...``)."""
    text = ("[warn] CLAUDE.md\n[warn] src/app.ts\n[warn] Code style issues found in 2 files. Run Prettier with --write "
            "to fix.\n\n\n> app@0.2.2 format:check\n> prettier --check .\n\nChecking formatting...")
    assert failure_line(text, True, COMMAND) == "[warn] Code style issues found in 2 files. Run Prettier with --write to fix."
    assert failure_line(text + "\n<returncode>1</returncode>", None, COMMAND) is not None


def test_a_command_line_is_classified_once() -> None:
    """Each stage and summary classifies the same commands again: the Action of a command line is remembered (its
    cache once passed to a function inserted above it, and every summary classified each command anew)."""
    command = "cd /repo && python -m pytest tests/test_a.py -x > out.txt"
    assert classify_command(command) is classify_command("".join(command))  # an equal string, another object
