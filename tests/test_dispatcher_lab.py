"""The dispatcher lab's outputs: checks, and golden expectations normalized to op names, key names and order
(no file:line strings, no kernel source names), which hold on torch 2.11 and 2.13."""

from __future__ import annotations

import json

import pytest
from conftest import assert_result_shape, read_result


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
    return [s["key"] for s in node["chain"]]


def _child(sc, op):
    return next(c for c in sc["tree"]["children"] if c["op"] == op)


def test_lab_passes_and_writes_its_artifacts(out):
    result = read_result(out)
    assert_result_shape(result, "dispatcher")
    assert result["passed"], [c for c in result["checks"] if not c["passed"]]
    for name in ("trace.json", "trace.md", "dispatch_path.png", "summary.md"):
        assert (out / name).stat().st_size > 0, name


def test_scenarios_cover_autograd_states_autocast_and_both_ranks(trace):
    assert {n for n in trace if n.startswith("cpu/")} == {
        "cpu/grad/3d",
        "cpu/grad/2d",
        "cpu/requires_grad_off/3d",
        "cpu/no_grad/3d",
        "cpu/inference_mode/3d",
        "cpu/inference_mode/2d",
        "cpu/autocast_bf16/3d",
    }


def test_linear_decomposes_at_the_autograd_key_into_view_t_addmm(trace):
    for name in ("cpu/grad/3d", "cpu/requires_grad_off/3d", "cpu/no_grad/3d"):
        sc = trace[name]
        assert (
            _chain(sc["tree"])[-1] == "AutogradCPU" and sc["tree"]["kernel"]["tag"] == "math kernel"
        )
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
        assert (
            _chain(sc["tree"])[-2:] == ["Python", "CPU"]
            and sc["tree"]["kernel"]["tag"] == "math kernel"
        )
        assert "AutogradFunctionality" in sc["tree"]["tls_exclude"]
        assert [
            c["op"] for c in sc["tree"]["children"]
        ] == below  # the same decomposition, below the Python key


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
    assert ops[:3] == ["aten::_to_copy"] * 3 and ops[3:] == [
        "aten::view",
        "aten::t",
        "aten::addmm",
        "aten::view",
    ]
    assert sc["output"].startswith("bfloat16")
    assert "AutocastCPU" in _child(sc, "aten::addmm")["tls_exclude"]  # the autocast kernel's guard


def test_every_call_is_explained_and_agrees(trace):
    for sc in trace.values():
        assert sc["output_equals_lm_head"] and sc["profiler"]["ok"], sc["name"]
        stack = [sc["tree"]]
        while stack:
            node = stack.pop()
            assert node["explained"] and node["agrees"] and node["python_key_consistent"], (
                sc["name"],
                node["op"],
            )
            stack += node["children"]


@pytest.mark.gpu
def test_cuda_trace_names_the_gemm_kernel(trace):
    if "cuda/grad/3d" not in trace:
        pytest.skip(
            "this lab run traced the CPU only: run with WORKSHOP_TEST_DEVICE=cuda (or a cuda WORKSHOP_RUN_DIR)"
        )
    sc = trace["cuda/grad/3d"]
    assert sc["gemm_kernels"], sc["device_kernels"]
    assert _first_ops(sc) == ["aten::view", "aten::t", "aten::addmm", "aten::view"]
    assert _chain(_child(sc, "aten::addmm"))[-1] == "CUDA"
