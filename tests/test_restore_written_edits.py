"""Restore after a summary, for a harness that applies the edits the reply writes (aider).

Aider's edit call holds the path only: the file's text is in the reply (a line naming the file, then a fenced
whole file or SEARCH/REPLACE block), and the file the person ``/add``-ed is sent without being recorded. The
excerpts here are written for these tests in the shape of an aider chat history, not copied from one.
"""

from __future__ import annotations

from pathlib import Path

from test_pipeline_stages import EST

from contextfold import conversation as c
from contextfold import importers
from contextfold.conversation import Conversation, Item
from contextfold.pipeline.restore import WRITTEN, restored_item, written_in_reply

BODY = "\n".join(f"    line_{n} = price_{n} * rate  # keep the tax rule" for n in range(300))
HISTORY = f"""# aider chat started at 2026-01-02 10:00:00

> Main model: some/model with whole edit format
> Added src\\shop\\cart.py to the chat.

#### Fix the rounding in src/shop/cart.py; keep the tax rule.

Here is the updated file:

src\\shop\\cart.py
```python
def total(items):
{BODY}
    return round(sum(i.price for i in items), 2)
```

> Applied edit to src\\shop\\cart.py

#### Now make the rounding of src/shop/cart.py configurable.
"""


def _session(tmp_path: Path, text: str) -> Conversation:
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(text, encoding="utf-8")
    return importers.load(path)[0]


def _restore(conversation: Conversation, file_tokens: int, total_tokens: int) -> Item | None:
    items = conversation.items
    return restored_item(items[1:-1], items[-1:], max_files=5, file_tokens=file_tokens, total_tokens=total_tokens,
                         count_text=EST.text)


def test_what_an_applied_edit_wrote_comes_back_after_a_summary(tmp_path: Path) -> None:
    """The reply's fenced file is the file's only copy in the conversation: it is restored, marked as written."""
    item = _restore(_session(tmp_path, HISTORY), file_tokens=20_000, total_tokens=20_000)
    assert item is not None
    assert f"### src\\shop\\cart.py{WRITTEN}\ndef total(items):" in item.text
    assert "return round(sum(i.price for i in items), 2)" in item.text


def test_a_written_edit_larger_than_the_room_left_is_cut_to_it_not_dropped(tmp_path: Path) -> None:
    """A file read by a tool can be read again; what an edit wrote cannot: under a per-file cap larger than the
    room left, it comes back cut (head and tail, whole lines), within the room."""
    item = _restore(_session(tmp_path, HISTORY), file_tokens=2_000, total_tokens=600)
    assert item is not None and "def total(items):" in item.text and "return round(" in item.text
    assert EST.text(item.text) <= 600 + 40  # the restore's own heading


def test_a_search_replace_block_with_its_path_inside_the_fence_is_read(tmp_path: Path) -> None:
    history = HISTORY.replace("src\\shop\\cart.py\n```python\n", "```python\nsrc\\shop\\cart.py\n<<<<<<< SEARCH\n")
    item = _restore(_session(tmp_path, history), file_tokens=20_000, total_tokens=20_000)
    assert item is not None and "<<<<<<< SEARCH\ndef total(items):" in item.text


def test_an_edit_call_that_carries_its_text_is_not_read_from_the_reply() -> None:
    """An edit tool with the text in its arguments (Claude Code's Edit) keeps its own rule: the reply's prose
    naming the file and quoting code is no file content."""
    reply = c.assistant("src/shop/cart.py\n```python\ndef total(items): ...\n```",
                        [c.ToolCall("e1", "Edit", {"file_path": "src/shop/cart.py", "old_string": "a", "new_string": "b"})])
    conv = Conversation([c.user("fix src/shop/cart.py"), reply, c.tool("e1", "edited"), c.user("next")])
    assert _restore(conv, file_tokens=5_000, total_tokens=5_000) is None
    assert written_in_reply(reply, "src\\shop\\cart.py") == "def total(items): ..."  # the reader itself reads it
