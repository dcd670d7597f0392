"""workshop/'s import graph, read from the source (ast; every import, function-level ones and those under
`if TYPE_CHECKING:` included, and the package __init__ each import runs): no cycle, no core module importing a
concrete lab, no arrow up the layers. And the folders are the layers.

The layers, lowest first; a module may import modules of its own layer and of the layers below it:
 1. bare         workshop (the package module), workshop/i18n/: the language, _(), the summaries' templates;
                 they import nothing of the workshop above
 2. foundations  workshop/foundations/: atomic writes, process trees, signals, time limits, the device, the lab
                 log, the run folder, the run's options, the worker's process or container, torch's import, the
                 bytes a tensor holds
 3. minigpt      workshop/minigpt/: the MiniGPT
 4. ops          workshop/ops/: the custom op (the Triton softmax)
 5. declarations workshop/declarations/: what a check, a mistake's diagnosis, an exercise, a question is (and
                 the one grader of answers), what stands for a missing implementation
 6. registry     workshop/labs/__init__.py: labs found by name, none imported by it
 7. learner      workshop/learner/: the learner's files, where an exercise's implementation comes from, the
                 worker that runs their code (the worker protocol), and what went wrong in them
 8. lab          workshop/lab_api.py: LabSpec, LabContext (what a lab imports to be one); workshop/engine.py: the
                 one engine that grades any exercise's declaration (it reaches the lab's context only through
                 the ctx it is given)
 9. labs         workshop/labs/<lab>/: the labs themselves, a folder each
10. harness      workshop/harness/: a run: the runner, the lab's process, a dead lab's post-mortem, a lab's
                 result, REPORT.md, the run folders `clean` removes
11. grading      workshop/grading/: what check, exercises init and list, grade and the learner edition make of
                 the labs and their runs: check's report, the learner's files, the gradebook
12. cli          workshop/cli/, workshop/__main__.py
Each layer is one folder (with its subfolders) or one module: no folder holds modules of two layers, no layer
spreads over two folders (the labs aside: a folder each, under workshop/labs/). The top folder's __init__.py
and __main__.py, the names Python gives the package and `python -m workshop`, hold layers bare and cli.
The core (cli, grading, harness, learner, declarations, foundations, i18n, workshop.lab_api) finds a lab only
through the registry, by its name: it imports no `workshop.labs.<lab>` module.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "workshop"

LAYERS = (
    ("bare", ("workshop", "workshop.i18n.*")),
    ("foundations", ("workshop.foundations.*",)),
    ("minigpt", ("workshop.minigpt.*",)),
    ("ops", ("workshop.ops.*",)),
    ("declarations", ("workshop.declarations.*",)),
    ("registry", ("workshop.labs",)),
    ("learner", ("workshop.learner.*",)),
    ("lab", ("workshop.lab_api", "workshop.engine")),
    ("labs", ("workshop.labs.*",)),
    ("harness", ("workshop.harness.*",)),
    ("grading", ("workshop.grading.*",)),
    ("cli", ("workshop.cli.*", "workshop.__main__")),
)
# the top folder's modules that Python names: the package, and `python -m workshop`'s
ENTRY = ("workshop", "workshop.__main__")
ONE_FOLDER_EACH = "labs"  # the layer of the labs: a folder per lab, under workshop/labs/
CORE = (
    *(
        f"workshop.{p}"
        for p in ("cli", "grading", "harness", "learner", "declarations", "foundations")
    ),
    "workshop.i18n",
    "workshop.lab_api",
)


def is_core(name: str) -> bool:
    return any(name == core or name.startswith(core + ".") for core in CORE)


def module_names(root: Path) -> dict[str, Path]:
    """Dotted name -> file of every module under root (root's own name first: `workshop`)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, modules: set[str]) -> set[str]:
    """The workshop modules `path` imports (a `from X import Y` of a submodule Y counts as X.Y)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
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


def layer(name: str, layers=LAYERS) -> int:
    """The index in layers of the most specific pattern that matches `name` (pattern.* matches a subtree)."""
    best = None
    for index, (_title, patterns) in enumerate(layers):
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


def folder_layers(root: Path = PACKAGE, layers=LAYERS) -> dict[Path, set[str]]:
    """Folder (relative to the package's parent) -> the layers of the modules directly in it (ENTRY aside)."""
    found: dict[Path, set[str]] = {}
    for name, path in module_names(root).items():
        if name not in ENTRY:
            title = layers[layer(name, layers)][0]
            found.setdefault(path.parent.relative_to(root.parent), set()).add(title)
    return found


def mixed_folders(root: Path = PACKAGE, layers=LAYERS) -> list[str]:
    """'folder: layer, layer' for every folder that holds modules of two layers."""
    return [
        f"{folder.as_posix()}: {', '.join(sorted(titles))}"
        for folder, titles in sorted(folder_layers(root, layers).items())
        if len(titles) > 1
    ]


def spread_layers(root: Path = PACKAGE, layers=LAYERS) -> list[str]:
    """'layer: folder, folder' for every layer whose folders are not one folder and folders inside it."""
    held: dict[str, set[Path]] = {}
    for folder, titles in folder_layers(root, layers).items():
        for title in titles - {ONE_FOLDER_EACH}:
            held.setdefault(title, set()).add(folder)
    spread = []
    for title, folders in sorted(held.items()):
        top = min(folders, key=lambda f: len(f.parts))
        if any(f != top and top not in f.parents for f in folders):
            spread.append(f"{title}: {', '.join(sorted(f.as_posix() for f in folders))}")
    return spread


def test_the_workshop_has_no_import_cycle():
    assert cycles(import_graph()) == []


def test_no_import_goes_up_the_layers():
    assert upward(import_graph()) == []


def test_the_core_imports_no_lab():
    assert core_importing_labs(import_graph()) == []


def test_each_folder_is_one_layer():
    assert mixed_folders() == []


def test_each_layer_is_one_folder():
    assert spread_layers() == []


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


def test_a_planted_cycle_is_found_even_under_type_checking(tmp_path):
    root = plant(
        tmp_path,
        {
            "workshop.declarations.exercise": "from workshop.declarations import checks\n",
            "workshop.declarations.checks": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from workshop.declarations.exercise import X\n"
            ),
        },
    )
    assert cycles(import_graph(root)) == [
        ["workshop.declarations.checks", "workshop.declarations.exercise"]
    ]


def test_a_planted_upward_arrow_is_found_even_inside_a_function(tmp_path):
    root = plant(
        tmp_path, {"workshop.foundations.atomic": "def f():\n    import workshop.lab_api\n"}
    )
    (root / "lab_api.py").write_text("")
    assert upward(import_graph(root)) == [
        "workshop.foundations.atomic (foundations) -> workshop.lab_api (lab)"
    ]


def test_a_planted_lab_import_in_the_core_is_found_under_type_checking_too(tmp_path):
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
        "workshop.grading.progress -> workshop.labs.autograd",
        "workshop.grading.progress -> workshop.labs.autograd.lab",
    ]


def test_a_planted_folder_of_two_layers_is_found(tmp_path):
    """A module declared a layer of its own inside another layer's folder (as the run's foundations were)."""
    root = plant(tmp_path, {"workshop.harness.runner": "", "workshop.harness.child": ""})
    layers = (("process", ("workshop.harness.child",)), ("harness", ("workshop.harness.*",)))
    assert mixed_folders(root, layers) == ["workshop/harness: harness, process"]
    assert spread_layers(root, layers) == []


def test_a_planted_layer_over_two_folders_is_found(tmp_path):
    """One layer, the model, in two folders side by side; a folder inside a layer's folder is its own."""
    root = plant(
        tmp_path,
        {"workshop.minigpt.model": "", "workshop.ops.softmax_op": "", "workshop.ops.kernels.k": ""},
    )
    layers = (("model", ("workshop.minigpt.*", "workshop.ops.*")),)
    assert mixed_folders(root, layers) == []
    assert spread_layers(root, layers) == [
        "model: workshop/minigpt, workshop/ops, workshop/ops/kernels"
    ]
    assert (
        spread_layers(root, (("ops", ("workshop.ops.*",)), ("minigpt", ("workshop.minigpt.*",))))
        == []
    )


def test_a_module_in_no_layer_is_named():
    with pytest.raises(KeyError, match="workshop.newthing is in no layer"):
        layer("workshop.newthing")
