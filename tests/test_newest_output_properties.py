"""However large the newest output, the request stays under the window and every call stays answered.

An oversized output that arrived for this request is sent whole while a compaction of older turns can make its
room (``Policy.persist_whole_tail_fraction``, issue 28): the request past the trigger is then compacted, not the
output cut. Generated sessions (the property test's, :mod:`test_pipeline_properties`) end with an output from a
little over the persist limit to several windows, at 8k, 16k and 32k and with bounds up to three tails.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_pipeline_properties import HEADER, sessions

from contextfold.context import Context
from contextfold.conversation import Item, ToolCall, ToolResult
from contextfold.pipeline.base import Policy
from contextfold.pipeline.stages.fit import COUNT_MARGIN


def newest_read(lines: int) -> list[Item]:
    """The agent reads a long source file: numbered lines its next reply quotes from anywhere."""
    text = "\n".join(f"{n:>6}\tdef total_{n}(cart): return round(sum(cart.prices) * {n % 9 + 1}, 2)"
                     for n in range(1, lines + 1))
    return [Item("assistant", (ToolCall("newest", "read_file", {"path": "src/shop/tax.py"}),)),
            Item("tool", (ToolResult("newest", text),))]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(steps=sessions(images=False), window=st.sampled_from([8_000, 16_000, 32_000]),
       lines=st.integers(250, 4_000), share=st.sampled_from([0.5, 1.0, 3.0]), earlier=st.integers(0, 30))
def test_the_request_stays_under_the_window_whatever_the_newest_output(
        steps: list[list[Item]], window: int, lines: int, share: float, earlier: int) -> None:
    context = Context(window_tokens=window, policy=Policy(persist_whole_tail_fraction=share,
                                                          background_summaries="never"))
    context.set_header(HEADER)
    filler = [[Item("assistant", (ToolCall(f"f{k}", "bash", {"command": "pytest -q"}),)),
               Item("tool", (ToolResult(f"f{k}", f"test_{k} passed\n" * 120),))] for k in range(earlier)]
    for step in [*steps, *filler, newest_read(lines)]:
        context.add(step)
        view = context.prepare_view()
        assert view.validate() == [], "a request with an unanswered call or an orphan result"
        assert context.counter.count(view) <= window - int(window * COUNT_MARGIN), "a request over the window"
