"""Where a session is kept is one value, ``Context(storage=Storage(...))``: the Context holds it, a resumed session
and a subagent's keep what it says, and the five keywords it replaced are a typed error naming the new spelling."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextfold import Context, InvalidOption, Storage
from contextfold.stores.transcript import transcript_path


def test_the_storage_value_says_where_the_session_is_kept_and_the_context_holds_it(tmp_path: Path) -> None:
    storage = Storage(transcript=tmp_path, session_id="s1", results_dir=tmp_path / "outputs")
    with Context(window_tokens=20_000, storage=storage) as context:
        context.add([{"role": "user", "content": "Fix the failing test"}])
        assert context.storage is storage and context.session_id == "s1"
        assert context.results_dir == tmp_path / "outputs"
    assert "Fix the failing test" in transcript_path(tmp_path, "s1").read_text(encoding="utf-8")


def test_no_storage_keeps_nothing() -> None:
    context = Context(window_tokens=20_000)
    assert context.storage == Storage() and context.transcript is None and context.results_dir is None


@pytest.mark.parametrize("keyword", ["transcript", "store", "session_id", "results_dir", "on_store_failure"])
def test_a_storage_setting_given_as_a_keyword_names_the_one_value_that_replaced_it(keyword: str,
                                                                                    tmp_path: Path) -> None:
    with pytest.raises(InvalidOption, match=rf"Context\(storage=Storage\({keyword}=\.\.\.\)\)") as refused:
        Context(window_tokens=20_000, **{keyword: tmp_path})
    assert refused.value.option == keyword and isinstance(refused.value, TypeError)
    assert list(tmp_path.iterdir()) == []  # refused before anything was opened


def test_an_unknown_keyword_or_a_storage_of_the_wrong_type_is_a_typed_error() -> None:
    with pytest.raises(InvalidOption, match="no such keyword") as refused:
        Context(window_tokens=20_000, windw_tokens=3)
    assert refused.value.option == "windw_tokens"
    with pytest.raises(InvalidOption, match="takes a Storage, not str"):
        Context(window_tokens=20_000, storage="sqlite:///sessions.db")  # type: ignore[arg-type]


def test_a_resumed_session_keeps_what_its_storage_says_and_refuses_a_second_store(tmp_path: Path) -> None:
    with Context(window_tokens=20_000, storage=Storage(store=tmp_path, session_id="s1")) as first:
        first.add([{"role": "user", "content": "Fix the failing test"}])
    resumed = Context.resume(tmp_path, "s1", window_tokens=20_000, storage=Storage(on_store_failure="memory"))
    with resumed:
        assert resumed.storage.on_store_failure == "memory" and resumed.session_id == "s1"
        assert [item.text for item in resumed.history.items] == ["Fix the failing test"]
    with pytest.raises(InvalidOption, match="storage.store"):
        Context.open(tmp_path, "s1", window_tokens=20_000, storage=Storage(store=tmp_path))
    Context.open(tmp_path, "s1", window_tokens=20_000).close()  # the refusal released the session


def test_a_subagent_is_kept_beside_its_parent_and_fails_the_same_way(tmp_path: Path) -> None:
    parent = Context(window_tokens=20_000, storage=Storage(transcript=tmp_path, session_id="p",
                                                           on_store_failure="memory"))
    child = parent.fork(session_id="p.child")
    assert child.storage == Storage(transcript=child.transcript, session_id="p.child", on_store_failure="memory")
    assert transcript_path(tmp_path, "p.child").exists()
    child.close()
    parent.close()
