"""The benchmark's verdicts, summary and chart, from the measured rows of bench.py (no GPU needed here).

Targets (H200): forward >= 0.90 x copy bandwidth and >= the faster of torch.softmax and Inductor on every shape
with >= 32 MiB of input; backward >= 0.85 x the copy bandwidth of its three tensors (judged on the same
shapes; smaller ones are listed too, as information: there launch latency, not bandwidth, sets the time).
"""

import functools

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from workshop import atomic  # noqa: E402

FWD_VS_COPY, BWD_VS_COPY, MIN_MIB = 0.90, 0.85, 32.0
NAMES = ("ours", "torch", "inductor", "ours_eager")


def _ratio(a, b):
    return a / b if a and b else None


def evaluate(results: list[dict]) -> dict:
    """Per row: the three ratios and whether each target is met; overall: every judged row meets all three."""
    rows = []
    for r in results:
        best = max((r["fwd"][k] or 0.0) for k in ("torch", "inductor"))
        v = {
            "dtype": r["dtype"],
            "shape": r["shape"],
            "judged": r["input_mib"] >= MIN_MIB,
            "fwd_vs_copy": _ratio(r["fwd"]["ours"], r["fwd"]["copy"]),
            "fwd_vs_best_other": _ratio(r["fwd"]["ours"], best),
            "bwd_vs_copy": _ratio(r["bwd"]["ours"], r["bwd"]["copy"]),
        }
        v["fwd_copy_met"] = (v["fwd_vs_copy"] or 0) >= FWD_VS_COPY
        v["fwd_best_met"] = (v["fwd_vs_best_other"] or 0) >= 1.0
        v["bwd_copy_met"] = (v["bwd_vs_copy"] or 0) >= BWD_VS_COPY
        rows.append(v)
    judged = [v for v in rows if v["judged"]]
    met = {k: sum(v[k] for v in judged) for k in ("fwd_copy_met", "fwd_best_met", "bwd_copy_met")}
    return {
        "rows": rows,
        "judged_shapes": len(judged),
        "met": met,
        "all_met": bool(judged) and all(n == len(judged) for n in met.values()),
    }


def _label(shape) -> str:
    return f"{shape[0]}x{shape[1]}"


def _gbps_cell(row: dict, direction: str, name: str) -> str:
    return f"{row[direction][name]:.0f}" if row[direction].get(name) else "-"


def _ratio_cell(ratio: float | None, met: bool, judged: bool) -> str:
    return "-" if ratio is None else f"{ratio:.2f}" + ("" if met or not judged else " **miss**")


def summary(doc: dict) -> str:
    t = doc["targets"]
    lines = [
        f"# custom_op benchmark on {doc['device']}",
        "",
        f"`{doc['command']}`; torch {doc['versions']['torch']}, triton {doc['versions']['triton']}; "
        f"op registered as a {doc['registration']}. {doc['timing']}. Bytes: {doc['bytes']}.",
        "",
        f"Targets on the {t['judged_shapes']} shapes with >= {MIN_MIB:.0f} MiB of input: "
        f"fwd >= {FWD_VS_COPY} x copy met on {t['met']['fwd_copy_met']}, fwd >= max(torch, Inductor) met on "
        f"{t['met']['fwd_best_met']}, bwd >= {BWD_VS_COPY} x copy met on {t['met']['bwd_copy_met']}. "
        f"**All met: {t['all_met']}**.",
        "",
        "| dtype | shape | MiB | fwd ours | torch | inductor | copy | ours/copy | ours/best | ours eager "
        "| bwd ours | torch | inductor | copy | ours/copy | ours eager |",
        "|" + "---|" * 16,
    ]
    for r, v in zip(doc["results"], t["rows"], strict=True):
        g = functools.partial(_gbps_cell, r)
        mark = functools.partial(_ratio_cell, judged=v["judged"])
        lines.append(
            f"| {r['dtype']} | {_label(r['shape'])} | {r['input_mib']:.0f} | {g('fwd', 'ours')} | "
            f"{g('fwd', 'torch')} | {g('fwd', 'inductor')} | {g('fwd', 'copy')} | "
            f"{mark(v['fwd_vs_copy'], v['fwd_copy_met'])} | "
            f"{mark(v['fwd_vs_best_other'], v['fwd_best_met'])} | {g('fwd', 'ours_eager')} | "
            f"{g('bwd', 'ours')} | {g('bwd', 'torch')} | {g('bwd', 'inductor')} | {g('bwd', 'copy')} | "
            f"{mark(v['bwd_vs_copy'], v['bwd_copy_met'])} | {g('bwd', 'ours_eager')} |"
        )
    lines += [
        "",
        "GB/s (device time; 'ours eager' includes the Python op call). Shapes under 32 MiB are listed but "
        "not judged: misses are marked on judged shapes only.",
    ]
    errors = {
        f"{r['dtype']} {_label(r['shape'])} {k}": e
        for r in doc["results"]
        for k, e in r["errors"].items()
    }
    if errors:
        lines += ["", "Errors:"] + [f"- {k}: `{e}`" for k, e in errors.items()]
    return "\n".join(lines) + "\n"


def write_chart(doc: dict, path) -> None:
    dtypes = list(dict.fromkeys(r["dtype"] for r in doc["results"]))
    fig, axes = plt.subplots(
        2, len(dtypes), figsize=(7 * len(dtypes), 8), squeeze=False, sharey=True
    )
    for col, dtype in enumerate(dtypes):
        rows = [r for r in doc["results"] if r["dtype"] == dtype]
        xs = range(len(rows))
        for row_i, (direction, target) in enumerate((("fwd", FWD_VS_COPY), ("bwd", BWD_VS_COPY))):
            ax = axes[row_i][col]
            copy = [r[direction]["copy"] or float("nan") for r in rows]
            ax.plot(xs, copy, "k--", lw=1.5, label="device copy (ceiling)")
            ax.plot(
                xs, [c * target for c in copy], ":", color="gray", label=f"target {target} x copy"
            )
            for name, style in zip(NAMES, ("o-", "s-", "^-", "x:"), strict=True):
                ax.plot(
                    xs,
                    [r[direction].get(name) or float("nan") for r in rows],
                    style,
                    ms=4,
                    label=name,
                )
            for i, r in enumerate(rows):
                if r["input_mib"] < MIN_MIB:
                    ax.axvspan(i - 0.5, i + 0.5, color="0.93", lw=0)  # not judged: under 32 MiB
            ax.set_xticks(list(xs), [_label(r["shape"]) for r in rows], rotation=60, fontsize=7)
            ax.set(title=f"{direction} {dtype}", ylabel="GB/s")
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"softmax GB/s on {doc['device']} (grey: < {MIN_MIB:.0f} MiB input, not judged)")
    fig.tight_layout()
    atomic.save_figure(path, fig)
