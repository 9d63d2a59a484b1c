"""Typed provenance: what contextfold knows of an item lives in ``Item.provenance``, the wire data in ``Item.meta``.

The pipeline acts on provenance (a summary is never the task, a placeholder is not shrunk again, an offloaded
output is read back from its blob); only the adapters, and the importers that write wire data, read ``meta``.
The check below reads the source with ``ast``, as ``test_architecture`` does, so a stage that goes back to
``item.meta.get("summary")`` fails here, not in review.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from contextfold.codec import LEGACY_META_KEYS, item_from_dict, item_to_dict
from contextfold.conversation import Item, Offloaded, Provenance, Text, ToolResult, as_role
from contextfold.errors import InvalidContent, UnknownRole

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "contextfold"
WIRE = ("adapters", "importers")
"""Where ``Item.meta`` is read: the adapters write and read the wire formats, the importers write recorded ones."""
KEY_READERS = frozenset({"get", "setdefault", "pop", "keys", "items", "values"})


def meta_key_reads(path: Path) -> list[str]:
    """Where ``path`` reads a key of an item's ``meta`` (``x.meta[k]``, ``x.meta.get(k)``, ``k in x.meta``), or writes
    a provenance flag there (``meta={"summary": True}``: no stage reads it any more, so the item would silently
    stop being a summary).

    A header's ``meta`` (``header.meta``, the format facts an importer counts) is not an item's, and handing the
    whole mapping on (``dict(item.meta)`` in the codec, ``meta=item.meta`` in a copy) reads no key."""
    found = []

    def is_item_meta(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "meta"
                and not ast.unparse(node.value).endswith("header") and not ast.unparse(node.value) == "ctx")

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.keyword) and node.arg == "meta" and isinstance(node.value, ast.Dict)
                and any(isinstance(key, ast.Constant) and key.value in LEGACY_META_KEYS for key in node.value.keys)):
            found.append(f"{path.name}:{node.value.lineno} meta={ast.unparse(node.value)}")  # a flag no stage reads
        elif isinstance(node, ast.Subscript) and is_item_meta(node.value):
            found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in KEY_READERS
              and is_item_meta(node.func.value)):
            found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
        elif isinstance(node, ast.Compare) and any(
                isinstance(op, (ast.In, ast.NotIn)) and is_item_meta(side) for op, side in zip(node.ops, node.comparators)):
            found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    return found


def test_no_module_outside_the_wire_reads_an_items_meta() -> None:
    reads = [where for path in sorted(PACKAGE.rglob("*.py"))
             if not any((PACKAGE / room) in path.parents for room in WIRE)
             for where in meta_key_reads(path)]
    assert not reads, "Item.meta read outside adapters/ and importers/ (use Item.provenance):\n" + "\n".join(reads)


def test_the_meta_check_can_fail(tmp_path: Path) -> None:
    module = tmp_path / "stage.py"
    module.write_text('a = item.meta.get("summary")\nb = item.meta["blob"]\nc = "x" not in item.meta\n'
                      'd = conversation.header.meta.get("skipped")\ne = Item("user", (), meta=item.meta)\n'
                      'f = Item("user", (), meta={"summary": True})\ng = Item("user", (), meta={"origin": "openai"})\n')
    assert len(meta_key_reads(module)) == 4


def test_an_old_record_with_its_flags_in_meta_reads_as_provenance() -> None:
    """A transcript written before provenance was typed kept the flags in ``meta``: it resumes with them."""
    summary = item_from_dict({"id": "it_1", "role": "user", "timestamp": None,
                              "meta": {"summary": True, "summarizer": "extractive", "origin": "openai"},
                              "blocks": [{"kind": "text", "text": "Earlier: m1.py was read.", "extra": {}}]})
    assert summary.provenance == Provenance(summary=True, summarizer="extractive")
    assert summary.meta == {"origin": "openai"}
    preview = item_from_dict({"id": "it_2", "role": "tool", "meta": {"compacted": "persist", "blob": "ab12"},
                              "blocks": [{"kind": "tool_result", "call_id": "c1", "content": "[preview]"}]})
    assert preview.provenance == Provenance(compacted="persist", offloaded=Offloaded(blob="ab12"))
    cleared = item_from_dict({"id": "it_3", "role": "tool", "meta": {"compacted": "clear", "failure_line": "E: boom",
                                                                     "error_frame": ["File x.py", "  raise"]},
                              "blocks": [{"kind": "tool_result", "call_id": "c2", "content": "[cleared]"}]})
    assert cleared.provenance.error_frame == ("File x.py", "  raise") and cleared.provenance.failure_line == "E: boom"


def test_provenance_round_trips_and_an_authors_item_writes_none() -> None:
    plain = Item("user", (Text("hi"),), id="it_1")
    assert "provenance" not in item_to_dict(plain)
    offloaded = Item("tool", (ToolResult("c1", "[preview]"),), id="it_2", provenance=Provenance(
        compacted="persist", offloaded=Offloaded(blob="ab12", saved_to="/tmp/x"), error_frame=("a", "b"), tally="1 passed"))
    written = json.loads(json.dumps(item_to_dict(offloaded)))
    assert written["provenance"] == {"compacted": "persist", "offloaded": {"blob": "ab12", "saved_to": "/tmp/x"},
                                     "error_frame": ["a", "b"], "tally": "1 passed"}
    assert item_from_dict(written) == offloaded


def test_a_damaged_provenance_names_its_field() -> None:
    record = {"id": "it_1", "role": "user", "blocks": [], "provenance": {"summary": "yes"}}
    with pytest.raises(InvalidContent, match=r"item\.provenance\.summary"):
        item_from_dict(record)
    with pytest.raises(InvalidContent, match=r"item\.provenance\.offloaded\.blob"):
        item_from_dict({**record, "provenance": {"offloaded": {"blob": 3}}})


def test_a_role_is_checked_whatever_reads_it() -> None:
    assert as_role("tool") == "tool"
    with pytest.raises(UnknownRole):
        as_role("function")
    with pytest.raises(UnknownRole):
        item_from_dict({"id": "it_1", "role": "function", "blocks": []})
