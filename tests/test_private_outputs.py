"""Every file a command writes that holds conversation text is owner-only (0600) whatever the umask, replaces an
existing file atomically (never left readable by others, never half-written), and replaces a link at its name
rather than following it: ``compact --output``, ``replay --requests``, ``sessions export -o``."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from contextfold import Context, Item, Text, Storage
from contextfold.cli import cli
from contextfold.codec import conversation_to_dict
from contextfold import private_files
from contextfold.synthetic import generate_session

MARK = "UNIQUE-CONVERSATION-TEXT"


@pytest.fixture
def open_umask() -> Iterator[None]:
    """A umask of 000: a file created with the default mode would be readable and writable by everyone."""
    old = os.umask(0o000)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    path = tmp_path / "session.json"
    path.write_text(json.dumps(conversation_to_dict(generate_session(rounds=12))), encoding="utf-8")
    return path


def invoke(*args: str) -> None:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output


def compact(recording: Path, out: Path) -> None:
    invoke("compact", str(recording), "--window", "20000", "-o", str(out))


def replay(recording: Path, out: Path) -> None:
    invoke("replay", str(recording), "--window", "20000", "--tokenizer", "estimate", "--requests", str(out))


def export(recording: Path, out: Path) -> None:
    store = out.parent / "store"
    with Context(window_tokens=20_000, storage=Storage(store=str(store), session_id="s1")) as context:
        context.add([Item("user", (Text(f"{MARK} in a stored session"),))])
    invoke("sessions", "export", "--store", str(store), "s1", "-o", str(out))


WRITERS: dict[str, Callable[[Path, Path], None]] = {"compact --output": compact, "replay --requests": replay,
                                                    "sessions export -o": export}


def owner_only_file(path: Path) -> bool:
    info = path.lstat()
    return stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600


@pytest.mark.parametrize("writer", WRITERS)
def test_an_existing_readable_file_is_replaced_owner_only(writer: str, recording: Path, tmp_path: Path,
                                                          open_umask: None) -> None:
    out = tmp_path / "out" / "written"
    out.parent.mkdir()
    out.write_text("old contents\n")
    out.chmod(0o644)
    WRITERS[writer](recording, out)
    assert owner_only_file(out)
    assert "old contents" not in out.read_text() and out.stat().st_size > 100
    assert not [p.name for p in out.parent.iterdir() if p.name != "written" and p.name != "store"]  # no temporary left


@pytest.mark.parametrize("writer", WRITERS)
def test_a_new_file_is_owner_only_under_umask_000(writer: str, recording: Path, tmp_path: Path,
                                                  open_umask: None) -> None:
    out = tmp_path / "new.out"
    WRITERS[writer](recording, out)
    assert owner_only_file(out)


@pytest.mark.parametrize("writer", WRITERS)
def test_a_link_at_the_name_is_replaced_not_followed(writer: str, recording: Path, tmp_path: Path,
                                                     open_umask: None) -> None:
    elsewhere = tmp_path / "someone-elses-file"
    elsewhere.write_text("not yours to overwrite\n")
    elsewhere.chmod(0o644)
    out = tmp_path / "out.link"
    out.symlink_to(elsewhere)
    WRITERS[writer](recording, out)
    assert elsewhere.read_text() == "not yours to overwrite\n" and stat.S_IMODE(elsewhere.stat().st_mode) == 0o644
    assert owner_only_file(out)


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path, open_umask: None) -> None:
    out = tmp_path / "kept"
    out.write_text("old\n")
    with pytest.raises(RuntimeError), private_files.replace_file(out) as file:
        file.write(b"half of the new")
        raise RuntimeError("the replay failed")
    assert out.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["kept"]
