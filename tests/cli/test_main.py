import dataclasses
import subprocess
import sys

import pytest
import torch

from tests.support import installed, lab_process
from workshop.labs import all_labs, minigpt


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
    assert out.returncode == 2
    assert "error: no lab named nosuchlab; the labs are: minigpt" in out.stderr
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


def test_no_gpu_device_file_means_no_cuda_without_asking_torch(monkeypatch, tmp_path):
    """--device auto on Linux: with none of the files a GPU is reached through, the answer is the CPU without
    torch's import; with one, torch answers."""
    from workshop.foundations import device

    monkeypatch.setattr(device.sys, "platform", "linux")
    monkeypatch.setattr(device, "GPU_DEVICE_FILES", (str(tmp_path / "nvidia*"),))
    assert not device.cuda_available() and device.resolve("auto") == "cpu"
    with pytest.raises(device.DeviceError, match="torch sees no CUDA GPU here; use --device cpu"):
        device.resolve("cuda")
    (tmp_path / "nvidiactl").touch()
    assert device.cuda_available() == torch.cuda.is_available()


def test_report_without_a_run_is_a_clear_error(tmp_path):
    out = workshop("report", "--out", str(tmp_path))
    assert out.returncode != 0 and "no run found" in out.stderr


def test_a_lab_that_raises_still_writes_a_failed_result(tmp_path, monkeypatch):
    def broken(ctx):
        ctx.check_max("first check", 0.5, 1.0)
        raise RuntimeError("the lab broke here")

    # The minigpt lab's name (it declares no exercises, which result.json would list) with a broken entry.
    monkeypatch.setattr(minigpt, "LAB", dataclasses.replace(minigpt.LAB, entry=broken))
    code = lab_process.run_here("minigpt", tmp_path)
    assert code == 1
    result = __import__("json").loads((tmp_path / "result.json").read_text())
    assert result["passed"] is False
    assert [c["passed"] for c in result["checks"]] == [True, False]
    assert "the lab broke here" in result["checks"][1]["value"]
    assert "the lab broke here" in (tmp_path / "summary.md").read_text()


def test_the_run_options_are_declared_once_and_reach_the_lab_through_its_file(tmp_path):
    """run's and check's options are RunOptions' fields (foundations/run_options.py); the lab's process reads them from
    <lab>/options.json, and --resume from the run's options.json."""
    import argparse
    import dataclasses

    from workshop.cli.main import build_parser
    from workshop.foundations.run_options import RunOptions, command_line_fields

    flagged = {f.name for f in command_line_fields()}
    assert flagged == {"device", "n_procs", "seed", "checkpoint", "time_limit_s"}
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for command in ("run", "check", "grade"):
        dests = {a.dest for a in sub.choices[command]._actions}
        assert flagged <= dests, command
    options = RunOptions(
        device="cpu",
        n_procs=3,
        seed=7,
        checkpoint=tmp_path / "mine.pt",
        time_limit_s=9.0,
        work=tmp_path,
        lang="es",
        only=("toy.double",),
        skip={"toy.x": "killed"},
    )
    options.write(tmp_path)
    assert RunOptions.read(tmp_path) == options
    assert dataclasses.fields(RunOptions)[0].name == "device"


def test_only_a_lab_that_keeps_its_builds_gets_the_kept_inductor_cache(tmp_path):
    """LabSpec.build_cache (the compile lab's): Inductor's cache under results/.cache/torch-<version>/, shared
    by its runs; every other lab compiles into a fresh folder of its own, removed when it ends."""
    from workshop.harness import runner
    from workshop.labs import get

    kept = runner.build_cache(tmp_path / "results")
    assert kept.relative_to(tmp_path / "results").parts[:1] == (".cache",)
    assert (
        kept.parent.name == f"torch-{torch.__version__.split('+')[0]}"
        or "torch-" in kept.parent.name
    )
    (tmp_path / "fresh").mkdir()
    assert runner.lab_environment("cpu", tmp_path / "fresh")["TORCHINDUCTOR_CACHE_DIR"] == str(
        tmp_path / "fresh" / "inductor"
    )
    (tmp_path / "again").mkdir()
    env = runner.lab_environment("cpu", tmp_path / "again", kept)
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(kept)
    assert [name for name, spec in all_labs().items() if spec.build_cache] == ["compile"]
    assert get("compile").regrade


def test_the_suite_stops_in_one_line_where_the_package_is_not_installed():
    """tests/conftest.py's first check: `python -I -S` (no site-packages, so no editable install, and no
    PYTHONPATH) cannot import the package from an empty folder; this Python, installed as the README says, can."""
    assert installed.importable_elsewhere()
    assert not installed.importable_elsewhere((sys.executable, "-I", "-S"))
