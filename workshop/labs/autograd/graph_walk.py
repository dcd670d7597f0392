"""Walk the backward graph autograd recorded in the forward: from loss.grad_fn along next_functions.

Every Node is a backward function. Its *inputs* are the gradients of its forward op's outputs (one per output,
described by Node._input_metadata); its *outputs* go along next_functions, one (next_node, input_nr) edge per
forward input (None where that input needs no gradient). What the forward kept for the backward is on the node
as `_saved_<name>` attributes. Leaves that require grad end in an AccumulateGrad node whose .variable is the leaf.
"""

from __future__ import annotations

import torch
from torch.autograd.graph import Node

SAVED_PREFIX = "_saved_"


def walk(root: Node) -> list[Node]:
    """Every node reachable from root, each once, in breadth-first order (root first)."""
    order, seen = [root], {root}
    for node in order:  # the list grows while we walk it: a queue
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                order.append(nxt)
    return order


def num_inputs(node: Node) -> int:
    """How many gradients the node takes: one per output of its forward op."""
    return len(node._input_metadata)


def describe_value(value) -> dict:
    """A saved value as JSON: tensors by shape and dtype (their data is what the backward reads)."""
    if isinstance(value, torch.Tensor):
        return {
            "kind": "tensor",
            "shape": list(value.shape),
            "dtype": str(value.dtype).removeprefix("torch."),
            "device": value.device.type,
        }
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"kind": type(value).__name__, "value": value}
    if isinstance(value, (tuple, list)) and all(isinstance(v, (int, torch.SymInt)) for v in value):
        return {"kind": "ints", "value": [int(v) for v in value]}
    return {"kind": type(value).__name__, "value": repr(value)[:80]}


def saved_values(node: Node) -> dict[str, dict]:
    """name -> description of everything the node saved (read before the backward frees them)."""
    names = sorted(a for a in dir(node) if a.startswith(SAVED_PREFIX))
    return {a.removeprefix(SAVED_PREFIX): describe_value(getattr(node, a)) for a in names}


def graph_json(root: Node, leaf_names: dict[str, torch.Tensor]) -> dict:
    """The whole graph as JSON-ready data: nodes (with saved tensors and leaves) and edges.

    leaf_names maps a name to a leaf tensor, so AccumulateGrad nodes say which leaf they feed ("W", "x", ...).
    """
    nodes = walk(root)
    ids = {node: i for i, node in enumerate(nodes)}
    name_of = {id(t): name for name, t in leaf_names.items()}
    out_nodes, edges = [], []
    for node, i in ids.items():
        entry = {
            "id": i,
            "name": type(node).__name__,
            "sequence_nr": node._sequence_nr(),
            "inputs": [
                {"shape": list(m.shape), "dtype": str(m.dtype).removeprefix("torch.")}
                for m in node._input_metadata
            ],
            "outputs": [
                None if nxt is None else {"to": ids[nxt], "input_nr": nr}
                for nxt, nr in node.next_functions
            ],
            "saved": saved_values(node),
        }
        if hasattr(node, "variable"):  # AccumulateGrad: the end of the line, where .grad is written
            leaf = node.variable
            entry["leaf"] = {"name": name_of.get(id(leaf), "?"), **describe_value(leaf)}
        out_nodes.append(entry)
        edges += [
            {"from": i, "to": ids[nxt], "output_nr": k, "input_nr": nr}
            for k, (nxt, nr) in enumerate(node.next_functions)
            if nxt is not None
        ]
    return {"root": 0, "nodes": out_nodes, "edges": edges}


def chain_text(node: Node, leaf_names: dict[str, torch.Tensor]) -> str:
    """The graph below node as one line: 'A -> B -> [C; D -> E]', each AccumulateGrad naming its leaf.

    A branch is listed for each edge in next_functions order (for AddmmBackward0: self = b, mat1 = x's rows,
    mat2 = W^T); an edge to None (an input that needs no gradient) is left out.
    """
    if hasattr(node, "variable"):
        name = next((n for n, t in leaf_names.items() if t is node.variable), "?")
        return f"AccumulateGrad({name})"
    below = [chain_text(nxt, leaf_names) for nxt, _ in node.next_functions if nxt is not None]
    name = type(node).__name__
    if not below:
        return name
    return f"{name} -> {below[0]}" if len(below) == 1 else f"{name} -> [{'; '.join(below)}]"
