"""What-survived probes: what each looks for, when it counts, and how strategies that lose things score."""

from __future__ import annotations

from test_replay_run import CONFIG, ESTIMATE, LOSSY_STRATEGIES, session

from contextfold.conversation import Conversation, ToolCall, assistant, tool, user
from contextfold.replay import replay, strategies
from contextfold.replay.probes import (
    Haystack,
    SessionProbes,
    Targets,
    distinctive_tail,
    evaluate,
    last_error_line,
    task_identifiers,
)
from contextfold.synthetic import generate_session


def test_task_identifiers_are_paths_dotted_names_camel_and_snake_case_and_issue_numbers() -> None:
    text = (
        "ForeignKey's to_field parameter gets the old field's name when renaming a PrimaryKey "
        "(see django/db/migrations/autodetector.py and models.fields.related, issue #28764). "
        "The HTTPResponse from parse_config is fine, e.g. in 100% of cases.</tag> Thanks!"
    )
    found = task_identifiers(text)
    for expected in ("ForeignKey", "to_field", "PrimaryKey", "django/db/migrations/autodetector.py",
                     "models.fields.related", "#28764", "HTTPResponse", "parse_config"):
        assert expected in found
    assert not {"Thanks", "the", "name", "see", "issue", "e.g", "100", "/tag"} & set(found)
    assert len(found) == len(set(found))


def test_a_task_holding_a_long_run_of_dashes_is_read_in_one_pass() -> None:
    """Found by replaying a hostile recording: the path pattern, tried again at each character of a run of dots
    or dashes, rescanned the rest of it (a task with 60,000 took 69 s of replay); a megabyte would not return in
    the lifetime of the test. A path around the run is still found whole."""
    run = "-" * 1_000_000
    assert task_identifiers(f"see {run} and src/app-v2/main.py, then #12") == ("src/app-v2/main.py", "#12")


def test_the_distinctive_tail_grows_until_nothing_earlier_holds_it() -> None:
    output = "<returncode>0</returncode>\n<output>\ncollected 3 items\n3 passed\n</output>"
    earlier = ["<output>\n3 passed\n</output>", "unrelated"]
    assert distinctive_tail(output, earlier) == "collected 3 items\n3 passed\n</output>"
    assert distinctive_tail(output, []) == "3 passed\n</output>"  # 16 visible characters at least
    assert distinctive_tail("same", ["same"]) == "same"  # nothing unique: the whole output
    assert distinctive_tail("  \n ", []) is None


def test_targets_follow_the_session_up_to_each_request() -> None:
    probes = SessionProbes(session())
    first = probes.at(1)
    assert first.edited == () and first.last_error is None and first.latest_output is None
    assert {"src/app.py", "#42", "ValueError", "parse_config"} <= set(first.task)
    at_edit = probes.at(5)
    assert at_edit.last_error == "E   ValueError: invalid literal for int()"  # the last error line of the run
    assert at_edit.latest_output == "1 failed in 0.1s"  # its last line is long enough, and new
    final = probes.at(7)
    assert final.edited == ("src/app.py",)
    assert final.last_error == at_edit.last_error  # another call's clean output does not resolve it
    assert final.latest_output is None  # the edit printed nothing
    assert probes.at(3) == Targets(first.task, (), None, "    return int(text)")  # asking again starts over


def test_an_error_line_ends_a_traceback_or_says_error_and_is_not_code() -> None:
    traceback = "Traceback (most recent call last):\n  File \"a.py\", line 3\n    raise KeyError(k)\nKeyError: 'x'\ndone"
    assert last_error_line(traceback) == "KeyError: 'x'"
    assert last_error_line("ok\nFAILED tests/test_a.py::test_b - assert 1 == 2\n1 passed") == \
        "FAILED tests/test_a.py::test_b - assert 1 == 2"
    assert last_error_line("src/x.c:3:1: error: expected ';'\n" + "x" * 300 + " Error: long") == "x" * 200
    assert last_error_line("    except ValueError: pass\nclass ConfigError: ...") is None  # code naming errors
    assert last_error_line("1 failed in 0.1s\nerr:") is None


def test_an_error_stays_until_the_same_call_runs_again_without_one() -> None:
    """Any output's error line counts (a read that shows a failing check too); a clean re-run resolves it."""
    test, read = {"command": "pytest -q"}, {"command": "cat ci.log"}
    conversation = Conversation([
        user("Make the tests pass."),
        assistant("", [ToolCall("c0", "bash", test)]), tool("c0", "FAILED test_a.py::test_one"),
        assistant("", [ToolCall("c1", "bash", read)]), tool("c1", "step 3: Error: lint failed"),
        assistant("", [ToolCall("c2", "bash", test)]), tool("c2", "1 passed"),  # not the call that had the error
        assistant("", [ToolCall("c3", "bash", read)]), tool("c3", "all checks green"),
        assistant("Done."),
    ])
    probes = SessionProbes(conversation)
    assert probes.at(3).last_error == "FAILED test_a.py::test_one"
    assert probes.at(5).last_error == "step 3: Error: lint failed"
    assert probes.at(7).last_error == "step 3: Error: lint failed"
    assert probes.at(9).last_error is None  # the read that showed it ran again, clean: resolved


def test_evaluate_scores_shares_and_leaves_out_what_has_nothing_to_look_for() -> None:
    text = "src/app.py was edited; parse_config fixed"
    targets = Targets(task=("src/app.py", "parse_config", "#42", "ValueError", "Config"), edited=("src/app.py", "b.py"))
    survival = evaluate(targets, lambda needle: needle in text)
    assert survival.task == 0.0  # 3 of 5 identifiers: below 80 %
    assert survival.edited == 0.5
    assert survival.last_error is None and survival.latest_output is None
    assert evaluate(Targets(task=("src/app.py", "parse_config")), lambda n: n in text).task == 1.0


def test_the_haystack_searches_each_text_once_per_needle() -> None:
    searched: list[str] = []

    class Text(str):
        def __contains__(self, needle: object) -> bool:
            searched.append(str(needle))
            return str.__contains__(self, needle)  # type: ignore[operator]

    haystack = Haystack()
    texts = {"a": Text("alpha beta"), "b": Text("gamma")}
    assert haystack.searcher(texts)("beta") and not haystack.searcher(texts)("delta")
    assert haystack.searcher({**texts, "c": Text("delta")})("delta")
    assert sorted(searched) == ["beta", "beta", "delta", "delta", "delta"]


def test_lossy_strategies_lose_what_they_drop_and_the_baseline_loses_nothing() -> None:
    conversation = generate_session(rounds=40, seed=5)
    baseline = replay(conversation, strategies.create("none", CONFIG), CONFIG, tokenizer=ESTIMATE).totals.survival
    assert baseline == {"task": 1.0, "edited": 1.0, "last_error": 1.0, "latest_output": 1.0, "mean": 1.0}
    masked = replay(conversation, LOSSY_STRATEGIES["mask-old-outputs"](CONFIG), CONFIG, tokenizer=ESTIMATE).totals
    assert masked.survival["latest_output"] == 1.0 and masked.survival["task"] == 1.0
    assert masked.survival["edited"] == 1.0  # edit calls keep their paths in the arguments
    assert masked.survival["last_error"] < 0.8  # errors go with the outputs that showed them
    last_round = replay(conversation, LOSSY_STRATEGIES["keep-last-round"](CONFIG), CONFIG, tokenizer=ESTIMATE).totals
    assert last_round.violations > 30  # the task is gone from almost every request
    assert last_round.survival["edited"] < 0.5
    assert last_round.survival["mean"] < masked.survival["mean"] < 1.0
