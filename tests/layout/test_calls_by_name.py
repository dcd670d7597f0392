"""Calls an editor can follow: workshop/ names no function in a "module:function" string and builds no name for
getattr (getattr(graders, f"grade_{name}") leaves the functions it reaches with no caller anyone can find).

The one exception is a declaration that must stay cheap to import: an Exercise's `reference`, the reference
solution the exercise is graded against. The declarations (each lab's grading/exercises.py) import no torch and
no Triton, and every command that lists, initialises or grades exercises imports them; a reference is code that
needs torch or Triton (hand_grads, softmax_kernels, reimpl, ...), and Triton has no build for macOS, where the
learner's commands must still list custom_op's exercises. A reference is also used by its name: it crosses to
the worker as that name, and the learner edition replaces its code by a stub under the same name.

Everything else passes the function itself: a lab's entry, bench, regrade and precondition (small functions of
its __init__.py that import the lab's module inside them), an exercise's template, and every probe
(Solution.probe sends the function's module:qualname across the wire itself).
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "workshop"

# a dotted module, a colon, an attribute: "workshop.labs.autograd.lab:run" (matplotlib's "tab:blue" is no module)
BY_NAME = re.compile(r"[A-Za-z_]\w*(?:\.\w+)+:[A-Za-z_][\w.]*")
ALLOWED_KEYWORDS = ("reference",)  # Exercise(reference="module:attr"): see the module docstring


def calls_by_name(source: str, filename: str) -> list[str]:
    """'file:line: what' for each "module:function" string (outside ALLOWED_KEYWORDS) and each getattr whose
    name is an f-string or a concatenation."""
    tree = ast.parse(source)
    allowed = {
        id(keyword.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for keyword in node.keywords
        if keyword.arg in ALLOWED_KEYWORDS
    }
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and BY_NAME.fullmatch(node.value)
            and id(node) not in allowed
        ):
            found.append((node.lineno, repr(node.value)))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.JoinedStr | ast.BinOp)
        ):
            found.append((node.lineno, ast.unparse(node)))
    return [f"{filename}:{line}: {what}" for line, what in sorted(found)]


def package_calls_by_name(root: Path = PACKAGE) -> list[str]:
    return [
        finding
        for path in sorted(root.rglob("*.py"))
        for finding in calls_by_name(
            path.read_text(encoding="utf-8"), str(path.relative_to(root.parent))
        )
    ]


def test_the_package_calls_no_function_by_a_name_in_a_string():
    assert package_calls_by_name() == []


def test_a_planted_call_by_name_is_found_and_a_reference_is_not(tmp_path):
    planted = textwrap.dedent(
        """
        from workshop.declarations.exercise import Exercise
        from workshop.lab_api import LabSpec
        from workshop.labs.custom_op.grading import exercise_grading as graders

        LAB = LabSpec("toy", 1, "a toy", "workshop.labs.toy.lab:run")
        EXERCISE = Exercise(lab="toy", name="f", reference="workshop.labs.toy.solutions:f")
        COLOR = "tab:blue"


        def grade(ctx, impl, name):
            getattr(graders, f"grade_{name}")(ctx, impl)
            getattr(graders, "grade_" + name)(ctx, impl)
            getattr(impl, name)  # a name that is given, not built: followed at its caller
            return impl.probe("workshop.labs.toy.probes:watch")
        """
    )
    (tmp_path / "workshop").mkdir()
    (tmp_path / "workshop" / "planted.py").write_text(planted)
    assert package_calls_by_name(tmp_path / "workshop") == [
        "workshop/planted.py:6: 'workshop.labs.toy.lab:run'",
        "workshop/planted.py:12: getattr(graders, f'grade_{name}')",
        "workshop/planted.py:13: getattr(graders, 'grade_' + name)",
        "workshop/planted.py:15: 'workshop.labs.toy.probes:watch'",
    ]
