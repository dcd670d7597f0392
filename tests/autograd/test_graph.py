"""Lab autograd, part 2: walking the grad_fn graph and drawing it."""

from __future__ import annotations

import matplotlib
import torch
import torch.nn.functional as F

from workshop.labs.autograd.graph_draw import draw, layers, node_label
from workshop.labs.autograd.graph_walk import (
    chain_text,
    describe_value,
    graph_json,
    num_inputs,
    saved_values,
    walk,
)
from workshop.minigpt.model import lm_loss


def head_graph(rows=5):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1, rows, 8, generator=gen, requires_grad=True)
    W = torch.randn(11, 8, generator=gen, requires_grad=True)
    b = torch.randn(11, generator=gen, requires_grad=True)
    loss = lm_loss(F.linear(x, W, b), torch.randint(1, 11, (1, rows), generator=gen))
    return loss, {"x": x, "W": W, "b": b}


def test_walk_visits_every_node_once_root_first():
    a = torch.randn(3, requires_grad=True)
    y = (a * a + a.exp()).sum()  # a feeds three places: one AccumulateGrad, reached thrice
    nodes = walk(y.grad_fn)
    assert nodes[0] is y.grad_fn
    assert len(nodes) == len(set(nodes))
    names = [type(n).__name__ for n in nodes]
    assert names.count("AccumulateGrad") == 1
    assert {"SumBackward0", "AddBackward0", "MulBackward0", "ExpBackward0"} <= set(names)


def test_saved_tensors_are_read_with_names_shapes_dtypes():
    a = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    y = a.exp()  # ExpBackward0 saves its result: d exp(a) = exp(a)
    saved = saved_values(y.grad_fn)
    assert saved == {
        "result": {"kind": "tensor", "shape": [4, 3], "dtype": "float64", "device": "cpu"}
    }
    assert describe_value((2, 3)) == {"kind": "ints", "value": [2, 3]}
    assert describe_value(None) == {"kind": "NoneType", "value": None}
    assert (
        num_inputs(a.unbind(0)[0].grad_fn) == 4
    )  # unbind has 4 outputs, so its backward takes 4 gradients


def test_lm_head_graph_json():
    loss, named = head_graph()
    g = graph_json(loss.grad_fn, named)
    names = [n["name"] for n in g["nodes"]]
    assert names[:2] == ["NllLossBackward0", "LogSoftmaxBackward0"]
    assert sorted(n["leaf"]["name"] for n in g["nodes"] if "leaf" in n) == ["W", "b", "x"]
    leaf_shapes = {n["leaf"]["name"]: n["leaf"]["shape"] for n in g["nodes"] if "leaf" in n}
    assert leaf_shapes == {"x": [1, 5, 8], "W": [11, 8], "b": [11]}
    # Every edge agrees with its node's outputs, and every edge's target exists.
    ids = {n["id"] for n in g["nodes"]}
    for e in g["edges"]:
        assert e["to"] in ids
        assert g["nodes"][e["from"]]["outputs"][e["output_nr"]] == {
            "to": e["to"],
            "input_nr": e["input_nr"],
        }
    tensors_saved = {
        (n["name"], k) for n in g["nodes"] for k, s in n["saved"].items() if s["kind"] == "tensor"
    }
    assert (
        "LogSoftmaxBackward0",
        "result",
    ) in tensors_saved  # log_softmax's backward needs its output
    assert all(n["inputs"] for n in g["nodes"])  # every node takes at least one gradient


def test_layers_put_every_edge_downwards():
    loss, named = head_graph()
    g = graph_json(loss.grad_fn, named)
    depth = layers(g)
    assert depth[g["root"]] == 0 and len(depth) == len(g["nodes"])
    assert all(depth[e["to"]] > depth[e["from"]] for e in g["edges"])


def test_drawing_has_a_box_per_node_and_a_label_per_edge():
    loss, named = head_graph()
    g = graph_json(loss.grad_fn, named)
    g["nodes"][0]["step"] = 1
    fig = draw(g, "test")
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert sum(t.startswith("grad (") for t in texts) == len(g["edges"])
    assert sum("Backward" in t or "AccumulateGrad" in t for t in texts) == len(g["nodes"])
    assert texts.count("[1] " + node_label(g["nodes"][0])) == 1
    matplotlib.pyplot.close(fig)


def test_chain_text_follows_next_functions_and_names_leaves():
    a = torch.randn(3, requires_grad=True)
    c = torch.randn(3)  # needs no gradient: its edge is None and left out
    y = (a.exp() * c + a).sum()
    assert chain_text(y.grad_fn, {"a": a}) == (
        "SumBackward0 -> AddBackward0 -> [MulBackward0 -> ExpBackward0 -> AccumulateGrad(a); "
        "AccumulateGrad(a)]"
    )
