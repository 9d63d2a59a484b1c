"""Forward-reference recall: the token rule, what a reply needed, what a request held, and agreement with the referee
(of recall and of strict recall, whose own tests are in test_replay_strict.py)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import SHARED
from referee_oracle import STRATEGY_CYCLE, matching, referee_sessions, repeats_calls
from test_replay_run import Edited

from contextfold import importers
from contextfold.conversation import Conversation, Header, Item, Text, ToolCall, assistant, tool, user
from contextfold.reading import read_text
from contextfold.replay import StrategyConfig, recount, replay, strategies
from contextfold.replay.recall import Recall, session_needs, session_recall, specific_tokens
from contextfold.replay.render import render_item
from contextfold.replay.strict import MEASURES
from contextfold.tokens import Estimator, exact_estimator

ESTIMATE = Estimator()


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("see src/app.py:12.", {"src/app.py:12"}),  # trailing punctuation stripped, path and line kept
        ("parse_config and getValue, not plain words", {"parse_config", "getValue"}),
        ("v1.2 ab1. x_y 2024", {"v1.2", "2024"}),  # under 4 characters once stripped: not specific enough
        ("https://example.org/a-b/", {"https://example.org/a-b"}),
        ("-flag2 ./run.sh", {"flag2", "run.sh"}),  # a token starts on a word character
        ("Hello World CamelCase", {"CamelCase"}),
    ],
)
def test_specific_tokens_follow_the_rule(text: str, tokens: set[str]) -> None:
    assert specific_tokens(text) == tokens


def recorded() -> Conversation:
    """The reply at 9 uses a path from the task (far back) and a value from the output just before it."""
    header = Header(system=(Item("system", (Text("Tools live in /usr/bin/tool_box."),), id="sys"),))
    items = [user("Fix parse_config in src/config_loader.py", id="task")]
    for k in range(3):
        items += [assistant("", [ToolCall(f"c{k}", "bash", {"command": f"echo step_{k}"})], id=f"a{k}"),
                  tool(f"c{k}", f"step_{k}", id=f"r{k}")]
    items += [
        assistant("", [ToolCall("c3", "bash", {"command": "run_tests --seed 4242"})], id="a3"),
        tool("c3", "failed with seed 4242 in parse_config", id="r3"),
        assistant("Fixing src/config_loader.py for seed 4242 (see /usr/bin/tool_box, new_name_7)",
                  [ToolCall("c4", "edit", {"path": "src/config_loader.py"})], id="a4"),
    ]
    return Conversation(items, header)


def test_needed_tokens_come_from_earlier_messages_outside_the_system_prompt() -> None:
    needs = session_needs(recorded())
    last = needs[len(recorded().items) - 1]
    # new_name_7 is the reply's own; /usr/bin/tool_box is the system prompt's; step_k were used by a0-a2 already
    assert last.tokens == {"src/config_loader.py", "4242"}
    assert last.far == {"src/config_loader.py"}  # 4242 is in the last six messages
    assert needs[1].tokens == set()  # the first reply uses nothing said before it


def drop_before(keep_from: str) -> Edited:
    """A strategy that sends only the items from the one with id ``keep_from`` on, once it has arrived."""

    def edit(items: list[Item], step: object, copies: object) -> list[Item]:
        ids = [item.id for item in items]
        return items[ids.index(keep_from):] if keep_from in ids else items

    return Edited(f"drop-before-{keep_from}", edit)


def test_the_full_history_recalls_everything_and_a_cut_one_loses_the_far_tokens(tmp_path: Path) -> None:
    conversation = recorded()
    full = replay(conversation, strategies.create("none", StrategyConfig(10_000)), StrategyConfig(10_000),
                  tokenizer=ESTIMATE).totals
    assert (full.recall, full.recall_far, full.worst_request_recall) == (1.0, 1.0, 1.0)
    dump = tmp_path / "requests.jsonl"
    cut = replay(conversation, drop_before("a3"), StrategyConfig(10_000), tokenizer=ESTIMATE, requests_path=dump).totals
    # the last request holds 4242 (in a3 and r3) but no longer src/config_loader.py (only in the task)
    assert cut.recall_needed == full.recall_needed == 2 and cut.recall_far_needed == 1
    assert (cut.recall, cut.recall_far, cut.worst_request_recall) == (0.5, 0.0, 0.5)
    recounted = recount(dump, 10_000, ESTIMATE, session=conversation)
    assert (recounted.recall, recounted.recall_far, recounted.worst_request_recall) == (0.5, 0.0, 0.5)


def test_recall_is_weighted_by_needed_tokens_and_reports_the_worst_request() -> None:
    pooled = session_recall([Recall(4, 4, 2, 2), None, Recall(1, 0, 1, 0)])
    assert (pooled.recall, pooled.recall_far, pooled.worst_request_recall) == (0.8, 2 / 3, 0.0)
    assert session_recall([None]).recall is None


def test_arguments_are_read_as_the_json_sent() -> None:
    """A token the reply wrote inside escaped JSON is needed as it reads there (``\\n`` glued to it)."""
    call = ToolCall("c0", "bash", {"command": "cd repo\nmake_all"})
    rendered = render_item(assistant("", [call]))
    assert rendered is not None and "nmake_all" in specific_tokens(rendered.wire_text)


# --------------------------------------------------------------------------- agreement with the referee

SESSIONS = referee_sessions(SHARED)


@pytest.mark.parametrize(("file", "index"), SESSIONS or [pytest.param("", 0, id="no-shared-corpus")])
def test_recall_and_strict_recall_agree_with_the_referee_on_every_shared_session(
    referee: ModuleType, corpus_dir: Path, tokenizers_dir: Path, tmp_path: Path, file: str, index: int
) -> None:
    name, window = STRATEGY_CYCLE[SESSIONS.index((file, index)) % len(STRATEGY_CYCLE)]
    trajectory = referee.loaders.load_all(corpus_dir / file)[index]
    conversations = importers.load(corpus_dir / file)
    copied = "resumed copy" in conversations[0].header.meta.get("skipped", {})
    assert repeats_calls(trajectory) == copied  # the referee reads a reopened session's copy into what it copies
    if copied:
        return  # two readings of different sessions (see repeats_calls): no figure of one measures the other
    conversation = matching(conversations, trajectory)
    assert conversation is conversations[index]  # --index N names the same session to both readers
    config = StrategyConfig(window)
    dump = tmp_path / "requests.jsonl"
    ours = replay(conversation, strategies.create(name, config), config,
                  tokenizer=exact_estimator("o200k_base", tokenizers_dir), requests_path=dump).totals
    theirs = referee.recall.recall(trajectory, referee.cli.read_requests(str(dump)))
    for mine, reference in ((ours.recall, theirs["recall"]), (ours.recall_far, theirs["recall_far"]),
                            (ours.worst_request_recall, theirs["worst_step_recall"])):
        assert (mine is None) == (reference is None)
        if mine is not None:
            assert mine == pytest.approx(reference, abs=0.005), (name, window)
    assert (ours.recall_needed, ours.recall_far_needed) == (theirs["needed"], theirs["needed_far"])
    strict = referee.strict.strict(trajectory, referee.cli.read_requests(str(dump)))
    readers_agree = not speakers_read_apart(referee, trajectory)
    for measure in MEASURES:  # strict recall (contextfold.replay.strict): within 0.01 of the referee's strict.py
        if measure.startswith("asked") and not readers_agree:
            continue  # who is the person differs (see speakers_read_apart): so may what was asked
        mine, reference = getattr(ours.strict, measure), strict[measure]
        assert (mine is None) == (reference is None), measure
        if mine is not None:
            assert mine == pytest.approx(reference, abs=0.01), (measure, name, window)
    assert (ours.strict.kwic_needed, ours.strict.kwic_far_needed, ours.strict.line_needed,
            ours.strict.line_far_needed) == (strict["needed_tokens"], strict["needed_far_tokens"],
                                             strict["needed_lines"], strict["needed_far_lines"])


def offloading_session() -> Conversation:
    """Six large outputs, each with one value in its middle (out of its preview), all used by the last reply."""
    items = [user("Collect the checksums of the six logs", id="task")]
    for k in range(6):
        lines = [f"filler line {n} of log {k}" for n in range(3_000)]  # over the persist limit of a 40k window
        lines[1_500] = f"checksum of log {k}: value_{k}_{4000 + k}"
        items += [assistant("", [ToolCall(f"c{k}", "bash", {"command": f"cat log{k}.txt"})], id=f"a{k}"),
                  tool(f"c{k}", "\n".join(lines), id=f"r{k}")]
    items.append(assistant("The checksums are " + ", ".join(f"value_{k}_{4000 + k}" for k in range(6)), id="end"))
    return Conversation(items)


class LosesOffloadedOutputs:
    """contextfold's pipeline on a store that keeps no offloaded output: each saved file is gone after its step."""

    name = "default-without-blobs"

    def __init__(self, config: StrategyConfig) -> None:
        self.inner = strategies.create("default", config)
        self.results = Path(config.results_dir or "")

    def start(self, header: Header) -> None:
        self.inner.start(header)

    def step(self, step: object) -> object:
        sent = self.inner.step(step)  # type: ignore[arg-type]
        for saved in self.results.glob("*.txt"):
            saved.unlink()
        return sent

    def record_usage(self, usage: object) -> None:
        self.inner.record_usage(usage)  # type: ignore[arg-type]


def speakers_read_apart(referee: ModuleType, trajectory: Any) -> list[str]:
    """The user messages of ``trajectory`` that the referee and :mod:`contextfold.reading` read differently.

    Only one way is allowed: a message the referee takes for the person that the reader takes for the harness,
    by one of its rules (Claude Code's stop-hook feedback and background-task notices, a message that was only an
    IDE note) or by what is left once the wrappers are cut out; never the person's words taken for the harness."""
    apart = []
    for message in trajectory.messages:
        if message["role"] != "user":
            continue
        text = referee.tokens.content_text(message.get("content"))
        theirs, mine = not referee.strict.harness("\n".join(referee.strict.norm_lines(text))), read_text(text).person
        assert not (mine and not theirs), text[:200]  # the referee's harness is ours too
        if theirs and not mine:
            apart.append(text)
    return apart


def test_recoverable_recall_counts_what_one_search_brings_back_and_drops_when_outputs_are_lost(tmp_path: Path) -> None:
    conversation = offloading_session()
    figures = {}
    for name, make in (("intact", lambda c: strategies.create("default", c)), ("lost", LosesOffloadedOutputs)):
        config = StrategyConfig(40_000, results_dir=str(tmp_path / name))
        figures[name] = replay(conversation, make(config), config, tokenizer=ESTIMATE).totals
    intact, lost = figures["intact"], figures["lost"]
    # the previews leave the middle out: the last request misses the six values, and one search finds each
    assert intact.recall is not None and intact.recall < 1 and intact.recoverable_missing >= 6
    assert intact.recoverable_recall == 1.0
    assert lost.recoverable_missing == intact.recoverable_missing and lost.recoverable_recall == 0.0
    assert replay(conversation, strategies.create("none", StrategyConfig(40_000)), StrategyConfig(40_000),
                  tokenizer=ESTIMATE).totals.recoverable_recall is None  # no search offered, nothing missing
    pooled = session_recall([Recall(4, 2, 0, 0, 1), Recall(2, 2, 0, 0, 0), Recall(3, 0, 0, 0, None)])
    assert (pooled.recoverable, pooled.missing) == (0.5, 2)
