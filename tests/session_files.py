"""Session files written for the importer tests: a record list as JSON Lines, anything else as one JSON document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_session(tmp_path: Path, name: str, content: Any) -> Path:
    """``content`` saved under ``tmp_path / name``: one record per line when ``name`` ends in ``.jsonl``."""
    path = tmp_path / name
    if name.endswith(".jsonl"):
        path.write_text("".join(json.dumps(record) + "\n" for record in content), encoding="utf-8")
    else:
        path.write_text(json.dumps(content), encoding="utf-8")
    return path
