"""The security suite, `grade`'s half: forged hand-ins, hand-ins that reach the others or the code,
and a table that survives Ctrl-C. On the toy lab (tests/support/learner_toy.py), whose grading runs the learner's code
in the lab's own process (not yet through the worker): `--sandbox native`, the case where a hand-in can reach the
others, so that what grade notes can be seen. What the container prevents outright: tests/security/test_hand_ins.py.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from tests.cli.test_learner import ANSWERS, DOUBLE, ESSAY, make_workspace, read_csv
from tests.support import learner_toy
from workshop import labs
from workshop.cli.main import main
from workshop.grading import grade_integrity
from workshop.harness.results import runs
from workshop.harness.run_options import RunOptions
from workshop.lab_api import LabContext

NATIVE = ["--device", "cpu", "--sandbox", "native"]


@pytest.fixture
def toy(monkeypatch, tmp_path):
    return learner_toy.use_in(monkeypatch, tmp_path)


def grade(*paths: Path, to: str = "grades") -> dict[str, dict]:
    assert main(["grade", *map(str, paths), *NATIVE, "--to", to]) == 0
    return {row["source"]: row for row in read_csv(f"{to}/grades.csv")}


def handed_in_results(toy: Path, name: str, double: str = DOUBLE) -> Path:
    """A learner's results/ folder with one run of their workspace (checked where they worked)."""
    work = make_workspace(toy / "learners", name, double, None, None)
    out = toy / "handin" / name / "results"
    assert main(["check", "toy", "--work", str(work), "--device", "cpu", "--out", str(out)]) == 1
    return out


def test_a_forged_result_json_is_self_reported_and_counts_nothing(toy):
    results = handed_in_results(toy, "eve", "def double(x):\n    return 0\n")
    [run] = runs(results)
    result = json.loads((run / "toy" / "result.json").read_text())
    for entry in result["exercises"].values():
        entry["status"], entry["passed"] = "passing", True
    (run / "toy" / "result.json").write_text(json.dumps(result))
    row = grade(results)[str(results)]
    assert row["toy.double"] == "passing (self-reported)" and row["exercises passing"] == "0/3"
    assert "self-reported, unverified" in row["notes"]


def test_a_copied_run_folder_renamed_and_a_shared_file_are_flagged_on_both_rows(toy):
    ada = handed_in_results(toy, "ada")
    [run] = runs(ada)
    bob = toy / "handin" / "bob" / "results"
    shutil.copytree(run, bob / "20990101-000000-abcdef")
    rows = grade(ada, bob)
    for source in (ada, bob):
        assert f"handed in twice: run {run.name} is also in" in rows[str(source)]["notes"]
    twins = [make_workspace(toy / "class", name, DOUBLE, None, None) for name in ("cat", "dan")]
    rows = grade(*twins, to="grades-2")
    assert "handed in twice: toy.py (sha256" in rows[str(twins[0])]["notes"]
    assert "is also in dan's hand-in" in rows[str(twins[0])]["notes"]


def test_invented_exercise_ids_are_no_column_and_count_nothing(toy):
    results = handed_in_results(toy, "eve")
    [run] = runs(results)
    result = json.loads((run / "toy" / "result.json").read_text())
    result["exercises"]["toy.bonus"] = dict(result["exercises"]["toy.double"], status="passing")
    (run / "toy" / "result.json").write_text(json.dumps(result))
    row = grade(results)[str(results)]
    assert (
        "toy.bonus" not in row
        and "exercise toy.bonus is not one the workshop declares" in row["notes"]
    )


def test_learner_supplied_text_is_escaped_in_csv_and_markdown(toy):
    work = make_workspace(toy / "class", "x", DOUBLE, None, None)
    record = json.loads((work / ".workspace.json").read_text())
    record["learner"] = '=HYPERLINK("http://x","y")\n| <b>owned</b> |'
    (work / ".workspace.json").write_text(json.dumps(record))
    assert main(["grade", str(work), *NATIVE, "--to", "grades"]) == 0
    [row] = read_csv("grades/grades.csv")
    assert row["learner"].startswith("'=HYPERLINK")
    markdown = Path("grades/grades.md").read_text()
    line = next(line for line in markdown.splitlines() if "HYPERLINK" in line)
    assert "\\| &lt;b&gt;owned&lt;/b&gt; \\|" in line and line.count(" | ") > 5


def test_a_hand_in_that_changes_another_is_named_on_both_rows(toy):
    victim = make_workspace(toy / "class", "bob", DOUBLE, None, None)
    attack = (
        "def double(x: int) -> int:\n"
        f"    open({str(victim / 'toy.py')!r}, 'a').write('# stubs now\\n')\n"
        "    return 2 * x\n"
    )
    attacker = make_workspace(toy / "class", "ada", attack, None, None)
    rows = grade(attacker, victim)
    assert (
        f"another hand-in changed while this one was graded: {victim} (toy.py)"
        in rows[str(attacker)]["notes"]
    )
    assert "changed while ada's hand-in was graded: toy.py" in rows[str(victim)]["notes"]


@pytest.fixture
def code(monkeypatch):
    """A folder that stands for the workshop's code: a file planted in the real package would change the code
    under every test that grades at the same time (pytest-xdist's other workers). In /tmp and open to all, so
    that the learner's worker, of another uid, can write into it as it could into an unprotected install."""
    with tempfile.TemporaryDirectory(prefix="workshop-code-") as folder:
        code = Path(folder)
        (code / "lab.py").write_text("# the code every lab's checks are\n")
        code.chmod(0o777)
        monkeypatch.setattr(grade_integrity, "CODE", code)
        yield code


def test_a_file_planted_in_the_code_is_named_and_the_rows_after_it_flagged(toy, code):
    # beside the code, where a stale lab.cpython-311.pyc would be loaded
    planted = code / f"planted_by_a_test_{uuid.uuid4().hex}.pyc"
    attack = (
        "def double(x: int) -> int:\n"
        f"    open({str(planted)!r}, 'wb').write(b'not python')\n"
        "    return 2 * x\n"
    )
    try:
        attacker = make_workspace(toy / "class", "ada", attack, None, None)
        later = make_workspace(toy / "class", "bob", DOUBLE, None, None)
        rows = grade(attacker, later)
    finally:
        planted.unlink(missing_ok=True)
    assert (
        "the workshop's code changed while this hand-in was graded: planted_by_a_test_"
        in (rows[str(attacker)]["notes"])
    )
    assert (
        "graded after the workshop's code changed (while ada's hand-in was graded)"
        in (rows[str(later)]["notes"])
    )


def test_statuses_printed_before_the_lab_process_dies_pass_nothing(toy):
    """The toy's grading runs the learner's code in the lab's process: what it prints is in the lab's log. The
    parent, writing the dead lab's result.json, reads no status from it."""
    attack = (
        "def double(x: int) -> int:\n"
        "    import os\n"
        "    for e in ('toy.double', 'toy.answers', 'toy.essay'):\n"
        "        print(f'[toy] graded {e}: passing', flush=True)\n"
        "    os._exit(0)\n"
    )
    work = make_workspace(toy / "class", "eve", attack, ANSWERS, ESSAY)
    row = grade(work)[str(work)]
    assert row["exercises passing"] == "0/3" and "passing" not in [
        row[f"toy.{e}"] for e in ("double", "answers", "essay")
    ]


def graded_in_the_labs_process(ctx: LabContext) -> None:
    """The toy's exercises graded as a lab that has not gone through the worker would grade them: `double` with
    worker=False (the learner's function called in the lab's own process; no lab of the workshop does this any
    more), the answers in the worker, the essay as text."""
    with ctx.grading("double", worker=False) as impl:
        ctx.check_equal("double(21)", impl(21), 42)
    with ctx.grading("answers", worker=True) as impl:
        ctx.check_equal("answers", impl.value, learner_toy.ANSWERS)
    with ctx.grading("essay") as path:
        ctx.check_min("essay: words", len(Path(path).read_text().split()), 10)


def test_in_the_sandbox_a_lab_that_runs_learner_code_in_its_own_process_runs_none(toy):
    """An exercise graded with worker=False: with grade's containers asked for, its learner code is not run in
    the lab's process at all; the exercise is not graded and result.json says why."""
    marker = toy / "ran"
    attack = (
        f"def double(x: int) -> int:\n    open({str(marker)!r}, 'w').write('x')\n    return 2 * x\n"
    )
    work = make_workspace(toy / "class", "eve", attack, ANSWERS, ESSAY)
    (toy / "out").mkdir()
    options = RunOptions("cpu", 1, 0, work=work, worker_image="any-image")
    ctx = LabContext("toy", toy / "out", options)
    graded_in_the_labs_process(ctx)
    results = ctx.exercise_results()
    assert not marker.exists()
    assert ctx.extra["not_isolated"] == ["toy.double"]
    assert results["toy.double"]["status"] == "not graded"
    # toy.answers is read in its worker, which refuses the file: its `open` reaches past the exercise
    assert "open is not allowed" in results["toy.answers"]["failed_check"]["value"]
    assert results["toy.essay"]["status"] == "passing"  # a document is read as text, in any sandbox


def test_no_lab_of_the_workshop_grades_learner_code_in_its_own_process():
    """Every grading block of the workshop's labs takes its implementation from the worker (worker=True), but a
    document's, read as text: in grade's containers no exercise is left out as not isolated."""
    in_process = []
    for path in sorted((Path(labs.__file__).parent).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "grading"):
                continue
            worker = any(
                k.arg == "worker" and getattr(k.value, "value", None) is True for k in node.keywords
            )
            name = getattr(node.args[0], "value", None) if node.args else None
            documents = {
                ex.name for lab in labs.all_labs() for ex in labs.exercises(lab) if ex.document
            }
            if not worker and name not in documents:
                in_process.append(
                    f"{path.relative_to(Path(labs.__file__).parents[1])}:{node.lineno}"
                )
    assert in_process == []


def test_a_detached_process_cannot_rewrite_the_table_after_grade(toy):
    attack = (
        "def double(x: int) -> int:\n"
        "    import subprocess\n"
        "    subprocess.Popen(['sh', '-c', 'sleep 4; echo forged > grades/grades.csv'], start_new_session=True)\n"
        "    return 2 * x\n"
    )
    work = make_workspace(toy / "class", "eve", attack, None, None)
    grade(work)
    before = Path("grades/grades.csv").read_text()
    time.sleep(6)
    assert Path("grades/grades.csv").read_text() == before


def test_ctrl_c_leaves_a_partial_table_named_so(toy):
    first = make_workspace(toy / "class", "ada", DOUBLE, None, None)
    hangs = make_workspace(
        toy / "class",
        "bob",
        "def double(x: int) -> int:\n    import time\n    time.sleep(600)\n",
        None,
        None,
    )
    command = [
        sys.executable,
        "-m",
        "workshop",
        "grade",
        str(first),
        str(hangs),
        *NATIVE,
        "--to",
        "grades",
    ]
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    partial = Path("grades/grades.partial.md")
    for _ in range(600):
        if partial.is_file():
            break
        time.sleep(0.2)
    time.sleep(2)  # bob's lab is running
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert "partial table: grades/grades.partial.csv" in out
    assert partial.read_text().startswith("# Grades (partial: 1 of 2 hand-ins graded)")
    assert [row["learner"] for row in read_csv("grades/grades.partial.csv")] == ["ada"]
    assert not Path("grades/grades.csv").exists()


@pytest.fixture(autouse=True)
def _untouched_code():
    """No test here may leave the workshop's code changed (the planted file is removed)."""
    before = grade_integrity.fingerprint(grade_integrity.CODE)
    yield
    assert grade_integrity.changed(before, grade_integrity.fingerprint(grade_integrity.CODE)) == []
