"""Hostile inputs for the typed-error contract, shared by ``tests/test_fuzz.py`` and ``benchmarks/fuzz.py``.

Two kinds of input, each mutated from something valid so that the fault
sits deep inside otherwise plausible data:

* adapter inputs: a valid request (drawn by :mod:`strategies`) or reply,
  with a few nodes replaced by hostile values (a list or object as ``role``
  or ``type``, nesting thousands deep, lone surrogates, bytes, NaN, numbers
  too long for JSON, keys that are not strings), keys deleted, lists
  reshuffled (:func:`mutate_tree`);
* session files: a real recording of the shared corpus with bytes flipped,
  lines cut or shuffled, or, parsed, with nodes of its JSON replaced the same
  way (wrong-typed usage fields, deep JSON) (:func:`mutate_file`).

Each case returns an outcome: ``accepted`` or ``rejected`` (a contextfold
typed error) are the only good ones. ``untyped`` is any other exception;
``mismatch`` an accepted input that does not come back from a round trip
(written in its format, it must be the input again; read back, the same
neutral items); ``hang`` an input over the time bound of :func:`time_bound`.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import random
import signal
import subprocess
import sys
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, is_dataclass, replace
from dataclasses import fields as dc_fields
from pathlib import Path
from typing import Any

from contextfold.adapters import PROVIDERS, adapter_for
from contextfold.codec import conversation_to_dict
from contextfold.conversation import Conversation, Item, Text
from contextfold.errors import ContextfoldError
from contextfold.importers import load
from contextfold.inspection import compose
from contextfold.tokens import Estimator

GOOD = ("accepted", "rejected")

# --------------------------------------------------------------------------- hostile values


def deep(depth: int, kind: str = "list") -> Any:
    """A value nested ``depth`` levels (lists, objects, or both in turn), built without recursion."""
    value: Any = "bottom"
    for level in range(depth):
        value = [value] if kind == "list" or (kind == "mixed" and level % 2) else {"k": value}
    return value


HOSTILE: tuple[tuple[str, Callable[[random.Random], Any]], ...] = (
    ("None", lambda r: None),
    ("true", lambda r: True),
    ("zero", lambda r: 0),
    ("negative", lambda r: -7),
    ("float", lambda r: 2.5),
    ("NaN", lambda r: math.nan),
    ("infinity", lambda r: -math.inf),
    ("64-bit overflow", lambda r: 2**70),
    ("5000-digit number", lambda r: 10**5000),
    ("empty string", lambda r: ""),
    ("string", lambda r: r.choice(["x", "user", "assistant", "tool", "text", "tool_use", "message", "0"])),
    ("lone surrogate", lambda r: r.choice(["\ud800", "ok \udfff", "\udbff tail"])),
    ("NUL", lambda r: "a\x00b"),
    ("bytes", lambda r: r.choice([b"\xff\xfe", b"plain"])),
    ("empty list", lambda r: []),
    ("empty object", lambda r: {}),
    ("list", lambda r: ["user"]),
    ("object", lambda r: {"type": "text", "text": "x"}),
    ("deep list", lambda r: deep(r.choice([1_000, 3_000, 20_000]), "list")),
    ("deep object", lambda r: deep(r.choice([1_000, 3_000]), "dict")),
    ("deep mixed", lambda r: deep(1_500, "mixed")),
    ("tuple", lambda r: ("a", 1)),
    ("set", lambda r: {1, 2}),
    ("python object", lambda r: object()),
    ("non-string key", lambda r: {1: "a", ("t",): "b"}),
)
"""Values that do not belong where they are put, by name; each factory may choose among variants."""

_TYPE_NAMES = (
    "text", "image", "document", "thinking", "redacted_thinking", "tool_use", "tool_result", "server_tool_use",
    "image_url", "file", "input_audio", "refusal", "function", "custom", "message", "function_call",
    "function_call_output", "custom_tool_call", "reasoning", "input_text", "output_text", "input_image", "input_file",
)
"""Block and item types of the three formats, swapped in to put a valid type on the wrong shape."""
_HOT_KEYS = ("role", "type", "content", "text", "usage", "input_tokens", "output_tokens", "prompt_tokens",
             "cache_read_input_tokens", "tool_calls", "arguments", "input", "id", "call_id", "tool_use_id",
             "kind", "uuid", "parentUuid", "message", "messages", "extra", "response", "info", "config", "tools",
             "thought", "observation", "action", "payload", "msg", "item", "items", "tool_call", "history",
             "trajectory", "transitions", "actions", "traj", "changes", "completion", "toolUseResult", "output")
"""Keys worth aiming at: the ones readers (adapters and importers) branch on, count with or descend into."""


# --------------------------------------------------------------------------- tree mutations


def _copy(value: Any, depth: int = 0) -> Any:
    """A copy of a JSON-like tree deep enough to mutate (containers copied down to 50 levels, the rest shared)."""
    if depth > 50:
        return value
    if isinstance(value, dict):
        return {k: _copy(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v, depth + 1) for v in value]
    return value


def _slots(tree: Any) -> list[tuple[Any, Any]]:
    """Every ``(container, key)`` in ``tree`` (iteratively: a tree may already be deep)."""
    slots: list[tuple[Any, Any]] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if len(slots) > 50_000:
            break
        if isinstance(node, dict):
            for key, child in node.items():
                slots.append((node, key))
                stack.append(child)
        elif isinstance(node, list):
            for position, child in enumerate(node):
                slots.append((node, position))
                stack.append(child)
    return slots


def mutate_tree(tree: Any, rng: random.Random, count: int | None = None) -> tuple[Any, list[str]]:
    """A mutated copy of a JSON-like ``tree`` and what was done to it (1-3 mutations unless ``count``)."""
    tree = _copy(tree)
    done: list[str] = []
    for _ in range(count if count is not None else rng.choice([1, 1, 2, 3])):
        slots = _slots(tree)
        if not slots:
            name, make = rng.choice(HOSTILE)
            return make(rng), [f"replaced the whole input by {name}"]
        hot = [s for s in slots if isinstance(s[0], dict) and s[1] in _HOT_KEYS]
        container, key = rng.choice(hot) if hot and rng.random() < 0.5 else rng.choice(slots)
        done.append(_mutate_at(container, key, rng))
    return tree, done


def _mutate_at(container: Any, key: Any, rng: random.Random) -> str:
    where = f"[{key!r}]"
    operation = rng.randrange(12)
    if operation >= 10:  # benign: what a reader must carry, so that accepted inputs get round-tripped too
        if isinstance(container[key], str) and operation == 10:
            container[key] = rng.choice(["other text", "日本語 🙂", "line\nbreak", " "])
            return f"{where} = other text"
        target = container if isinstance(container, dict) else container[key]
        if isinstance(target, dict):
            target[f"x_vendor_{rng.randrange(9)}"] = rng.choice([1, "v", None, [1, "two"], {"nested": True}])
            return f"vendor key beside {where}"
        operation = 9
    if operation <= 4:
        name, make = rng.choice(HOSTILE)
        container[key] = make(rng)
        return f"{where} = {name}"
    if operation == 5 and isinstance(container, dict):
        del container[key]
        return f"deleted {where}"
    if operation == 5 and isinstance(container, list):
        container.insert(key, _copy(container[key]))
        return f"duplicated {where}"
    if operation == 6:
        container[key] = rng.choice(_TYPE_NAMES)
        return f"{where} = a type name"
    if operation == 7:
        container[key] = [container[key]]
        return f"wrapped {where} in a list"
    if operation == 8 and isinstance(container, dict):
        name, make = rng.choice(HOSTILE)
        container[rng.choice(_HOT_KEYS)] = make(rng)
        return f"added a hot key beside {where} = {name}"
    if isinstance(container, list):
        rng.shuffle(container)
        return f"shuffled the list holding {where}"
    container[key] = {"type": rng.choice(_TYPE_NAMES)}
    return f"{where} = a bare typed object"


# --------------------------------------------------------------------------- outcomes


class Hang(BaseException):
    """An input ran past its time bound (a BaseException, so no ``except Exception`` in the library hides it)."""


@contextmanager
def time_bound(seconds: float | None) -> Iterator[None]:
    """Raise :class:`Hang` in the main thread after ``seconds`` (``None``: no bound)."""
    if not seconds:
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise Hang(f"over {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Outcome:
    kind: str  # accepted | rejected | untyped | mismatch | hang
    detail: str = ""

    @property
    def good(self) -> bool:
        return self.kind in GOOD


def untyped(error: BaseException) -> Outcome:
    frames = traceback.extract_tb(error.__traceback__)[-3:]
    where = " < ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(frames))
    return Outcome("untyped", f"{type(error).__name__}: {str(error)[:160]} at {where}")


def judged(run: Callable[[], Outcome], seconds: float | None = None) -> Outcome:
    """``run()``'s outcome; a contextfold error is ``rejected``, any other exception ``untyped``."""
    try:
        with time_bound(seconds), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return run()
    except Hang as error:
        return Outcome("hang", str(error))
    except ContextfoldError as error:
        return Outcome("rejected", type(error).__name__)
    except Exception as error:  # noqa: BLE001 - what the contract forbids, counted
        return untyped(error)


@dataclass
class Tally:
    """Counts of outcomes per kind of case, and the first few bad ones with their inputs described."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    bad: dict[str, tuple[int, str]] = field(default_factory=dict)
    """Each distinct fault (kind and where it was raised), how often, and the first input that showed it."""

    def add(self, case: str, outcome: Outcome, described: str) -> None:
        self.counts[case, outcome.kind] += 1
        if not outcome.good:
            key = f"{case}: {outcome.kind}: {outcome.detail.split(': ', 1)[0]} {outcome.detail.rpartition(' at ')[2]}"
            seen, example = self.bad.get(key, (0, f"{outcome.detail} <- {described}"))
            self.bad[key] = (seen + 1, example)

    def total(self, case_prefix: str = "") -> int:
        return sum(n for (case, _), n in self.counts.items() if case.startswith(case_prefix))

    def failures(self) -> int:
        return sum(n for (_, kind), n in self.counts.items() if kind not in GOOD)


# --------------------------------------------------------------------------- adapter cases


def request_parts(provider: str, request: Any) -> tuple[Any, Any, Any]:
    """``(messages, system, tools)`` of a (possibly mutated) request as the strategies draw it."""
    if not isinstance(request, dict):
        return request, None, None
    messages = request.get("items" if provider == "responses" else adapter_for(provider).messages_key)
    return messages, request.get(SYSTEM_KEYS.get(provider, "")), request.get("tools")


def expected_write(provider: str, messages: Any, system: Any, tools: Any) -> dict[str, Any]:
    """What writing back what was read must give: the request itself, with the fields the writer always has."""
    adapter = adapter_for(provider)
    if provider == "gemini":  # the writer always has the three fields
        return {"contents": messages, "system_instruction": system, "tools": tools or []}
    written = {adapter.messages_key: messages, "tools": tools or []}
    return {"system": system, **written} if provider == "anthropic" else written


def plain(value: Any) -> Any:
    """A JSON-like value with tuples as lists (the writers build lists)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def neutral(conversation: Conversation) -> tuple[Any, ...]:
    """A conversation without what each read makes afresh (item ids, Anthropic message group ids)."""

    def bare(item: Item) -> Any:  # Anthropic's message groups and Gemini's contents get fresh ids on each read
        return replace(item, id="", meta={k: v for k, v in item.meta.items() if k not in ("group", "content")})

    header = conversation.header
    return (
        replace(header, system=tuple(map(bare, header.system)), pinned=tuple(map(bare, header.pinned))),
        [bare(item) for item in conversation],
    )


def read(provider: str, messages: Any, system: Any, tools: Any) -> Conversation:
    if provider in SYSTEM_KEYS:
        return adapter_for(provider).read(messages, system=system, tools=tools)
    return adapter_for(provider).read(messages, tools=tools)


SYSTEM_KEYS = {"anthropic": "system", "gemini": "system_instruction"}
"""The request field of the system prompt, in the formats that keep it beside the messages."""


def reread(provider: str, written: dict[str, Any]) -> Conversation:
    adapter = adapter_for(provider)
    return read(provider, written[adapter.messages_key], written.get(SYSTEM_KEYS.get(provider, "")), written["tools"])


def adapter_case(provider: str, request: Any) -> Outcome:
    """Read a (mutated) request; if accepted, it must write back to itself, read back to the same items,
    and write to the other formats or refuse with a typed error, readable there in turn."""
    messages, system, tools = request_parts(provider, request)
    conversation = read(provider, messages, system, tools)
    written = adapter_for(provider).write(conversation)
    if plain(written) != plain(expected_write(provider, messages, system, tools)):
        return Outcome("mismatch", f"{provider}: written back differs from the input")
    if neutral(reread(provider, written)) != neutral(conversation):
        return Outcome("mismatch", f"{provider}: read back differs from the first read")
    for other in PROVIDERS:
        if other == provider:
            continue
        try:
            crossed = adapter_for(other).write(conversation)
        except ContextfoldError:
            continue  # the target cannot carry it, and says so
        reread(other, crossed)  # what a writer wrote, its reader takes
    return Outcome("accepted")


def reply_case(provider: str, reply: Any) -> Outcome:
    """Read a (mutated) model reply and its usage."""
    adapter_for(provider).read_response(reply)
    return Outcome("accepted")


def reply_of(provider: str, request: dict[str, Any]) -> dict[str, Any]:
    """A valid reply to wrap a mutation around: the request's assistant turn as the provider returns it."""
    messages, _, _ = request_parts(provider, request)
    if provider == "anthropic":
        turn = next((m for m in messages if m["role"] == "assistant"), {"content": [{"type": "text", "text": "ok"}]})
        usage = {"input_tokens": 10, "output_tokens": 3, "cache_read_input_tokens": 2}
        return {"id": "msg_1", "type": "message", "role": "assistant", "content": turn["content"],
                "stop_reason": "end_turn", "usage": usage}
    if provider == "openai":
        turn = next((m for m in messages if m.get("role") == "assistant"), {"role": "assistant", "content": "ok"})
        usage = {"prompt_tokens": 10, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 2}}
        return {"choices": [{"message": turn, "finish_reason": "stop"}], "usage": usage}
    if provider == "gemini":
        turn = next((c for c in messages if c.get("role") == "model"), {"role": "model", "parts": [{"text": "ok"}]})
        usage = {"prompt_token_count": 10, "candidates_token_count": 3, "cached_content_token_count": 2}
        return {"candidates": [{"content": turn, "finish_reason": "STOP"}], "usage_metadata": usage}
    output = [m for m in messages if m.get("type") in ("function_call", "reasoning") or m.get("role") == "assistant"]
    usage = {"input_tokens": 10, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 2}}
    return {"output": output, "status": "completed", "usage": usage}


def gemini_request(conversation: Conversation) -> dict[str, Any]:
    """A Gemini request for a valid neutral conversation, as the adapter writes it (the task alone if it cannot)."""
    try:
        return adapter_for("gemini").write(conversation)
    except ContextfoldError:
        return adapter_for("gemini").write(Conversation([Item("user", (Text("hi"),))]))


# --------------------------------------------------------------------------- session files


def base_files(corpus: Path) -> dict[str, bytes]:
    """Every recording of the shared corpus (hidden Aider histories included) by file name, and one
    contextfold session file (``contextfold compact``'s format) made from the Claude Code transcript."""
    files = Files((p.name, p.read_bytes()) for p in sorted(corpus.rglob("*")) if p.is_file() and p.name != "SOURCES.md")
    (conversation,) = load(corpus / "claude-code-transcript" / "python-to-rust-port" / "transcript.jsonl")
    files["session.contextfold.json"] = json.dumps(conversation_to_dict(conversation)).encode()
    return files


class Files(dict):  # type: ignore[type-arg]
    """File contents by name, shown by their names only (a failing example does not print megabytes)."""

    def __repr__(self) -> str:
        return f"Files({sorted(self)})"


_ESTIMATOR = Estimator()


def file_case(path: Path) -> Outcome:
    """Import a (mutated) session file; what is accepted must be countable and storable as contextfold's JSON."""
    for conversation in load(path):
        compose(conversation, _ESTIMATOR.item, lambda c: _ESTIMATOR.header(c.header))
        json.dumps(conversation_to_dict(conversation)).encode("utf-8")
    return Outcome("accepted")


def inspect_case(runner: Any, path: Path, as_json: bool) -> Outcome:
    """``contextfold inspect`` in-process (click's runner): exit 0, or one line and a non-zero exit."""
    return command_case(runner, ["inspect", str(path), "--tokenizer", "estimate", *(["--json"] if as_json else [])])


def inspect_process(path: Path, timeout: float, pycache: Path | None = None) -> Outcome:
    """``python -m contextfold inspect`` as a user runs it: no traceback, one line on failure, a bounded time.

    ``pycache``: a folder the process keeps its compiled bytecode in, as an installed package has it. Without
    one, a process started under ``PYTHONDONTWRITEBYTECODE`` (as this machine's shells are) compiles every
    module it imports from source again, about 0.4 s of CPU of its 1 s."""
    command = [sys.executable, "-m", "contextfold", "inspect", str(path), "--tokenizer", "estimate", "--json"]
    env = None
    if pycache is not None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    try:
        done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=timeout, errors="replace",
                              env=env)
    except subprocess.TimeoutExpired:
        return Outcome("hang", f"over {timeout} s")
    if "Traceback (most recent call last)" in done.stderr:
        return Outcome("untyped", done.stderr.strip().splitlines()[-1][:200])
    if done.returncode == 0:
        return Outcome("accepted")
    lines = done.stderr.strip().splitlines()
    if len(lines) != 1:
        return Outcome("untyped", f"exit {done.returncode} with {len(lines)} lines on stderr")
    return Outcome("rejected", lines[0][:300])


def mutate_file(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A mutated copy of a session file's bytes, and what was done."""
    choice = rng.randrange(8)
    if choice == 0:
        out = bytearray(data)
        for _ in range(rng.choice([1, 3, 20])):
            at = rng.randrange(len(out))
            out[at] ^= 1 << rng.randrange(8)
        return bytes(out), "flipped bits"
    if choice == 1:
        at = rng.randrange(len(data))
        return data[:at], f"truncated at byte {at}"
    lines = data.split(b"\n")
    if choice == 2:
        at = rng.randrange(len(lines))
        cut = lines[at][: rng.randrange(len(lines[at]) + 1)]
        return b"\n".join([*lines[:at], cut, *lines[at + 1:]]), f"cut line {at + 1}"
    if choice == 3:
        a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[a], lines[b] = lines[b], lines[a]
        del lines[rng.randrange(len(lines))]
        return b"\n".join(lines), "swapped two lines and dropped one"
    return _mutate_json(data, lines, rng)


def _mutate_json(data: bytes, lines: list[bytes], rng: random.Random) -> tuple[bytes, str]:
    """Mutate the parsed JSON: the whole document, or one JSON line (after a log prefix, if any)."""
    text = data.decode("utf-8", "replace")
    if text.lstrip()[:1] in ("{", "["):
        try:
            document = json.loads(text)
        except (ValueError, RecursionError):
            document = None
        if document is not None:
            mutated, done = mutate_tree(document, rng)
            return _dumps(mutated, rng), f"document: {'; '.join(done)}"
    candidates = [k for k, line in enumerate(lines) if b"{" in line[:60]]
    if not candidates:
        return data[: len(data) // 2], "no JSON: cut in half"
    for _ in range(5):
        at = rng.choice(candidates)
        prefix, brace, rest = lines[at].partition(b"{")
        try:
            record = json.loads((brace + rest).decode("utf-8"))
        except (ValueError, RecursionError):
            continue
        mutated, done = mutate_tree(record, rng)
        lines[at] = prefix + _dumps(mutated, rng)
        return b"\n".join(lines), f"line {at + 1}: {'; '.join(done)}"
    return data[: len(data) // 3], "no parsable JSON line: cut to a third"


def _dumps(value: Any, rng: random.Random) -> bytes:
    """JSON text of a mutated tree. What JSON cannot hold (bytes, sets, objects) goes in as its repr;
    values nested deeper than ``json.dumps`` goes, and numbers longer than it writes, are spelt out."""
    spelt: list[str] = []

    def cut(node: Any) -> Any:  # replaced by a marker, and the marker by its text after dumping
        depth = _chain_depth(node)
        if depth > 100:
            spelt.append("[" * depth + "0" + "]" * depth)
        elif isinstance(node, int) and node.bit_length() > 10_000:
            spelt.append("7" * 5_000)
        else:
            return node
        return f"@@SPELT{len(spelt) - 1}@@"

    value = cut(value)
    stack = [value]
    while stack:
        node = stack.pop()
        keys = list(node) if isinstance(node, dict) else range(len(node)) if isinstance(node, list) else ()
        for key in keys:
            node[key] = cut(node[key])
            stack.append(node[key])
    text = json.dumps(value, ensure_ascii=rng.random() < 0.7, default=repr, skipkeys=True)
    for number, spelling in enumerate(spelt):
        text = text.replace(f'"@@SPELT{number}@@"', spelling, 1)
    return text.encode("utf-8", "surrogatepass")


def _chain_depth(value: Any) -> int:
    """How deep a value made by :func:`deep` goes (0 for anything else)."""
    depth = 0
    while isinstance(value, (list, dict)) and len(value) == 1:
        value = next(iter(value.values())) if isinstance(value, dict) else value[0]
        depth += 1
    return depth


# --------------------------------------------------------------------------- more entry points: streams, Context, frameworks


def chunks_of(reply: dict[str, Any]) -> list[dict[str, Any]]:
    """An OpenAI Chat reply as the stream that carries it: the text in deltas, the finish reason, a usage chunk."""
    message = reply["choices"][0]["message"]
    text = message.get("content") if isinstance(message.get("content"), str) else "ok"
    pieces = [text[k:k + 7] for k in range(0, len(text), 7)] or [""]
    chunks: list[dict[str, Any]] = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": piece}}]}
                                    for piece in pieces]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    chunks.append({"choices": [], "usage": reply["usage"]})
    return chunks


def chunks_case(chunks: Any) -> Outcome:
    """Put a (mutated) stream of Chat chunks back together as one reply."""
    from contextfold.adapters import reply_from_chunks

    reply_from_chunks(chunks)
    return Outcome("accepted")


def context_add_case(provider: str, request: Any) -> Outcome:
    """``Context.add`` with a (mutated) request, then a request prepared from what was accepted."""
    from contextfold import Context, Storage

    messages, system, tools = request_parts(provider, request)
    context = Context(window_tokens=30_000, provider=provider)
    context.add(messages, system=system, tools=tools)
    context.prepare()
    return Outcome("accepted")


FIRST_TURNS = {"responses": {"type": "message", "role": "user", "content": "go on"},
               "gemini": {"role": "user", "parts": [{"text": "go on"}]}}
"""A user turn in the formats where it is not ``{"role": "user", "content": ...}``."""


def context_response_case(provider: str, reply: Any) -> Outcome:
    """``Context.add_response`` with a (mutated) model reply, after a user turn."""
    from contextfold import Context

    context = Context(window_tokens=30_000, provider=provider)
    context.add([FIRST_TURNS.get(provider, {"role": "user", "content": "go on"})])
    context.add_response(reply)
    return Outcome("accepted")


@dataclass(frozen=True)
class Framework:
    """A framework adapter: its writer (what a valid input looks like) and its reader (the entry point fuzzed)."""

    name: str
    write: Callable[[Conversation], Any]
    read: Callable[[Any], Conversation]


def frameworks() -> list[Framework]:
    """The framework adapters whose framework is installed (google-genai needs none: its dicts are read too).

    google-genai's case is named ``genai``, not ``gemini``: ``benchmarks/fuzz.py --only gemini`` picks the
    Gemini provider's cases by that prefix, and a framework group must not run them too."""
    from contextfold.adapters.gemini import from_genai, to_genai
    from contextfold.adapters.strands import from_strands, to_strands

    found = [Framework("genai", to_genai, from_genai), Framework("strands", to_strands, from_strands)]
    try:
        from contextfold.adapters.langchain import from_langchain, to_langchain

        found.append(Framework("langchain", to_langchain, from_langchain))
    except ImportError:
        pass
    if importlib.util.find_spec("pydantic_ai") is not None:  # the adapter imports it only when converting
        from contextfold.adapters.pydantic_ai import from_pydantic_ai, to_pydantic_ai

        found.append(Framework("pydantic-ai", to_pydantic_ai, from_pydantic_ai))
    return found


_CLASS = "@@class"
"""Where :func:`as_tree` keeps a framework object's class, so :func:`from_tree` can build it again."""


def as_tree(value: Any, depth: int = 0) -> Any:
    """A framework's objects (pydantic models, dataclasses) as dicts holding their class, so they can be mutated."""
    if depth > 50:
        return value
    fields = getattr(type(value), "model_fields", None)
    if fields is not None:
        return {_CLASS: type(value), **{name: as_tree(getattr(value, name), depth + 1) for name in fields}}
    if is_dataclass(value) and not isinstance(value, type):
        return {_CLASS: type(value), **{f.name: as_tree(getattr(value, f.name), depth + 1) for f in dc_fields(value)}}
    if isinstance(value, dict):
        return {k: as_tree(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [as_tree(v, depth + 1) for v in value]
    return value


def from_tree(tree: Any, depth: int = 0) -> Any:
    """The objects of a (mutated) tree built again without validation: hostile values inside real framework types."""
    if depth > 50:
        return tree
    if isinstance(tree, list):
        return [from_tree(v, depth + 1) for v in tree]
    if not isinstance(tree, dict):
        return tree
    cls = tree.get(_CLASS)
    values = {k: from_tree(v, depth + 1) for k, v in tree.items() if k != _CLASS}
    if not isinstance(cls, type):
        return values
    if hasattr(cls, "model_construct"):
        return cls.model_construct(**{k: v for k, v in values.items() if isinstance(k, str)})
    built = object.__new__(cls)
    for name, value in values.items():
        if isinstance(name, str):
            _set_if_holdable(built, name, value)
    return built


def _set_if_holdable(built: Any, name: str, value: Any) -> None:
    """Set ``name`` on ``built`` unless its class cannot hold it (a property with no setter, such as pydantic-ai's
    ``ModelResponse.tool_calls``, or a name outside its slots): a key a mutation added under such a name is
    something no real object of the class can carry, so it is left out rather than failing the harness."""
    try:
        object.__setattr__(built, name, value)
    except AttributeError:
        pass


def framework_seed(framework: Framework, conversation: Conversation) -> Any:
    """What the framework holds for ``conversation``, as a mutable tree (a smaller conversation if it cannot)."""
    try:
        return as_tree(framework.write(conversation))
    except ContextfoldError:
        return as_tree(framework.write(Conversation([Item("user", (Text("hi"),))])))


def framework_case(framework: Framework, tree: Any) -> Outcome:
    """Read a (mutated) framework history: accepted, or a typed error."""
    framework.read(from_tree(tree))
    return Outcome("accepted")


# --------------------------------------------------------------------------- the command line


def command_case(runner: Any, arguments: list[str]) -> Outcome:
    """A ``contextfold`` command in-process (click's runner): exit 0, or one ``contextfold:`` line and a non-zero exit."""
    from contextfold.cli.main import cli

    result = runner.invoke(cli, arguments)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return untyped(result.exception)
    if result.exit_code == 0:
        return Outcome("accepted")
    lines = [line for line in result.stderr.strip().splitlines() if not line.startswith(WARNING)]
    if result.exit_code == 2 and lines and lines[-1].startswith("Error: "):  # click's usage error (--index needed)
        return Outcome("rejected", lines[-1][:300])
    if len(lines) != 1 or not lines[0].startswith("contextfold: "):
        return Outcome("untyped", f"exit {result.exit_code} with {len(lines)} lines on stderr: {lines[:1]}")
    return Outcome("rejected", lines[0][:300])


WARNING = "contextfold: warning: "
"""How a logged warning starts on stderr (a damaged line left out, say): beside the one line of the error."""


def file_commands(path: Path, out: Path) -> dict[str, list[str]]:
    """The commands that read a recorded session file, by name, with the arguments that run them on ``path``."""
    common = ["--tokenizer", "estimate"]
    return {
        "inspect": ["inspect", str(path), *common, "--json"],
        "tokens": ["tokens", str(path), *common, "--json"],
        "replay": ["replay", str(path), "--window", "6000", "--strategy", "default", *common, "--json"],
        "compact": ["compact", str(path), "--window", "6000", "-o", str(out)],
    }


def store_commands(folder: Path, session_id: str) -> dict[str, list[str]]:
    """The commands that read a JSONL store's transcript, by name."""
    return {
        "sessions list": ["sessions", "list", "--store", str(folder), "--json"],
        "sessions show": ["sessions", "show", session_id, "--store", str(folder), "--json"],
        "sessions export": ["sessions", "export", session_id, "--store", str(folder)],
        "inspect STORE#ID": ["inspect", f"{folder}#{session_id}", "--tokenizer", "estimate", "--json"],
    }


def transcript_base(folder: Path) -> bytes:
    """A real transcript of the JSONL store: a task, tool rounds (one failing), a compaction, a usage record."""
    from contextfold import Context, Storage

    context = Context(window_tokens=4_000, storage=Storage(transcript=folder, session_id="base"))
    context.add([{"role": "user", "content": "Fix the failing test in src/app.py"}])
    for k in range(6):
        call = {"type": "tool_use", "id": f"t{k}", "name": "bash", "input": {"command": f"pytest -k case{k}"}}
        context.add([{"role": "assistant", "content": [{"type": "text", "text": f"Step {k}."}, call]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}",
                                                   "content": "FAILED" if k == 2 else "ok\n" * 200}]}])
        context.prepare()
    context.compact()
    context.close()
    return (folder / "base.jsonl").read_bytes()
