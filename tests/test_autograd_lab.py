"""Lab autograd, end to end: the CPU run's result.json, graph.json, graph.png and summary.md."""

from __future__ import annotations

import json

from conftest import assert_result_shape, read_result


def test_lab_passes_with_the_promised_outputs(lab_dir):
    out = lab_dir("autograd")
    result = read_result(out)
    assert_result_shape(result, "autograd")
    assert result["passed"], [c for c in result["checks"] if not c["passed"]]
    for name in ("graph.json", "graph.png", "summary.md"):
        assert (out / name).is_file(), name


def test_result_has_errors_per_tensor_dtype_and_device(lab_dir):
    result = read_result(lab_dir("autograd"))
    checked = [r for r in result["hand_vs_autograd"] if r["checked"]]
    assert {r["dtype"] for r in checked} == {"float32", "float64"}
    for r in result["hand_vs_autograd"]:
        assert r["device"] == result["device"]
        assert set(r["errors"]) == {"loss", "logits", "W", "b", "x"}
    hand_checks = [c for c in result["checks"] if c["name"].startswith("hand dL/d")]
    assert len(hand_checks) == 8 and all(c["threshold"] == 1e-7 for c in hand_checks)
    # TF32 is reported, never checked, and only where it exists.
    tf32 = [r for r in result["hand_vs_autograd"] if r["tf32"]]
    assert (len(tf32) == 1 and not tf32[0]["checked"]) if result["device"] == "cuda" else not tf32


def test_replay_agrees_with_the_engine(lab_dir):
    result = read_result(lab_dir("autograd"))
    for r in result["replay"]:
        assert r["engine_order"] == r["replay_order"]
        if result["device"] == "cpu":
            assert all(r["bit_identical"].values()) and set(r["max_abs_difference"].values()) == {
                0.0
            }


def test_graph_json_describes_the_lm_head(lab_dir):
    graph = json.loads((lab_dir("autograd") / "graph.json").read_text())
    nodes = graph["nodes"]
    assert nodes[graph["root"]]["name"] == "NllLossBackward0"
    leaves = {n["leaf"]["name"]: n["leaf"]["shape"] for n in nodes if "leaf" in n}
    assert leaves["W"] == [600, 64] and leaves["b"] == [600] and leaves["x"][-1] == 64
    assert sorted(n["step"] for n in nodes) == list(range(1, len(nodes) + 1))
    saved = [s for n in nodes for s in n["saved"].values() if s["kind"] == "tensor"]
    assert saved and all({"shape", "dtype"} <= set(s) for s in saved)


def test_gradcheck_records(lab_dir):
    result = read_result(lab_dir("autograd"))
    assert len(result["gradcheck"]) == 4 and all(g["passed"] for g in result["gradcheck"])
    assert result["gradcheck_tolerance"]["atol"] > 0
