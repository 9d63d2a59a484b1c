"""Large outputs on arrival: saved to disk and kept as a preview (memory stays flat), too large to keep
and unsaveable becomes an error result that still answers its call, and a resumed session's first
request costs what its view costs."""

from __future__ import annotations

from pathlib import Path

from contextfold import Context, Storage
from contextfold.conversation import Item, Text, ToolCall, ToolResult
from contextfold.pipeline.offload_store import saved_output
from contextfold.stores.transcript import Transcript, transcript_path
from contextfold.summarizers.extractive import ExtractiveSummarizer


def round_with_output(k: int, output: str) -> list[Item]:
    return [Item("assistant", (ToolCall(f"c{k}", "bash", {"command": f"cat big{k}"}),), id=f"a{k}"),
            Item("tool", (ToolResult(f"c{k}", output),), id=f"t{k}")]


def test_outputs_saved_on_arrival_leave_only_previews_in_memory_and_transcript(tmp_path: Path) -> None:
    context = Context(window_tokens=200_000, storage=Storage(transcript=tmp_path, session_id="s1"))
    context.add([Item("user", (Text("go"),), id="u0")])
    for k in range(40):
        context.add(round_with_output(k, f"{k} " + "x" * 1_000_000))
    assert sum(len(item.text) for item in context.history) < 40 * 4_000  # 40 MB came in
    assert saved_output(context.history[2]) == "0 " + "x" * 1_000_000
    context.prepare()
    context.close()
    assert transcript_path(tmp_path, "s1").stat().st_size < 1_000_000
    resumed = Transcript.load(transcript_path(tmp_path, "s1")).conversation
    assert resumed[-1].provenance.offloaded.saved_to and saved_output(resumed[-1]).startswith("39 ")


def test_an_output_over_the_request_limit_goes_to_disk_and_the_call_is_answered(tmp_path: Path) -> None:
    huge = "y" * (40 * 1024 * 1024)  # over the 32 MiB a request (and a transcript record) can hold
    context = Context(window_tokens=200_000, storage=Storage(transcript=tmp_path, session_id="s1"))
    context.add([Item("user", (Text("go"),), id="u0"), *round_with_output(0, huge)])
    request = context.prepare()
    assert context.history[2].tool_result.call_id == "c0" and saved_output(context.history[2]) == huge
    assert request["messages"][-1]["content"][0]["tool_use_id"] == "c0"
    assert not [e for e in context.events if e.stage == "transcript"]  # the transcript took the preview


def test_an_output_too_large_to_keep_that_cannot_be_saved_becomes_an_error_result(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "results").symlink_to(elsewhere)  # an unsafe results folder: nothing is saved
    context = Context(window_tokens=200_000,
                      storage=Storage(transcript=tmp_path / "sessions", session_id="s1",
                                      results_dir=tmp_path / "results"))
    context.add([Item("user", (Text("go"),), id="u0"), *round_with_output(0, "z" * (9 * 1024 * 1024))])
    result = context.history[2].tool_result
    assert result.call_id == "c0" and result.is_error and "OutputNotStored" in result.text
    assert len(result.text) < 10_000 and list(elsewhere.iterdir()) == []
    assert [e.action for e in context.events if e.stage == "persist"] == ["not_stored"]
    assert context.prepare_view().validate() == []


class CountingSummarizer(ExtractiveSummarizer):
    """The extractive summarizer, counting its runs (each one is a pass over the span)."""

    runs = 0

    def summarize(self, request):
        CountingSummarizer.runs += 1
        return super().summarize(request)


def test_the_first_request_after_a_resume_does_not_price_the_whole_view_again(tmp_path: Path) -> None:
    items = []
    for k in range(2_000):
        items += [Item("user", (Text(f"step {k} please"),)), *round_with_output(k, f"out {k} " * 60)]
    with Context(window_tokens=200_000, storage=Storage(transcript=tmp_path, session_id="s1"),
                 summarizer=CountingSummarizer()) as first:
        for start in range(0, len(items), 300):  # an agent adding many items between requests
            first.add(items[start:start + 300])
            first.prepare()
        assert CountingSummarizer.runs > 1 and first.counter.count(first.view()) > 20_000
    CountingSummarizer.runs = 0
    resumed = Context.resume(tmp_path, "s1", window_tokens=200_000, summarizer=CountingSummarizer())
    resumed.prepare()
    assert CountingSummarizer.runs == 0, "the resumed view was priced again (a summary run over the whole view)"
    assert resumed.view().validate() == []
