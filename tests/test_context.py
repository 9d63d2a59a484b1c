"""The Context facade as an agent loop uses it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextfold import Usage
from contextfold.context import Context, is_prompt_too_long, Storage
from contextfold.errors import ContextfoldError
from contextfold.events import Event
from contextfold.pipeline.base import Policy
from contextfold.pipeline.offload_store import saved_output
from contextfold.stores.transcript import Transcript
from contextfold.summarizers.base import SummaryResult

SYSTEM = "You are a coding agent."
TOOLS = [{"name": "bash", "description": "run a command", "input_schema": {"type": "object", "properties": {}}}]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def turn(k: int, output: str) -> list[dict]:
    """One assistant tool call and its result, in Anthropic's format."""
    return [
        {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": "bash", "input": {"command": f"cat f{k}.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": output}]},
    ]


def started(tmp_path: Path | None = None, session_id: str | None = None, **kw) -> tuple[Context, Clock]:
    clock = Clock()
    storage = Storage(transcript=tmp_path / "sessions" if tmp_path else None, session_id=session_id)
    context = Context(window_tokens=kw.pop("window_tokens", 20_000), clock=clock, storage=storage, **kw)
    context.add([{"role": "user", "content": "Fix the bug in f1.py"}], system=SYSTEM, tools=TOOLS)
    return context, clock


def test_a_request_without_compaction_is_what_the_agent_would_have_sent() -> None:
    context, _ = started()
    messages = [{"role": "user", "content": "Fix the bug in f1.py"}, *turn(1, "print(1)")]
    context.add(messages[1:])
    request = context.prepare()
    task = {"type": "text", "text": "Fix the bug in f1.py", "cache_control": {"type": "ephemeral"}}  # the stable end
    assert request["messages"][0]["content"] == [task]
    plain = {k: v for k, v in request.items()}
    assert len(plain["messages"]) == 3 and plain["messages"][1] == {
        "role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "cat f1.py"}}]}


def test_cache_breakpoints_are_at_most_four_and_the_prefix_is_byte_stable() -> None:
    context, _ = started()
    context.add(turn(1, "one"))
    first = context.prepare()
    context.add(turn(2, "two"))
    second = context.prepare()
    marks = json.dumps(second).count('"cache_control"')
    assert 1 <= marks <= 4
    assert second["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    strip = lambda m: json.loads(json.dumps(m).replace(', "cache_control": {"type": "ephemeral"}', ""))
    assert strip(second["messages"][: len(first["messages"])]) == strip(first["messages"])
    assert second["system"] == first["system"]


def test_every_item_is_in_the_transcript_and_a_session_resumes_exactly(tmp_path: Path) -> None:
    context, _ = started(tmp_path, session_id="s1")
    for k in range(1, 4):
        context.add(turn(k, f"output {k}"))
        context.prepare()
    restored = Transcript.load(tmp_path / "sessions" / "s1.jsonl")
    assert restored.conversation == context.history
    assert restored.conversation.header.system_text == SYSTEM


def test_large_outputs_are_persisted_next_to_the_transcript(tmp_path: Path) -> None:
    context, _ = started(tmp_path, session_id="s2")
    context.add(turn(1, "row\n" * 20_000))
    request = context.prepare()
    text = json.dumps(request)
    results = tmp_path / "sessions" / "s2-results"  # no history tools offered: the preview names the file
    assert f"saved to {results}/" in text and "read_history" not in text and len(text) < 10_000
    assert any(e.stage == "persist" for e in context.events)
    assert (tmp_path / "sessions" / "s2-results").is_dir()
    # saved on arrival: memory and transcript keep the preview and where the whole output is
    assert len(context.history[2].text) < 4_000 and saved_output(context.history[2]) == "row\n" * 20_000
    assert Transcript.load(tmp_path / "sessions" / "s2.jsonl").conversation[2] == context.history[2]


def test_over_the_trigger_a_summary_replaces_the_middle_and_the_task_stays(tmp_path: Path) -> None:
    context, _ = started(tmp_path, session_id="s3", policy=Policy(trigger_tokens=3_000))
    for k in range(1, 12):
        context.add(turn(k, f"line {k}\n" * 150))
        request = context.prepare()
    assert request["messages"][0]["content"] == [{"type": "text", "text": "Fix the bug in f1.py", "cache_control": {"type": "ephemeral"}}]
    assert any(e.action == "summarized" for e in context.events)
    assert context.counter.count(context.view()) <= 3_000
    assert len(context.history) == 23  # nothing is lost from the history


def test_manual_compact_passes_instructions_to_the_summarizer() -> None:
    seen = []

    class Recording:
        name = "recording"

        def summarize(self, request):
            seen.append(request.instructions)
            return SummaryResult("summary text")

    context, _ = started(summarizer=Recording())
    for k in range(1, 5):
        context.add(turn(k, "x " * 300))  # enough to summarize: a compaction never grows the request
    events = context.compact("focus on the failing test")
    assert seen == ["focus on the failing test"]
    assert any(e.action == "summarized" for e in events)


class Broken:
    """A summarizer with a bug."""

    name = "broken"

    def summarize(self, request):
        raise RuntimeError("summarizer crashed")


def test_three_failed_compactions_open_the_breaker() -> None:
    context, _ = started(summarizer=Broken(), policy=Policy(trigger_tokens=500, min_summary_messages=2))
    for k in range(1, 8):
        context.add(turn(k, "y " * 300))
        request = context.prepare()
        assert request["messages"]  # the agent still gets a valid request every time
    assert context.breaker_open
    assert [e.action for e in context.events if e.stage == "summarize"].count("breaker_open") == 1
    failures = [e for e in context.events if e.action == "failed"]
    assert len(failures) == 3  # no retries once the breaker is open


def test_prompt_too_long_triggers_one_reactive_compaction() -> None:
    assert is_prompt_too_long("prompt is too long: 210000 tokens > 200000 maximum")
    assert is_prompt_too_long("This model's maximum context length is 128000 tokens (context_length_exceeded)")
    assert is_prompt_too_long("400 INVALID_ARGUMENT. The input token count (1200000) exceeds the maximum number of "
                              "tokens allowed (1048576).")  # Gemini's wording, known through its adapter
    assert not is_prompt_too_long("overloaded_error")
    context, _ = started()
    for k in range(1, 6):
        context.add(turn(k, "z " * 2_000))
    before = context.counter.count(context.view())
    retry = context.retry_request("prompt is too long: 999999 tokens > 200000 maximum")
    assert retry is not None and context.counter.count(context.view()) < before
    assert context.retry_request("rate limited") is None


def test_a_failing_summarizer_is_survived_by_retry_request_as_by_prepare(caplog: pytest.LogCaptureFixture) -> None:
    outcomes = []
    for entry in ("prepare", "retry_request"):
        policy = Policy(trigger_tokens=500, economic_summaries=False, min_summary_messages=2)
        context, _ = started(summarizer=Broken(), policy=policy)
        for k in range(1, 6):
            context.add(turn(k, "z " * 300))
        caplog.clear()
        if entry == "prepare":
            request = context.prepare()
        else:
            request = context.retry_request("prompt is too long: 999999 tokens > 200000 maximum")
        failed = [e for e in context.events if e.stage == "summarize" and e.action == "failed"]
        assert request is not None and len(request["messages"]) == 11  # the request goes out, uncompacted
        assert failed and "summarizer crashed" in failed[0].detail
        assert "summarizer crashed" in caplog.text  # and a warning is logged
        outcomes.append((context.stats()["consecutive_failures"], context.stats()["requests"]))
    assert outcomes[0] == outcomes[1] == (1, 1)


def test_usage_anchors_the_count_and_a_cache_drop_names_the_stage() -> None:
    context, clock = started(policy=Policy(clear_min_savings_tokens=0, clear_keep_recent_rounds=1))
    context.add(turn(1, "a " * 2_000))
    context.prepare()
    context.record_usage({"input_tokens": 10, "cache_read_input_tokens": 3_000, "cache_creation_input_tokens": 200, "output_tokens": 5})
    assert context.counter.count(context.view()) == 3_210
    for k in range(2, 5):  # each a turn of its own: under the trigger the current turn's outputs are never cleared
        context.add([{"role": "assistant", "content": "Done."}, {"role": "user", "content": f"Now f{k}.py"},
                     *turn(k, "b " * 2_000)])
        clock.now += 1_000  # cold cache: clearing is free
        context.prepare()
        context.record_usage(Usage(prompt_tokens=2_000, cache_read_tokens=100))
    breaks = [e for e in context.events if e.stage == "cache" and e.action == "break"]
    assert breaks and breaks[0].data["cause"] == "clear"


def test_events_are_published_to_subscribers_and_counted_in_stats() -> None:
    got: list[Event] = []
    context, _ = started(policy=Policy(trigger_tokens=800, min_summary_messages=2))
    context.subscribe(got.append)
    for k in range(1, 6):
        context.add(turn(k, "w " * 300))
        context.prepare()
    stats = context.stats()
    assert got and stats["requests"] == 5 and stats["summaries"] >= 1
    assert stats["events"].get("summarize:summarized", 0) >= 1 and stats["last_stage"] == "summarize"


def test_fork_gives_a_subagent_its_own_context(tmp_path: Path) -> None:
    parent, _ = started(tmp_path, session_id="parent")
    child = parent.fork(session_id="child")
    child.add([{"role": "user", "content": "search the docs"}])
    assert len(parent.history) == 1 and len(child.history) == 1
    assert child.prepare()["system"] == parent.prepare()["system"]
    assert (tmp_path / "sessions" / "child.jsonl").exists()


def test_openai_and_responses_requests() -> None:
    context = Context(window_tokens=10_000, provider="openai")
    context.add([{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hi"}])
    assert context.prepare()["messages"][0] == {"role": "system", "content": SYSTEM}
    assert context.prepare("responses")["input"][0]["role"] == "system"


def test_bad_setup_is_a_clear_error() -> None:
    with pytest.raises(ContextfoldError):
        Context()
    with pytest.raises(ContextfoldError):
        Context(window_tokens=1_000, provider="bedrock")


@pytest.mark.parametrize("provider", ["anthropic", "openai", "responses", "gemini"])
def test_incremental_rendering_equals_rendering_from_scratch(provider: str) -> None:
    from contextfold.adapters import adapter_for
    from contextfold.rendering import Renderer
    from contextfold.synthetic import generate_session

    session = generate_session(rounds=25, seed=11)
    context = Context(window_tokens=6_000, provider=provider, policy=Policy(clear_min_savings_tokens=500))
    context.set_header(session.header)
    replies = [i for i, item in enumerate(session) if item.role == "assistant"]
    previous = 0
    for index in replies:
        context.add(list(session.items[previous:index]))
        previous = index
        request = context.prepare()
        assert request == Renderer(adapter_for(provider)).render(context.view())
    assert any(e.stage == "summarize" for e in context.events)  # views were replaced along the way


def test_preparing_with_calls_still_unanswered_is_a_clear_error() -> None:
    context, _ = started()
    context.add(turn(1, "x")[:1])
    with pytest.raises(ContextfoldError, match="without results"):
        context.prepare()


def test_a_session_resumes_exactly_with_its_compacted_view(tmp_path: Path) -> None:
    context, _ = started(tmp_path, session_id="s9", policy=Policy(trigger_tokens=2_000))
    for k in range(1, 10):
        context.add(turn(k, f"line {k}\n" * 120))
        context.prepare()
    assert any(e.action == "summarized" for e in context.events)
    context.add(turn(10, "after the last request"))  # added, not yet sent: resumes too
    context.close()
    resumed = Context.resume(tmp_path / "sessions", "s9", window_tokens=20_000, policy=Policy(trigger_tokens=2_000))
    assert resumed.history == context.history
    assert list(resumed.view().items) == list(context.view().items)
    assert resumed.prepare() == context.prepare()


def test_at_turn_boundary_summarizes_when_due_and_not_mid_round() -> None:
    context, _ = started(policy=Policy(trigger_tokens=1_000))
    for k in range(1, 6):
        context.add(turn(k, "v " * 400))
    context.add(turn(6, "")[:1])  # a call still running: not a turn boundary
    assert context.at_turn_boundary() == []
    context.add(turn(6, "done")[1:])
    events = context.at_turn_boundary()
    assert any(e.action == "summarized" for e in events)
    assert context.counter.count(context.view()) <= 1_000


def test_a_huge_new_output_is_cut_to_its_preview_before_anything_is_decided_on_the_request_size() -> None:
    """The cheap stages run first: a request that fits once the new output is cut is not summarized for it."""
    context, _ = started(policy=Policy(trigger_tokens=6_000))
    for k in range(3):
        context.add(turn(k, f"line {k}\n" * 20))
        context.prepare()
    context.add(turn(3, "row of a huge log\n" * 20_000))  # about 100k tokens whole; a preview once cut
    context.prepare()
    stages = [e.stage for e in context.events if e.items]
    assert "persist" in stages and "summarize" not in stages, stages
    assert context.counter.count(context.view()) < context.trigger_tokens


def test_below_the_trigger_a_summary_happens_only_when_it_pays() -> None:
    def run(policy: Policy) -> Context:
        context, _ = started(window_tokens=200_000, policy=policy)
        for k in range(1, 40):
            context.add(turn(k, f"row {k}\n" * 400))
            context.prepare()
        return context

    eager = run(Policy(economic_summaries=True, economic_summary_min_tokens=5_000,  # the lean preset's gate
                       horizon_factor=1.0))  # counted over as many more requests
    assert any(e.action == "summarized" for e in eager.events)
    applied = [e for e in eager.events if e.stage == "economics" and e.action == "applied"]
    assert applied and "saves" in applied[0].detail
    assert eager.counter.count(eager.view()) < eager.trigger_tokens
    never = run(Policy(economic_summaries=True, economic_summary_min_tokens=5_000, max_horizon_requests=1,
                       min_horizon_requests=1))
    assert not any(e.action == "summarized" for e in never.events)
    assert any(e.action == "deferred" for e in never.events)


def test_pinned_text_is_in_every_request_and_survives_compaction() -> None:
    context, _ = started(policy=Policy(trigger_tokens=1_500))
    context.pin("Coding style: no new dependencies.")
    for k in range(1, 8):
        context.add(turn(k, "p " * 400))
        request = context.prepare()
        assert json.dumps(request["messages"][0]).count("Coding style: no new dependencies.") == 1
    assert any(e.action == "summarized" for e in context.events)


def test_a_loop_passing_its_system_and_tools_every_turn_keeps_pins_and_the_split_prompt() -> None:
    """``add(..., system=, tools=)`` on each turn sets those parts only: a pinned item and the static/dynamic
    split of the same system text stay; a new system text or tool list replaces the old one."""
    context = Context(window_tokens=50_000)
    context.set_system("STATIC rules.", "DYNAMIC: cwd /repo")
    context.pin("Coding style: no new dependencies.")
    tools = [{"name": "bash", "description": "run", "input_schema": {"type": "object", "properties": {}}}]
    for k in range(1, 4):
        context.add([{"role": "user", "content": f"step {k}"}], system="STATIC rules.\n\nDYNAMIC: cwd /repo", tools=tools)
        header = context.history.header
        assert [item.text for item in header.pinned] == ["Coding style: no new dependencies."]
        assert header.static_system == 1 and len(header.system) == 2
        assert [tool.name for tool in header.tools] == ["bash"]
    context.add([{"role": "user", "content": "step 4"}], system="New rules.")
    header = context.history.header
    assert header.system_text == "New rules." and header.static_system == 0
    assert [item.text for item in header.pinned] == ["Coding style: no new dependencies."]
    assert [tool.name for tool in header.tools] == ["bash"]
