import json

from tests.conftest import assert_result_shape, read_result


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


def test_minigpt_runs_in_spanish(tmp_path, monkeypatch):
    """`--lang es`: the same checks pass, named in Spanish, and the summary is the Spanish template's."""
    from tests.support.spanish_run import run_in_spanish
    from workshop.labs.minigpt import lab

    # what is under test is the language, not the lengths: fewer replayed steps and sampled sentences
    monkeypatch.setattr(lab, "REPLAY_STEPS", 2)
    sample = lab.sample_sentences
    monkeypatch.setattr(lab, "sample_sentences", lambda model, n, *args: sample(model, 16, *args))
    result = run_in_spanish("minigpt", tmp_path / "minigpt")
    assert result["lang"] == "es" and result["passed"], result["checks"]
    names = [c["name"] for c in result["checks"]]
    assert "tamaño del vocabulario" in names
    assert "tasa de acierto en los prompts (top-1 gramatical)" in names
    summary = (tmp_path / "minigpt" / "summary.md").read_text(encoding="utf-8")
    for sentence in (
        "El MiniGPT de la gramática",
        "Tasa de acierto en 1000 prompts reservados",
        "Frases muestreadas a temperatura 1 que son gramaticales de principio a fin",
        "![curva de pérdida](loss_curve.png)",
    ):
        assert sentence in summary, sentence
