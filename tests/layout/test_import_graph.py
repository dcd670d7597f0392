"""workshop/'s import graph, read from the source (ast; every import, function-level ones included, and the
package __init__ each import runs): no cycle, no core module importing a concrete lab, no arrow up the layers.

The layers, lowest first; a module may import modules of its own layer and of the layers below it:
 1. bare         workshop, workshop.i18n (and its templates), the docstring-only packages
                 workshop.cli, workshop.grading, workshop.harness: they import nothing of the workshop above
 2. foundations  harness.{atomic, proctree, interrupt, time_limit, device, lab_log, results, run_options},
                 harness.{worker_process, worker_container, torch_import}, tensor_bytes: files, processes,
                 signals, the run folder, the run's options, the worker's process or container, torch's import
 3. model        workshop.minigpt, workshop.ops: the MiniGPT and the custom op
 4. declarations grading.{checks, diagnosis, exercise, questions, stand_ins, engine}: what a check, a mistake's
                 diagnosis, an exercise, a question is, what stands for a missing implementation, and the one
                 engine that grades any declaration (it reaches the lab's context only through the ctx it is given)
 5. registry     workshop.labs (the package module only): labs found by name, none imported by it
 6. learner      grading.{workspace, failures, solutions, wire, source_check, learner_code, worker, sandbox}: the
                 learner's files, where an exercise's implementation comes from, the worker that runs their
                 code (the worker protocol), and what went wrong in them
 7. lab          workshop.lab_api: LabSpec, LabContext (what a lab imports to be one)
 8. labs         workshop.labs.<lab>...: the labs themselves
 9. harness      the rest of workshop.harness: runner, child, post-mortem, a lab's result, REPORT.md
10. commands     the rest of workshop.grading: check's report, init, progress, the gradebook
11. cli          workshop.cli.*, workshop.__main__
The core (cli, harness, grading, i18n, workshop.lab_api) finds a lab only through the registry, by its name: it
imports no `workshop.labs.<lab>` module (imports under `if TYPE_CHECKING:` never run and are not counted).
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "workshop"

LAYERS = (
    (
        "bare",
        ("workshop", "workshop.i18n.*", "workshop.cli", "workshop.grading", "workshop.harness"),
    ),
    (
        "foundations",
        (
            *(f"workshop.harness.{m}" for m in ("atomic", "proctree", "interrupt", "time_limit")),
            *(f"workshop.harness.{m}" for m in ("device", "lab_log", "results", "run_options")),
            *(
                f"workshop.harness.{m}"
                for m in ("worker_process", "worker_container", "torch_import")
            ),
            "workshop.tensor_bytes",
        ),
    ),
    ("model", ("workshop.minigpt.*", "workshop.ops.*")),
    (
        "declarations",
        tuple(
            f"workshop.grading.{m}"
            for m in ("checks", "diagnosis", "exercise", "questions", "stand_ins", "engine")
        ),
    ),
    ("registry", ("workshop.labs",)),
    (
        "learner",
        (
            *(f"workshop.grading.{m}" for m in ("workspace", "failures", "solutions", "wire")),
            *(
                f"workshop.grading.{m}"
                for m in ("source_check", "learner_code", "worker", "sandbox")
            ),
        ),
    ),
    ("lab", ("workshop.lab_api",)),
    ("labs", ("workshop.labs.*",)),
    ("harness", ("workshop.harness.*",)),
    ("commands", ("workshop.grading.*",)),
    ("cli", ("workshop.cli.*", "workshop.__main__")),
)
CORE = ("workshop.cli", "workshop.harness", "workshop.grading", "workshop.i18n", "workshop.lab_api")


def is_core(name: str) -> bool:
    return any(name == core or name.startswith(core + ".") for core in CORE)


def module_names(root: Path) -> dict[str, Path]:
    """Dotted name -> file of every module under root (root's own name first: `workshop`)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def under_type_checking(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def imports(path: Path, modules: set[str]) -> set[str]:
    """The workshop modules `path` imports (a `from X import Y` of a submodule Y counts as X.Y)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = set()
    for node in ast.walk(tree):
        if under_type_checking(node, parents):
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: a relative import; the package imports absolutely"
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names} & modules
    return {name for name in found if name in modules}


def with_packages(name: str) -> set[str]:
    """`name` and every package its import runs first: workshop.a.b -> workshop.a.b, workshop.a (not workshop)."""
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(2, len(parts) + 1)}


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the modules importing it runs (a module's own packages are already running: not counted)."""
    files = module_names(root)
    graph = {}
    for name, path in files.items():
        targets = set().union(set(), *(with_packages(t) for t in imports(path, set(files))))
        graph[name] = targets - with_packages(name)
    return graph


def layer(name: str) -> int:
    """The index in LAYERS of the most specific pattern that matches `name` (pattern.* matches a subtree)."""
    best = None
    for index, (_title, patterns) in enumerate(LAYERS):
        for pattern in patterns:
            stem = pattern.removesuffix(".*")
            matches = name == stem or (pattern.endswith(".*") and name.startswith(stem + "."))
            if matches and (best is None or len(stem) > best[0]):
                best = (len(stem), index)
    if best is None:
        raise KeyError(
            f"{name} is in no layer: add it to LAYERS in {__name__} (and to the docstring)"
        )
    return best[1]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def upward(graph: dict[str, set[str]]) -> list[str]:
    """'a (layer) -> b (higher layer)' for every arrow against the layer order."""
    return [
        f"{a} ({LAYERS[layer(a)][0]}) -> {b} ({LAYERS[layer(b)][0]})"
        for a, targets in sorted(graph.items())
        for b in sorted(targets)
        if layer(b) > layer(a)
    ]


def core_importing_labs(graph: dict[str, set[str]]) -> list[str]:
    """'a -> workshop.labs.<lab>...' for every core module that imports a concrete lab."""
    return [
        f"{a} -> {b}"
        for a, targets in sorted(graph.items())
        if is_core(a)
        for b in sorted(targets)
        if b.startswith("workshop.labs.")
    ]


def test_the_workshop_has_no_import_cycle():
    assert cycles(import_graph()) == []


def test_no_import_goes_up_the_layers():
    assert upward(import_graph()) == []


def test_the_core_imports_no_lab():
    assert core_importing_labs(import_graph()) == []


# ---- the test's own tests: a planted cycle, a planted upward arrow, a planted lab import are caught ----
def plant(root: Path, files: dict[str, str]) -> Path:
    """A package `workshop` under root with these modules (dotted name -> source); __init__.py everywhere."""
    for name, source in files.items():
        path = root.joinpath(*name.split(".")).with_suffix(".py")
        for folder in [root / "workshop", *path.relative_to(root).parents]:
            if folder.name:
                (root / folder).mkdir(parents=True, exist_ok=True)
                (root / folder / "__init__.py").touch()
        path.write_text(textwrap.dedent(source))
    return root / "workshop"


def test_a_planted_cycle_is_found(tmp_path):
    root = plant(
        tmp_path,
        {
            "workshop.grading.exercise": "from workshop.grading import checks\n",
            "workshop.grading.checks": "def f():\n    from workshop.grading.exercise import X\n",
        },
    )
    assert cycles(import_graph(root)) == [["workshop.grading.checks", "workshop.grading.exercise"]]


def test_a_planted_upward_arrow_is_found_even_inside_a_function(tmp_path):
    root = plant(tmp_path, {"workshop.harness.atomic": "def f():\n    import workshop.lab_api\n"})
    (root / "lab_api.py").write_text("")
    assert upward(import_graph(root)) == [
        "workshop.harness.atomic (foundations) -> workshop.lab_api (lab)"
    ]


def test_a_planted_lab_import_in_the_core_is_found_and_type_checking_is_not(tmp_path):
    root = plant(
        tmp_path,
        {
            "workshop.labs.autograd.lab": "",
            "workshop.grading.gradebook": "from workshop.labs.autograd import lab\n",
            "workshop.grading.progress": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from workshop.labs.autograd import lab\n"
            ),
        },
    )
    assert core_importing_labs(import_graph(root)) == [
        "workshop.grading.gradebook -> workshop.labs.autograd",
        "workshop.grading.gradebook -> workshop.labs.autograd.lab",
    ]


def test_a_module_in_no_layer_is_named():
    with pytest.raises(KeyError, match="workshop.newthing is in no layer"):
        layer("workshop.newthing")
