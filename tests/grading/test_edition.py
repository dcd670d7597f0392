"""The learner edition (workshop/grading/edition.py): the workshop without its answers, still grading."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.support.autograd_hand_solutions import solved
from workshop.grading import edition
from workshop.labs import all_exercises
from workshop.learner import source_check


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("edition") / "learner"
    report = edition.build_learner(out)
    return out, report


def in_edition(out: Path, module: str) -> Path:
    return out / (module.replace(".", "/") + ".py")


def test_every_exercised_reference_is_a_stub_there(built):
    out, report = built
    for exercises in all_exercises().values():
        for ex in exercises:
            module, _, name = ex.reference.partition(":")
            if ex.document:
                assert not (out / Path(ex.load_reference()).relative_to(edition.ROOT)).exists()
                continue
            node = source_check.top_level(ast.parse(in_edition(out, module).read_text()))[name][0]
            if isinstance(node, ast.FunctionDef):
                assert isinstance(node.body[-1], ast.Raise) and len(node.body) == 2, ex.id
            else:
                value = ast.literal_eval(node.value)
                leaves = list(value.values()) if isinstance(value, dict) else [value]
                while any(isinstance(v, dict) for v in leaves):
                    leaves = [
                        x for v in leaves for x in (v.values() if isinstance(v, dict) else [v])
                    ]
                assert all(v in (None, Ellipsis) for v in leaves), ex.id
    assert set(report.left_bodies) <= set(LEFT_KNOWN), report.left_bodies


# References whose body is still somewhere in the edition's code, each with where and whose it is to remove (a
# line goes when its owner has moved it out: the edition then hands over no answer).
LEFT_KNOWN: dict[str, str] = {}


def test_no_model_answers_and_the_report_says_what_changed(built):
    out, report = built
    assert not list(out.glob("workshop/labs/*/**/model_answers*.md"))
    assert not (out / "survey" / "README.md").exists() and not (out / "tests").exists()
    written = json.loads((out / "workshop" / "EDITION.json").read_text())
    assert written["edition"] == "learner" and len(written["stubbed"]) == sum(
        1 for exercises in all_exercises().values() for ex in exercises if not ex.document
    )


def test_a_reference_left_in_the_code_is_found(built, tmp_path):
    """The check that no reference's body survives can fail: a copy planted elsewhere is named."""
    out, _ = built
    ex = next(ex for ex in all_exercises()["autograd"] if ex.name == "linear_grads")
    module, _, name = ex.reference.partition(":")
    original = (edition.ROOT / (module.replace(".", "/") + ".py")).read_text()
    node = source_check.top_level(ast.parse(original))[name][0]
    body = edition.body_source(node)
    planted = out / "workshop" / "planted_copy.py"
    planted.write_text("import torch\n\n\n" + ast.get_source_segment(original, node) + "\n")
    report = SimpleNamespace(left_bodies=[], quoted_in=[])
    try:
        edition.find_leftovers(out, {ex.reference: body}, {}, report)
    finally:
        planted.unlink()
    assert report.left_bodies == [ex.reference]


def test_a_private_helper_only_a_removed_reference_used_goes_and_one_used_elsewhere_stays(tmp_path):
    """remove_orphans, pass after pass: a helper whose name is left only in its `def` goes, then the helper only
    it called; one whose name stands in another module (or in a longer name: not its own) stays."""
    (tmp_path / "stubbed.py").write_text(
        "def _orphan():\n    return _called_by_the_orphan()\n\n\n"
        "def _called_by_the_orphan():\n    return 1\n\n\n"
        "def _used_elsewhere():\n    return 2\n\n\n"
        "def _prefix():\n    return 3\n"
    )
    (tmp_path / "other.py").write_text("from stubbed import _used_elsewhere\n_prefix_longer = 4\n")
    report = SimpleNamespace(helpers_removed=[])
    edition.remove_orphans(tmp_path, {tmp_path / "stubbed.py"}, report)
    assert report.helpers_removed == [
        "stubbed.py:_orphan",
        "stubbed.py:_called_by_the_orphan",
        "stubbed.py:_prefix",
    ]
    left = {n.name for n in ast.parse((tmp_path / "stubbed.py").read_text()).body}
    assert left == {"_used_elsewhere"}


@pytest.mark.slow
def test_a_learners_hand_gradients_are_graded_there_against_pytorch(built, tmp_path):
    """No check of those exercises takes its truth from the reference: they pass in the edition."""
    out, _ = built
    env = {**os.environ, "PYTHONPATH": str(out)}
    run = [sys.executable, "-m", "workshop"]
    work = tmp_path / "ws"
    subprocess.run(
        [*run, "exercises", "init", str(work), "--lab", "autograd"], cwd=out, env=env, check=True
    )
    (work / "autograd.py").write_text(solved((work / "autograd.py").read_text()))
    check = [
        *run,
        "check",
        "autograd",
        "--work",
        str(work),
        "--device",
        "cpu",
        "--out",
        str(tmp_path),
    ]
    result = subprocess.run(check, cwd=out, env=env, capture_output=True, text=True)
    assert "PASS  autograd.cross_entropy_grad" in result.stdout, result.stdout[-3000:]
    assert "PASS  autograd.linear_grads" in result.stdout, result.stdout[-3000:]


def test_the_custom_op_lab_loads_there_though_its_shipped_op_is_an_exercise(built):
    """workshop.ops builds torch.ops.workshop.softmax at import with define_custom_op, an exercise whose reference
    is a stub in the edition: the package still imports (the op left unbuilt), so the lab can check a learner."""
    out, _ = built
    env = {**os.environ, "PYTHONPATH": str(out), "TRITON_INTERPRET": "1"}
    code = "import workshop.labs.custom_op.lab; from workshop.ops import softmax_op; print(softmax_op.OPS)"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=out, env=env, capture_output=True, text=True
    )
    assert result.stdout.strip() == "None", result.stderr[-3000:]


@pytest.fixture
def package(tmp_path, monkeypatch) -> Path:
    """A repository of one module as the package in use, its edition's build a marker folder, the scratch root a
    folder of this test's: for edition.cached_learner."""
    root = tmp_path / "repository"
    (root / "workshop").mkdir(parents=True)
    (root / "workshop" / "module.py").write_text("x = 1\n")
    (tmp_path / "scratch").mkdir()
    monkeypatch.setattr(edition, "ROOT", root)
    monkeypatch.setattr(edition, "scratch_root", lambda: tmp_path / "scratch")
    monkeypatch.setattr(edition, "build_apart", lambda out: (out / "workshop").mkdir())
    return root


def test_the_cached_edition_is_built_once_per_content_of_the_package(package):
    said = []
    first = edition.cached_learner(lambda: said.append("first"))
    assert edition.cached_learner(lambda: said.append("again")) == first and said == ["first"]
    (package / "workshop" / "module.py").write_text("x = 2\n")
    second = edition.cached_learner(lambda: said.append("changed"))
    assert second != first and said == ["first", "changed"] and (second / "workshop").is_dir()
    assert sorted(first.parent.iterdir()) == sorted([first, second])  # nothing half-built left


def test_of_two_builds_at_once_the_first_in_place_is_used(package, monkeypatch):
    theirs = edition.cached_learner(lambda: None)
    shutil.rmtree(theirs)

    def built_meanwhile(out: Path) -> None:  # the other command's build ends while this one builds
        (theirs / "workshop").mkdir(parents=True)
        (theirs / "workshop" / "theirs.py").write_text("")
        (out / "workshop").mkdir()

    monkeypatch.setattr(edition, "build_apart", built_meanwhile)
    assert edition.cached_learner(lambda: None) == theirs
    assert [p.name for p in theirs.parent.iterdir()] == [theirs.name]
    assert (theirs / "workshop" / "theirs.py").is_file()


def test_the_learner_edition_in_use_is_used_as_it_is(package):
    (package / "workshop" / "EDITION.json").write_text("{}")
    assert edition.cached_learner(lambda: pytest.fail("built again")) == package


def test_a_cache_folder_others_can_write_is_refused(package, tmp_path):
    """The scratch root is shared: a folder of the cache's name that another user could write (or made) might
    hold their code, which the learner's worker would import."""
    planted = tmp_path / "scratch" / f"workshop-learner-edition-{os.geteuid()}"
    planted.mkdir()
    planted.chmod(0o777)
    with pytest.raises(OSError, match="not a folder of this user's alone"):
        edition.cached_learner(lambda: None)


def test_the_cached_edition_is_the_packages_whatever_lab_stands_in_here(tmp_path, monkeypatch):
    """A test's toy lab installed in this process (and, through PYTHONPATH, in the processes it starts) changes
    nothing of what is cached under the package's hash: the real labs' references are stubs there."""
    from tests.support import learner_toy

    learner_toy.use_in(monkeypatch, tmp_path)
    (tmp_path / "scratch").mkdir()
    monkeypatch.setattr(edition, "scratch_root", lambda: tmp_path / "scratch")
    built = edition.cached_learner(lambda: None)
    hand_grads = (built / "workshop" / "labs" / "autograd" / "hand_grads.py").read_text()
    assert 'raise NotImplementedError("autograd.linear_grads")' in hand_grads
