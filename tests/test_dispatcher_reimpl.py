"""The pieces of the dispatcher lab, unit by unit: key names, table parsing, the re-implementation's rules."""

from __future__ import annotations

import pytest
import torch

from workshop.labs.dispatcher import keys, reimpl
from workshop.labs.dispatcher.explain import explain_call, priority_disagreements
from workshop.labs.dispatcher.recorder import Call


def test_table_parser_reads_both_dump_formats_and_skips_noise():
    text = """name: aten::foo
schema: aten::foo(Tensor self) -> Tensor
CPU: registered at /x/build/RegisterCPU_2.cpp:5051 [kernel]
ADInplaceOrView: fallthrough registered at /x/VariableFallbackKernel.cpp:103 [backend fallback]
Conjugate: registered at /x/ConjugateFallback.cpp:21 :: (none) [ fallthrough boxed ]
Autograd[alias]: registered at /x/VariableType_0.cpp:10 :: (Tensor _0) -> Tensor _0 [ boxed unboxed ]
Meta (inactive): registered at /x/RegisterMeta_0.cpp:1 [kernel]
garbage line without a colon"""
    table = keys.parse_table(text)
    assert set(table) == {"CPU", "ADInplaceOrView", "Conjugate", "Autograd[alias]"}
    assert table["CPU"] == keys.Kernel("RegisterCPU_2.cpp", "kernel", False)
    assert (
        table["ADInplaceOrView"].fallthrough and table["ADInplaceOrView"].tag == "backend fallback"
    )
    assert table["Conjugate"].fallthrough
    assert table["Autograd[alias]"].source == "VariableType_0.cpp"  # no line number survives


def test_key_names_split_per_backend_keys_and_show_bare_functionalities():
    assert keys.split_runtime_key("AutogradCPU") == ("AutogradFunctionality", "CPU")
    assert keys.split_runtime_key("CUDA") == ("Dense", "CUDA")
    assert keys.split_runtime_key("AutogradOther") == ("AutogradOther", None)
    x = torch.zeros(2, requires_grad=True)
    assert {"CPU", "AutogradCPU", "ADInplaceOrView"} <= set(keys.names(torch._C._dispatch_keys(x)))
    with torch.inference_mode():
        include, exclude = keys.tls()
        assert "AutogradFunctionality" in keys.names(exclude)  # all backends' autograd, as one bit
        assert "ADInplaceOrView" not in keys.names(include)


def test_priority_list_orders_keys_like_the_real_dispatcher():
    assert priority_disagreements() == []
    assert (
        max(["CPU", "AutogradCPU", "Python", "PythonTLSSnapshot"], key=reimpl.rank)
        == "PythonTLSSnapshot"
    )
    assert max(["CPU", "CUDA"], key=reimpl.rank) == "CUDA"
    with pytest.raises(KeyError, match="no priority known"):
        reimpl.rank("NoSuchKey")


def test_exclusion_removes_a_functionality_for_every_backend():
    assert reimpl.keys_in_play(["CPU", "AutogradCPU"], ["Python"], ["AutogradFunctionality"]) == {
        "CPU",
        "Python",
    }


@pytest.mark.parametrize(
    "op,key,tag",
    [
        ("aten::linear", "AutogradCPU", "math kernel"),
        ("aten::linear", "CPU", "math kernel"),
        ("aten::addmm", "AutogradCPU", "autograd kernel"),
        ("aten::addmm", "CPU", "kernel"),
        ("aten::t", "CPU", "default backend kernel"),
        ("aten::t", "ADInplaceOrView", "kernel"),
        ("aten::linear", "Python", "backend fallback"),
        ("aten::linear", "AutocastCPU", "kernel"),
    ],
)
def test_table_entry_matches_the_computed_table(op, key, tag):
    mine = reimpl.table_entry(keys.registrations(op), keys.backend_fallbacks(op), key)
    real = keys.computed_table(op)[key]
    assert (mine.source, mine.tag) == (real.source, real.tag)
    assert mine.tag == tag
    assert keys.computed_kernel_source(op, key)[0] == real.source


def _call(op: str, tensor: torch.Tensor) -> dict:
    include, exclude = keys.tls()
    call = Call(op, "default", torch._C._dispatch_keys(tensor), (include, exclude))
    return explain_call(call, include, exclude, "test")


def test_chain_of_a_view_op_walks_autograd_then_view_tracking_then_backend():
    node = _call("aten::t", torch.zeros(3, 4, requires_grad=True))
    assert [s["key"] for s in node["chain"]] == ["AutogradCPU", "ADInplaceOrView", "CPU"]
    assert node["agrees"] and node["explained"] and node["python_key_consistent"]
    assert set(node["child_exclude"]) >= {"AutogradFunctionality", "ADInplaceOrView"}


def test_linear_is_decomposed_at_the_autograd_key_unless_autograd_is_excluded():
    x = torch.zeros(3, 4)
    assert [s["key"] for s in _call("aten::linear", x)["chain"]] == ["AutogradCPU"]
    with torch.inference_mode():
        node = _call("aten::linear", x)
    assert [(s["key"], s["kernel"]["tag"]) for s in node["chain"]] == [("CPU", "math kernel")]
    assert node["agrees"]
