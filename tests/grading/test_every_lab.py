"""Every lab with exercises: the reference passes every exercise, and a fresh workspace (exactly what
`exercises init` writes) fails exactly the exercise checks, every other check of the lab still passing.

The one place that runs this for all labs (what CI runs of it), parametrized by lab. The reference side reuses
the session's lab run (conftest's lab_dir); the stub side is one graded run per lab, through `check`.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from torch._inductor.runtime.cache_dir_utils import cache_dir as inductor_cache_dir

from tests.conftest import lab_device, read_result
from workshop import labs
from workshop.declarations import checks
from workshop.foundations import results
from workshop.harness import runner
from workshop.learner import workspace

LABS = list(labs.all_exercises())
# exercises graded on what the learner's other exercises make, which wait on them: custom_op's answers are about
# the op made of the learner's pieces (tests/custom_op/test_exercises.py, through the runner)
WAITING = {"custom_op.answers"}


@pytest.mark.parametrize("lab", LABS)
def test_the_reference_passes_every_exercise(lab, lab_dir):
    result = read_result(lab_dir(lab))
    assert result["implementation"]["kind"] == "reference"
    statuses = {ex_id: r["status"] for ex_id, r in result["exercises"].items()}
    assert statuses == {ex.id: checks.PASSING for ex in labs.exercises(lab)}


@pytest.mark.slow
@pytest.mark.parametrize("lab", LABS)
def test_fresh_stubs_fail_exactly_the_exercise_checks(lab, tmp_path):
    work, root = tmp_path / "my-work", tmp_path / "results"
    workspace.init(work, [lab], root)
    if labs.get(lab).build_cache:
        # the lab keeps its g++ builds under the results root: pointed at this process's Inductor cache, it
        # reuses what the suite built of the same training step in process (tests/compile/test_mutations.py)
        kept = runner.build_cache(root)
        kept.parent.mkdir(parents=True)
        kept.symlink_to(inductor_cache_dir(), target_is_directory=True)
    cmd = [sys.executable, "-m", "workshop", "check", lab, "--work", str(work)]
    out = subprocess.run(
        [*cmd, "--device", lab_device(lab), "--out", str(root)], capture_output=True, text=True
    )
    assert out.returncode == 1, out.stdout + out.stderr
    result = results.read_json((root / results.LATEST_CHECK).resolve() / lab / "result.json")
    assert result["implementation"]["kind"] == "workspace"
    statuses = {ex_id: r["status"] for ex_id, r in result["exercises"].items()}
    assert statuses == {
        ex.id: checks.NOT_GRADED if ex.id in WAITING else checks.NOT_STARTED
        for ex in labs.exercises(lab)
    }
    started = [ex for ex in labs.exercises(lab) if ex.id not in WAITING]
    failed = [c for c in result["checks"] if not c["passed"]]
    # each exercise fails once, on its stub, saying what to do (its statement's first sentence, or the document
    # to write); every other check passes
    assert [c["name"] for c in failed] == [f"{ex.id}: implemented" for ex in started]
    for ex, check in zip(started, failed, strict=True):
        todo = f"{ex.document} is not written yet" if ex.document else ex.statement.split(". ")[0]
        assert check["message"].startswith(f"{ex.id}: ") and todo in check["message"]
