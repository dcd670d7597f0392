"""One name, one meaning: no module file name is used twice in workshop/, but Python's own (__init__.py,
__main__.py) and the names the per-lab convention gives each lab (the README's Layout says which): the lab's
lab.py, its grading/exercises.py and its grading/probes.py. A per-lab name is used at its place only: a lab.py
elsewhere would be a second meaning of it."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON_OWN = {"__init__.py", "__main__.py"}
PER_LAB = {
    "lab.py": "labs/*/lab.py",  # what the lab runs and checks (its entry)
    "exercises.py": "labs/*/grading/exercises.py",  # its exercises, declared
    "probes.py": "labs/*/grading/probes.py",  # its trusted code that runs in the worker, where it has any
}


def names_used_twice(package: Path) -> list[str]:
    """Each module file name the package uses more than once outside the convention, with where (relative)."""
    where = defaultdict(list)
    for path in package.rglob("*.py"):
        if path.name not in PYTHON_OWN:
            where[path.name].append(path.relative_to(package))
    return [
        f"{name}: {', '.join(str(p) for p in sorted(paths))}"
        for name, paths in sorted(where.items())
        if len(paths) > 1 and not (name in PER_LAB and all(p.match(PER_LAB[name]) for p in paths))
    ]


def test_no_module_name_is_used_twice_outside_the_per_lab_convention():
    assert names_used_twice(ROOT / "workshop") == []


def toy_package(root: Path, modules: list[str]) -> Path:
    for module in modules:
        (root / module).parent.mkdir(parents=True, exist_ok=True)
        (root / module).write_text("")
    return root


CONVENTIONAL = [
    "__init__.py",
    "__main__.py",
    "foundations/results.py",
    "tools/__main__.py",
    "labs/__init__.py",
    *(
        f"labs/{lab}/{m}"
        for lab in ("a", "b")
        for m in ("__init__.py", "lab.py", "grading/exercises.py")
    ),
    "labs/a/grading/probes.py",
    "labs/b/grading/probes.py",
]


def test_the_per_lab_names_and_pythons_own_pass(tmp_path):
    assert names_used_twice(toy_package(tmp_path, CONVENTIONAL)) == []


def test_a_planted_second_results_py_is_caught(tmp_path):
    package = toy_package(tmp_path, [*CONVENTIONAL, "labs/b/results.py"])
    assert names_used_twice(package) == ["results.py: foundations/results.py, labs/b/results.py"]


def test_a_per_lab_name_outside_its_place_is_caught(tmp_path):
    """The package's own lab.py beside the labs', and a lab's probes.py outside its grading/."""
    package = toy_package(tmp_path, [*CONVENTIONAL, "lab.py", "labs/a/probes.py"])
    assert names_used_twice(package) == [
        "lab.py: lab.py, labs/a/lab.py, labs/b/lab.py",
        "probes.py: labs/a/grading/probes.py, labs/a/probes.py, labs/b/grading/probes.py",
    ]
