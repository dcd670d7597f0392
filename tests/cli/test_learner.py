"""The learner's and the instructor's commands on the toy lab (tests/support/learner_toy.py): exercises init and list,
check (its exit status, its report, bad input of every kind), grade (complete, partial, broken workspaces).

In-process where the command runs no lab; through `python -m workshop` where it does, the toy installed in the
lab's own process by a sitecustomize.py on PYTHONPATH. A toy lab run takes about 2 s.
"""

from __future__ import annotations

import csv
import dataclasses
import glob
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.support import learner_toy
from workshop.cli.main import main
from workshop.declarations import checks
from workshop.foundations import device as device_files
from workshop.foundations import results
from workshop.foundations.run_options import RunOptions
from workshop.grading import check_report
from workshop.lab_api import LabContext

DOUBLE = "def double(x: int) -> int:\n    return 2 * x\n"
ANSWERS = 'ANSWERS = {"factor": 2, "double_12345": 24690}\n'
ESSAY = "Doubling a number adds the number to itself, once, and that is all.\n"


@pytest.fixture
def toy(monkeypatch, tmp_path, edition_built_once):
    """The toy lab in place of the real ones, here and in every process started from here; cwd: tmp_path."""
    return learner_toy.use_in(monkeypatch, tmp_path)


def workshop(*args: str, columns: int = 200) -> subprocess.CompletedProcess:
    out = subprocess.run(
        [sys.executable, "-m", "workshop", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": str(columns)},
    )
    out.text = out.stdout + out.stderr
    return out


def replace_stub(path: Path, name: str, code: str) -> None:
    """The learner's edit: the stub of exercise `name` replaced by `code`."""
    ex = next(e for e in learner_toy.EXERCISES if e.name == name)
    text = path.read_text()
    assert ex.stub_code() in text
    path.write_text(text.replace(ex.stub_code(), code))


def statuses(work: Path) -> dict[str, str]:
    return {s.exercise.id: s.status for s in check_report.workspace_progress(work, Path("results"))}


# ---- exercises init ----
def test_init_writes_each_stub_with_its_statement_once_and_no_hint(toy):
    assert main(["exercises", "init", "--learner", "Ada"]) == 0
    text = (toy / "my-work" / "toy.py").read_text()
    assert text.startswith('"""Your solutions to the toy lab')
    block = text[text.index("def double") : text.index("# Exercise toy.answers")]
    for part in (
        "Exercise toy.double: double a number.",
        "Return twice x.",
        "x: int -> int",
        "Read: workshop/labs/toy/README.md#double",
        "Check: python -m workshop check toy double",
        'raise NotImplementedError("toy.double")',
    ):
        assert part in block
    assert text.count("Return twice x.") == 1 and "Multiply by two." not in text
    assert (
        'ANSWERS = {\n    # Q1. What does double multiply by? (int)\n    "factor": None,\n' in text
    )
    assert not (toy / "my-work" / "essay.md").exists(), "its template needs a run of the lab first"
    assert json.loads((toy / "my-work" / ".workspace.json").read_text())["learner"] == "Ada"


@pytest.mark.parametrize(
    "args, command",
    [
        ([], "python -m workshop check toy"),
        (["elsewhere"], "python -m workshop check toy --work elsewhere"),
    ],
)
def test_init_ends_with_the_exact_next_command(toy, capsys, args, command):
    assert main(["exercises", "init", *args]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].endswith(f"then `{command}`")


def test_init_refuses_to_overwrite_and_force_backs_up_first(toy, capsys):
    work = toy / "my-work"
    main(["exercises", "init"])
    (work / "toy.py").write_text("# my work\n")
    with pytest.raises(SystemExit, match=r"my-work/toy.py already exist.*--force"):
        main(["exercises", "init"])
    assert (work / "toy.py").read_text() == "# my work\n"

    capsys.readouterr()
    assert main(["exercises", "init", "--force"]) == 0
    [backup] = work.glob(".backup-*")
    assert (backup / "toy.py").read_text() == "# my work\n"
    assert f"backed up your files to my-work/{backup.name}/" in capsys.readouterr().out
    assert "def double" in (work / "toy.py").read_text()


def test_init_of_a_lab_that_is_not_there_is_refused(toy, capsys):
    assert (
        main(["exercises", "init", "--lab", "minigpt"]) == 2
    )  # the toy's world has no lab minigpt
    assert "error: no lab named minigpt; the labs are: toy" in capsys.readouterr().err
    assert not (toy / "my-work").exists()


def test_init_and_check_in_spanish_then_list_in_english(toy, capsys):
    """The core's words in Spanish (the toy's own texts have no translation); a workspace made in Spanish
    is still "not started" when listed in English: its stubs are recognised in every language."""
    work = toy / "my-work"
    assert main(["exercises", "init", "--lang", "es"]) == 0
    written = (work / "toy.py").read_text(encoding="utf-8")
    for part in (
        "Ejercicio toy.double: double a number.",
        "Lee: workshop/labs/toy/README.md#double",
        "Compruébalo: python -m workshop check toy double",
    ):
        assert part in written
    out = workshop("check", "toy", "--device", "cpu", "--lang", "es")
    assert out.returncode == 1, out.text
    assert "corrigiendo my-work con las comprobaciones de toy" in out.text
    assert "sin empezar  toy.double" in out.text and "qué hacer" in out.text
    assert "ejercicios superados: 0 de 3" in out.text
    summary = Path("results/latest-check/toy/summary.md").read_text(encoding="utf-8")
    assert "## Ejercicios" in summary and "| toy.double | sin empezar |" in summary

    capsys.readouterr()
    assert main(["exercises", "list", "--lang", "es"]) == 0
    listed = capsys.readouterr().out
    assert "ejercicio" in listed and "estado" in listed and "sin empezar" in listed
    assert main(["exercises", "list"]) == 0
    assert capsys.readouterr().out.count("not started") == 3


# ---- check, then list: the learner's loop ----
def test_check_fails_fresh_stubs_with_the_statement_then_passes_when_solved(toy):
    work = toy / "my-work"
    main(["exercises", "init"])
    first = workshop("check", "toy", "--device", "cpu")
    assert first.returncode == 1, first.text
    assert "TODO  toy.double" in first.text and "to do  Return twice x. Nothing else." in first.text
    assert "wrote my-work/essay.md from this run's figures" in first.text
    run_dir = Path("results/latest-check").resolve()
    assert not Path("results/latest").exists(), "check never moves the latest of `run`"
    manifest = results.read_json(run_dir / "manifest.json")
    assert manifest["implementation"]["kind"] == "workspace"
    assert manifest["implementation"]["work"] == str(work.resolve())
    assert set(manifest["implementation"]["sha256"]) == {"toy.py", "essay.md"}
    result = results.read_json(run_dir / "toy" / "result.json")
    assert [c["name"] for c in result["checks"] if c["passed"]] == ["the toy lab's own check"]
    assert set(statuses(work).values()) == {checks.NOT_STARTED}

    replace_stub(work / "toy.py", "double", DOUBLE)
    replace_stub(work / "toy.py", "answers", ANSWERS)
    assert set(statuses(work).values()) == {check_report.CHANGED, checks.NOT_STARTED}
    (work / "essay.md").write_text(ESSAY)
    second = workshop("check", "toy", "--device", "cpu")
    assert second.returncode == 0, second.text
    assert "3 of 3 exercises passing" in second.text
    assert set(statuses(work).values()) == {checks.PASSING}
    assert (run_dir / "toy" / "result.json").read_text() == json.dumps(result, indent=2) + "\n"

    (work / "toy.py").write_text((work / "toy.py").read_text() + "\n# an edit\n")
    listed = statuses(work)
    assert listed["toy.double"] == check_report.CHANGED and listed["toy.essay"] == checks.PASSING


@pytest.mark.parametrize(
    "device",
    [
        "cpu",
        pytest.param(
            "auto",
            marks=pytest.mark.skipif(
                any(glob.glob(p) for p in device_files.GPU_DEVICE_FILES),
                reason="a GPU host: --device auto asks torch whether it sees the GPU",
            ),
        ),
    ],
)
def test_check_leaves_torch_to_the_labs_processes(toy, device):
    """The learner's loop: the parent of `check` (and `run`) never imports torch, whose import costs about 2 s of
    CPU per check on a small machine; the labs' processes import it. The manifest still names torch's version
    and CUDA's, read from the installed package. Where a GPU's device file exists, --device auto must ask torch
    (foundations/device.cuda_available); --device cpu never does."""
    import torch

    main(["exercises", "init"])
    parent = (
        f"import sys; from workshop.cli.main import main; main(['check', 'toy', 'double', '--device', "
        f"'{device}']); print('imported:', sorted({{'torch', 'triton', 'numpy'}} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True)
    assert "imported: []" in out.stdout, out.stdout + out.stderr
    manifest = results.read_json(Path("results/latest-check/manifest.json"))
    assert (manifest["torch"], manifest["cuda"]) == (torch.__version__, torch.version.cuda)
    assert manifest["device"] in ("cpu", "cuda")


def test_a_wrong_answer_prints_the_value_threshold_message_and_how_to_get_a_hint(toy):
    main(["exercises", "init"])
    replace_stub(toy / "my-work" / "toy.py", "double", "def double(x):\n    return x + x + 1\n")
    out = workshop("check", "toy", "--device", "cpu")
    assert out.returncode == 1
    assert "FAIL  toy.double" in out.text
    assert "check  double(21): 43 (expected 42)" in out.text
    assert "why    double(21) gave 43: multiply by 2" in out.text
    assert "hint   `python -m workshop check toy double --hint` shows hint 1 of 3" in out.text
    assert "Multiply by two." not in out.text, "a hint is shown only when asked for"


def test_an_endless_loop_names_the_exercise_and_line_and_the_others_are_graded(toy):
    work = toy / "my-work"
    main(["exercises", "init"])
    replace_stub(work / "toy.py", "answers", ANSWERS)
    replace_stub(work / "toy.py", "double", "def double(x):\n    while True: x += 1\n")
    line = (work / "toy.py").read_text().splitlines().index("    while True: x += 1") + 1
    out = workshop("check", "toy", "--device", "cpu")
    assert out.returncode == 1
    report = out.text[out.text.index("FAIL  toy.double") :]
    expected = f"finishes in time: my-work/toy.py:{line}: still running after 3 s of CPU time"
    assert expected in " ".join(report.split())
    assert "PASS  toy.answers" in out.text, "the other exercises are still graded"


@pytest.mark.parametrize(
    "lang, box",
    [
        (
            "en",
            "FAIL  your file does not compile: my-work/toy.py line {line}; no exercise of it was graded",
        ),
        (
            "es",
            "no superado  tu archivo no compila: my-work/toy.py, línea {line}; no se ha corregido "
            "ninguno de sus ejercicios",
        ),
    ],
)
def test_a_file_that_does_not_compile_gets_one_box_and_no_lab_runs(toy, lang, box):
    """The issue's case: a syntax error failed every exercise, those passing before included, each with the
    hint as its why. Now one box says so, with the line, and the lab does not run."""
    work = toy / "my-work"
    main(["exercises", "init"])
    replace_stub(work / "toy.py", "answers", ANSWERS)
    replace_stub(work / "toy.py", "double", "def double(x):\n    return (\n")
    line = (work / "toy.py").read_text().splitlines().index("    return (") + 1
    out = workshop("check", "toy", "--device", "cpu", "--lang", lang)
    assert out.returncode == 1, out.text
    assert box.format(line=line) in out.text, out.text
    assert f"my-work/toy.py:{line}: SyntaxError" in out.text
    assert "toy.double" not in out.text and "toy.answers" not in out.text
    assert not Path("results").exists(), "no lab ran"


def test_a_crash_in_native_code_is_named_and_the_other_exercises_graded(toy):
    """The crash kills the learner's worker, not the lab: a fresh worker grades the next exercise."""
    main(["exercises", "init"])
    work = toy / "my-work"
    crash = "def double(x):\n    return ctypes.string_at(0)\n"
    replace_stub(work / "toy.py", "double", crash)
    replace_stub(work / "toy.py", "answers", ANSWERS)
    line = (work / "toy.py").read_text().splitlines().index("    return ctypes.string_at(0)") + 1
    out = workshop("check", "toy", "--device", "cpu")
    where = f"my-work/toy.py:{line}: killed by SIGSEGV"
    assert f"survives it: {where}" in " ".join(out.text.split()), out.text
    assert "PASS  toy.answers" in out.text
    graded = results.read_json(Path("results/latest-check/toy/result.json"))["exercises"]
    assert graded["toy.double"]["failed_check"]["value"].startswith(where)


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["check", "toy", "--work", "nowhere"],
            "nowhere is not a folder: make your workspace with",
        ),
        (["exercises", "list", "--work", "nowhere"], "nowhere is not a folder"),
    ],
)
def test_refusals_are_one_line_and_run_nothing(toy, args, message):
    with pytest.raises(SystemExit, match=message.replace("(", r"\(").replace(")", r"\)")):
        main(args)
    assert not Path("results").exists()


@pytest.mark.parametrize(
    "lang, message",
    [
        ("en", "error: no lab named nosuchlab; the labs are: toy"),
        ("es", "error: no hay ningún laboratorio llamado nosuchlab; los laboratorios son: toy"),
    ],
)
def test_an_unknown_lab_is_no_lab_and_the_labs_are_named(toy, capsys, lang, message):
    """Not "no exercises in lab nosuchlab", as if it existed: exit status 2, as argparse's own errors."""
    assert main(["check", "nosuchlab", "--lang", lang]) == 2
    assert capsys.readouterr().err.strip() == message
    assert not Path("results").exists()


def test_exercises_list_keeps_whole_words_in_a_pipe(toy, capsys, monkeypatch):
    """Not a terminal (a pipe, a file): the table is as wide as its rows, not cut at 80 columns."""
    title = "a title long enough to be cut at eighty columns, " * 3
    monkeypatch.setattr(
        learner_toy,
        "EXERCISES",
        [dataclasses.replace(ex, title=title.strip()) for ex in learner_toy.EXERCISES],
    )
    monkeypatch.setenv("COLUMNS", "80")
    main(["exercises", "init"])
    capsys.readouterr()
    assert main(["exercises", "list"]) == 0
    listed = capsys.readouterr().out
    assert listed.count(title.strip()) == 3 and "…" not in listed, listed


def test_a_missing_lab_file_is_refused_with_the_init_command(toy):
    (toy / "my-work").mkdir()
    with pytest.raises(
        SystemExit, match=r"my-work/toy.py does not exist.*exercises init my-work --lab toy"
    ):
        main(["check", "toy"])


# ---- check LAB EXERCISE, --hint, secrets, re-grading ----
def test_check_one_exercise_grades_it_alone_and_list_keeps_the_others(toy):
    work = toy / "my-work"
    main(["exercises", "init"])
    replace_stub(work / "toy.py", "answers", ANSWERS)
    assert workshop("check", "toy", "--device", "cpu").returncode == 1  # double not started
    replace_stub(work / "toy.py", "double", DOUBLE)
    out = workshop("check", "toy", "double", "--device", "cpu")
    assert out.returncode == 0, out.text
    assert (
        "PASS  toy.double" in out.text and "toy.answers" not in out.text.split("grading my-work")[1]
    )
    assert "1 of 1 exercise passing" in out.text
    graded = results.read_json(Path("results/latest-check/toy/result.json"))["exercises"]
    assert graded["toy.answers"]["status"] == checks.NOT_GRADED
    # the file changed since the run that graded answers (double's edit): that run still gives its status
    [answers] = [
        s
        for s in check_report.workspace_progress(work, Path("results"))
        if s.exercise.name == "answers"
    ]
    assert (answers.status, answers.last_status) == (check_report.CHANGED, checks.PASSING)


def test_an_unknown_exercise_is_refused_with_the_labs_exercises(toy):
    (toy / "my-work").mkdir()
    with pytest.raises(SystemExit, match="lab toy has no exercise 'nope'; its exercises: double"):
        main(["check", "toy", "nope"])


def test_hints_come_when_asked_one_level_at_a_time_and_the_table_counts_them(toy):
    work = toy / "my-work"
    main(["exercises", "init"])
    replace_stub(work / "toy.py", "double", "def double(x):\n    return x + x + 1\n")
    first = workshop("check", "toy", "double", "--device", "cpu")
    assert "`python -m workshop check toy double --hint` shows hint 1 of 3" in first.text
    assert "Multiply by two." not in first.text
    asked = " ".join(workshop("check", "toy", "double", "--hint", "--device", "cpu").text.split())
    assert (
        "hint Multiply by two. (hint 1 of 3; `python -m workshop check toy double --hint` shows the next)"
        in asked
    )
    # the level is remembered, and shown only when asked again
    again = workshop("check", "toy", "double", "--device", "cpu")
    assert "shows hint 2 of 3" in again.text and "Multiply by two." not in again.text
    workshop("check", "toy", "double", "--hint", "--device", "cpu")
    last = workshop("check", "toy", "double", "--hint", "--device", "cpu")
    assert "return <a number> * x (hint 3 of 3; the last one)" in " ".join(last.text.split())
    assert json.loads((work / ".workspace.json").read_text())["hints"] == {"toy.double": 3}
    graded = results.read_json(Path("results/latest-check/toy/result.json"))["exercises"]
    assert graded["toy.double"]["hints_taken"] == 3
    assert main(["grade", str(work), "--to", "grades", "--sandbox", "native"]) == 0
    [row] = read_csv("grades/grades.csv")
    assert row["toy.double"] == "failing (3 hints; self-reported)"


def test_a_secret_value_shows_nowhere_until_asked_for(toy):
    """A wrong answer's miss is said ("about 2x too low"), the run's value (24690) nowhere: not on the
    terminal, in summary.md, result.json or the grade table; `--show` shows it."""
    work = toy / "my-work"
    main(["exercises", "init"])
    replace_stub(work / "toy.py", "answers", 'ANSWERS = {"factor": 2, "double_12345": 12345}\n')
    out = workshop("check", "toy", "answers", "--device", "cpu")
    assert out.returncode == 1 and "about 2x too low" in out.text
    lab_dir = Path("results/latest-check/toy").resolve()
    main(
        ["grade", "results", "--to", "grades", "--sandbox", "native"]
    )  # the toy lab: no learner edition
    seen = [
        out.text,
        *((lab_dir / f).read_text() for f in ("summary.md", "result.json", "log.txt")),
    ]
    seen += [Path("grades/grades.csv").read_text(), Path("grades/grades.md").read_text()]
    assert [text for text in seen if "24690" in text] == []
    shown = workshop("check", "toy", "answers", "--show", "--rerun", "--device", "cpu")
    assert "24690" in shown.text


def test_a_from_run_exercise_is_regraded_against_the_latest_run_without_running_the_lab(toy):
    work = toy / "my-work"
    main(["exercises", "init"])
    replace_stub(work / "toy.py", "answers", 'ANSWERS = {"factor": 3, "double_12345": 24690}\n')
    workshop("check", "toy", "--device", "cpu")
    ran = Path("results/latest-check").resolve().name
    (work / "toy.py").write_text(
        (work / "toy.py").read_text().replace('"factor": 3', '"factor": 2')
    )
    out = workshop("check", "toy", "answers", "--device", "cpu")
    assert out.returncode == 0, out.text
    assert f"re-graded against your run results/{ran}" in out.text
    result = results.read_json(Path("results/latest-check/toy/result.json"))
    assert result["graded_against"] == f"results/{ran}"
    assert "the toy lab's own check" not in [c["name"] for c in result["checks"]], (
        "the lab did not run"
    )
    assert result["exercises"]["toy.answers"]["status"] == checks.PASSING


def test_a_regrade_that_failed_is_never_taken_for_a_run_of_the_lab(toy):
    """A re-grade that raised (here: the run's file it reads is gone) leaves a run folder of its own, which
    says what it was graded against; the next check re-grades against the lab's run still, not that folder."""
    work = toy / "my-work"
    main(["exercises", "init"])
    replace_stub(work / "toy.py", "answers", ANSWERS)
    workshop("check", "toy", "--device", "cpu")
    ran = Path("results/latest-check").resolve()
    (ran / "toy" / "doubled.json").rename(toy / "doubled.json")
    failed = workshop("check", "toy", "answers", "--device", "cpu")
    assert failed.returncode == 1 and "doubled.json" in failed.text
    failed_result = results.read_json(Path("results/latest-check/toy/result.json"))
    assert failed_result["graded_against"] == f"results/{ran.name}"
    (toy / "doubled.json").rename(ran / "toy" / "doubled.json")
    again = workshop("check", "toy", "answers", "--device", "cpu")
    assert again.returncode == 0 and f"re-graded against your run results/{ran.name}" in again.text


def test_the_run_folder_path_is_never_wrapped_at_80_columns(toy):
    main(["exercises", "init"])
    out_dir = "results/" + "a-rather-long-folder-name-for-the-runs" * 2
    out = workshop("check", "toy", "--device", "cpu", "--out", out_dir, columns=80)
    [line] = [line for line in out.stdout.splitlines() if line.startswith("run folder: ")]
    assert line.startswith(f"run folder: {out_dir}/") and len(line) > 80


# ---- grade ----
def read_csv(path: str) -> list[dict]:
    return list(csv.DictReader(Path(path).read_text().splitlines()))


def make_workspace(
    root: Path, name: str, double: str | None, answers: str | None, essay: str | None
):
    work = root / name
    assert main(["exercises", "init", str(work)]) == 0
    if double:
        replace_stub(work / "toy.py", "double", double)
    if answers:
        replace_stub(work / "toy.py", "answers", answers)
    if essay:
        (work / "essay.md").write_text(essay)
    return work


def test_grade_tables_complete_partial_and_broken_workspaces_and_reports_what_it_cannot_read(toy):
    class_dir = toy / "class"
    make_workspace(class_dir, "ada", DOUBLE, ANSWERS, ESSAY)
    make_workspace(class_dir, "bob", DOUBLE, None, None)
    broken = make_workspace(class_dir, "eve", None, None, None)
    (broken / "toy.py").write_text("def double(x):\n    return (\n")
    main(["run", "toy", "--device", "cpu"])  # a reference run: says nothing of a learner
    reference_run = Path("results/latest").resolve()
    paths = [
        class_dir / "ada",
        class_dir / "bob",
        class_dir / "eve",
        reference_run,
        toy / "nowhere",
    ]

    grade = ["grade", *map(str, paths), "--device", "cpu", "--to", "grades", "--sandbox", "native"]
    assert main(grade) == 0
    rows = {row["learner"]: row for row in read_csv("grades/grades.csv")}
    assert rows["ada"]["exercises passing"] == "3/3"
    assert [rows["bob"][e] for e in ("toy.double", "toy.answers", "toy.essay")] == [
        "passing",
        "not started",
        "not started",
    ]
    assert rows["eve"]["toy.double"] == "failing"
    assert "toy.double: your code loads: class/eve/toy.py:2: SyntaxError" in rows["eve"]["notes"]
    assert "toy.double: toy.double" not in rows["eve"]["notes"], "the exercise named once"
    assert "ran the reference, not the learner's code" in rows[reference_run.name]["notes"]
    assert rows["nowhere"]["notes"].endswith(
        " | not a run folder, a folder of runs, or a workspace"
    )
    assert rows["ada"]["tree modified"] in ("yes", "no") and rows["ada"]["torch"] != "?"
    markdown = Path("grades/grades.md").read_text()
    assert "| ada | 3/3 | passing | passing | passing |" in markdown
    with pytest.raises(SystemExit, match="grades/grades.csv.*already exist"):
        main(["grade", str(class_dir / "ada"), "--to", "grades", "--sandbox", "native"])


def test_grade_shows_handed_in_runs_as_self_reported_and_counts_none(toy):
    """A results folder without its workspace: its statuses are the learner's word (a result.json is a file
    anyone can edit), shown so, with their declared name, and not counted as passing."""
    work = make_workspace(toy, "my-work", DOUBLE, None, None)
    main(["exercises", "init", str(work), "--lab", "toy", "--force", "--learner", "Ada L."])
    replace_stub(work / "toy.py", "double", DOUBLE)
    assert workshop("check", "toy", "--device", "cpu").returncode == 1
    assert main(["grade", "results", "--to", "grades", "--sandbox", "native"]) == 0
    [row] = read_csv("grades/grades.csv")
    assert (
        row["name it gives"],
        row["toy.double"],
        row["toy.answers"],
        row["exercises passing"],
    ) == (
        "Ada L.",
        "passing (self-reported)",
        "not started (self-reported)",
        "0/3",
    )
    assert "self-reported, unverified" in row["notes"]


# ---- the grading block, in-process ----
def graded_context(work: Path, double: str) -> LabContext:
    work.mkdir()
    (work / "toy.py").write_text(double + ANSWERS)
    (work / "essay.md").write_text(ESSAY)
    (work.parent / "out").mkdir()
    return LabContext("toy", work.parent / "out", RunOptions("cpu", 1, 0, work=work))


def test_sys_exit_in_the_learners_code_fails_only_its_exercise(toy):
    ctx = graded_context(toy / "my-work", "def double(x):\n    raise SystemExit(3)\n")
    learner_toy.run(ctx)
    graded = ctx.exercise_results()
    assert graded["toy.double"]["failed_check"]["value"] == "my-work/toy.py:2: SystemExit: 3"
    assert graded["toy.answers"]["status"] == checks.PASSING


def test_a_stop_from_outside_is_recorded_in_the_learners_exercise_and_propagates(toy):
    """Ctrl-C while the learner's code runs in its worker: the lab's process, waiting for it, records the
    exercise as cut short, in its file, and stops."""
    ctx = graded_context(toy / "my-work", "import time\n\n\ndef double(x):\n    time.sleep(60)\n")
    # late enough that the worker, started on a loaded machine, is in its sleep; well before the sleep ends
    interrupt = threading.Timer(10.0, os.kill, (os.getpid(), signal.SIGINT))
    interrupt.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            learner_toy.run(ctx)
    finally:
        interrupt.cancel()
        ctx.stop_worker()
    [cut] = [c for c in ctx.checks if c.exercise == "toy.double"]
    assert (cut.name, cut.value) == (
        "toy.double: graded to the end",
        "my-work/toy.py: KeyboardInterrupt",
    )


def test_a_fresh_or_half_filled_answers_dict_crosses_the_wire_as_written(toy):
    """The stub's placeholder is None, a wire value: a fresh ANSWERS read in the learner's worker is "not
    started", a half-filled one names the answer left to fill in, not an error of the wire."""
    work = toy / "my-work"
    main(["exercises", "init"])
    assert (
        "None"
        in (work / "toy.py").read_text(encoding="utf-8").split("ANSWERS = {")[1].split("}")[0]
    )
    fresh = workshop("check", "toy", "answers", "--device", "cpu")
    log = Path("results/latest-check/toy/log.txt").read_text(encoding="utf-8")
    assert "TODO  toy.answers" in fresh.text and "graded toy.answers: not started" in log, (
        fresh.text
    )
    replace_stub(work / "toy.py", "answers", 'ANSWERS = {"factor": 2, "double_12345": None}\n')
    half = workshop("check", "toy", "answers", "--device", "cpu")
    assert "FAIL  toy.answers" in half.text and "replace the `None`" in half.text, half.text
