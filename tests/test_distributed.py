"""The distributed lab's run (N=2 and N=4 on CPU/gloo): every demo equal to its reference, and measured."""

from __future__ import annotations

import json

import pytest
from conftest import assert_result_shape, read_result

pytestmark = [pytest.mark.distributed, pytest.mark.slow]


def checks_by_name(result: dict) -> dict[str, dict]:
    return {c["name"]: c for c in result["checks"]}


def test_lab_passes_with_two_processes(lab_dir):
    out = lab_dir("distributed", n=2)
    result = read_result(out)
    assert_result_shape(result, "distributed")
    failed = [c for c in result["checks"] if not c["passed"]]
    assert result["passed"], failed
    names = checks_by_name(result)
    for demo in ("ddp", "fsdp", "tp", "pp/gpipe", "pp/1f1b", "pp/interleaved_1f1b"):
        assert f"{demo}: final parameters equal the reference (max abs diff)" in names, demo
    assert (out / "pp" / "gantt.png").stat().st_size > 10_000


def test_each_demo_wrote_its_measurements(lab_dir):
    out = lab_dir("distributed", n=2)
    for strategy in ("ddp", "fsdp", "tp", "pp"):
        data = json.loads((out / strategy / "measurements.json").read_text())
        assert data["strategy"] == strategy and data["world_size"] == 2
        for run in data["runs"].values():
            assert len(run["per_rank"]) == 2
            assert run["max_param_error"] <= data["tolerance"]
            assert set(run["per_rank"][0]["bytes"]) == {"params", "grads", "optimizer"}
            assert run["per_rank"][0]["collectives"], "every demo communicates in a step"


def test_fsdp_holds_about_half_of_ddp_per_rank(lab_dir):
    out = lab_dir("distributed", n=2)
    ddp = json.loads((out / "ddp" / "measurements.json").read_text())["runs"]["ddp"]["per_rank"][0][
        "bytes"
    ]
    fsdp = json.loads((out / "fsdp" / "measurements.json").read_text())["runs"]["fsdp"]["per_rank"][
        0
    ]["bytes"]
    for kind in ("params", "grads", "optimizer"):
        assert fsdp[kind] == pytest.approx(ddp[kind] / 2, rel=0.05), kind


def test_figures_are_in_the_result(lab_dir):
    result = read_result(lab_dir("distributed", n=2))
    rows = {(r["strategy"], r["run"]) for r in result["figures"]}
    assert rows == {
        ("ddp", "ddp"),
        ("fsdp", "fsdp"),
        ("tp", "tp"),
        ("pp", "gpipe"),
        ("pp", "1f1b"),
        ("pp", "interleaved_1f1b"),
    }


def test_lab_passes_with_four_processes(lab_dir):
    out = lab_dir("distributed", n=4)
    result = read_result(out)
    assert result["passed"], [c for c in result["checks"] if not c["passed"]]
    names = checks_by_name(result)
    assert names["tp: lm_head weight rows on each rank (600 / N)"]["value"] == 150
    # 4 ranks x 2 stages = 8 stages > 4 blocks: interleaving is skipped, with the reason
    assert "interleaved_1f1b" in result["skipped_schedules"]
    assert "pp/1f1b: final parameters equal the reference (max abs diff)" in names


def test_gpu_peak_memory_is_compared_when_present(lab_dir, tmp_path):
    from workshop.lab import LabContext
    from workshop.labs.distributed import checks

    out = lab_dir("distributed", n=2)
    ddp, fsdp = (json.loads((out / s / "measurements.json").read_text()) for s in ("ddp", "fsdp"))
    for data, peak in ((ddp, 8_000_000), (fsdp, 5_000_000)):  # as a GPU run would record them
        for r in data["runs"][data["strategy"]]["per_rank"]:
            r["cuda_peak_bytes"] = peak
    ctx = LabContext("distributed", tmp_path, "cuda", 2, 0)
    checks.check_strategy(ctx, fsdp, ddp)
    peak = [c for c in ctx.checks if "CUDA peak" in c.name]
    assert len(peak) == 1 and peak[0].passed and peak[0].value == pytest.approx(5 / 8)
    assert checks.figures(fsdp)[0]["cuda_peak_bytes"] == 5_000_000
