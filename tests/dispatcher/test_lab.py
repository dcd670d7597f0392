"""The dispatcher lab's outputs: checks, and golden expectations normalized to op names, key names and order
(no file:line strings, no kernel source names), which hold on torch 2.11 and 2.13."""

from __future__ import annotations

import json

import pytest

from tests.conftest import assert_result_shape, read_result


@pytest.fixture(scope="module")
def out(lab_dir):
    return lab_dir("dispatcher")


@pytest.fixture(scope="module")
def trace(out):
    return {sc["name"]: sc for sc in json.loads((out / "trace.json").read_text())["scenarios"]}


def _first_ops(sc):
    root = sc["tree"]
    return [root["op"]] if root["arrived_at_python"] else [c["op"] for c in root["children"]]


def _chain(node):
    return [s["key"] for s in node["chain"] if s["key"]]


def _child(sc, op):
    return next(c for c in sc["tree"]["children"] if c["op"] == op)


def test_lab_passes_and_writes_its_artifacts(out):
    result = read_result(out)
    assert_result_shape(result, "dispatcher")
    assert result["passed"], [c for c in result["checks"] if not c["passed"]]
    for name in ("trace.json", "trace.md", "dispatch_path.png", "summary.md"):
        assert (out / name).stat().st_size > 0, name
    assert {ex["status"] for ex in result["exercises"].values()} == {"passing"}  # the reference


def test_scenarios_cover_autograd_states_autocast_both_ranks_and_matmul(trace):
    assert {n for n in trace if n.startswith("cpu/")} == {
        "cpu/grad/3d",
        "cpu/grad/2d",
        "cpu/requires_grad_off/3d",
        "cpu/no_grad/3d",
        "cpu/inference_mode/3d",
        "cpu/inference_mode/2d",
        "cpu/autocast_bf16/3d",
        "cpu/matmul/2d",
        "cpu/matmul/3d",
        "cpu/matmul_batched/3d",
    }


def test_linear_decomposes_at_the_autograd_key_into_view_t_addmm(trace):
    for name in ("cpu/grad/3d", "cpu/requires_grad_off/3d", "cpu/no_grad/3d"):
        sc = trace[name]
        assert _chain(sc["tree"])[-1] == "AutogradCPU"
        assert sc["tree"]["kernel"]["tag"] == "math kernel"
        assert _first_ops(sc) == ["aten::view", "aten::t", "aten::addmm", "aten::view"], name
    assert _first_ops(trace["cpu/grad/2d"]) == ["aten::t", "aten::addmm"]


def test_inference_mode_shows_aten_linear_at_the_python_key(trace):
    decomposed = {
        "cpu/inference_mode/3d": ["aten::view", "aten::t", "aten::addmm", "aten::view"],
        "cpu/inference_mode/2d": ["aten::t", "aten::addmm"],
    }
    for name, below in decomposed.items():
        sc = trace[name]
        assert _first_ops(sc) == ["aten::linear"]
        assert _chain(sc["tree"])[-2:] == ["Python", "CPU"]
        assert sc["tree"]["kernel"]["tag"] == "math kernel"
        assert "AutogradFunctionality" in sc["tree"]["tls_exclude"]
        # the same decomposition, below the Python key
        assert [c["op"] for c in sc["tree"]["children"]] == below


def test_key_order_autograd_then_view_tracking_then_backend(trace):
    sc = trace["cpu/grad/3d"]

    def walked(op):  # the recorder's PythonTLSSnapshot step aside
        return [k for k in _chain(_child(sc, op)) if k != "PythonTLSSnapshot"]

    assert walked("aten::t") == ["AutogradCPU", "ADInplaceOrView", "Python", "CPU"]
    assert walked("aten::addmm") == ["AutogradCPU", "Python", "CPU"]
    assert sc["autograd_nodes"][:2] == ["ViewBackward0", "AddmmBackward0"]
    assert "TBackward0" in sc["autograd_nodes"]


def test_autocast_casts_first_then_decomposes_in_bfloat16(trace):
    sc = trace["cpu/autocast_bf16/3d"]
    assert _chain(sc["tree"])[-1] == "AutocastCPU"
    ops = _first_ops(sc)
    assert ops[:3] == ["aten::_to_copy"] * 3
    assert ops[3:] == ["aten::view", "aten::t", "aten::addmm", "aten::view"]
    assert sc["output"].startswith("bfloat16")
    assert "AutocastCPU" in _child(sc, "aten::addmm")["tls_exclude"]  # the autocast kernel's guard


def test_matmul_goes_to_mm_folded_or_not_and_to_bmm_for_two_batched_operands(out, trace):
    expected = {
        "cpu/matmul/2d": (["aten::mm"], "aten::mm"),
        "cpu/matmul/3d": (["aten::view", "aten::mm", "aten::_unsafe_view"], "aten::mm"),
        "cpu/matmul_batched/3d": (["aten::expand", "aten::view"] * 2, "aten::bmm"),
    }
    matmul = read_result(out)["matmul"]
    for name, (ops, gemm) in expected.items():
        sc = trace[name]
        assert _chain(sc["tree"])[-1] == "AutogradCPU", name  # matmul decomposes above Python too
        assert _first_ops(sc)[: len(ops)] == ops and sc["gemm_op"] == gemm, name
        assert matmul[name]["gemm_op"] == gemm and matmul[name]["ops"] == _first_ops(sc)


def test_every_call_is_explained(trace):
    for sc in trace.values():
        assert sc["output_equals_plain_call"] and sc["profiler"]["ok"], sc["name"]
        stack = [sc["tree"]]
        while stack:
            node = stack.pop()
            assert node["explained"] and node["python_key_consistent"], (
                sc["name"],
                node["op"],
            )
            stack += node["children"]


def test_a_profiler_trace_per_scenario_is_linked_from_the_summary(out, trace):
    summary = (out / "summary.md").read_text()
    device = read_result(out)["device"]  # the summary links the traced call on the run's device
    assert f"(profiler/{device}-grad-3d.json)" in summary and "ui.perfetto.dev" in summary
    for name in trace:
        events = json.loads((out / "profiler" / f"{name.replace('/', '-')}.json").read_text())
        ops = {e.get("name") for e in events["traceEvents"]}
        # the root op, even where the recorder never saw it
        assert trace[name]["tree"]["op"] in ops, name


@pytest.mark.gpu
def test_cuda_trace_names_the_gemm_kernels(trace):
    if "cuda/grad/3d" not in trace:
        pytest.skip(
            "this lab run traced the CPU only: run with WORKSHOP_TEST_DEVICE=cuda (or a cuda WORKSHOP_RUN_DIR)"
        )
    for name in ("cuda/grad/3d", "cuda/matmul/2d", "cuda/matmul/3d", "cuda/matmul_batched/3d"):
        sc = trace[name]
        assert sc["gemm_kernels"], (name, sc["device_kernels"])
        # a cuBLAS kernel's name, not the op's (the profiler's CUDA-event fallback named aten::addmm)
        assert not any(k.startswith("aten::") for k in sc["gemm_kernels"]), sc["gemm_kernels"]
        assert {k["op"] for k in sc["device_kernels"] if k["kernel"] in sc["gemm_kernels"]} <= {
            sc["gemm_op"],
            None,
        }
    assert _first_ops(trace["cuda/grad/3d"]) == [
        "aten::view",
        "aten::t",
        "aten::addmm",
        "aten::view",
    ]
    assert _chain(_child(trace["cuda/grad/3d"], "aten::addmm"))[-1] == "CUDA"
