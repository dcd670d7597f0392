"""The compile lab's outputs (one CPU run per test session, through the lab_dir fixture)."""

import json

import pytest
from conftest import assert_result_shape, read_result


def test_compile_lab_passes_with_its_checks(lab_dir):
    out = lab_dir("compile")
    result = read_result(out)
    assert_result_shape(result, "compile")
    assert result["passed"], [c for c in result["checks"] if not c["passed"]]
    names = " ".join(c["name"] for c in result["checks"])
    for topic in (
        "equals eager",
        "graph breaks",
        "explained kernel fuses",
        "generated modules with kernels",
        "sequence lengths, static",
        "sequence lengths, dynamic",
    ):
        assert topic in names, topic
    exercises = result["exercises"]
    assert all(r["status"] == "passing" for r in exercises.values()), exercises


def test_every_stage_left_its_artifacts(lab_dir):
    out = lab_dir("compile")
    for name in (
        "graphs/train/dynamo_graph_0.py",
        "graphs/train/aot_forward_graph_0.py",
        "graphs/train/aot_backward_graph_0.py",
        "code/train_forward.py",
        "code/train_backward.py",
        "kernels.json",
        "explanation.md",
        "timing.json",
        "timing.png",
        "breaks.json",
        "summary.md",
    ):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    assert "def forward" in (out / "graphs/train/dynamo_graph_0.py").read_text()
    assert "model.py" in (out / "graphs/train/aot_forward_graph_0.py").read_text(), (
        "nodes keep their source lines"
    )
    assert (out / "timing.png").read_bytes()[:4] == b"\x89PNG"


def test_the_tlparse_report_is_linked_or_its_absence_explained(lab_dir):
    out = lab_dir("compile")
    summary = (out / "summary.md").read_text()
    if (out / "tlparse/index.html").is_file():
        assert "(tlparse/index.html)" in summary and not (out / "torch_trace").exists()
        assert "tlparse report" in " ".join(c["name"] for c in read_result(out)["checks"])
    else:
        assert "The tlparse report was not made: " in summary


def test_kernels_json_lists_fused_kernels_with_ops_and_source_lines(lab_dir):
    result = read_result(lab_dir("compile"))
    kernels = json.loads((lab_dir("compile") / "kernels.json").read_text())
    graphs = {k["graph"] for k in kernels}
    assert {"train/forward", "train/backward"} <= graphs
    prefix = "cpp_" if result["device"] == "cpu" else "triton_"
    assert all(k["name"].startswith(prefix) for k in kernels if k["graph"].startswith("train/"))
    softmax = [k for k in kernels if k["graph"] == "train/forward" and "_softmax" in k["fused_ops"]]
    assert softmax and softmax[0]["calls"] == 4, "one attention softmax per block"
    assert any("softmax" in line for line in softmax[0]["source_lines"])
    assert any(a["role"] == "load+store" or a["role"] == "store" for a in softmax[0]["arguments"])


def test_explanation_matches_the_code_of_the_run(lab_dir):
    out = lab_dir("compile")
    facts = read_result(out)["explained"]
    text = (out / "explanation.md").read_text()
    code = (out / "code/train_forward.py").read_text()
    assert facts["kernel"] in code and facts["kernel"] in text
    fused = facts["bytes_read"] + facts["bytes_written"]
    assert facts["unfused_bytes_estimate"] > fused and "fusing these ops pays" in text
    assert facts["reduction"] in ("looped", "persistent") and sorted(facts["reductions"]) == [
        "max",
        "sum",
    ]
    own_code = text.split("## The code")[-1]
    assert ("folded into one number (`vec_reduce_all`)" in text) == ("vec_reduce_all" in own_code)


def test_breaks_recompiles_and_timing_are_recorded(lab_dir):
    result = read_result(lab_dir("compile"))
    assert result["breaks"]["minigpt"]["graph_breaks"] == 0
    assert result["breaks"]["item_in_forward"]["graph_breaks"] == 1
    compiles = {r["how"]: r["compiles"] for r in result["recompiles"]}
    assert compiles == {"static": 4, "default": 2, "dynamic": 1, "mark_dynamic": 1}
    timing = result["timing"]
    for row in [*timing["at_batch"], *timing["forward_sweep"]]:
        assert row["eager_ms"] > 0 and row["compiled_ms"] > 0
    assert timing["compile_s"]["training step"] > 0


@pytest.mark.gpu
def test_cuda_run_explains_a_triton_kernel(lab_dir):
    out = lab_dir("compile")
    if read_result(out)["device"] != "cuda":
        pytest.skip("the lab ran on the CPU; set WORKSHOP_TEST_DEVICE=cuda")
    facts = read_result(out)["explained"]
    assert facts["kernel"].startswith(("triton_per_", "triton_red_")), facts["kernel"]
    assert facts["grid"] == [704] and facts["reduction"] == "persistent"  # (8, 4, 22) rows of 22
    text = (out / "explanation.md").read_text()
    assert "XBLOCK" in text and "**persistent**" in text
    kernels = json.loads((out / "kernels.json").read_text())
    softmax = next(k for k in kernels if k["name"] == facts["kernel"])
    assert softmax["ops_from"] == "Original ATen comment" and softmax["source_nodes"], (
        "Triton kernels carry their nodes"
    )
