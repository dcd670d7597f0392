"""Lab autograd: the LM head's backward three ways (by hand, by autograd, by finite differences), and the
grad_fn graph autograd builds for it, walked, drawn, and replayed node by node by a hand-made engine."""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from workshop.lab import LabContext
from workshop.labs.autograd.batch import HeadBatch, leaves, load_batch
from workshop.labs.autograd.finite_diff import TOLERANCE, run_gradchecks
from workshop.labs.autograd.graph_draw import draw
from workshop.labs.autograd.graph_walk import graph_json, walk
from workshop.labs.autograd.hand_grads import (
    autograd_forward_backward,
    compare,
    hand_forward_backward,
    tf32,
)
from workshop.labs.autograd.replay import is_topological, record_engine_order, replay_backward
from workshop.minigpt.model import lm_loss

GRAD_TOLERANCE = 1e-7  # max |hand - autograd| for dL/dlogits, dL/dW, dL/db, dL/dx
LOSS_RTOL = 1e-6  # the loss itself is ~3.7, so compare it relative to its size (float32 ulp there is 2.4e-7)
GRADS = ("logits", "W", "b", "x")
DTYPES = (torch.float32, torch.float64)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def hand_vs_autograd(batch: HeadBatch, dtype: torch.dtype) -> dict:
    t = leaves(batch, dtype)
    hand = hand_forward_backward(t["x"], t["W"], t["b"], batch.targets)
    return compare(hand, autograd_forward_backward(t["x"], t["W"], t["b"], batch.targets))


def check_hand(ctx: LabContext, batch: HeadBatch) -> list[dict]:
    records = []
    for dtype in DTYPES:
        with tf32(False):
            errors = hand_vs_autograd(batch, dtype)
        where = f"{dtype_name(dtype)}, {ctx.device}" + (
            ", TF32 off" if ctx.device == "cuda" else ""
        )
        for name in GRADS:
            ctx.check_max(
                f"hand dL/d{name} = autograd's ({where}): max abs error",
                errors[name]["max_abs_error"],
                GRAD_TOLERANCE,
            )
        loss_rel = errors["loss"]["max_abs_error"] / errors["loss"]["max_abs_value"]
        ctx.check_max(f"hand loss = lm_loss ({where}): relative error", loss_rel, LOSS_RTOL)
        records.append(
            {
                "dtype": dtype_name(dtype),
                "device": ctx.device,
                "tf32": False,
                "checked": True,
                "errors": errors,
            }
        )
    if ctx.device == "cuda":  # reported, not checked: what TF32 does to a 1e-7 comparison
        with tf32(True):
            errors = hand_vs_autograd(batch, torch.float32)
        records.append(
            {"dtype": "float32", "device": "cuda", "tf32": True, "checked": False, "errors": errors}
        )
    return records


def check_graph(ctx: LabContext, graph: dict) -> None:
    leaves_seen = sorted(n["leaf"]["name"] for n in graph["nodes"] if "leaf" in n)
    ctx.check_equal("the graph ends in one AccumulateGrad per leaf", leaves_seen, ["W", "b", "x"])
    names = [n["name"] for n in graph["nodes"]]
    ctx.check_equal(
        "the loss's grad_fn chain: cross-entropy = NllLoss after LogSoftmax",
        names[:2],
        ["NllLossBackward0", "LogSoftmaxBackward0"],
    )
    # The matmul node saved exactly what its backward multiplies with: x's rows and W^T.
    matmul = next(n for n in graph["nodes"] if n["name"] in ("AddmmBackward0", "MmBackward0"))
    saved = sorted(tuple(s["shape"]) for s in matmul["saved"].values() if s["kind"] == "tensor")
    rows = graph["nodes"][0]["saved"]["target"]["shape"][0]
    ctx.check_equal(
        f"{matmul['name']} saved x rows (M, 64) and W^T (64, 600)",
        saved,
        sorted([(rows, 64), (64, 600)]),
    )


def replay_and_compare(ctx: LabContext, batch: HeadBatch, dtype: torch.dtype) -> dict:
    """Our engine first (it leaves the graph intact), then the real .backward() with hooks recording its order."""
    t = leaves(batch, dtype)
    loss = lm_loss(F.linear(t["x"], t["W"], t["b"]), batch.targets)
    root, graph = loss.grad_fn, graph_json(loss.grad_fn, t)
    ids = {node: i for i, node in enumerate(walk(root))}
    start = time.perf_counter()
    ours = replay_backward(loss)
    ours_s = time.perf_counter() - start
    start = time.perf_counter()
    real_order = record_engine_order(loss)
    real_s = time.perf_counter() - start
    # On the CPU both engines call the same kernels on the same tensors in the same order: bit-identical. On CUDA
    # the real engine runs nodes on its device thread, whose cuBLAS handle may pick another algorithm: allow 1e-7.
    exact = ctx.device == "cpu"
    where = f"{dtype_name(dtype)}, {ctx.device}"
    diffs = {}
    for name, leaf in t.items():
        diffs[name] = float((ours.grad(leaf) - leaf.grad).abs().max())
        ctx.check_max(
            f"replayed dL/d{name} = .backward()'s ({where}): max abs difference",
            diffs[name],
            0.0 if exact else GRAD_TOLERANCE,
        )
    ctx.check_equal(
        f"the real engine ran the nodes in a topological order ({where})",
        is_topological(real_order, root),
        True,
    )
    ctx.check_equal(
        f"our engine ran the nodes in the real engine's order ({where})",
        [ids[n] for n in ours.order],
        [ids[n] for n in real_order],
    )
    for step, node in enumerate(real_order, start=1):
        graph["nodes"][ids[node]]["step"] = step
    bitwise = {name: bool(torch.equal(ours.grad(leaf), leaf.grad)) for name, leaf in t.items()}
    return {
        "dtype": dtype_name(dtype),
        "device": ctx.device,
        "max_abs_difference": diffs,
        "bit_identical": bitwise,
        "engine_order": [ids[n] for n in real_order],
        "replay_order": [ids[n] for n in ours.order],
        "replay_seconds": round(ours_s, 5),
        "backward_seconds": round(real_s, 5),
        "graph": graph,
    }


def run(ctx: LabContext) -> None:
    batch = load_batch(ctx.device)
    hand = check_hand(ctx, batch)

    with tf32(False):
        replays = [replay_and_compare(ctx, batch, dtype) for dtype in DTYPES]
    graph = replays[0].pop(
        "graph"
    )  # the float32 graph is the one drawn; float64's has the same shape
    replays[1].pop("graph")
    check_graph(ctx, graph)
    ctx.write_json("graph.json", graph)
    ctx.save_figure(
        "graph.png",
        draw(
            graph,
            f"lm_loss(lm_head(x)).grad_fn: the backward graph ({ctx.device}, "
            "[k] = k-th node the engine ran)",
        ),
    )

    gradchecks = run_gradchecks(batch.hidden, batch.targets, batch.head.weight, batch.head.bias)
    for g in gradchecks:
        ctx.check_equal(
            f"gradcheck float64, {g['gradient']} gradient, {g['probes']} ({g['n_probed']} inputs)",
            g["passed"],
            True,
        )

    ctx.extra.update(
        hand_vs_autograd=hand,
        replay=replays,
        gradcheck=gradchecks,
        gradcheck_tolerance=TOLERANCE,
        batch={"rows": batch.targets.numel(), "real_targets": batch.n_real},
        thresholds={"gradient_max_abs_error": GRAD_TOLERANCE, "loss_relative_error": LOSS_RTOL},
    )
    ctx.summary = summary(ctx, batch, hand, replays, gradchecks, graph)


def summary(ctx, batch, hand, replays, gradchecks, graph) -> str:
    rows = "\n".join(
        f"| {r['dtype']} | {r['device']} | {'on' if r['tf32'] else 'off'} | "
        + " | ".join(f"{r['errors'][n]['max_abs_error']:.2e}" for n in GRADS)
        + f" | {'checked <= 1e-7' if r['checked'] else 'reported only'} |"
        for r in hand
    )
    names = [n["name"] for n in graph["nodes"]]
    order = " -> ".join(names[i] for i in replays[0]["engine_order"])
    same = all(r["engine_order"] == r["replay_order"] for r in replays)
    bitwise = ", ".join(
        f"{r['dtype']}: {'yes' if all(r['bit_identical'].values()) else 'no'}" for r in replays
    )
    checks = "\n".join(
        f"| {g['gradient']} | {g['probes']} | {g['n_probed']} | {g['fast_mode']} | "
        f"{'pass' if g['passed'] else 'FAIL'} | {g['seconds']:.2f} |"
        for g in gradchecks
    )
    tf32_note = (
        "TF32 on (last row) rounds matmul inputs to 10-bit mantissas: the error grows by orders of magnitude, "
        "which is why every 1e-7 comparison runs with TF32 off."
        if ctx.device == "cuda"
        else "TF32 is a CUDA tensor-core mode; on the CPU there is nothing to report (run with --device cuda)."
    )
    return f"""
The LM head `nn.Linear(64, 600)` of the trained MiniGPT, fed real hidden states of {batch.targets.shape[0]}
training sentences ({batch.targets.numel()} positions, {batch.n_real} real targets, the rest `<pad>` and
ignored), under the training loss `lm_loss`. Device: **{ctx.device}**.

## 1. Hand-derived gradients vs autograd (max abs error)

| dtype | device | TF32 | dL/dlogits | dL/dW | dL/db | dL/dx | |
|---|---|---|---|---|---|---|---|
{rows}

{tf32_note}

## 2. The graph (`graph.json`, `graph.png`)

{len(names)} nodes, {len(graph["edges"])} edges, {sum("leaf" in n for n in graph["nodes"])} AccumulateGrad leaves.
The real engine ran: {order}.

![graph](graph.png)

## 3. Replayed by hand (`replay.py`)

Our engine's order equals the real engine's: **{"yes" if same else "no"}**. Gradients bit-identical to
`.backward()`: {bitwise}.

## 4. Finite differences (gradcheck, float64, rows: 6 real targets + 2 `<pad>`)

| gradient | what is probed | inputs | fast_mode | result | seconds |
|---|---|---|---|---|---|
{checks}
"""
