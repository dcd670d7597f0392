"""How the lab shows a trace: short text forms of keys, kernels and chains, for trace.md and summary.md (their
templates call these), and dispatch_path.png, the key ladder, one panel per scenario."""

from __future__ import annotations

from workshop.i18n import _
from workshop.labs.dispatcher import reimpl
from workshop.labs.dispatcher.tracing import depths, flat

LAB_KEYS = ("CPU", "CUDA")  # keys of other backends are summarized, not listed
MAX_SHOWN = 7  # the recorder's handler excludes every key above Python: trace.json has them all


def rank_or_zero(key: str) -> tuple[int, int]:
    try:
        return reimpl.rank(key)
    except KeyError:
        return (0, 0)


def short_keys(key_names: list[str]) -> str:
    """Key names, highest priority first, with other backends' Autocast keys and functorch keys counted."""
    chosen = (
        k
        for k in key_names
        if not (k.startswith("FuncTorch") or (k.startswith("Autocast") and k[8:] not in LAB_KEYS))
    )
    shown = sorted(chosen, key=rank_or_zero, reverse=True)[:MAX_SHOWN]
    hidden = len(key_names) - len(shown)
    more = " " + _("+{n} more").format(n=hidden) if hidden else ""
    return ", ".join(shown) + more or "-"


def chain_text(node: dict) -> str:
    """'PythonTLSSnapshot → **AutogradCPU**: math kernel `RegisterCompositeImplicitAutograd_0.cpp`'."""
    steps = [s for s in node["chain"] if s["key"]]
    if not steps:
        return "-"
    walked = " → ".join(s["key"] if s["passes_on"] else f"**{s['key']}**" for s in steps)
    kernel = steps[-1]["kernel"]
    return f"{walked}: " + (
        _("(none)") if kernel is None else f"{kernel['tag']} `{kernel['source']}`"
    )


def top_ops(node: dict) -> list[str]:
    """The first ops to reach the Python key: the root itself, or the calls its kernels above Python made."""
    calls = [node] if node["arrived_at_python"] else node["children"]
    return [c["op"] for c in calls]


def code_list(items) -> str:
    """'`aten::view`, `aten::t`': names as inline code, comma separated."""
    return ", ".join(f"`{i}`" for i in items)


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
    # matplotlib costs ~1 s to import: only a whole run draws, not a check of named exercises
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
