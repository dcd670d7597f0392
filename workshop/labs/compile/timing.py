"""Eager against compiled: medians of repeated, interleaved runs after warm-up, and a chart.

Interleaving (eager, compiled, eager, compiled, ...) means a slow moment of a shared machine hits both alike.
On CUDA every timed call ends with a synchronize, since kernels run asynchronously.
"""

from __future__ import annotations

import statistics
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch

from workshop.i18n import N_, _

FORWARD, TRAINING_STEP = N_("forward"), N_("training step")


def timing_report(at_batch: list[dict], sweep: list[dict], compile_s: dict, cpu_threads) -> dict:
    """timing.json: the forward and the training step at the captured batch (`at_batch`), the forward over
    batch sizes (`forward_sweep`), each a compare() row; FORWARD / TRAINING_STEP -> first-call seconds (trace
    + compile + run); and what they give: the smallest batch size from which on compiled is faster at every
    larger size (or None), eager minus compiled median time of one training step (negative when compiled is
    slower), the training steps the compile time takes to earn back (None when the compiled step is not
    faster)."""
    step = next(t for t in at_batch if t["what"] == TRAINING_STEP)
    saved = step["eager_ms"] - step["compiled_ms"]
    return {
        "cpu_threads": cpu_threads,
        "at_batch": at_batch,
        "forward_sweep": sweep,
        "compile_s": compile_s,
        "forward_break_even_batch": next(
            (
                row["batch"]
                for i, row in enumerate(sweep)
                if all(r["speedup"] > 1.0 for r in sweep[i:])
            ),
            None,
        ),
        "saved_ms_per_step": saved,
        "payback_steps": compile_s[TRAINING_STEP] * 1e3 / saved if saved > 0 else None,
    }


def timed(fn, device: str) -> float:
    """Seconds one call of fn takes, including the GPU work it queued."""
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def compare(
    what: str, batch: int, eager, compiled, device: str, repeats: int, warmup: int = 2
) -> dict:
    """Median milliseconds of eager() and compiled(), interleaved: a row of timing.json (`what`: FORWARD or
    TRAINING_STEP, English there, translated where shown)."""
    for _warm in range(warmup):
        eager(), compiled()
    # (eager's seconds, compiled's) per repeat, one after the other
    e, c = zip(
        *[(timed(eager, device), timed(compiled, device)) for _rep in range(repeats)], strict=True
    )
    eager_ms, compiled_ms = 1e3 * statistics.median(e), 1e3 * statistics.median(c)
    return {
        "what": what,
        "batch": batch,
        "eager_ms": eager_ms,
        "compiled_ms": compiled_ms,
        "repeats": repeats,
        "speedup": eager_ms / compiled_ms,
    }


def plot(report: dict, device: str):
    """Left: forward and training step at one batch size. Right: forward time against batch size."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    # left: bars of eager and compiled at the captured batch, each pair with its speedup
    rows = report["at_batch"]
    x = range(len(rows))
    left.bar([i - 0.2 for i in x], [t["eager_ms"] for t in rows], 0.4, label=_("eager"))
    left.bar(
        [i + 0.2 for i in x], [t["compiled_ms"] for t in rows], 0.4, label=_("compiled (Inductor)")
    )
    for i, t in enumerate(rows):
        top = max(t["eager_ms"], t["compiled_ms"])
        left.text(i, top, f"{t['speedup']:.2f}x", ha="center", va="bottom")
    labels = [
        _("{what}\n(compile {seconds:.0f} s)").format(
            what=_(t["what"]), seconds=report["compile_s"][t["what"]]
        )
        for t in rows
    ]
    left.set_xticks(list(x), labels)
    left.set(
        ylabel=_("median ms per call"),
        title=_("MiniGPT on {device}, batch {batch}").format(device=device, batch=rows[0]["batch"]),
    )
    left.legend()
    # right: the forward's two lines over the batch sizes, on log-log axes
    sweep = report["forward_sweep"]
    batches = [t["batch"] for t in sweep]
    right.plot(batches, [t["eager_ms"] for t in sweep], "o-", label=_("eager"))
    right.plot(batches, [t["compiled_ms"] for t in sweep], "s-", label=_("compiled"))
    right.set(xscale="log", yscale="log", xlabel=_("batch size"), ylabel=_("median ms per forward"))
    right.set_title(_("forward (no grad) against batch size"))
    right.set_xticks(batches, [str(b) for b in batches])
    right.legend()
    fig.tight_layout()
    return fig
