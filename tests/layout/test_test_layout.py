"""The tests' own layout: every core module (workshop/**/*.py outside workshop/labs/, __init__ and __main__
aside) has a test module of its name, workshop/<package>/<module>.py -> tests/<package>/test_<module>.py and
workshop/<module>.py -> tests/core/test_<module>.py; every test module sits in an area folder (tests/README.md);
and no test names a tracker entry (an issue's number says nothing to a reader of the test: what it checks
does)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TRACKER = re.compile(r"\b[Ii]ssues? #?\d+|(?<![\w&])#\d+(?![\w-])")


def core_modules(package: Path) -> list[str]:
    """The core's modules, relative to the package folder."""
    return sorted(
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if path.name not in ("__init__.py", "__main__.py")
        and "labs" not in path.relative_to(package).parts
    )


def expected_test(module: str) -> str:
    """Where the test named for a core module lives, relative to tests/."""
    folder, _, name = module.rpartition("/")
    return f"{folder or 'core'}/test_{name}"


def without_tests(package: Path, tests: Path) -> list[str]:
    return [m for m in core_modules(package) if not (tests / expected_test(m)).is_file()]


def outside_an_area(tests: Path) -> list[str]:
    """Python files at tests/'s top level besides the root conftest and the package's __init__."""
    return sorted(
        p.name for p in tests.glob("*.py") if p.name not in ("conftest.py", "__init__.py")
    )


def tracker_mentions(tests: Path) -> list[str]:
    return [
        f"{path.relative_to(tests)}:{n}: {line.strip()}"
        for path in sorted(tests.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if TRACKER.search(line)
    ]


def test_every_core_module_has_a_test_module_of_its_name():
    assert without_tests(ROOT / "workshop", ROOT / "tests") == []


def test_every_test_module_sits_in_an_area():
    assert outside_an_area(ROOT / "tests") == [], "move it into tests/<area>/ (tests/README.md)"


def test_no_test_names_a_tracker_entry():
    assert tracker_mentions(ROOT / "tests") == []


def test_a_module_without_its_test_and_a_tracker_number_are_found(tmp_path):
    package, tests = tmp_path / "workshop", tmp_path / "tests"
    for path in [
        "lab.py",
        "harness/runner.py",
        "harness/__init__.py",
        "labs/toy/lab.py",
        "__main__.py",
    ]:
        (package / path).parent.mkdir(parents=True, exist_ok=True)
        (package / path).write_text("")
    (tests / "harness").mkdir(parents=True)
    number = 23  # not written out here: this file is scanned too
    (tests / "harness" / "test_runner.py").write_text(f'"""The runner (issue {number})."""\n')
    (tests / "harness" / "test_lab.py").write_text(
        f"# a lab's test, in the wrong folder; see #{number}\n"
    )
    assert without_tests(package, tests) == ["lab.py"]
    (tests / "core").mkdir()
    (tests / "core" / "test_lab.py").write_text("COLOR = '&#39;'  # an entity, not a number\n")
    assert without_tests(package, tests) == []
    assert outside_an_area(tests) == []
    (tests / "test_flat.py").write_text("")
    assert outside_an_area(tests) == ["test_flat.py"]
    assert [m.split(":")[0] for m in tracker_mentions(tests)] == [
        "harness/test_lab.py",
        "harness/test_runner.py",
    ]
