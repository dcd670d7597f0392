"""dispatch_path.png: the key ladder, one panel per scenario."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from workshop.i18n import _
from workshop.labs.dispatcher.crosscheck import depths, flat
from workshop.labs.dispatcher.trace_text import rank_or_zero

TAG_COLOR = {
    "math kernel": "tab:orange",
    "kernel": "tab:blue",
    "default backend kernel": "tab:green",
    "autograd kernel": "tab:red",
    "backend fallback": "tab:purple",
}


def dispatch_path_figure(panels: list[dict]):
    """One panel per scenario: x = the calls in order (indented by nesting), y = the keys by priority; each call's
    chain is a line from the key that wins first down to the key whose kernel runs (filled marker)."""
    all_keys = sorted(
        {s["key"] for sc in panels for n in flat(sc["tree"]) for s in n["chain"] if s["key"]},
        key=rank_or_zero,
    )
    y = {k: i for i, k in enumerate(all_keys)}
    fig, axes = plt.subplots(
        1, len(panels), figsize=(6.5 * len(panels), 0.45 * len(all_keys) + 3), squeeze=False
    )
    for ax, sc in zip(axes[0], panels, strict=True):
        labels = []
        for x, (depth, n) in enumerate(depths(sc["tree"])):
            steps = [s for s in n["chain"] if s["key"]]
            ax.plot(
                [x] * len(steps), [y[s["key"]] for s in steps], "-", color="0.6", lw=1, zorder=1
            )
            for s in steps:
                color = TAG_COLOR.get(s["kernel"]["tag"] if s["kernel"] else "?", "k")
                face = "white" if s["passes_on"] else color
                ax.scatter(
                    x,
                    y[s["key"]],
                    s=55,
                    zorder=2,
                    edgecolors=color,
                    linewidths=1.5,
                    facecolors=face,
                )
            labels.append("·" * depth + n["op"].removeprefix("aten::"))
        ax.set_xticks(
            range(len(labels)), labels, rotation=60, ha="right", fontsize=8, family="monospace"
        )
        ax.set_yticks(range(len(all_keys)), all_keys, fontsize=8)
        ax.set_title(f"{sc['name']}: {sc['tree']['op']} -> {sc['output']}", fontsize=10)
        ax.grid(axis="y", color="0.92")
    handles = [
        plt.Line2D([], [], marker="o", ls="", color=c, label=t) for t, c in TAG_COLOR.items()
    ]
    passes = _("passes the call on")
    handles.append(
        plt.Line2D([], [], marker="o", ls="", color="k", markerfacecolor="white", label=passes)
    )
    fig.legend(handles=handles, loc="upper center", ncol=len(handles), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return fig
