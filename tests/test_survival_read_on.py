"""The survival check reads on from the summary's facts instead of reading the span again, and finds the same needs."""

from __future__ import annotations

import copy

from contextfold.conversation import Conversation
from contextfold.pipeline.stages.survival import Needs, OpenError, needs
from contextfold.summarizers import ExtractiveSummarizer, SummaryRequest
from contextfold.summarizers._facts import Facts, read_on
from contextfold.synthetic import generate_session
from contextfold.tokens import heuristic_tokens


def needs_of(conversation: Conversation, facts: Facts | None) -> tuple[list[OpenError], list[str], list[str]]:
    found: Needs = needs(conversation, 0, facts)
    return found.errors, found.plan, found.files


def test_reading_on_from_a_summary_finds_what_reading_the_whole_request_finds() -> None:
    conversation = generate_session(rounds=120, seed=3)
    items = list(conversation.items)
    cut = 161
    while items[cut].role == "tool":  # a summary's span ends on a whole round
        cut += 1
    # a passing test run closes the failures of earlier runs, and the session ends with all fixed: it is read up to
    # its last request with an error still open, well after the summary's span
    end = len(items)
    while not needs_of(Conversation(items[:end], conversation.header), None)[0]:
        end -= 1
    assert end > cut + 100
    conversation = Conversation(items[:end], conversation.header)
    result = ExtractiveSummarizer().summarize(SummaryRequest(items[1:cut], conversation.header, 2_000, heuristic_tokens))
    stored = copy.deepcopy(dict(result.state))
    facts = read_on(result.state, items[cut:end])
    assert facts is not None
    errors, plan, files = needs_of(conversation, None)
    assert errors and files  # the session has both to compare
    assert needs_of(conversation, facts) == (errors, plan, files)
    assert dict(result.state) == stored  # the state lives on in the summary: reading on leaves it as it was


def test_a_state_that_is_not_ours_is_no_facts() -> None:
    assert read_on({"summarizer": "anthropic", "model": "claude-haiku"}, []) is None


def test_the_same_state_read_on_over_the_same_items_is_read_once() -> None:
    """A summary's survival check and its receipt read on from the same state over the same kept items: the second
    asks for an equal state (the summary item holds a copy) and gets the first reading; other items are read."""
    conversation = generate_session(rounds=60, seed=5)
    items = list(conversation.items)
    cut = 81
    while items[cut].role == "tool":
        cut += 1
    result = ExtractiveSummarizer().summarize(SummaryRequest(items[1:cut], conversation.header, 2_000, heuristic_tokens))
    first = read_on(result.state, items[cut:])
    assert first is not None
    assert read_on(dict(result.state), items[cut:]) is first
    assert read_on(result.state, items[cut + 2:]) is not first
