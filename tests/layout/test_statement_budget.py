"""The statement budget the tree keeps: growth of workshop/ is a decision, made here, never a drift.

Counted in Python statements (ast.stmt nodes: an assignment, a call, a def, an import), docstrings left out, so
comments, docstrings and line breaks cost nothing, and the budget is met by deleting machinery, never
explanations. The project's budget (TARGET): workshop/ at most 10,000 statements, each lab folder at most 1,300,
the machinery (what runs, isolates and grades labs: foundations/, declarations/, learner/, harness/, grading/,
cli/, lab_api.py, engine.py) at most 2,800, and no file over 400 lines. Where the tree is still over a target, its
CEILING is what it holds now: it may shrink and never grow, and a ceiling that the tree has come down to its
target is deleted (test_each_ceiling_is_still_needed_and_tight), so that what is won stays won.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "workshop"
MACHINERY = (
    "foundations",
    "declarations",
    "learner",
    "harness",
    "grading",
    "cli",
    "lab_api.py",
    "engine.py",
)

TARGET = {"workshop": 10_000, "machinery": 2_800, "lab": 1_300, "lines": 400}
# area -> the statements (for a file: the lines) it holds today, over its target
CEILING = {
    # both raised by 1 (a decision): the namespace sandbox's reasons said in the learner's language (its import of _)
    "workshop": 10_087,
    "machinery": 3_244,
    # raised from 1,765 (a decision): the custom_op benchmark times its contenders in balanced rounds, the host in
    # rounds, and judges the peers on small shapes too (+43, net of 29 cut from the lab's grading)
    "labs/custom_op": 1_716,
}
SLACK = 60  # a ceiling more than this above what its area holds is lowered to it


def is_docstring(node: ast.AST, parent: ast.AST) -> bool:
    """A string standing alone as the first statement of a module, class or function: an explanation."""
    return (
        isinstance(parent, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and parent.body[0] is node
        and isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def statements(path: Path) -> int:
    tree = ast.parse(path.read_text("utf-8"))
    return sum(
        isinstance(child, ast.stmt) and not is_docstring(child, parent)
        for parent in ast.walk(tree)
        for child in ast.iter_child_nodes(parent)
    )


def areas(package: Path = PACKAGE) -> dict[str, int]:
    """Statements by area: "workshop", "machinery", "labs/<lab>"; and "<file>" lines for every file."""
    found = {"workshop": 0, "machinery": 0}
    for path in sorted(package.rglob("*.py")):
        count, parts = statements(path), path.relative_to(package).parts
        found["workshop"] += count
        if parts[0] in MACHINERY:
            found["machinery"] += count
        if parts[0] == "labs" and len(parts) > 2:
            found[f"labs/{parts[1]}"] = found.get(f"labs/{parts[1]}", 0) + count
        found[str(path.relative_to(package))] = len(path.read_text("utf-8").splitlines())
    return found


def target(area: str) -> int:
    if area.endswith(".py"):
        return TARGET["lines"]
    return TARGET["lab"] if area.startswith("labs/") else TARGET[area]


def over_budget(found: dict[str, int]) -> dict[str, str]:
    """Each area over what it may hold (its ceiling where it has one, else its target)."""
    return {
        area: f"{count} > {CEILING.get(area, target(area))}"
        for area, count in found.items()
        if count > CEILING.get(area, target(area))
    }


def test_no_area_grows_past_its_budget():
    assert over_budget(areas()) == {}


def test_each_ceiling_is_still_needed_and_tight():
    found = areas()
    assert {a: c for a, c in CEILING.items() if found.get(a, 0) <= target(a)} == {}, (
        "met: delete it"
    )
    assert {a: c for a, c in CEILING.items() if c - found[a] > SLACK} == {}, (
        "lower it to what it holds"
    )


def test_a_planted_statement_over_a_lab_budget_fails(tmp_path):
    """Planted: a lab of 1,301 statements, and a file of 401 lines, in a copy of the package's shape."""
    lab = tmp_path / "workshop" / "labs" / "planted"
    lab.mkdir(parents=True)
    (lab / "big.py").write_text("x = 1\n" * (TARGET["lab"] + 1))
    (tmp_path / "workshop" / "cli").mkdir()
    (tmp_path / "workshop" / "cli" / "long.py").write_text("# a comment\n" * 401)
    over = over_budget(areas(tmp_path / "workshop"))
    assert set(over) == {"labs/planted", "labs/planted/big.py", "cli/long.py"}


def test_an_explanation_costs_nothing_and_a_statement_does(tmp_path):
    """Planted: the same function with and without its docstring and comment; then with one more statement."""
    plain = tmp_path / "plain.py"
    plain.write_text("def f(x):\n    return x\n")
    explained = tmp_path / "explained.py"
    explained.write_text(
        '"""Module."""\n\n\ndef f(x):\n    """Why f."""\n    # the shape\n    return x\n'
    )
    longer = tmp_path / "longer.py"
    longer.write_text(
        'def f(x):\n    """Why f."""\n    "not a docstring: a statement"\n    return x\n'
    )
    assert statements(plain) == statements(explained) == 2
    assert statements(longer) == 3
