"""`check distributed EXERCISE` as a learner runs it: the predictions alone run only what they are
graded on, in one torchrun launch; a changed prediction is graded against that run without running the lab; an
exercise that run cannot grade says so in one line. `python -m tools distributed-loop` times the same loop."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tools.distributed_loop import predict
from workshop.labs.distributed.grading import derived_answers

pytestmark = [pytest.mark.distributed, pytest.mark.slow]


def check(work, results, *names) -> str:
    cmd = [sys.executable, "-m", "workshop", "check", "distributed", *names, "--work", str(work)]
    cmd += ["--out", str(results), "--n", "2", "--device", "cpu", "--lang", "en"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    return done.stdout + done.stderr


def test_the_predictions_run_what_they_need_then_are_regraded(tmp_path):
    work, results = tmp_path / "my-work", tmp_path / "results"
    init = [
        sys.executable,
        "-m",
        "workshop",
        "exercises",
        "init",
        str(work),
        "--lab",
        "distributed",
    ]
    subprocess.run(init, check=True, capture_output=True)
    right = derived_answers.predictions(2)
    predict(work, right)
    first = check(work, results, "predictions")
    assert "PASS  distributed.predictions" in first, first
    (run,) = [d for d in results.iterdir() if d.is_dir() and not d.is_symlink()]
    ran = sorted(p.name for p in (run / "distributed").iterdir() if p.is_dir())
    assert ran == ["ddp", "fsdp", "pp", "together", "tp"]  # one launch; no hung rank
    assert "together: torchrun exited 0" in first

    predict(work, {**right, "fsdp": dict(right["ddp"])})  # FSDP predicted with DDP's figures
    second = check(work, results, "predictions")
    assert f"re-graded against your run {run}" in " ".join(second.split()), second
    why = second.split("why", 1)[1].split("hint", 1)[0]
    assert "fsdp: that is DDP's figure (held_bytes)" in " ".join(why.split())

    third = check(work, results, "answers")  # that run has no DDP small buckets, no interleaving
    assert "did not run all that answers is graded on" in " ".join(third.split()), third
