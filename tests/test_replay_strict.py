"""Strict recall: the text rules, what a reply needs, what a bare identifier list cannot buy, and agreement with the referee."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from test_replay_run import Edited

from contextfold import importers
from contextfold.conversation import Conversation, Header, Item, Text, ToolCall, assistant, tool, user
from contextfold.pipeline.importance import specific_tokens
from contextfold.replay import Sent, Step, Strategy, StrategyConfig, recount, replay, strategies
from contextfold.replay.render import render_item
from contextfold.replay.strict import (
    Strict,
    StrictSession,
    argument_values,
    contexts,
    model_text,
    normalized_lines,
    session_strict,
)
from contextfold.tokens import Estimator, exact_estimator
from contextfold.usage import Usage

ESTIMATE = Estimator()


def test_lines_are_compared_with_escapes_undone_and_whitespace_collapsed() -> None:
    assert normalized_lines('print("a")\\n  x  =  1\n\n\tdone\\t ') == ['print("a")', "x = 1", "done"]


def test_argument_values_leave_keys_out_and_keep_numbers() -> None:
    call = ToolCall("c0", "str_replace_editor", {"path": "src/app.py", "view_range": [120, 1450], "dry": None})
    assert argument_values(call) == ["src/app.py", "120", "1450"]
    assert argument_values(replace(call, raw_arguments="not json")) == ["not json"]
    reply = assistant("Looking at it", [call])
    assert model_text(reply) == "Looking at it\nstr_replace_editor\nsrc/app.py\n120\n1450"
    assert "str_replace_editor" not in model_text(reply, tool_names=False)


def test_a_token_alone_on_its_line_is_looked_for_with_the_line_before() -> None:
    lines = ["def parse_config(path, strict=True):", "parse_config", "return load_yaml(parse_config_path)"]
    found = contexts("parse_config", lines)
    assert found == ["def parse_config(path, strict=True):",
                     "nfig(path, strict=True):\nparse_config",  # no context on its own line: the end of the one before
                     "return load_yaml(parse_config_path)"]
    assert contexts("parse_config", ["parse_config", "is the function that reads the file"]) == [
        "parse_config\nis the function that rea"]  # nothing before it: the start of the line after


def recorded() -> Conversation:
    """The last reply uses a far token and line (from the first read only) and recent ones (from the test run)."""
    header = Header(system=(Item("system", (Text("You fix bugs. Tools: bash."),), id="sys"),))
    items = [user("Fix the crash in the loader", id="task"),
             assistant("", [ToolCall("c0", "bash", {"command": "cat src/config_loader.py"})], id="a0"),
             tool("c0", "import yaml\ndef parse_config(path):\n    return yaml.load(open(path))  # unsafe_loader", id="r0")]
    for k in range(1, 4):
        items += [assistant("", [ToolCall(f"c{k}", "bash", {"command": f"ls dir_{k}"})], id=f"a{k}"),
                  tool(f"c{k}", f"file_{k}.txt", id=f"r{k}")]
    items += [
        assistant("", [ToolCall("c4", "bash", {"command": "python -m pytest tests"})], id="a4"),
        tool("c4", "Traceback (most recent call last):\n  File \"src/config_loader.py\", line 3, in parse_config\n"
                   "    return yaml.load(open(path))\nTypeError: load() missing 1 required positional argument: "
                   "'Loader'\n1 failed, 4 passed in 0.2s", id="r4"),
        assistant("The unsafe_loader note was right, this needs a Loader:\ndef parse_config(path):",
                  [ToolCall("c5", "edit", {"path": "src/config_loader.py", "new": "yaml.safe_load(open(path))"})],
                  id="a5"),
    ]
    return Conversation(items, header)


def replayed(strategy: Strategy, conversation: Conversation, dump: Path | None = None) -> dict[str, float | None]:
    totals = replay(conversation, strategy, StrategyConfig(10_000), tokenizer=ESTIMATE, requests_path=dump).totals
    return {**{name: getattr(totals.strict, name) for name in ("strict", "kwic", "kwic_far", "line", "line_far",
                                                               "outcome")}, "recall": totals.recall}


def test_the_full_history_scores_one_and_what_a_reply_needs_is_read_from_its_own_words() -> None:
    conversation = recorded()
    full = replayed(strategies.create("none", StrategyConfig(10_000)), conversation)
    assert full == {"strict": 1.0, "kwic": 1.0, "kwic_far": 1.0, "line": 1.0, "line_far": 1.0, "outcome": 1.0,
                    "recall": 1.0}


def bare_list(items: list[Item], step: Step, copies: dict[str, Item]) -> list[Item]:
    """Drop the first read (r0) and put its identifiers back as a bare list, as a survival note would."""
    if "r0" not in [item.id for item in items]:
        return items
    note = user("Identifiers in use: src/config_loader.py, parse_config, yaml.load, unsafe_loader", id="note")
    read = next(item for item in items if item.id == "r0")
    return [*items[:items.index(read)], replace(read, blocks=(replace(read.tool_result, content="[cleared]"),)),  # type: ignore[arg-type]
            note, *items[items.index(read) + 1:]]


def test_a_bare_list_of_the_lost_tokens_buys_recall_but_not_strict_recall(tmp_path: Path) -> None:
    conversation = recorded()
    dump = tmp_path / "requests.jsonl"
    gamed = replayed(Edited("bare-list", bare_list), conversation, dump)
    assert gamed["recall"] == 1.0  # every token the last reply used is somewhere in its request
    assert gamed["kwic_far"] == 0.0 and gamed["line_far"] == 0.0  # unsafe_loader is there, not with its line
    assert gamed["kwic"] is not None and 0.0 < gamed["kwic"] < 1.0  # the test run still shows the recent ones
    assert gamed["outcome"] == 1.0  # the error and the test result are recent: still there
    recounted = recount(dump, 10_000, ESTIMATE, session=conversation)
    assert {name: getattr(recounted.strict, name) for name in gamed if name != "recall"} == {
        name: value for name, value in gamed.items() if name != "recall"}


def test_the_outcome_is_the_output_as_the_tool_wrote_it_not_the_error_mark_of_its_chat_message() -> None:
    """A result flagged an error renders with a mark before its text (OpenAI formats have no flag); the error and
    test-result lines a reply needs are the tool's own, as the referee reads them, found in a request either way."""
    items = [user("Run the suite", id="task"),
             assistant("", [ToolCall("c0", "bash", {"command": "git checkout main"})], id="a0"),
             tool("c0", "error: Your local changes would be overwritten by checkout", is_error=True, id="r0"),
             assistant("", [ToolCall("c1", "bash", {"command": "python -m unittest"})], id="a1"),
             tool("c1", "FAILED (failures=1)", is_error=True, id="r1"),
             assistant("Stashing first", id="a2")]
    assert str(render_item(items[2]).data["content"]).startswith("[tool error] ")  # type: ignore[union-attr]
    needs = StrictSession(Conversation(items)).needs
    assert [line for _, line in needs[3].outcome] == ["error: Your local changes would be overwritten by checkout"]
    assert [line for _, line in needs[5].outcome] == ["FAILED (failures=1)"] * 2  # the last error, the test result


def test_a_session_pools_kwic_and_lines_and_averages_outcomes() -> None:
    pooled = session_strict([Strict(3, 4, 1, 2, 1, 1, 0, 0, 1.0, None), None, Strict(1, 4, 0, 0, 0, 1, 0, 0, 0.5, 0.0)])
    assert (pooled.kwic, pooled.kwic_far, pooled.line, pooled.line_far, pooled.outcome, pooled.outcome_far) == (
        0.5, 0.5, 0.5, None, 0.75, 0.0)
    assert pooled.strict == pytest.approx((0.5 + 0.5 + 0.75) / 3)
    assert session_strict([None]).strict is None


# --------------------------------------------------------------------------- the gaming probe


class IdentifierList:
    """A strategy with a bare identifier list after each of its summaries: the probe of a measure.

    The list holds the agent's most used specific tokens as recall reads them (a reply's use counts once,
    the user's three times) that the request lacks, up to about 2,000 tokens: what a survival note of identifiers gives.
    """

    def __init__(self, inner: Strategy) -> None:
        self.inner = inner
        self.name = f"{inner.name}+identifier-list"
        self.uses: Counter[str] = Counter()

    def start(self, header: Header) -> None:
        self.inner.start(header)

    def step(self, step: Step) -> Sent:
        for item in step.new_items:
            message = render_item(item)
            if message is not None and item.role in ("assistant", "user"):
                self.uses.update(dict.fromkeys(specific_tokens(message.wire_text), 1 if item.role == "assistant" else 3))
        sent = self.inner.step(step)
        items = list(sent.request.items)
        summaries = [n for n, item in enumerate(items) if item.kind == "summary"]
        if not summaries:
            return sent
        held = "\n".join(m.wire_text for m in map(render_item, items) if m is not None)
        missing = [token for token, _ in sorted(self.uses.items(), key=lambda kv: (-kv[1], kv[0])) if token not in held]
        listed = ", ".join(missing)[:8_000].rpartition(", ")[0] or ", ".join(missing)
        for n in reversed(summaries):
            items.insert(n + 1, user(f"[note] Identifiers in use, most used first: {listed}"))
        return replace(sent, request=Conversation(items, sent.request.header))

    def record_usage(self, usage: Usage) -> None:
        self.inner.record_usage(usage)


GAMED = (("mini-swe-agent/astropy__astropy-12907.traj.json", "default", 8_000),
         ("hive-mind-solve-logs/pr-52-log.txt", "claude-code", 16_000))
"""Sessions where a strategy loses tokens the list can put back (its own survival note leaves none at larger windows)."""


@pytest.mark.parametrize(("file", "name", "window"), GAMED)
def test_an_identifier_list_after_each_summary_raises_recall_and_leaves_strict_recall(
    corpus_dir: Path, tokenizers_dir: Path, file: str, name: str, window: int
) -> None:
    conversation = importers.load(corpus_dir / file)[0]
    config = StrategyConfig(window)
    tokenizer = exact_estimator("o200k_base", tokenizers_dir)
    plain = replay(conversation, strategies.create(name, config), config, tokenizer=tokenizer).totals
    gamed = replay(conversation, IdentifierList(strategies.create(name, config)), config, tokenizer=tokenizer).totals
    assert plain.recall is not None and gamed.recall is not None and plain.strict.strict is not None
    assert gamed.recall > plain.recall + 0.01, "the probe must move recall, or it probes nothing"
    # The list cannot buy strict recall. It can cost some: here it is part of the replayed pipeline, which reads
    # it afterwards and gives it room (up to 2,000 tokens of an 8k window), so a compaction comes sooner and a
    # line is lost (at 8k on astropy-12907 strict drops by 0.008). The referee's probe of our request dumps,
    # which edits them after the fact (benchmarks/corpus_probe.py), checks the two-sided bar on every session.
    assert gamed.strict.strict <= plain.strict.strict + 0.005
    # three far tokens: what the pipeline keeps can change the other way too (3 of 142 far tokens came back)
    few_tokens = 3.01 / max(plain.strict.kwic_far_needed, 1)
    assert gamed.strict.kwic_far <= plain.strict.kwic_far + max(0.005, few_tokens)
