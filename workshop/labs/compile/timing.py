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


def timed(fn, device: str) -> float:
    """Seconds one call of fn takes, including the GPU work it queued."""
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def compare(eager, compiled, device: str, repeats: int, warmup: int = 2) -> dict:
    """Median milliseconds of eager() and compiled(), interleaved; speedup = eager / compiled."""
    for _ in range(warmup):
        eager(), compiled()
    e, c = [], []
    for _ in range(repeats):
        e.append(timed(eager, device))
        c.append(timed(compiled, device))
    eager_ms, compiled_ms = 1e3 * statistics.median(e), 1e3 * statistics.median(c)
    return {
        "eager_ms": eager_ms,
        "compiled_ms": compiled_ms,
        "speedup": eager_ms / compiled_ms,
        "repeats": repeats,
    }


def break_even(sweep: list[dict]) -> int | None:
    """The smallest batch size from which on compiled is faster at every larger size, or None."""
    for i, row in enumerate(sweep):
        if all(r["speedup"] > 1.0 for r in sweep[i:]):
            return row["batch"]
    return None


def plot(step: dict, sweep: list[dict], compile_s: dict, device: str):
    """Left: forward and training step at one batch size. Right: forward time against batch size."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    names = list(step)
    x = range(len(names))
    left.bar([i - 0.2 for i in x], [step[n]["eager_ms"] for n in names], 0.4, label="eager")
    left.bar(
        [i + 0.2 for i in x],
        [step[n]["compiled_ms"] for n in names],
        0.4,
        label="compiled (Inductor)",
    )
    for i, n in enumerate(names):
        left.text(
            i,
            max(step[n]["eager_ms"], step[n]["compiled_ms"]),
            f"{step[n]['speedup']:.2f}x",
            ha="center",
            va="bottom",
        )
    left.set_xticks(
        list(x), [f"{n}\n(compile {compile_s.get(n, float('nan')):.0f} s)" for n in names]
    )
    left.set(
        ylabel="median ms per call", title=f"MiniGPT on {device}, batch {step[names[0]]['batch']}"
    )
    left.legend()
    batches = [r["batch"] for r in sweep]
    right.plot(batches, [r["eager_ms"] for r in sweep], "o-", label="eager")
    right.plot(batches, [r["compiled_ms"] for r in sweep], "s-", label="compiled")
    right.set(
        xscale="log",
        yscale="log",
        xlabel="batch size",
        ylabel="median ms per forward",
        title="forward (no grad) against batch size",
    )
    right.set_xticks(batches, [str(b) for b in batches])
    right.legend()
    fig.tight_layout()
    return fig
