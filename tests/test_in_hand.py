"""What the latest turn names as what it works on is in the request: kept by clearing, put back when it was cleared.

Built from the shape of a Claude Code session (short excerpts written for the test): the person asks for a skill
file to be translated, the agent reads it and puts a plan; the person then asks about a permission prompt, the agent
reads settings and edits a blog post for several rounds (its outputs push the old read out); then the person says
"back to the earlier task, translate that SKILL.md". The next reply writes the translation from the file's lines.
"""

from __future__ import annotations

from contextfold import conversation as c
from contextfold.context import Context
from contextfold.conversation import Conversation, Header, Item, Provenance, Text, ToolCall, ToolSpec
from contextfold.pipeline.base import Budget, Policy
from contextfold.pipeline.edits import current_turn_start
from contextfold.pipeline.stages.clear import clear, placeholder
from contextfold.pipeline.stages.put_back import put_back
from contextfold.reading import in_hand, names
from contextfold.tokens import Estimator

SKILL = "/Users/dev/agent-configs/skills/technical-blog-writing/SKILL.md"
POST = "/Users/dev/blog/docs/posts/AI/claude-code-config.md"
HEADER = Header(system=(Item("system", (Text("You are a coding agent."),)),),
                tools=(ToolSpec("Read", "read a file"), ToolSpec("Edit", "edit a file")))


def skill_text() -> str:
    """The skill file as the reader shows it: numbered lines, each with a value the translation keeps verbatim."""
    return "\n".join(f"{n:>6}→- Use `font-size:{n}px` for heading level {n % 6 + 1}; the card is `width:{n * 10}px` "
                     "wide with a 1px border" for n in range(1, 161))


def post_text(k: int) -> str:
    return "\n".join(f"{n:>6}→ permission rule {k}-{n}: Bash(ls*) is allowed in project {k}, prompt {n}"
                     for n in range(1, 121))


def read(cid: str, path: str, said: str = "") -> Item:
    return c.assistant(said, [ToolCall(cid, "Read", {"file_path": path})])


def session(context: Context, now: list[float]) -> list[Conversation]:
    """The requests of the session (each ``prepare_view``), the last one after the person's return to the task."""
    context.set_header(HEADER)
    views = []
    context.add([c.user(f"{SKILL} 转成中文")])
    views.append(context.prepare_view().snapshot())
    context.add([read("s", SKILL), c.tool("s", skill_text())])
    views.append(context.prepare_view().snapshot())
    context.add([c.assistant(f"Plan: translate `{SKILL}` into Chinese, keeping code and values. Proceed?"),
                 c.user("Why was I asked to allow ls? My settings allow it.")])
    views.append(context.prepare_view().snapshot())
    for k in range(6):  # the side discussion: the agent reads and edits a blog post, round after round
        now[0] += 400 if k == 3 else 5  # the cache goes cold once
        context.add([read(f"p{k}", POST, f"Checking the permission rules, part {k}."), c.tool(f"p{k}", post_text(k))])
        views.append(context.prepare_view().snapshot())
    context.add([c.assistant(f"Updated `{POST}` with the third case."),
                 c.user("回到之前的任务，翻译那个 SKILL.md")])
    views.append(context.prepare_view().snapshot())
    return views


def test_the_file_the_person_returns_to_is_put_back_whole_after_clearing() -> None:
    now = [0.0]
    context = Context(window_tokens=32_000, max_output_tokens=4_000, clock=lambda: now[0],
                      policy=Policy(background_summaries="never"))
    views = session(context, now)
    during = [item.text for item in views[-2].items]
    assert skill_text() not in during  # cleared during the side discussion (the cache went cold)
    last = views[-1]
    restored = [i for i, item in enumerate(last.items) if item.provenance.restored]
    assert restored == [len(last) - 2]  # one item, just before the person's words that name the file
    assert skill_text() in last[restored[0]].text  # whole: every value the translation keeps
    assert last[-1].text == "回到之前的任务，翻译那个 SKILL.md"
    cached = views[-2].items
    assert all(last.items[i] is cached[i] for i in range(len(cached)))  # the cached prefix is unchanged


def test_clearing_keeps_the_read_the_latest_turn_names_and_clears_the_others() -> None:
    items = [c.user(f"Translate {SKILL}"), read("s", SKILL), c.tool("s", skill_text()),
             c.assistant("Plan: translate it. Proceed?"), c.user("Why the ls prompt?")]
    for k in range(4):
        items += [read(f"p{k}", POST), c.tool(f"p{k}", post_text(k))]
    items += [c.assistant("Done with the post."), c.user("Back to the earlier task: translate that SKILL.md")]
    conversation = Conversation(items, HEADER)
    est = Estimator()
    budget = Budget(policy=Policy(), window_tokens=32_000, trigger_tokens=28_000, count=est.conversation,
                    count_item=est.item, idle_s=3_600)
    cleared, events = clear(conversation, budget)
    assert events
    assert cleared[2].text == skill_text()  # named by the person's latest request: whole
    assert "output cleared" in cleared[6].text  # an older read of the blog post: cleared


def test_the_latest_turn_names_files_by_path_tail_or_file_name() -> None:
    assert names("回到之前的任务，翻译那个SKILL.md", SKILL)
    assert names("now edit `skills/technical-blog-writing/SKILL.md:12`.", SKILL)
    assert names(r"fix C:\repo\src\pages\HomePage.tsx please", r"C:\repo\src\pages\HomePage.tsx")
    assert not names("see SKILL.mdx and MY_SKILL.md", SKILL)
    assert not names("the src folder", "/repo/src")
    items = [c.user("task"), read("a", POST), c.tool("a", "x"), read("b", SKILL), c.tool("b", "y"),
             c.assistant("", [ToolCall("e", "Edit", {"file_path": POST, "old_string": "x", "new_string": "z"})]),
             c.tool("e", "The file has been updated.")]
    assert in_hand(Conversation(items).items) == {POST: 5}  # the newest call edits it; nothing latest names the skill


def test_a_wrap_up_naming_many_files_names_none_as_the_one_to_work_on() -> None:
    paths = [f"/repo/src/{name}.ts" for name in ("server", "app", "config", "risk")]
    items = [c.user("Harden the service.")]
    for k, path in enumerate(paths):
        items += [read(f"r{k}", path), c.tool(f"r{k}", f"export const {k} = 1;")]
    wrap_up = c.assistant("Done. Changed " + ", ".join(f"`src/{p.rsplit('/', 1)[1]}`" for p in paths) + ".")
    assert in_hand(Conversation([*items, wrap_up]).items) == {paths[3]: 7}  # only the newest call's file
    plan = c.assistant("Next I rewrite `src/risk.ts` and `src/config.ts`.")
    assert in_hand(Conversation([*items, plan]).items) == {paths[3]: 7, paths[2]: 9}


def test_restored_files_do_not_start_a_turn() -> None:
    items = [c.user("task"), read("a", POST), c.tool("a", "x"),
             Item("user", (Text("files restored"),), provenance=Provenance(restored=True)), read("b", SKILL)]
    assert current_turn_start(items) == 1


def test_a_put_back_stays_below_where_a_due_clearing_stops() -> None:
    """The file comes back only while the request stays under ``clear_first_max_fraction`` of the trigger: nearer the
    trigger, it brought the next summary sooner, which lost more than the file brought."""
    est = Estimator()
    whole = Conversation([c.user(f"Translate {SKILL}"), read("s", SKILL), c.tool("s", skill_text()),
                          c.assistant("Plan: translate it."), c.user("Back to the earlier task: that SKILL.md")],
                         HEADER)
    cleared = whole.with_items([*whole.items[:2], placeholder(whole[2], est.item(whole[2]), "clear"), *whole.items[3:]])
    by_id = {item.id: item for item in whole.items}
    need = est.conversation(cleared) + est.text(skill_text())
    roomy = Policy(persist_whole_tail_fraction=10.0)  # the outputs in hand may take the file: only the level binds

    def put_back_under(trigger: int) -> Conversation:
        budget = Budget(policy=roomy, window_tokens=64_000, trigger_tokens=trigger, count=est.conversation,
                        count_item=est.item, count_text=est.text, new_from=len(cleared) - 1, original=by_id.get)
        return put_back(cleared, budget)[0]

    back = put_back_under(int(need / 0.7) + 300)  # room under 70 % of the trigger: put back, before the request
    assert back[-2].provenance.restored and skill_text() in back[-2].text
    assert put_back_under(int(need / 0.7) - 300) is cleared  # past it, though under the trigger: not put back


def test_put_back_reads_on_the_reads_the_request_took_since_it_last_looked() -> None:
    """Which reads are cleared is read once per item as the request grows (not of the whole request at every step):
    a cleared read appended after an earlier look is found, and put back."""
    est = Estimator()
    conversation = Conversation([c.user(f"Translate {SKILL}"), read("s", SKILL), c.tool("s", skill_text()),
                                 c.assistant("Plan: translate it.")], HEADER)
    again = [read("t", SKILL), c.tool("t", skill_text())]
    by_id = {item.id: item for item in [*conversation.items, *again]}

    def budget() -> Budget:
        return Budget(policy=Policy(persist_whole_tail_fraction=10.0), window_tokens=64_000, trigger_tokens=60_000,
                      count=est.conversation, count_item=est.item, count_text=est.text,
                      new_from=len(conversation) - 1, original=by_id.get)

    assert put_back(conversation, budget())[0] is conversation  # nothing cleared yet
    conversation.append(again[0])
    conversation.append(placeholder(conversation.linked(again[1]), est.item(again[1]), "clear"))
    conversation.append(c.user("Back to the earlier task: that SKILL.md"))
    back = put_back(conversation, budget())[0]
    assert back[-2].provenance.restored and skill_text() in back[-2].text


def test_a_read_in_hand_in_the_current_turn_is_never_cleared_even_to_a_due_target() -> None:
    """The newest read of the named file is the output the agent just fetched: a due compaction clearing down to its
    target took it last but still took it, before the model had seen it (the reply quoting it was sent a
    placeholder)."""
    items = [c.user("Why the ls prompt?")]
    for k in range(4):
        items += [read(f"p{k}", POST), c.tool(f"p{k}", post_text(k))]
    items += [c.assistant("Done with the post."), c.user(f"Back to the earlier task: translate {SKILL}"),
              read("s", SKILL), c.tool("s", skill_text()), read("g", "/Users/dev/glossary.md"), c.tool("g", "API: 接口")]
    conversation = Conversation(items, HEADER)
    est = Estimator()
    budget = Budget(policy=Policy(), window_tokens=32_000, trigger_tokens=20_000, count=est.conversation,
                    count_item=est.item, idle_s=3_600, compaction_due=True, target_tokens=1_000)  # all is not enough
    cleared, events = clear(conversation, budget)
    assert events and "output cleared" in cleared[2].text  # the old outputs went
    assert cleared[-3].text == skill_text()  # read in this turn (not its latest output): as it came
