"""What-survived probes: what each looks for, when it counts, and how strategies that lose things score."""

from __future__ import annotations

from test_replay_run import CONFIG, ESTIMATE, LOSSY_STRATEGIES, session

from contextfold.conversation import Conversation, ToolCall, assistant, tool, user
from contextfold.replay import replay, strategies
from contextfold.replay.probes import Haystack, SessionProbes, Targets, distinctive_tail, evaluate, task_identifiers
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
    assert at_edit.last_error == "1 failed in 0.1s"  # the last error line of the failed run
    assert at_edit.latest_output == "1 failed in 0.1s"  # its last line is long enough, and new
    final = probes.at(7)
    assert final.edited == ("src/app.py",)
    assert final.last_error == at_edit.last_error  # a clean output does not clear the last error
    assert final.latest_output is None  # the edit printed nothing
    assert probes.at(3) == Targets(first.task, (), None, "    return int(text)")  # asking again starts over


def test_outputs_that_did_not_fail_give_no_error_line() -> None:
    calls = [ToolCall("c0", "bash", {"command": "grep -n Error log.txt"})]
    conversation = Conversation([
        user("Look for errors."), assistant("", calls), tool("c0", "<returncode>0</returncode>\nlog.txt:3: ValueError: x"),
        assistant("One ValueError."),
    ])
    assert SessionProbes(conversation).at(3).last_error is None


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
