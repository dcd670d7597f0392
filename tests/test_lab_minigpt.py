import json

from conftest import assert_result_shape, read_result


def test_minigpt_lab_passes_and_writes_its_outputs(lab_dir):
    out = lab_dir("minigpt")
    result = read_result(out)
    assert_result_shape(result, "minigpt")
    assert result["passed"], result["checks"]
    checks = {c["name"]: c for c in result["checks"]}
    accuracy = checks["prompt prediction accuracy (top-1 grammatical)"]
    assert accuracy["value"] >= 0.98 and accuracy["threshold"] == 0.98
    for name in (
        "summary.md",
        "loss_curve.png",
        "accuracy_by_position.png",
        "prompt_errors.json",
        "log.txt",
    ):
        assert (out / name).is_file(), name
    assert (out / "loss_curve.png").read_bytes()[:4] == b"\x89PNG"


def test_run_folder_has_a_complete_manifest(lab_dir):
    run_dir = lab_dir("minigpt").parent
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["labs"]["minigpt"]["passed"] is True
    for key in (
        "torch",
        "triton",
        "python",
        "cuda",
        "device",
        "device_name",
        "git_revision",
        "seeds",
        "command",
        "start_time",
        "end_time",
    ):
        assert key in manifest, key


def test_report_collects_the_run(lab_dir):
    import subprocess
    import sys

    run_dir = lab_dir("minigpt").parent
    if not (run_dir / "REPORT.md").exists():
        subprocess.run([sys.executable, "-m", "workshop", "report", str(run_dir)], check=True)
    report = (run_dir / "REPORT.md").read_text()
    assert "minigpt/loss_curve.png" in report and "Lab `minigpt`" in report
