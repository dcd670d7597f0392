"""trace.md (a table per scenario, a comparison across scenarios) and dispatch_path.png (the key ladder)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from workshop.labs.dispatcher import reimpl
from workshop.labs.dispatcher.explain import flat

LAB_KEYS = ("CPU", "CUDA")  # keys of other backends are summarized, not listed
MAX_SHOWN = 7  # the recorder's handler excludes every key above Python: trace.json has them all


def short_keys(key_names: list[str]) -> str:
    """Key names, highest priority first, with other backends' Autocast keys and functorch keys counted."""

    def interesting(k: str) -> bool:
        return not (
            k.startswith("FuncTorch") or (k.startswith("Autocast") and k[8:] not in LAB_KEYS)
        )

    shown = sorted((k for k in key_names if interesting(k)), key=_rank, reverse=True)[:MAX_SHOWN]
    hidden = len(key_names) - len(shown)
    return ", ".join(shown) + (f" +{hidden} more" if hidden else "") or "-"


def _rank(key: str):
    try:
        return reimpl.rank(key)
    except KeyError:
        return (0, 0)


def kernel_label(step: dict) -> str:
    k = step["kernel"]
    return "(none)" if k is None else f"{k['tag']} `{k['source']}`"


def chain_text(node: dict) -> str:
    if not node["chain"]:
        return "-"
    walked = " → ".join(s["key"] if s["passes_on"] else f"**{s['key']}**" for s in node["chain"])
    return f"{walked}: {kernel_label(node['chain'][-1])}"


def _depths(node: dict, depth: int = 0):
    yield depth, node
    for c in node["children"]:
        yield from _depths(c, depth + 1)


TABLE_HEAD = (
    "| call (· = made by the kernel above) | tensor keys | TLS include | TLS exclude (from) "
    "| chain: key → … → **key that runs**: kernel | at Python key | matches dispatcher |\n"
    "|---|---|---|---|---|---|---|"
)


def scenario_md(sc: dict) -> str:
    py = sc["python_layer"][0]
    args = ", ".join(
        f"{a['dtype']}{a['shape']}" + (" requires_grad" if a["requires_grad"] else "")
        for a in py["tensor_args"]
    )
    rows = []
    for depth, n in _depths(sc["tree"]):
        ok = "yes" if n["agrees"] and n["explained"] and n["python_key_consistent"] else "**NO**"
        seen = "seen" if n["arrived_at_python"] else "-"
        rows.append(
            f"| {'· ' * depth}`{n['op']}.{n['overload']}` | {short_keys(n['tensor_keys'])} | "
            f"{short_keys(n['tls_include'])} | {short_keys(n['tls_exclude'])} ({n['tls_from']}) | "
            f"{chain_text(n)} | {seen} | {ok} |"
        )
    above = ", ".join(f"`{o}`" for o in sc["profiler"]["decided_above_python"])
    kernels = (
        "\n".join(f"- `{k['op']}` launched `{k['kernel']}`" for k in sc["device_kernels"])
        or "- (none: CPU)"
    )
    return f"""## `{sc["name"]}`: `{py["function"]}({args})` -> {sc["output"]}

Python layer (TorchFunctionMode): `{py["function"]}`; TLS include {short_keys(py["tls_include"])};
exclude {short_keys(py["tls_exclude"])}.

{TABLE_HEAD}
{chr(10).join(rows)}

Autograd nodes recorded: {", ".join(sc["autograd_nodes"]) or "none"}.
Decided above the Python key (profiler only): {above or "nothing"}.
Output equals `lm_head(x)` exactly: {sc["output_equals_lm_head"]}.

Device kernels:
{kernels}
"""


def comparison_md(results: list[dict]) -> str:
    rows = []
    for sc in results:
        root = sc["tree"]
        where = root["chain"][-1]["key"] if root["chain"] else "-"
        top = [
            c["op"].removeprefix("aten::")
            for c in (root["children"] if not root["arrived_at_python"] else [root])
        ]
        rows.append(
            f"| `{sc['name']}` | {where}: {root['kernel']['tag'] if root['kernel'] else '-'} | "
            f"{', '.join(top)} | {(sc['autograd_nodes'] or ['none'])[0]} | {sc['output']} | "
            f"{', '.join(sc['gemm_kernels']) or '-'} |"
        )
    return (
        "| scenario | aten::linear decided at | first ops to reach the Python key | autograd node | output "
        "| GEMM kernel |\n|---|---|---|---|---|---|\n" + "\n".join(rows)
    )


def trace_md(results: list[dict]) -> str:
    return (
        "# Dispatcher trace of F.linear(x, lm_head.weight, lm_head.bias)\n\n"
        "Bold: the key whose kernel does the work (the chain ends there). Key sets list the highest priority\n"
        f"first, at most {MAX_SHOWN}; '+N more' counts the rest (other backends' Autocast keys, functorch\n"
        "keys, ...; trace.json lists them all).\n\n## Side by side\n\n"
        + comparison_md(results)
        + "\n\n"
        + "\n".join(scenario_md(sc) for sc in results)
    )


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
        {s["key"] for sc in panels for n in flat(sc["tree"]) for s in n["chain"]}, key=_rank
    )
    y = {k: i for i, k in enumerate(all_keys)}
    fig, axes = plt.subplots(
        1, len(panels), figsize=(6.5 * len(panels), 0.45 * len(all_keys) + 3), squeeze=False
    )
    for ax, sc in zip(axes[0], panels, strict=True):
        labels = []
        for x, (depth, n) in enumerate(_depths(sc["tree"])):
            ys = [y[s["key"]] for s in n["chain"]]
            ax.plot([x] * len(ys), ys, "-", color="0.6", lw=1, zorder=1)
            for s in n["chain"]:
                tag = s["kernel"]["tag"] if s["kernel"] else "?"
                color = TAG_COLOR.get(tag, "k")
                ax.scatter(
                    x,
                    y[s["key"]],
                    s=55,
                    zorder=2,
                    edgecolors=color,
                    linewidths=1.5,
                    facecolors="white" if s["passes_on"] else color,
                )
            labels.append("·" * depth + n["op"].removeprefix("aten::"))
        ax.set_xticks(
            range(len(labels)), labels, rotation=60, ha="right", fontsize=8, family="monospace"
        )
        ax.set_yticks(range(len(all_keys)), all_keys, fontsize=8)
        ax.set_title(f"{sc['name']}: F.linear -> {sc['output']}", fontsize=10)
        ax.grid(axis="y", color="0.92")
    handles = [
        plt.Line2D([], [], marker="o", ls="", color=c, label=t) for t, c in TAG_COLOR.items()
    ]
    handles.append(
        plt.Line2D(
            [],
            [],
            marker="o",
            ls="",
            color="k",
            markerfacecolor="white",
            label="passes the call on",
        )
    )
    fig.legend(handles=handles, loc="upper center", ncol=len(handles), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return fig
