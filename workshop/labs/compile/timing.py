"""Eager against compiled: medians of repeated, interleaved runs after warm-up, and a chart.

Interleaving (eager, compiled, eager, compiled, ...) means a slow moment of a shared machine hits both alike.
On CUDA every timed call ends with a synchronize, since kernels run asynchronously.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch

from workshop.i18n import N_, _

FORWARD, TRAINING_STEP = N_("forward"), N_("training step")


@dataclass
class Timing:
    what: str  # FORWARD or TRAINING_STEP (English in timing.json, translated where shown)
    batch: int
    eager_ms: float  # median
    compiled_ms: float  # median
    repeats: int

    @property
    def speedup(self) -> float:
        return self.eager_ms / self.compiled_ms

    def as_json(self) -> dict:
        return {**asdict(self), "speedup": self.speedup}


@dataclass
class TimingReport:
    at_batch: list[Timing]  # forward and training step at the captured batch
    sweep: list[Timing]  # forward over batch sizes
    compile_s: dict[
        str, float
    ]  # FORWARD / TRAINING_STEP -> first-call seconds (trace + compile + run)
    cpu_threads: int | None

    @property
    def break_even_batch(self) -> int | None:
        """The smallest batch size from which on compiled is faster at every larger size, or None."""
        for i, row in enumerate(self.sweep):
            if all(r.speedup > 1.0 for r in self.sweep[i:]):
                return row.batch
        return None

    @property
    def saved_ms_per_step(self) -> float:
        """Eager minus compiled median time of one training step (negative when compiled is slower)."""
        step = next(t for t in self.at_batch if t.what == TRAINING_STEP)
        return step.eager_ms - step.compiled_ms

    @property
    def payback_steps(self) -> float | None:
        """Training steps the compile time takes to earn back, None when the compiled step is not faster."""
        saved = self.saved_ms_per_step
        return self.compile_s[TRAINING_STEP] * 1e3 / saved if saved > 0 else None

    def as_json(self) -> dict:
        return {
            "cpu_threads": self.cpu_threads,
            "at_batch": [t.as_json() for t in self.at_batch],
            "forward_sweep": [t.as_json() for t in self.sweep],
            "compile_s": self.compile_s,
            "forward_break_even_batch": self.break_even_batch,
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
) -> Timing:
    """Median milliseconds of eager() and compiled(), interleaved."""
    for _warm in range(warmup):
        eager(), compiled()
    e, c = [], []
    for _rep in range(repeats):
        e.append(timed(eager, device))
        c.append(timed(compiled, device))
    return Timing(what, batch, 1e3 * statistics.median(e), 1e3 * statistics.median(c), repeats)


def plot(report: TimingReport, device: str):
    """Left: forward and training step at one batch size. Right: forward time against batch size."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    bars_at_batch(left, report, device)
    sweep_lines(right, report.sweep)
    fig.tight_layout()
    return fig


def bars_at_batch(ax, report: TimingReport, device: str) -> None:
    rows = report.at_batch
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [t.eager_ms for t in rows], 0.4, label=_("eager"))
    ax.bar([i + 0.2 for i in x], [t.compiled_ms for t in rows], 0.4, label=_("compiled (Inductor)"))
    for i, t in enumerate(rows):
        top = max(t.eager_ms, t.compiled_ms)
        ax.text(i, top, f"{t.speedup:.2f}x", ha="center", va="bottom")
    labels = [
        _("{what}\n(compile {seconds:.0f} s)").format(
            what=_(t.what), seconds=report.compile_s[t.what]
        )
        for t in rows
    ]
    ax.set_xticks(list(x), labels)
    ax.set(
        ylabel=_("median ms per call"),
        title=_("MiniGPT on {device}, batch {batch}").format(device=device, batch=rows[0].batch),
    )
    ax.legend()


def sweep_lines(ax, sweep: list[Timing]) -> None:
    batches = [t.batch for t in sweep]
    ax.plot(batches, [t.eager_ms for t in sweep], "o-", label=_("eager"))
    ax.plot(batches, [t.compiled_ms for t in sweep], "s-", label=_("compiled"))
    ax.set(xscale="log", yscale="log", xlabel=_("batch size"), ylabel=_("median ms per forward"))
    ax.set_title(_("forward (no grad) against batch size"))
    ax.set_xticks(batches, [str(b) for b in batches])
    ax.legend()
