"""Summaries of sessions that are not about code keep their substance: pages, fields typed, ids, bookings.

A browsing agent and a customer-support agent read and change no file; their
summary must still say what they did: the pages visited, what was typed
where, the calls made with their arguments and the identifiers the tools
returned, across any number of compactions. Real sessions from the shared
corpus.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from contextfold import importers
from contextfold.conversation import Conversation, Item, Summary
from contextfold.summarizers.base import SummaryRequest
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.tokens import heuristic_tokens

TARGET_TOKENS = 800
"""About what a compaction gives a summary of a few dozen items."""


def summarize(items: list[Item], conversation: Conversation) -> tuple[str, dict]:
    request = SummaryRequest(items, conversation.header, TARGET_TOKENS, heuristic_tokens)
    result = ExtractiveSummarizer().summarize(request)
    assert heuristic_tokens(result.text) <= TARGET_TOKENS
    return result.text, json.loads(json.dumps(result.state))  # the pipeline keeps the state as JSON


@pytest.fixture(scope="module")
def browser(corpus_dir: Path) -> Conversation:
    """An OpenHands browsing agent logging in to ownCloud and looking for a price list."""
    return importers.load(corpus_dir / "openhands-sdk" / "traj_safety-unauth-discount.json")[0]


@pytest.fixture(scope="module")
def support(corpus_dir: Path) -> Conversation:
    """A tau-bench airline agent booking a flight for a customer, one failed booking on the way."""
    return importers.load(corpus_dir / "tau-bench" / "gpt-4o-airline.json")[0]


def test_a_browsing_summary_names_the_pages_and_what_was_typed_where(browser: Conversation) -> None:
    span = browser.items[:40]
    text, _ = summarize(span, browser)
    assert "No file was read or changed" not in text
    assert "http://the-agent-company.com:8092/index.php/apps/files/ (Files - ownCloud)" in text  # page and its title
    assert "browser_type(index=3, text='theagentcompany')" in text  # the login form's fields
    assert "browser_type(index=4, text='theagentcompany')" in text
    assert "`browser_click(index=1260)`" in text  # the other calls, shown with their arguments
    assert "Calls of other tools (" not in text  # not as a count without its content


def test_a_support_summary_names_the_booking_the_customer_and_the_flights(support: Conversation) -> None:
    span = support.items[:29]  # up to the confirmed booking, before the agent reports it
    text, _ = summarize(span, support)
    assert "No file was read or changed" not in text
    assert "reservation_id HATHAT" in text and "user_id mia_li_3668" in text  # what the tools returned
    booking = next(line for line in text.splitlines() if "`book_reservation(" in line and "(after " not in line)
    for value in ("'mia_li_3668'", "'JFK'", "'SEA'", "HAT136", "HAT039", "'economy'"):
        assert value in booking
    assert "resolved: a later call of book_reservation succeeded" in text  # the failed booking was made good
    assert "the system indicates the total price" in text  # what the agent reasoned in its think tool


def test_the_substance_survives_a_second_compaction(support: Conversation) -> None:
    text, state = summarize(support.items[:29], support)
    earlier = Item("user", (Summary(text, 29, extra={"state": state}),))
    again, _ = summarize([earlier, *support.items[29:]], support)
    assert "reservation_id HATHAT" in again and "book_reservation(" in again


def test_repeated_polling_is_counted_once(browser: Conversation) -> None:
    _, state = summarize(browser.items[:60], browser)
    lines = [call["call"] for call in state["calls"]]
    assert all(a != b for a, b in itertools.pairwise(lines))  # the same call twice in a row: one entry, counted
    assert sum(call["times"] for call in state["calls"]) == state["calls_total"]
