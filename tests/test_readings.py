"""Readings: what a module read of an item object, kept on it under the module's own typed key."""

from __future__ import annotations

import copy
import dataclasses
import pickle

from contextfold.codec import item_from_dict, item_to_dict
from contextfold.conversation import Item, Text
from contextfold.readings import Key, Readings

WORDS: Key[str] = Key("words")
OTHER_WORDS: Key[str] = Key("words")  # the same name, another owner
MAYBE: Key[str | None] = Key("maybe")


def item() -> Item:
    return Item("user", (Text("read me once"),))


def test_a_reading_is_computed_once_even_when_it_is_none() -> None:
    readings, calls = Readings(), []

    def compute() -> str | None:
        calls.append(1)
        return None

    assert readings.setdefault(MAYBE, compute) is None
    assert readings.setdefault(MAYBE, compute) is None
    assert calls == [1] and MAYBE in readings and readings.get(MAYBE) is None


def test_keys_of_one_name_but_two_owners_do_not_collide() -> None:
    readings = Readings()
    readings.set(WORDS, "mine")
    assert readings.get(OTHER_WORDS) is None and OTHER_WORDS not in readings
    assert readings.get(WORDS) == "mine"


def test_readings_take_no_part_in_equality_and_a_copy_starts_without_them() -> None:
    first = item()
    first.readings.set(WORDS, "kept")
    twin = dataclasses.replace(first)
    assert twin == first and repr(twin) == repr(first)
    assert WORDS not in twin.readings and first.readings.get(WORDS) == "kept"
    assert WORDS not in item_from_dict(item_to_dict(first)).readings  # never serialized
    assert "readings" not in item_to_dict(first)
    for twin in (copy.deepcopy(first), pickle.loads(pickle.dumps(first))):
        assert twin == first and WORDS not in twin.readings
    again = copy.deepcopy(first)
    again.readings.set(WORDS, "its own")  # a copy reads and writes its own readings, not the original's
    assert again.readings.get(WORDS) == "its own" and first.readings.get(WORDS) == "kept"
