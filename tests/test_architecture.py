"""The package's import graph: no cycle, and no module importing from a layer above its own.

Read from the source with ``ast`` (nothing is imported), every import counted:
top-level, inside functions, and under ``TYPE_CHECKING`` alike, since each is
a dependency a reader has to follow. The layers are defined here once, and
``docs/architecture.md`` must list the same ones (checked below), so the
document stays true to the code.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src"
PACKAGE = "contextfold"

LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("model", frozenset({"errors", "usage", "limits", "blocks", "pairing", "conversation", "codec", "events", "actions",
                         "boundary", "inspection", "synthetic", "redaction", "private_files", "reading", "readings",
                         "folds"})),
    ("wire", frozenset({"adapters", "importers", "sdk"})),
    ("accounting", frozenset({"tokens", "stores"})),
    ("decisions", frozenset({"summarizers", "pipeline", "rendering", "lookback"})),
    ("facade", frozenset({"context", "__init__"})),
    ("uses", frozenset({"replay", "bench", "agent", "providers", "integrations", "testing"})),
    ("cli", frozenset({"cli", "__main__"})),
)
"""Lowest first: a module may import from its own layer and the layers before it. A room is a
top-level module or package of ``contextfold``; ``__init__`` is the package's public face."""

ALLOWED: dict[tuple[str, str], str] = {
    ("contextfold.conversation", "contextfold.reading"):
        "Conversation.units keeps a text-mode command with its output, and which user message is an output is the "
        "session reader's answer, which reads Items: imported inside units(), once both are built",
}
"""Imports that break the layering on purpose, ``(importer, imported)`` module to module, each with why."""


def module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in (SOURCE / PACKAGE).rglob("*.py")}


@cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of a module's syntax tree, parsed once for all the checks of a run (the source does not change)."""
    return tuple(ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The package's modules that ``name`` imports (``from a import b`` counts as ``a.b`` when that is a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in nodes(path):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.split(".")[0] == PACKAGE)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != PACKAGE:
                continue
            submodules = [f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in known]
            if len(submodules) < len(node.names):
                yield target
            yield from submodules


@cache
def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: set(imports(name, path, known)) - {name} for name, path in known.items()}


def room(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer(name: str) -> int:
    for index, (_, rooms) in enumerate(LAYERS):
        if room(name) in rooms:
            return index
    raise AssertionError(f"{name} is in no layer: add its room {room(name)!r} to LAYERS and to docs/architecture.md")


def test_every_module_is_in_a_layer() -> None:
    for name in modules():
        layer(name)


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    upward = [
        f"{importer} ({LAYERS[layer(importer)][0]}) imports {imported} ({LAYERS[layer(imported)][0]})"
        for importer, targets in graph().items()
        for imported in sorted(targets)
        if layer(imported) > layer(importer) and (importer, imported) not in ALLOWED
    ]
    assert not upward, "imports that run up the layers:\n" + "\n".join(upward)


def test_no_import_cycle() -> None:
    edges = {name: {t for t in targets if (name, t) not in ALLOWED} for name, targets in graph().items()}
    cycles = [sorted(component) for component in strongly_connected(edges) if len(component) > 1]
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_every_allowed_exception_is_still_needed() -> None:
    edges = graph()
    stale = [pair for pair in ALLOWED if pair[1] not in edges.get(pair[0], set())]
    assert not stale, f"these exceptions no longer happen; remove them from ALLOWED: {stale}"


def test_the_architecture_document_lists_these_layers() -> None:
    document = ROOT / "docs" / "architecture.md"
    if not document.exists():
        pytest.fail("docs/architecture.md is missing")
    rows = re.findall(r"^\|\s*(\d+)\s*\|\s*(\w+)\s*\|([^|]*)\|", document.read_text(encoding="utf-8"), re.MULTILINE)
    documented = [(name, frozenset(re.findall(r"`([\w.]+)`", rooms))) for _, name, rooms in rows]
    assert documented == [(name, frozenset(rooms)) for name, rooms in LAYERS]


def strongly_connected(edges: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components (iterative: the graph may be deep)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                found.append(component)
    return found


def provider_name_switches(path: Path, names: frozenset[str]) -> Iterator[str]:
    """Where a module switches on a provider name: compares one (``==``, ``in``) or keys a dict literal with one."""

    def named(node: ast.AST | None) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in names
        return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and any(named(e) for e in node.elts)

    for node in nodes(path):
        if isinstance(node, ast.Compare) and any(named(side) for side in (node.left, *node.comparators)):
            yield f"{path.name}:{node.lineno} compares a provider name"
        elif isinstance(node, ast.Dict) and any(named(key) for key in node.keys):
            yield f"{path.name}:{node.lineno} keys a dict by provider name"


def test_only_the_adapters_switch_on_a_provider_name() -> None:
    """A provider is one object in ``adapters/``, chosen by name in its registry: nowhere else may a provider's name
    decide anything (a new provider would have to be added there too). ``testing/`` is the other side of the wire:
    its scripted servers stand in for each provider's API, so they answer each wire format by its name."""
    from contextfold.adapters import PROVIDERS

    adapters, servers = SOURCE / PACKAGE / "adapters", SOURCE / PACKAGE / "testing"
    switches = [
        where
        for path in sorted((SOURCE / PACKAGE).rglob("*.py"))
        if adapters not in path.parents and servers not in path.parents
        for where in provider_name_switches(path, frozenset(PROVIDERS))
    ]
    assert not switches, "provider names switched on outside adapters/:\n" + "\n".join(switches)


def test_the_provider_name_check_can_fail(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text('MODELS = {"anthropic": "m"}\nif provider == "openai":\n    pass\nok = kind in ("session",)\n')
    assert len(list(provider_name_switches(module.resolve(), frozenset({"anthropic", "openai"})))) == 2


def test_the_only_overflow_detector_called_is_the_adapters() -> None:
    """"Prompt too long" is decided by ``Adapter.prompt_too_long`` alone: outside ``adapters/`` nothing calls the
    module functions, so a provider's own wording (Gemini's) is never missed."""
    adapters = SOURCE / PACKAGE / "adapters"
    calls = []
    for path in sorted((SOURCE / PACKAGE).rglob("*.py")):
        if adapters in path.parents:
            continue
        for node in nodes(path):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in OVERFLOW_FUNCTIONS:
                calls.append(f"{path.relative_to(SOURCE)}:{node.lineno} calls {node.func.id}()")
    assert not calls, "overflow detectors called other than through an adapter:\n" + "\n".join(calls)


OVERFLOW_FUNCTIONS = frozenset({"prompt_too_long", "is_prompt_too_long"})
