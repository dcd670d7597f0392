"""The benchmark's verdicts, summary and chart, from the measured rows of benchmark.py (no GPU needed here).

Targets (on any GPU; first set on an H200, the copy ratio raised from 0.90 to 0.95 since):
- device time: forward and backward >= every peer (torch, Inductor, Liger: the run's doc["peers"]) on every shape,
  the small ones included; and >= 0.95 x the copy bandwidth of their bytes on every shape with >= 32 MiB of input
  (under it, launch latency, not bandwidth, sets the time: listed as information);
- eager time: ours called from Python >= 0.90 x torch's, forward and backward, on the shapes of >= 32 MiB.
And on the host, at a tiny shape: one forward call <= 1.2 x a custom_op's that only clones (eager_cost.clone_op: the
floor of a call through torch.library); a forward + backward step <= 2 x torch's.
"""

import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from workshop import i18n  # noqa: E402
from workshop.foundations import atomic  # noqa: E402
from workshop.i18n import templates  # noqa: E402

VS_COPY, EAGER_VS_TORCH, CALL_VS_CLONE, STEP_VS_TORCH, MIN_MIB = 0.95, 0.90, 1.2, 2.0, 32.0
NOT_PEERS = ("ours", "copy", "ours_eager", "torch_eager")  # a row's other cells are its peers'
TEMPLATES = Path(__file__).resolve().parents[1] / "templates"
TARGETS = {  # a row's verdict key: (what it says, the ratio it judges, the least ratio that meets it)
    "fwd_copy_met": (f"fwd >= {VS_COPY} x copy", "fwd_vs_copy", VS_COPY),
    "fwd_best_met": ("fwd >= every peer", "fwd_vs_best_other", 1.0),
    "bwd_copy_met": (f"bwd >= {VS_COPY} x copy", "bwd_vs_copy", VS_COPY),
    "bwd_best_met": ("bwd >= every peer", "bwd_vs_best_other", 1.0),
    "fwd_eager_met": (
        f"fwd eager >= {EAGER_VS_TORCH} x torch eager",
        "fwd_eager_vs_torch",
        EAGER_VS_TORCH,
    ),
    "bwd_eager_met": (
        f"bwd eager >= {EAGER_VS_TORCH} x torch eager",
        "bwd_eager_vs_torch",
        EAGER_VS_TORCH,
    ),
}
# the targets judged on every shape; the others on shapes of >= MIN_MIB
EVERY_SHAPE = ("fwd_best_met", "bwd_best_met")


def _ratio(a, b):
    return a / b if a and b else None


def verdicts(r: dict) -> dict:
    """One row's ratios (ours over the reference) and whether each target is met."""
    v = {"dtype": r["dtype"], "shape": r["shape"], "judged": r["input_mib"] >= MIN_MIB}
    for d in ("fwd", "bwd"):
        peers = {k: gbps or 0.0 for k, gbps in r[d].items() if k not in NOT_PEERS}
        best = max(peers, key=peers.get, default=None)
        v[f"{d}_vs_copy"] = _ratio(r[d]["ours"], r[d]["copy"])
        v[f"{d}_vs_best_other"] = _ratio(r[d]["ours"], peers.get(best, 0.0))
        # the rounds' spread: ours' upper quartile reaches the best peer's lower quartile
        quartiles = r.get("quartiles", {}).get(d, {})
        v[f"{d}_best_level"] = (
            "ours" in quartiles and best in quartiles and quartiles["ours"][1] >= quartiles[best][0]
        )
        v[f"{d}_eager_vs_torch"] = _ratio(r[d].get("ours_eager"), r[d].get("torch_eager"))
    return v | {met: (v[ratio] or 0) >= least for met, (_, ratio, least) in TARGETS.items()}


def judged_for(v: dict, target: str) -> bool:
    """Whether a row's verdict on target counts: the peers' on every shape, the others' on shapes of >= MIN_MIB."""
    return target in EVERY_SHAPE or v["judged"]


def evaluate(results: list[dict]) -> dict:
    """Per row: the ratios and whether each target is met; overall: every target met on every row it judges."""
    rows = [verdicts(r) for r in results]
    judged = [v for v in rows if v["judged"]]
    met = {k: sum(v[k] for v in rows if judged_for(v, k)) for k in TARGETS}
    return {
        "rows": rows,
        "judged_shapes": len(judged),
        "shapes": len(rows),
        "met": met,
        "all_met": bool(judged) and all(v[k] for v in rows for k in TARGETS if judged_for(v, k)),
    }


def evaluate_host(host: dict) -> dict:
    """The host-time targets, from eager_cost.measure: a call against a custom_op's that only clones, and a
    training step against torch's."""
    call, step = host["op_us"] / host["clone_custom_op_us"], host["step_us"]
    step_ratio = step[host["registration"]] / step["torch.softmax"]
    return {
        "call_vs_clone": call,
        "call_met": call <= CALL_VS_CLONE,
        "step_vs_torch": step_ratio,
        "step_met": step_ratio <= STEP_VS_TORCH,
    }


def _label(shape) -> str:
    return f"{shape[0]}x{shape[1]}"


def _cell(r: dict, v: dict, direction: str, key: str, met: str | None) -> str:
    """A contender's GB/s (`key` a name in the row, `met` None), or one of ours' ratios (`key` and `met` the
    verdicts' keys, without the direction: "vs_copy", "copy_met"), marked where a judged shape misses it."""
    if met is None:
        return f"{r[direction][key]:.0f}" if r[direction].get(key) else "-"
    ratio, is_met = v[f"{direction}_{key}"], v[f"{direction}_{met}"]
    if ratio is None:
        return "-"
    if is_met or not judged_for(v, f"{direction}_{met}"):
        return f"{ratio:.2f}"
    return f"{ratio:.2f} **miss**" + (" (level)" if _level(v, direction, met) else "")


def _level(v: dict, direction: str, met: str) -> bool:
    """A missed "every peer" target where the rounds' interquartile ranges of ours and the best peer overlap."""
    return met == "best_met" and v[f"{direction}_best_level"]


def _table(doc: dict, columns: list[tuple]) -> list[str]:
    """A Markdown table, a row per measured shape: dtype, shape, MiB, then for fwd and for bwd one cell per
    column; `columns`: (title, key, met), a cell's `key` and `met` as _cell reads them."""
    head = ["dtype", "shape", "MiB"] + [f"{d} {c[0]}" for d in ("fwd", "bwd") for c in columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r, v in zip(doc["results"], doc["targets"]["rows"], strict=True):
        cells = [r["dtype"], _label(r["shape"]), f"{r['input_mib']:.0f}"]
        cells += [_cell(r, v, d, key, met) for d in ("fwd", "bwd") for _, key, met in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


# The device-time table's columns: ours, each peer and copy (GB/s), then these ratios of ours'.
DEVICE_RATIOS = [("ours/copy", "vs_copy", "copy_met"), ("ours/best", "vs_best_other", "best_met")]
EAGER_COLUMNS = [
    ("ours eager", "ours_eager", None),
    ("torch eager", "torch_eager", None),
    ("ours/torch", "eager_vs_torch", "eager_met"),
]


def peers_beaten(doc: dict) -> dict:
    """The template's values: each peer that ours beats in device time on every shape the peer ran (the peers are
    judged on every shape), forward and backward, with ours' GB/s over its: the least and the median ratio. A peer
    that beats ours once is left out."""
    ratios = {  # ours' GB/s over the peer's, on each shape and direction the peer ran
        peer: [
            x
            for r in doc["results"]
            for d in ("fwd", "bwd")
            if (x := _ratio(r[d]["ours"], r[d].get(peer)))
        ]
        for peer in doc["peers"]
    }
    beaten = [
        {"peer": peer, "least": min(found), "median": statistics.median(found)}
        for peer, found in ratios.items()
        if found and min(found) >= 1.0
    ]
    return {"device": doc["device"], "beaten": beaten}


def _host_rows(doc: dict) -> list[str]:
    host, t = doc["host"], doc["host_targets"]
    rounds = doc.get("host_rounds", [t])
    verdict = {True: "met", False: "**missed**"}
    step, kind = host["step_us"], host["registration"]
    lines = [
        f"Host time per call at {_label(host['shape'])} (float32), best of blocks of calls, all measured in one "
        f"run: torch.ops.workshop.softmax (a {kind}) {host['op_us']:.1f} us, a custom_op that only clones its "
        f"input {host['clone_custom_op_us']:.1f} us: {t['call_vs_clone']:.2f}x (target <= {CALL_VS_CLONE}x: "
        f"{verdict[t['call_met']]}); torch.softmax {host['torch_us']:.1f} us. Forward + backward at "
        f"{_label(host['step_shape'])}: ours {step[kind]:.1f} us, torch {step['torch.softmax']:.1f} us: "
        f"{t['step_vs_torch']:.2f}x (target <= {STEP_VS_TORCH}x: {verdict[t['step_met']]}). The same launch "
        f"through Triton's own `kernel[grid](...)` takes {host['triton_jit_launch_us']:.1f} us.",
        "",
        # the host measured in rounds (one, in a JSON from before them): which one these figures are
        f"These are the round whose step ratio is the median of {len(rounds)}; their call ratios: "
        + ", ".join(f"{r['call_vs_clone']:.2f}" for r in rounds)
        + "; their step ratios: "
        + ", ".join(f"{r['step_vs_torch']:.2f}" for r in rounds)
        + ".",
        "",
        "| layer inside the op (the same in every registration) | us |",
        "|---|---|",
        *(f"| {name} | {us:.1f} |" for name, us in host["layer_us"].items()),
        "",
        "| registration | its own layers | autograd node | the op, whole | with grad | fwd + bwd step |",
        "|---|---|---|---|---|---|",
    ]
    own = ("registration_us", "autograd_node_us", "op_us", "op_grad_us")
    lines += [
        f"| {name} | " + " | ".join(f"{us:.1f}" for us in [*(r[k] for k in own), step[name]]) + " |"
        for name, r in host["registrations"].items()
    ]
    cells = ["", "", f"{host['torch_us']:.1f}", "", f"{step['torch.softmax']:.1f}"]
    lines.append("| torch.softmax | " + " | ".join(cells) + " |")
    return lines


def summary(doc: dict) -> str:
    t = doc["targets"]
    met = ", ".join(f"{TARGETS[k][0]} on {n}" for k, n in t["met"].items())
    lines = [
        f"# custom_op benchmark on {doc['device']}",
        "",
        f"`{doc['command']}` at commit {doc['commit']}; torch {doc['versions']['torch']}, triton "
        f"{doc['versions']['triton']}; op registered as a {doc['registration']}. {doc['timing']}. "
        f"Bytes: {doc['bytes']}.",
        "",
        f"Targets met, every peer on all {t['shapes']} shapes, the others on the {t['judged_shapes']} with >= "
        f"{MIN_MIB:.0f} MiB of input: {met}. "
        f"**All met: {t['all_met']}**.",
        "",
        "## Device time (GB/s)",
        "",
        *_table(doc, [(n, n, None) for n in ("ours", *doc["peers"], "copy")] + DEVICE_RATIOS),
        *(f"- {name}: {why}" for name, why in doc["skipped_peers"].items()),
        "",
        templates.render(TEMPLATES, i18n.language(), peers_beaten(doc), "bench_peers.md.j2"),
        "## Eager time (GB/s, called from Python)",
        "",
        *_table(doc, EAGER_COLUMNS),
        "",
        "## Host time of one call",
        "",
        *(
            _host_rows(doc)
            if "host" in doc
            else ["Not measured: the run stopped before the host's rounds."]
        ),
        "",
        "Under 32 MiB only the peers are judged: the copy and eager figures there are information. "
        "(level): a miss of the best peer where ours' upper quartile over the rounds reaches the peer's lower "
        "quartile: within the measurement's spread.",
    ]
    missed = {  # each shape's missed targets that it judges, with the ratio measured
        f"{v['dtype']} {_label(v['shape'])}": [
            f"{text} ({'not measured' if v[ratio] is None else f'{v[ratio]:.2f}'}"
            + (", level" if _level(v, k[:3], k[4:]) else "")
            + ")"
            for k, (text, ratio, _) in TARGETS.items()
            if not v[k] and judged_for(v, k)
        ]
        for v in t["rows"]
    }
    if misses := [f"- {shape}: " + "; ".join(texts) for shape, texts in missed.items() if texts]:
        lines += ["", "## Missed, by how much (why: benchmarks/custom_op/README.md)", "", *misses]
    if errors := {
        f"{r['dtype']} {_label(r['shape'])} {k}": e
        for r in doc["results"]
        for k, e in r["errors"].items()
    }:
        lines += ["", "Not measured (it raised: a peer that refuses the shape, or an error):"]
        lines += [f"- {k}: `{e}`" for k, e in errors.items()]
    return "\n".join(lines) + "\n"


def write_chart(doc: dict, path) -> None:
    dtypes = list(dict.fromkeys(r["dtype"] for r in doc["results"]))
    fig, axes = plt.subplots(
        2, len(dtypes), figsize=(7 * len(dtypes), 8), squeeze=False, sharey=True
    )
    for col, dtype in enumerate(dtypes):
        rows = [r for r in doc["results"] if r["dtype"] == dtype]
        xs = range(len(rows))
        for row_i, direction in enumerate(("fwd", "bwd")):
            ax = axes[row_i][col]
            copy = [r[direction]["copy"] or float("nan") for r in rows]
            ax.plot(xs, copy, "k--", lw=1.5, label="device copy (ceiling)")
            ax.plot(
                xs, [c * VS_COPY for c in copy], ":", color="gray", label=f"target {VS_COPY} x copy"
            )
            for name, marker in zip(
                ("ours", *doc["peers"], "ours_eager", "torch_eager"), "os^vDx+*", strict=False
            ):
                ax.plot(
                    xs,
                    [r[direction].get(name) or float("nan") for r in rows],
                    marker + (":" if name.endswith("_eager") else "-"),
                    ms=4,
                    label=name,
                )
            for i, r in enumerate(rows):
                if r["input_mib"] < MIN_MIB:
                    ax.axvspan(i - 0.5, i + 0.5, color="0.93", lw=0)  # under 32 MiB: peers only
            ax.set_xticks(list(xs), [_label(r["shape"]) for r in rows], rotation=60, fontsize=7)
            ax.set(title=f"{direction} {dtype}", ylabel="GB/s")
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.suptitle(
        f"softmax GB/s on {doc['device']} (grey: < {MIN_MIB:.0f} MiB input, judged against the peers only)"
    )
    fig.tight_layout()
    atomic.save_figure(path, fig)
