"""Native `check` and `grade --sandbox native`: the learner's code runs in a worker whose `workshop` is the learner
edition, so the shortcuts that reach the instructor's references from a learner's file find stubs there. Each
attack is handed in through `python -m workshop check` (or grade) beside an honest exercise of the same file (the
control, which passes). With the instructor's package on the worker's import path, every one of these attacks
passed."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.autograd_hand_solutions import LEARNER_HAND
from workshop.labs import workspace_header
from workshop.labs.autograd.grading.exercises import EXERCISES as AUTOGRAD
from workshop.labs.custom_op.grading.exercises import EXERCISES as CUSTOM_OP

# cross_entropy_grad: an exec that no banned name gives, importing the reference from the exec'd code;
# backpropagate: the reference's module reached from a helper the header imports, through torch's own `inspect`
AUTOGRAD_ATTACKS = """
def cross_entropy_grad(logits, targets):
    found = {}
    torch.fx.graph_module._exec_with_source(
        "import workshop.labs.autograd.hand_grads as h\\nreference = h.cross_entropy_grad", found
    )
    return found["reference"](logits, targets)


def backpropagate(order, grad_output):
    return torch.inspect.getmodule(fit_to_input).backpropagate(order, grad_output)
"""
HONEST_LINEAR = LEARNER_HAND[LEARNER_HAND.index("def linear_grads") :]

# fake: the shipped op's own fake, called on the fake tensor; setup_context: an honest one
CUSTOM_OP_ATTACK = """
def softmax_fake(x, dim):
    return torch.ops.workshop.softmax(x, dim)


def setup_context(ctx, inputs, output):
    ctx.dim = inputs[1]
    ctx.save_for_backward(output)
"""


def written_workspace(tmp_path: Path, lab: str, written: str, stubs: list) -> Path:
    """A workspace whose file is the header, `written` and the stubs of `stubs`' exercises."""
    work = tmp_path / "work"
    work.mkdir()
    rest = "\n\n".join(ex.stub_code() for ex in stubs)
    (work / f"{lab}.py").write_text(workspace_header(lab) + rest + "\n\n" + written)
    return work


def checked(tmp_path: Path, lab: str, written: str, stubs: list, names: list[str]) -> str:
    """`check LAB NAMES...` natively (--device cpu) on written_workspace; its report."""
    work = written_workspace(tmp_path, lab, written, stubs)
    command = [sys.executable, "-m", "workshop", "check", lab, *names, "--work", str(work)]
    command += ["--out", str(tmp_path / "results"), "--device", "cpu"]
    out = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    return out.stdout


def status_lines(report: str) -> set[str]:
    return {" ".join(line.split()[:2]) for line in report.splitlines() if line.startswith("  ")}


@pytest.mark.slow
def test_the_autograd_shortcuts_find_stubs(tmp_path):
    names = ["cross_entropy_grad", "linear_grads", "backpropagate"]
    stubs = [ex for ex in AUTOGRAD if ex.name not in names]
    report = checked(tmp_path, "autograd", HONEST_LINEAR + AUTOGRAD_ATTACKS, stubs, names)
    lines = status_lines(report)
    assert {"PASS autograd.linear_grads", "TODO autograd.cross_entropy_grad"} <= lines, report
    assert "TODO autograd.backpropagate" in lines, report


@pytest.mark.slow
def test_the_shipped_op_as_a_fake_finds_no_op(tmp_path):
    names = ["fake", "setup_context"]
    stubs = [ex for ex in CUSTOM_OP if ex.name not in names]
    report = checked(tmp_path, "custom_op", CUSTOM_OP_ATTACK, stubs, names)
    lines = status_lines(report)
    assert {"FAIL custom_op.fake", "PASS custom_op.setup_context"} <= lines, report


@pytest.mark.slow
def test_under_native_grade_the_autograd_shortcuts_find_stubs(tmp_path):
    """grade --sandbox native: each hand-in's worker imports the learner edition grade built for the class."""
    names = ["cross_entropy_grad", "linear_grads", "backpropagate"]
    stubs = [ex for ex in AUTOGRAD if ex.name not in names]
    work = written_workspace(tmp_path, "autograd", HONEST_LINEAR + AUTOGRAD_ATTACKS, stubs)
    command = [sys.executable, "-m", "workshop", "grade", str(work), "--lab", "autograd"]
    command += ["--sandbox", "native", "--device", "cpu", "--to", str(tmp_path / "grades")]
    out = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    [row] = csv.DictReader((tmp_path / "grades" / "grades.csv").read_text().splitlines())
    assert row["autograd.linear_grads"] == "passing", row
    assert row["autograd.cross_entropy_grad"] != "passing", row
    assert row["autograd.backpropagate"] != "passing", row
