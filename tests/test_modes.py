"""Policy(mode=...): "auto" compacts on its own, "manual" only when asked, "off" never; neither sends a request
over the window: RequestOverWindow says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextfold import Context, ContextOverflow, InvalidPolicy, Policy, RequestOverWindow, ToolCall
from contextfold.conversation import assistant, tool, user


def _grow(context: Context, rounds: int, size: int = 3_000) -> None:
    """A task, then ``rounds`` tool rounds of about ``size`` characters each (prepared after each, as a loop does)."""
    context.add([user("find where the retry budget is set and raise it to five")])
    for n in range(rounds):
        context.add([assistant("", [ToolCall(f"c{n}", "read_file", {"path": f"src/mod{n}.py"})])])
        context.add([tool(f"c{n}", "\n".join(f"line {n}.{k} of module {n}" for k in range(size // 25)))])
        context.prepare()


def _compactions(context: Context) -> int:
    return sum(1 for e in context.events if e.items and e.stage in ("summarize", "clear", "snip", "budget"))


def test_auto_compacts_on_its_own() -> None:
    context = Context(window_tokens=16_000)
    _grow(context, 30)
    assert _compactions(context) > 0


def test_manual_waits_to_be_asked_then_compacts() -> None:
    context = Context(window_tokens=16_000, policy=Policy(mode="manual"))
    _grow(context, 10)
    before = context.stats()["tokens"]
    assert before > context.trigger_tokens, "over the trigger: auto would have summarized"
    assert _compactions(context) == 0
    context.compact("keep the module names")
    assert _compactions(context) == 1
    assert context.stats()["tokens"] < before


def test_manual_refuses_a_request_over_the_window_with_a_typed_error() -> None:
    context = Context(window_tokens=16_000, policy=Policy(mode="manual"))
    with pytest.raises(RequestOverWindow) as raised:
        _grow(context, 40)
    assert raised.value.mode == "manual" and raised.value.window_tokens == 16_000
    assert raised.value.smallest_tokens > 16_000 * 0.9
    assert "compact()" in str(raised.value)
    assert isinstance(raised.value, ContextOverflow)
    context.compact()
    context.prepare()  # asked for: it fits again


@pytest.mark.parametrize("mode", ["manual", "off"])
def test_a_refused_request_is_not_compacted_reactively(mode: str) -> None:
    context = Context(window_tokens=16_000, policy=Policy(mode=mode))
    _grow(context, 5)
    with pytest.raises(RequestOverWindow):
        context.retry_request("prompt is too long: 200000 tokens > 199999 maximum")


def test_off_never_compacts_not_even_when_asked() -> None:
    context = Context(window_tokens=16_000, policy=Policy(mode="off"))
    _grow(context, 10)
    view = context.view()
    events = context.compact()
    assert [(e.stage, e.action) for e in events] == [("compact", "off")]
    assert context.view().items == view.items
    with pytest.raises(RequestOverWindow, match="mode='off'"):
        _grow(context, 40)
    assert _compactions(context) == 0


def test_an_unknown_mode_names_the_knob() -> None:
    with pytest.raises(InvalidPolicy, match="mode"):
        Policy(mode="sometimes")  # type: ignore[arg-type]


def test_replay_takes_the_mode(corpus_dir: Path) -> None:
    from click.testing import CliRunner

    from contextfold.cli import cli

    session = str(corpus_dir / "mini-swe-agent/astropy__astropy-12907.traj.json")
    auto = CliRunner().invoke(cli, ["replay", session, "--window", "16000", "--tokenizer", "estimate", "--json"])
    assert auto.exit_code == 0, auto.output
    manual = CliRunner().invoke(cli, ["replay", session, "--window", "16000", "--tokenizer", "estimate", "--mode",
                                      "manual"])
    assert manual.exit_code != 0 and "Policy(mode='manual') does not compact it on its own" in manual.output


@pytest.mark.parametrize("mode, folds", [("auto", True), ("manual", False), ("off", False)])
def test_a_frameworks_own_trigger_folds_only_in_auto(mode: str, folds: bool) -> None:
    from contextfold.integrations._fold import Settings, fold

    context = Context(window_tokens=16_000, policy=Policy(mode="off"))
    _grow(context, 10)
    settings = Settings(options={"window_tokens": 16_000, "policy": Policy(mode=mode)})  # type: ignore[arg-type]
    folded = fold(context.history, settings)
    assert (folded is not None) is folds
    if folded is not None:
        assert folded.receipt is not None and folded.receipt.of_kind("summarized")
