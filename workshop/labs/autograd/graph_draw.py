"""Draw the walked grad_fn graph (graph_json's data) as a layered DAG with matplotlib: no graphviz needed.

Layer = longest path from the loss, so every arrow points down, the way the backward runs. Each box shows the
node and what it saved for the backward; AccumulateGrad boxes name their leaf; each arrow is labelled with the
shape of the gradient that travels along it. A node with a "step" key is labelled [step], the order it ran.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from workshop.i18n import _

KIND_COLOR = {"root": "#fde2c8", "op": "#dbe8f6", "leaf": "#d8f0d2"}


def layers(graph: dict) -> dict[int, int]:
    """node id -> depth, the longest path from the root (the graph is acyclic; relax edges until stable)."""
    depth = {graph["root"]: 0}
    changed = True
    while changed:
        changed = False
        for e in graph["edges"]:
            if e["from"] in depth and depth.get(e["to"], -1) < depth[e["from"]] + 1:
                depth[e["to"]] = depth[e["from"]] + 1
                changed = True
    return depth


def saved_line(name: str, saved: dict) -> str:
    if saved["kind"] == "tensor":
        return f"{name}: {tuple(saved['shape'])} {saved['dtype']}"
    return f"{name} = {saved['value']}"


def node_label(node: dict) -> str:
    if "leaf" in node:
        leaf = node["leaf"]
        return f"AccumulateGrad\n-> {leaf['name']}.grad  {tuple(leaf['shape'])} {leaf['dtype']}"
    saved = [saved_line(name, s) for name, s in node["saved"].items()]
    return "\n".join(
        [node["name"], *(f"  {line}" for line in saved)]
        if saved
        else [node["name"], "  " + _("(saves nothing)")]
    )


def positions(graph: dict) -> tuple[dict[int, tuple[float, float]], int, int]:
    """node id -> (x, y) of its box, one row per depth; and the widest row's length and the number of rows."""
    depth = layers(graph)
    rows: dict[int, list[int]] = {}
    for node in graph["nodes"]:  # graph order is breadth-first, so siblings keep their edge order
        rows.setdefault(depth[node["id"]], []).append(node["id"])
    width = max(len(r) for r in rows.values())
    pos = {
        i: ((k + 0.5) * width / len(row), -d) for d, row in rows.items() for k, i in enumerate(row)
    }
    return pos, width, len(rows)


def draw(graph: dict, title: str):
    """The figure of the graph: returns a matplotlib Figure."""
    pos, width, n_rows = positions(graph)
    fig, ax = plt.subplots(figsize=(4.2 * width, 2.0 * n_rows + 0.6))
    boxes = {}
    for node in graph["nodes"]:
        kind = "root" if node["id"] == graph["root"] else "leaf" if "leaf" in node else "op"
        step = f"[{node['step']}] " if "step" in node else ""
        box = {"boxstyle": "round,pad=0.4", "fc": KIND_COLOR[kind], "ec": "#333"}
        boxes[node["id"]] = ax.text(
            *pos[node["id"]],
            step + node_label(node),
            fontsize=7.5,
            family="monospace",
            ha="center",
            va="center",
            multialignment="left",
            bbox=box,
        )
    draw_edges(ax, graph, pos, boxes)
    ax.set(xlim=(-0.1, width + 0.1), ylim=(-n_rows + 0.5, 0.6), title=title)
    ax.axis("off")
    return fig


def draw_edges(ax, graph: dict, pos: dict, boxes: dict) -> None:
    """One arrow per edge, clipped at the boxes' edges whatever their height, labelled with the gradient's shape."""
    by_id = {n["id"]: n for n in graph["nodes"]}
    for e in graph["edges"]:
        (x0, y0), (x1, y1) = pos[e["from"]], pos[e["to"]]
        ax.annotate(
            "",
            xy=(x1, y1),
            xytext=(x0, y0),
            arrowprops={
                "arrowstyle": "-|>",
                "color": "#555",
                "lw": 1.2,
                "shrinkA": 2,
                "shrinkB": 2,
                "patchA": boxes[e["from"]].get_bbox_patch(),
                "patchB": boxes[e["to"]].get_bbox_patch(),
            },
        )
        shape = by_id[e["to"]]["inputs"][e["input_nr"]]["shape"]
        ax.text(
            (x0 + x1) / 2 + 0.04,
            (y0 + y1) / 2,
            f"grad {tuple(shape)}",
            fontsize=7,
            color="#a33",
            ha="left",
            va="center",
            bbox={"fc": "white", "ec": "none", "pad": 0.5},
        )
