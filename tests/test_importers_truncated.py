"""A recorded session cut mid-line (an agent killed while writing, a copy of a live file) imports up to its last
whole line, with a warning naming the cut line; a complete bad line is still an error naming it."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from test_importers_formats import CLAUDE_RECORDS

from contextfold.errors import SessionFormatError
from contextfold.importers import load


def whole_lines(records: list[dict]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


@pytest.mark.parametrize("cut", [1, 9, -2])
def test_a_session_cut_mid_line_imports_up_to_its_last_whole_line(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                                  cut: int) -> None:
    kept, last = CLAUDE_RECORDS[:3], json.dumps(CLAUDE_RECORDS[3], ensure_ascii=False)
    (tmp_path / "whole.jsonl").write_text(whole_lines(kept), encoding="utf-8")
    (tmp_path / "cut.jsonl").write_text(whole_lines(kept) + last[:cut], encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="contextfold.importers"):
        (conversation,) = load(tmp_path / "cut.jsonl")
    (expected,) = load(tmp_path / "whole.jsonl")
    assert [item.blocks for item in conversation] == [item.blocks for item in expected] and len(conversation) > 0
    assert [r.getMessage() for r in caplog.records if "cut short" in r.getMessage()] != []
    assert "cut.jsonl: line 4 is cut short" in caplog.text


def test_a_session_cut_inside_a_character_imports_up_to_its_last_whole_line(tmp_path: Path,
                                                                            caplog: pytest.LogCaptureFixture) -> None:
    last = json.dumps({**CLAUDE_RECORDS[3], "note": "é"}, ensure_ascii=False).encode()
    (tmp_path / "cut.jsonl").write_bytes(whole_lines(CLAUDE_RECORDS[:3]).encode() + last[: last.index("é".encode()) + 1])
    with caplog.at_level(logging.WARNING, logger="contextfold.importers"):
        (conversation,) = load(tmp_path / "cut.jsonl")
    assert len(conversation) > 0 and "line 4 is cut short" in caplog.text


def test_a_complete_bad_line_is_still_an_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text(whole_lines(CLAUDE_RECORDS[:3]) + "{not json\n" + whole_lines(CLAUDE_RECORDS[3:]))
    with pytest.raises(SessionFormatError) as bad:
        load(tmp_path / "bad.jsonl")
    assert bad.value.location == "line 4"
