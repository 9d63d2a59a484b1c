"""Agent sessions generated here, deterministic per seed: a realistic coding session and a hostile one.

The demo and the tests need sessions that are not in the shared corpus: the
same shape as a real coding agent's (source files read with line numbers,
greps, failing test runs with tracebacks, edits, re-reads of edited files,
todo updates, parallel calls), of any length, reproducible from a seed, and
with nothing copied from anyone's recording. The load probe needs the steps
of an agent at its worst (:func:`hostile_steps`): parallel calls, 1 MB and
empty outputs, images, thinking with signatures, errors.
"""

from __future__ import annotations

import base64
import json
import random
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .conversation import Block, Conversation, Header, Image, Item, Text, Thinking, ToolCall, ToolResult, ToolSpec, as_role

SYSTEM_PROMPT = (
    "You are a careful software engineer working in a repository through tools. "
    "Read before you edit, run the tests after every change, keep the todo list current, "
    "and finish with a short report of what you changed and why."
)

TOOLS = (
    ToolSpec("bash", "Run a shell command in the repository; returns exit code and output.",
             {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    ToolSpec("read_file", "Read a file with line numbers.",
             {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    ToolSpec("edit_file", "Replace one exact string in a file.",
             {"type": "object", "properties": {"path": {"type": "string"}, "old": {"type": "string"},
                                               "new": {"type": "string"}}, "required": ["path", "old", "new"]}),
    ToolSpec("grep", "Search the repository for a regular expression.",
             {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}),
    ToolSpec("todo_write", "Replace the todo list.",
             {"type": "object", "properties": {"todos": {"type": "array"}}, "required": ["todos"]}),
)

_NOUNS = ["order", "invoice", "customer", "discount", "ledger", "shipment", "coupon", "refund", "tax", "basket",
          "payment", "warehouse", "catalog", "price", "stock", "currency", "vendor", "receipt", "account", "batch"]
_VERBS = ["compute", "validate", "apply", "merge", "normalize", "load", "render", "reconcile", "split", "round"]


@dataclass
class _Repo:
    """The fictional repository the agent works in: module name -> source lines."""

    files: dict[str, list[str]] = field(default_factory=dict)

    def numbered(self, path: str) -> str:
        return "\n".join(f"{n:>5}\t{line}" for n, line in enumerate(self.files[path], 1))


def _function(rng: random.Random, name: str) -> list[str]:
    noun = rng.choice(_NOUNS)
    lines = [f"def {name}({noun}, *, strict=False):", f'    """{name.replace("_", " ").capitalize()} for one {noun}."""']
    for k in range(rng.randint(6, 18)):
        other = rng.choice(_NOUNS)
        lines.append(rng.choice([
            f"    if {noun}.{other}_id is None and strict:",
            f"        raise ValueError(f\"{noun} {{ {noun}.id }} has no {other}\")",
            f"    total_{k} = sum(line.amount for line in {noun}.{other}_lines)",
            f"    {other} = {rng.choice(_VERBS)}_{other}({noun}, rate=Decimal(\"0.{rng.randint(1, 99):02d}\"))",
            f"    log.debug(\"{name}: %s -> %s\", {noun}.id, {other})",
            "    result = result.quantize(Decimal(\"0.01\"), rounding=ROUND_HALF_UP)",
        ]))
    lines.append(f"    return {noun}")
    return lines


def _make_repo(rng: random.Random, modules: int) -> _Repo:
    repo = _Repo()
    for m in range(modules):
        name = f"src/shop/{_NOUNS[m % len(_NOUNS)]}{'' if m < len(_NOUNS) else m}.py"
        lines = ["from decimal import Decimal, ROUND_HALF_UP", "import logging", "", "log = logging.getLogger(__name__)", ""]
        for f in range(rng.randint(4, 9)):
            lines += _function(rng, f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}_{f}") + [""]
        repo.files[name] = lines
    return repo


def _pytest_output(rng: random.Random, path: str, failing: int, passed: int) -> str:
    test_file = path.replace("src/shop/", "tests/test_")
    head = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.7, pytest-8.3.2, pluggy-1.5.0",
        f"collected {failing + passed} items", "",
        f"{test_file} " + "." * passed + "F" * failing, "",
    ]
    body: list[str] = []
    if failing:
        body.append("=================================== FAILURES ===================================")
    for k in range(failing):
        noun = rng.choice(_NOUNS)
        body += [
            f"___________________________ test_{noun}_{k} ___________________________", "",
            f"    def test_{noun}_{k}():", f"        {noun} = make_{noun}(amount=Decimal(\"{rng.randint(1, 999)}.{rng.randint(0, 99):02d}\"))",
            f">       assert apply_{noun}({noun}).total == Decimal(\"{rng.randint(1, 999)}.00\")",
            f"E       AssertionError: assert Decimal('{rng.randint(1, 999)}.{rng.randint(0, 99):02d}') == Decimal('{rng.randint(1, 999)}.00')",
            "", f"{test_file}:{rng.randint(10, 300)}: AssertionError",
        ]
    tail = f"{failing} failed, {passed} passed in {rng.uniform(0.2, 9):.2f}s" if failing else f"{passed} passed in {rng.uniform(0.2, 9):.2f}s"
    return "\n".join(head + body + [f"=========================== {tail} ==========================="])


class _Session:
    """Builds the conversation one round at a time, with timestamps and ids."""

    def __init__(self, rng: random.Random, start: float) -> None:
        self.rng = rng
        self.clock = start
        self.calls = 0
        self.conversation = Conversation(header=Header(system=(Item("system", (Text(SYSTEM_PROMPT),), id="it_system"),), tools=TOOLS))

    def _tick(self, lo: float, hi: float) -> float:
        self.clock += self.rng.uniform(lo, hi)
        return round(self.clock, 3)

    def say(self, role: str, text: str) -> None:
        self.conversation.append(Item(as_role(role), (Text(text),), id=f"it_{len(self.conversation):05d}", timestamp=self._tick(2, 20)))

    def round(self, thought: str, calls: list[tuple[str, dict[str, Any], str, bool]]) -> None:
        """One assistant turn with its (parallel) calls: (tool, arguments, output, is_error)."""
        blocks: list[Block] = [Text(thought)] if thought else []
        ids = []
        for name, args, _, _ in calls:
            self.calls += 1
            call_id = f"call_{self.calls:05d}"
            ids.append(call_id)
            blocks.append(ToolCall(call_id, name, args, json.dumps(args)))
        self.conversation.append(Item("assistant", tuple(blocks), id=f"it_{len(self.conversation):05d}", timestamp=self._tick(3, 25)))
        for call_id, (_, _, output, is_error) in zip(ids, calls):
            item = Item("tool", (ToolResult(call_id, output, is_error or None),), id=f"it_{len(self.conversation):05d}",
                        timestamp=self._tick(0.1, 4))
            self.conversation.append(item)


def _subtask(s: _Session, repo: _Repo, path: str, number: int, total: int) -> Iterator[None]:
    rng = s.rng
    noun = path.rsplit("/", 1)[1].removesuffix(".py").rstrip("0123456789")
    s.round(f"Task {number} of {total}: the {noun} totals are off. Let me find where they are computed.", [
        ("grep", {"pattern": f"def .*{noun}"}, "\n".join(
            f"{p}:{rng.randint(5, 120)}:def {rng.choice(_VERBS)}_{noun}_{k}({noun}, *, strict=False):"
            for k, p in enumerate(rng.sample(sorted(repo.files), min(6, len(repo.files))))), False),
        ("todo_write", {"todos": [{"content": f"Fix {noun} rounding", "status": "in_progress"},
                                  {"content": "Run the full suite", "status": "pending"}]}, "Todos updated.", False),
    ])
    yield
    s.round("", [("read_file", {"path": path}, repo.numbered(path), False)])
    yield
    failing = rng.randint(1, 4)
    s.round(f"Running the {noun} tests to see the failure.", [
        ("bash", {"command": f"python -m pytest tests/test_{noun}.py -x -q"},
         f"exit code 1\n{_pytest_output(rng, path, failing, rng.randint(5, 40))}", True)])
    yield
    for attempt in range(rng.randint(1, 3)):
        line_no = rng.randrange(5, len(repo.files[path]))
        old = repo.files[path][line_no]
        new = old.replace("ROUND_HALF_UP", "ROUND_HALF_EVEN") if "ROUND" in old else old + f"  # checked {noun}"
        repo.files[path][line_no] = new
        s.round(f"Attempt {attempt + 1}: adjusting line {line_no + 1}.",
                [("edit_file", {"path": path, "old": old.strip(), "new": new.strip()},
                  f"Edited {path}: 1 replacement at line {line_no + 1}.", False)])
        yield
        still = attempt == 0 and rng.random() < 0.5
        s.round("", [("bash", {"command": f"python -m pytest tests/test_{noun}.py -q"},
                      f"exit code {1 if still else 0}\n{_pytest_output(rng, path, failing if still else 0, rng.randint(5, 40))}",
                      still)])
        yield
        if not still:
            break
    s.round("Reading the file again to double-check the change in context.", [("read_file", {"path": path}, repo.numbered(path), False)])
    yield
    s.say("assistant", f"The {noun} totals now round half-even as the tests expect; the suite for {noun} passes.")
    yield


def generate_session(rounds: int = 200, seed: int = 7, modules: int = 24, start: float = 1_767_225_600.0) -> Conversation:
    """A coding-agent session with at least ``rounds`` tool rounds, same output for the same seed."""
    rng = random.Random(seed)
    repo = _make_repo(rng, modules)
    s = _Session(rng, start)
    paths = sorted(repo.files)
    s.say("user", "The checkout totals in our shop package are wrong in several modules (src/shop/*.py): "
                  "amounts are rounded half-up where the accounting rules say half-even. Fix every module, "
                  "keep the tests green (python -m pytest), and report what changed.")
    number = 0
    while sum(1 for i in s.conversation if i.role == "assistant" and i.tool_calls) < rounds:
        path = paths[number % len(paths)]
        number += 1
        for _ in _subtask(s, repo, path, number, len(paths)):
            pass
        if number % 5 == 0:
            s.say("user", f"Thanks. Please also keep an eye on warnings in {rng.choice(paths)} while you go.")
    s.say("assistant", f"Done: {number} modules fixed to round half-even; all tests pass.")
    return s.conversation


HOSTILE_TASK = ("Investigate the nightly failures: read the logs, compare the screenshots with the baseline "
                "in ci/screens/baseline-0042.png, and fix ticket OPS-7731 without breaking the ledger_v2 export.")


def png_header(width: int, height: int) -> str:
    """A base64 PNG whose header declares ``width`` x ``height`` (what token counting reads), with filler data."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + chunk + bytes(range(256)) * 8).decode()


def _hostile_output(rng: random.Random, step: int, call: int) -> tuple[tuple[Text | Image, ...] | str, bool]:
    """One tool output of the hostile agent: mostly ordinary, sometimes huge, empty, an image or an error."""
    roll = rng.random()
    if roll < 0.08:
        return f"log {step}.{call} " + "".join(f"{k:07d} worker_{k % 13} ok\n" for k in range(40_000)), False
    if roll < 0.16:
        return "", False
    if roll < 0.26:
        side = rng.choice([(640, 480), (1024, 768), (800, 800)])
        return (Text(f"screenshot {step}.{call}"), Image(data=png_header(*side), media_type="image/png")), False
    if roll < 0.38:
        frames = "\n".join(f'  File "src/app/module_{k}.py", line {rng.randint(1, 900)}, in handler_{k}' for k in range(12))
        return f"Traceback (most recent call last):\n{frames}\nValueError: bad ledger_v2 row {step * 7 + call}", True
    return "\n".join(f"{step}:{call}:{k} " + " ".join(rng.choice(_NOUNS) for _ in range(12)) for k in range(rng.randint(5, 120))), False


def hostile_steps(steps: int, seed: int = 11, *, images_in_results: bool = True) -> Iterator[list[Item]]:
    """What an agent loop adds before each request: the task first, then each step's assistant turn (thinking
    with a signature, a line of text, one to five parallel calls) and its tool results; a user message now and then.

    OpenAI Chat carries no image in a tool message: with ``images_in_results=False`` a screenshot comes
    in a user message after the results instead, as agents on that API send them.
    """
    rng = random.Random(seed)
    yield [Item("user", (Text(HOSTILE_TASK), Image(data=png_header(1000, 700), media_type="image/png")), id="task")]
    for step in range(steps):
        calls = [ToolCall(f"s{step}c{k}", rng.choice(["bash", "read_file", "grep"]), {"command": f"step {step} call {k}"})
                 for k in range(rng.randint(1, 5))]
        thinking = Thinking(f"Step {step}: " + " ".join(rng.choice(_NOUNS) for _ in range(rng.randint(5, 400))),
                            signature=f"sig-{seed}-{step}")
        items = [Item("assistant", (thinking, Text(f"Running {len(calls)} checks."), *calls), id=f"a{step}")]
        images: list[Item] = []
        for k, call in enumerate(calls):
            output, is_error = _hostile_output(rng, step, k)
            if not images_in_results and not isinstance(output, str):
                images.append(Item("user", output, id=f"i{step}.{k}"))
                output = f"screenshot {step}.{k} attached below"
            items.append(Item("tool", (ToolResult(call.id, output, is_error or None),), id=f"r{step}.{k}"))
        items.extend(images)
        if step % 9 == 8:
            items.append(Item("user", (Text(f"Also check run {step} of ledger_v2; keep OPS-7731 in mind."),), id=f"u{step}"))
        yield items
