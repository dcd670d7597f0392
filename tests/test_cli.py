import subprocess
import sys

import lab_process
import pytest
import torch

from workshop.lab import LabSpec
from workshop.labs import all_labs


def workshop(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "workshop", *args], capture_output=True, text=True, **kw
    )


def test_list_names_every_lab_in_order():
    out = workshop("list")
    assert out.returncode == 0
    names = [line.split()[0] for line in out.stdout.splitlines()]
    assert names == list(all_labs())
    assert names[0] == "minigpt"


def test_unknown_lab_is_a_clear_error(tmp_path):
    out = workshop("run", "nosuchlab", "--out", str(tmp_path))
    assert out.returncode != 0
    assert "unknown lab nosuchlab; the labs are: minigpt" in out.stderr
    assert not any(tmp_path.iterdir()), "a refused run must not create a run folder"


def test_bad_n_is_refused(tmp_path):
    out = workshop("run", "minigpt", "--n", "0", "--out", str(tmp_path))
    assert out.returncode != 0 and "--n must be at least 1" in out.stderr


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="checks the message on a machine without CUDA"
)
def test_cuda_without_a_gpu_is_a_clear_error(tmp_path):
    out = workshop("run", "minigpt", "--device", "cuda", "--out", str(tmp_path))
    assert out.returncode != 0 and "no CUDA GPU" in out.stderr and "--device cpu" in out.stderr


def test_report_without_a_run_is_a_clear_error(tmp_path):
    out = workshop("report", "--out", str(tmp_path))
    assert out.returncode != 0 and "no run found" in out.stderr


def test_a_lab_that_raises_still_writes_a_failed_result(tmp_path, monkeypatch):
    def broken(ctx):
        ctx.check_max("first check", 0.5, 1.0)
        raise RuntimeError("the lab broke here")

    # The minigpt lab's name (it declares no exercises, which result.json would list) with a broken entry.
    monkeypatch.setattr(LabSpec, "load", lambda self, what="entry": broken)
    code = lab_process.run_here("minigpt", tmp_path)
    assert code == 1
    result = __import__("json").loads((tmp_path / "result.json").read_text())
    assert result["passed"] is False
    assert [c["passed"] for c in result["checks"]] == [True, False]
    assert "the lab broke here" in result["checks"][1]["value"]
    assert "the lab broke here" in (tmp_path / "summary.md").read_text()
