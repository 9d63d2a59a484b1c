"""Clearing never removes an output of the current turn while the request is under the trigger.

A customer-service agent looks up eight products for the person and answers with their prices: those outputs are
what its next reply quotes. Built from the shape of such a session (short excerpts written for the test).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from contextfold import conversation as c
from contextfold.context import Context, Storage
from contextfold.conversation import Conversation, Header, Item, Provenance, Text, ToolCall, ToolSpec
from contextfold.pipeline.base import Budget, Policy
from contextfold.pipeline.edits import current_turn_start
from contextfold.pipeline.stages.budget import budget_outputs
from contextfold.pipeline.stages.clear import clear
from contextfold.tokens import Estimator
from contextfold.usage import Usage

WINDOW = 16_000
HEADER = Header(system=(Item("system", (Text("You are the shop's assistant. Quote prices exactly."),)),),
                tools=(ToolSpec("get_product", "a product's details and its variants' prices"),
                       ToolSpec("get_order", "an order's items")))


def product(k: int) -> str:
    """A product's details as the shop's API returns them: one long JSON line, the prices deep inside it."""
    variants = {f"{k}{v:03d}": {"options": {"color": f"shade {v}", "size": "L", "material": "cotton blend"},
                                "available": v % 3 != 0, "price": round(40 + k * 7.31 + v * 0.17, 2)}
                for v in range(26)}
    return json.dumps({"name": f"Product {k}", "product_id": f"p{k}", "variants": variants})


def call(cid: str, name: str, **arguments: str) -> Item:
    return c.assistant("", [ToolCall(cid, name, arguments)])


def turn_of_eight_lookups(context: Context, now: list[float]) -> Conversation:
    """An older turn (an order looked up, an answer), then the person asks about eight products and the agent
    fetches them one by one; the sixth lookup is slow (the cache goes cold). Returns the last request."""
    context.set_header(HEADER)
    now[0] = 0.0
    context.add([c.user("Hi, what did I order last week?")])
    context.prepare_view()
    for k in range(4):
        now[0] += 5
        context.add([call(f"o{k}", "get_order", order_id=f"#W{k}"),
                     c.tool(f"o{k}", json.dumps({"order_id": f"#W{k}", "items": [f"item {n} " * 12 for n in range(12)]}))])
        context.prepare_view()
    now[0] += 5
    context.add([c.assistant("You ordered four parcels; which products would you like to compare?")])
    now[0] += 60
    context.add([c.user("Please compare the prices of products p0 to p7, every variant.")])
    view = context.prepare_view()
    for k in range(8):
        now[0] += 400 if k == 5 else 5
        context.add([call(f"g{k}", "get_product", product_id=f"p{k}"), c.tool(f"g{k}", product(k))])
        view = context.prepare_view()
    return view


def test_the_outputs_of_the_current_turn_stay_whole_under_the_trigger() -> None:
    now = [0.0]
    context = Context(window_tokens=WINDOW, max_output_tokens=4_000, clock=lambda: now[0],
                      policy=Policy(background_summaries="never"))
    view = turn_of_eight_lookups(context, now)
    assert 0.5 * WINDOW < Estimator().conversation(view) < 0.7 * WINDOW  # about 60 % of the window
    outputs = [item.text for item in view.items if item.role == "tool"]
    for k in range(8):
        assert product(k) in outputs  # every price the next reply quotes, whole
    cleared = [text for text in outputs if "output cleared" in text]
    assert len(cleared) == 4  # the cache went cold: the older turn's four order outputs were cleared in that step


def budget_for(conversation: Conversation, trigger_tokens: int, **policy: object) -> Budget:
    est = Estimator()
    return Budget(policy=Policy(**policy), window_tokens=WINDOW, trigger_tokens=trigger_tokens,  # type: ignore[arg-type]
                  count=est.conversation, count_item=est.item, idle_s=3_600)


def eight_lookups() -> Conversation:
    items = [c.user("Please compare the prices of products p0 to p7.")]
    for k in range(8):
        items += [call(f"g{k}", "get_product", product_id=f"p{k}"), c.tool(f"g{k}", product(k))]
    return Conversation(items, HEADER)


def test_clearing_and_the_budget_spare_the_current_turn_only_under_the_trigger() -> None:
    conversation = eight_lookups()
    size = Estimator().conversation(conversation)
    under = budget_for(conversation, size + 1, budget_steps=((0.1, 500),))
    assert clear(conversation, under) == (conversation, [])
    assert budget_outputs(conversation, under) == (conversation, [])
    over = budget_for(conversation, size - 1, budget_steps=((0.1, 500),))  # the window is at stake: nothing spared
    assert clear(conversation, over)[1] and budget_outputs(conversation, over)[1]


def test_the_current_turn_starts_after_the_person_or_the_agent_handing_the_turn_back() -> None:
    items = [c.user("task"), call("a", "get_order", order_id="1"), c.tool("a", "x"), c.assistant("Done; anything else?"),
             call("b", "get_order", order_id="2"), c.tool("b", "y")]
    assert current_turn_start(items) == 4
    assert current_turn_start([*items, c.user("and p9?")]) == 7
    summary = Item("user", (Text("summary of earlier work"),), provenance=Provenance(summary=True))
    assert current_turn_start([items[0], summary, *items[1:3]]) == 1  # a summary is not the person speaking
    assert current_turn_start([]) == 0


def readme(lines: int) -> str:
    """A long README the agent reads whole to rewrite it: its next reply quotes lines from anywhere in it."""
    return "\n".join(f"{n:>6}→ - `wallet{n}`: the mint{n} account's balance, refreshed every {n % 7 + 1} minutes"
                     for n in range(1, lines + 1))


def read_then_view(context: Context, text: str, earlier: int = 0) -> Conversation:
    """``earlier`` rounds of mid-sized outputs, then the person asks and the agent reads the README. Each request's
    size is reported back as a provider would: only what came since is an estimate (see ``window_limit``)."""
    context.set_header(HEADER)
    context.add([c.user("Look at the logs first.")])
    for k in range(earlier):
        context.add([call(f"l{k}", "get_order", order_id=f"log{k}"), c.tool(f"l{k}", " ".join(f"entry{k}-{n}" for n in range(1_300)))])
        context.record_usage(Usage(prompt_tokens=context.counter.count(context.prepare_view())))
    context.add([c.assistant("The logs are fine."), c.user("Now rewrite the README; every wallet line stays.")])
    context.add([call("r", "get_order", order_id="README.md"), c.tool("r", text)])
    return context.prepare_view()


def test_an_output_just_fetched_stays_whole_while_the_request_has_room_for_it(tmp_path: Path) -> None:
    text = readme(280)
    assert 16_000 < len(text) < 30_000  # over the persist limit at 32k (16,000 characters), a fifth of the window
    room = Policy(persist_min_fill_fraction=1.0, background_summaries="never")
    for store in (None, tmp_path / "results"):  # kept whole on arrival too, where an output would be saved then
        view = read_then_view(Context(window_tokens=32_000, storage=Storage(results_dir=store), policy=room), text)
        assert text in [item.text for item in view.items]  # every line the next reply quotes
    always = Policy(persist_whole_tail_fraction=0, background_summaries="never")
    before = read_then_view(Context(window_tokens=32_000, storage=Storage(results_dir=tmp_path / "old"),
                                    policy=always), text)
    assert text not in [item.text for item in before.items]  # persisting from the limit alone: a preview
    full = Context(window_tokens=32_000, policy=replace(room, persist_whole_tail_fraction=0))
    view = read_then_view(full, text, earlier=7)  # the request past the trigger with it whole: to disk
    [persisted] = [e for e in full.events if e.stage == "persist" and e.action == "persisted"]
    assert persisted.items == (view.items[-1].id,) and text not in view.items[-1].text


def test_an_output_just_fetched_is_sent_whole_and_older_turns_make_its_room(tmp_path: Path) -> None:
    """Issue 28: the README read to be rewritten arrives with the request past the trigger. It is not cut to a
    preview: the older turns are compacted at this request, and the next reply sees every line it quotes."""
    text = readme(400)  # 31,783 characters, about 9k tokens: over the persist limit, within a summary's tail
    for store in (None, tmp_path / "results"):  # a stored session keeps it whole on arrival too
        context = Context(window_tokens=32_000, storage=Storage(results_dir=store),
                          policy=Policy(background_summaries="never"))
        view = read_then_view(context, text, earlier=7)
        assert view.items[-1].text == text  # every line the next reply quotes
        assert not [e for e in context.events if e.stage == "persist"]
        assert Estimator().conversation(view) <= 32_000 * 0.97  # under the window, older turns paid
        assert [item for item in view.items if item.provenance.summary or item.provenance.compacted]
        assert context.history[-1].text == text  # the history holds it whole, nothing acknowledged lost


def test_an_output_no_compaction_makes_room_for_is_previewed_on_arrival() -> None:
    """Past the bound (a share of the tail a summary keeps) the output goes to disk with a preview, as before:
    older turns compacted to nothing would not make it fit for long. Nor in a mode that does not compact."""
    text = readme(700)  # 55,783 characters, about 16k tokens: more than the share of a summary's tail at 32k
    context = Context(window_tokens=32_000, policy=Policy(background_summaries="never"))
    view = read_then_view(context, text, earlier=2)
    assert view.items[-1].provenance.compacted == "persist" and len(view.items[-1].text) < 4_000
    manual = Context(window_tokens=32_000, policy=Policy(mode="manual"))
    assert read_then_view(manual, readme(280)).items[-1].provenance.compacted == "persist"


def test_an_output_sent_whole_is_the_first_to_go_when_a_compaction_is_due() -> None:
    """The README went whole for its own request; the agent then reads the files it names. When the request passes
    the trigger, the README, now old, goes to a preview before any of those reads is cleared or summarized."""
    context = Context(window_tokens=32_000, policy=Policy(persist_whole_tail_fraction=2.0, background_summaries="never"))
    view = read_then_view(context, readme(600))  # about 14k tokens: half the trigger
    assert view.items[-1].text == readme(600)
    reads = {f"w{k}": " ".join(f"wallet{k}.balance[{n}]" for n in range(300)) for k in range(8)}
    for cid, text in reads.items():
        context.add([call(cid, "get_order", order_id=f"{cid}.py"), c.tool(cid, text)])
        view = context.prepare_view()
    readme_item = next(item for item in view.items if item.tool_result and item.tool_result.call_id == "r")
    assert readme_item.provenance.compacted == "persist"  # previewed, now old: read_history has it whole
    outputs = {item.tool_result.call_id: item.text for item in view.items if item.tool_result}
    assert all(outputs[cid] == text for cid, text in reads.items())  # every later read whole
    assert not [item for item in view.items if item.provenance.summary]
