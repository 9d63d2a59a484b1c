"""A small generated repository and a scripted agent session over it, shared by the agent tests.

The repository has eight modules whose ``scale()`` adds 1 where it should
not, and a test for each. The script is a plan of steps, one assistant turn
each: the main agent reads, greps, edits, runs checks and keeps a todo list,
module by module, hands a survey to a subagent (the ``task`` tool), writes a
changelog and runs the whole suite; the subagent reads every module and
reports their factors. Each step says what the results of its calls must
contain, and the script checks that when the next request arrives, so a tool
that misbehaves, or a result that does not reach the model, is a failure.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from contextfold.testing.scripted import Call, Seen, Turn

MODULES = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")
FACTORS = {name: index + 3 for index, name in enumerate(MODULES)}
BUG = "return value * FACTOR + 1"
FIX = "return value * FACTOR"
HELPERS = 30
SUBAGENT_MARK = "You are a subagent"
CHANGELOG = "# Changelog\n\n- scale() no longer adds 1 in any of the eight modules.\n"
SUB_REPORT = "SUBAGENT REPORT: factors " + ", ".join(f"{m}={k}" for m, k in FACTORS.items())
FINAL = f"DONE: fixed scale() in {len(MODULES)} modules; the whole suite passes. {SUB_REPORT}"
SUB_PROMPT = "Read every module under pkg/ and report the FACTOR each one defines, as 'name=value' pairs."


def make_repository(root: Path) -> None:
    """The repository the session works on (about 1,500 tokens per module)."""
    (root / "pkg").mkdir()
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "README.md").write_text(
        "# pkg\n\nEvery module has scale(value) = value * FACTOR. Run: python -m pytest -q\n"
    )
    (root.parent / "outside.txt").write_text("a secret outside the working folder\n")
    for name, factor in FACTORS.items():
        helpers = "".join(
            f'\n\ndef {name}_helper_{i:02d}(value):\n    """Return value shifted by {i} ({name} helper number {i})."""\n'
            f"    return value + {i}\n"
            for i in range(HELPERS)
        )
        (root / "pkg" / f"{name}.py").write_text(
            f'"""The {name} module."""\n\nFACTOR = {factor}\n\n\ndef scale(value):\n'
            f'    """Scale value by FACTOR."""\n    {BUG}\n{helpers}'
        )
        (root / "tests" / f"test_{name}.py").write_text(
            f"from pkg.{name} import FACTOR, scale\n\n\ndef test_scale():\n    assert scale(2) == 2 * FACTOR\n"
        )


@dataclass(frozen=True)
class Step:
    """One assistant turn: its calls, and what their results must and must not contain."""

    calls: tuple[Call, ...]
    expect: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()


def _todo(done: int) -> Call:
    todos = [
        {"content": f"fix scale() in pkg/{m}.py", "status": "completed" if i < done else "pending"}
        for i, m in enumerate(MODULES)
    ]
    return Call("todo", {"todos": todos})


def main_plan(python: str = sys.executable) -> list[Step]:
    pytest = f"{python} -m pytest -q -p no:cacheprovider"
    steps = [
        Step((_todo(0),), ("[ ] fix scale() in pkg/alpha.py",)),
        Step((Call("list_files", {}),), ("pkg/alpha.py", "tests/test_theta.py")),
        Step((Call("read_file", {"path": "README.md"}),), ("scale(value)",)),
        Step((Call("bash", {"command": pytest}),), (f"{len(MODULES)} failed",)),
        Step((Call("read_file", {"path": "../outside.txt"}),), ("outside the working folder",), ("secret",)),
    ]
    for index, name in enumerate(MODULES):
        module = f"pkg/{name}.py"
        check = (
            f"{python} -c \"from pkg.{name} import scale, FACTOR; assert scale(2) == 2 * FACTOR; print('ok {name}')\""
        )
        steps += [
            Step(
                (Call("read_file", {"path": module}), Call("read_file", {"path": f"tests/test_{name}.py"})),
                (f"{name}_helper_29", "def test_scale"),
            ),
            Step((Call("grep", {"pattern": r"FACTOR \+ 1", "path": module}),), (f"{module}:8:",)),
        ]
        if index == 1:  # a wrong edit first: the error comes back and the next edit gets it right
            steps.append(
                Step(
                    (Call("edit_file", {"path": module, "old_string": "FACTOR + 2", "new_string": "x"}),),
                    ("was not found",),
                )
            )
        steps += [
            Step((Call("edit_file", {"path": module, "old_string": BUG, "new_string": FIX}),), ("1 replacement",)),
            Step((Call("bash", {"command": check}),), (f"ok {name}", "[exit status 0]")),
            Step((_todo(index + 1),), (f"[x] fix scale() in {module}",)),
            Step((Call("read_file", {"path": module, "offset": 6, "limit": 3}),), (FIX,), (BUG,)),
        ]
    steps += [
        Step((Call("task", {"description": "survey the factors", "prompt": SUB_PROMPT}),), (SUB_REPORT,)),
        Step((Call("write_file", {"path": "CHANGELOG.md", "content": CHANGELOG}),), ("wrote",)),
        Step((Call("read_file", {"path": "CHANGELOG.md"}),), ("no longer adds 1",)),
        Step((Call("bash", {"command": pytest}),), (f"{len(MODULES)} passed",), ("failed",)),
        Step((Call("grep", {"pattern": r"FACTOR \+ 1", "path": "pkg"}),), ("no match",)),
        Step((Call("list_files", {"path": "pkg"}),), ("pkg/theta.py",)),
    ]
    return steps


def survey_plan(python: str = sys.executable) -> list[Step]:
    """A shorter session for the interactive tests: read four modules and their tests, run the suite."""
    reads = [
        Step(
            (Call("read_file", {"path": f"pkg/{m}.py"}), Call("read_file", {"path": f"tests/test_{m}.py"})),
            (f"FACTOR = {FACTORS[m]}",),
        )
        for m in MODULES[:4]
    ]
    return [*reads, Step((Call("bash", {"command": f"{python} -m pytest -q -p no:cacheprovider"}),), ("failed",))]


SURVEY_ANSWER = "SURVEY: every scale() adds 1; all eight tests fail."


def subagent_plan() -> list[Step]:
    reads = [Step((Call("read_file", {"path": f"pkg/{m}.py"}),), (f"FACTOR = {FACTORS[m]}",)) for m in MODULES]
    return [
        Step((Call("list_files", {"path": "pkg"}),), ("pkg/zeta.py",)),
        *reads,
        Step((Call("grep", {"pattern": "^FACTOR = ", "path": "pkg"}),), ("pkg/theta.py:3: FACTOR = 10",)),
    ]


@dataclass
class PlannedSession:
    """The script: the main plan, or the subagent's when the system prompt is a subagent's."""

    main: list[Step] = field(default_factory=main_plan)
    sub: list[Step] = field(default_factory=subagent_plan)
    final: str = FINAL
    failures: list[str] = field(default_factory=list)

    def __call__(self, seen: Seen) -> Turn:
        is_sub = seen.system.startswith(SUBAGENT_MARK)
        plan, final = (self.sub, SUB_REPORT) if is_sub else (self.main, self.final)
        if seen.step > 0:
            self._check(("sub" if is_sub else "main"), seen.step - 1, plan[seen.step - 1], seen)
        if seen.step < len(plan):
            return Turn(calls=plan[seen.step].calls)
        return Turn(text=final)

    def _check(self, who: str, index: int, step: Step, seen: Seen) -> None:
        joined = "\n".join(seen.results)
        if len(seen.results) != len(step.calls):
            self.failures.append(f"{who} step {index}: {len(seen.results)} results for {len(step.calls)} calls")
        for text in step.expect:
            if text not in joined:
                self.failures.append(f"{who} step {index}: {text!r} missing from {joined[:300]!r}")
        for text in step.absent:
            if text in joined:
                self.failures.append(f"{who} step {index}: {text!r} should not be in {joined[:300]!r}")
