"""A toy lab with three exercises (a function, a constant of answers, a document), for the learner's commands'
tests: cheap to run in its own process (no torch in the lab itself), so that init, check, list and grade can be
tested end to end through the real runner without waiting for the real labs.

`install(setattr)` puts it in the registry in place of the real labs: in-process with pytest's
monkeypatch.setattr, in a lab's child process through `sitecustomize_source()` on PYTHONPATH.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from workshop import engine, labs
from workshop.declarations.exercise import Exercise
from workshop.declarations.questions import Question
from workshop.lab_api import LabSpec

HERE = Path(__file__).resolve().parent

# The imports the learner's file may make: modules that reach past the exercise, as a lab's header may give them
# (torch reaches far), so that the security suite's hand-ins can do harm from their worker and grade's notes be seen.
WORKSPACE_HEADER = (
    '"""Your solutions to the toy lab: python -m workshop check toy."""\n'
    "import ctypes\nimport os\nimport subprocess\nimport time\n"
)
QUESTIONS = (
    Question("factor", "Q1. What does double multiply by? (int)", "double's statement"),
    Question("double_12345", "Q2. What is double(12345)? (int)", "double's statement"),
)


def double(x: int) -> int:
    """The instructor's solution."""
    return 2 * x


ANSWERS = {"factor": 2, "double_12345": 24690}


def essay_template(lab_dir: Path | None, work: Path) -> str | None:
    """The essay starts from the lab's run (needs one): its run id in the heading."""
    if lab_dir is None:
        return None
    return f"# Essay on run {lab_dir.parent.name}\n"


EXERCISES = [
    Exercise(
        lab="toy",
        name="double",
        title="double a number",
        statement="Return twice x. Nothing else.",
        hints=("Multiply by two.", "x + x is twice x.", "return <a number> * x"),
        handout="README.md#double",
        reference=f"{__name__}:double",
        attribute="double",
        interface="x: int -> int",
        time_limit_s=3.0,
    ),
    Exercise(
        lab="toy",
        name="answers",
        title="the factor",
        statement="Fill in ANSWERS: the factor `double` multiplies by.",
        hints=("Read double's statement.",),
        handout="README.md#answers",
        reference=f"{__name__}:ANSWERS",
        attribute="ANSWERS",
        questions=QUESTIONS,
        from_run=True,
    ),
    Exercise(
        lab="toy",
        name="essay",
        title="an essay",
        statement="Write at least ten words about doubling.",
        hints=("Ten words.",),
        handout="README.md#essay",
        reference=f"{__name__}:HERE",
        document="essay.md",
        template=essay_template,
    ),
]


def run(ctx) -> None:
    ctx.check_max("the toy lab's own check", 0.0, 1.0)  # the lab's other work: always passes
    with ctx.grading("double") as impl:
        got = impl(21)
        ctx.check_equal("double(21)", got, 42, message=f"double(21) gave {got!r}: multiply by 2")
    doubled = {str(x): double(x) for x in (1, 12345)}  # the toy's measurement, as its run writes it
    ctx.write_json("doubled.json", doubled)
    engine.grade(ctx, "answers", truths(doubled))  # the learner's dict crosses the wire as written
    with ctx.grading("essay") as path:
        words = len(Path(path).read_text().split())
        ctx.check_min("essay: words", words, 10, message=f"{words} words; write at least 10")
    ctx.summary = "The toy lab ran.\n"


def truths(doubled: dict) -> dict:
    """The answers, measured: the factor, and double(12345) (24690: a value no other line of a toy run shows)."""
    return {"factor": doubled["1"], "double_12345": doubled["12345"]}


def regrade(ctx, lab_dir: Path) -> None:
    """LabSpec.regrade: the answers graded again from an earlier run's doubled.json, without running."""
    doubled = json.loads((lab_dir / "doubled.json").read_text())
    engine.grade(ctx, "answers", truths(doubled))  # the learner's dict crosses the wire as written


LAB = LabSpec(name="toy", order=1, title="a toy lab", entry=run, regrade=regrade)


def install(setattr) -> None:
    """The toy lab in place of the real ones, with setattr(module, name, value)."""
    setattr(labs, "all_labs", lambda: {"toy": LAB})
    setattr(labs, "get", lambda name: LAB)
    setattr(labs, "exercises", lambda lab: EXERCISES if lab == "toy" else [])
    setattr(labs, "workspace_header", lambda lab: WORKSPACE_HEADER)


def use_in(monkeypatch, folder: Path) -> Path:
    """The toy lab in place of the real ones, here and in every process started from here (a sitecustomize.py
    on PYTHONPATH); cwd: `folder`."""
    install(monkeypatch.setattr)
    site = folder / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(sitecustomize_source())
    path = [str(site), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(path))
    monkeypatch.chdir(folder)
    return folder


def sitecustomize_source() -> str:
    """A sitecustomize.py that installs the toy at the start of every Python process (the labs' children)."""
    return (
        f"import sys\nsys.path.insert(0, {str(HERE)!r})\n"
        "import learner_toy\nlearner_toy.install(setattr)\n"
    )
