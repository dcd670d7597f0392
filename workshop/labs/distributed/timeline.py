"""What each pipeline rank did when: timed forward/backward chunks, the idle (bubble) fraction, a Gantt chart.

A pipeline schedule runs a stage's work through `stage.forward_one_chunk(i, ...)` and
`stage.backward_one_chunk(i, ...)`, one call per micro-batch i. Timeline.watch wraps those two methods of a
stage so each call is recorded as (kind, stage, micro-batch, start, end), in seconds since this rank's step
began. Steps begin right after a barrier, so the ranks' clocks line up to well under a millisecond.
"""

from __future__ import annotations

import statistics
import time

import torch


class Timeline:
    def __init__(self, device: torch.device):
        self.device = device
        self.steps: list[list[tuple]] = []  # per step: [(kind, stage, microbatch, start_s, end_s)]
        self.t0 = 0.0

    def begin_step(self) -> None:
        self.steps.append([])
        self.t0 = time.perf_counter()

    def _now(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)  # time the GPU's work, not the launch
        return time.perf_counter() - self.t0

    def watch(self, stage) -> None:
        for kind, method in (("F", "forward_one_chunk"), ("B", "backward_one_chunk")):
            original = getattr(stage, method)

            def timed(
                chunk, *args, _original=original, _kind=kind, _stage=stage.stage_index, **kwargs
            ):
                start = self._now()
                out = _original(chunk, *args, **kwargs)
                self.steps[-1].append((_kind, _stage, chunk, start, self._now()))
                return out

            setattr(
                stage, method, timed
            )  # the schedule calls stage.<method>: the instance attribute wins


def theory(p: int, m: int, v: int = 1) -> float:
    """Idle fraction of a pipeline of p ranks, m micro-batches, v stages per rank, equal stage times, free
    communication: (p-1)/(v*m + p-1), i.e. (p-1)/(m+p-1) for GPipe and 1F1B."""
    return (p - 1) / (v * m + p - 1)


def bubble(per_rank_steps: list[list[list[tuple]]]) -> dict:
    """Measured idle fraction: per step, each rank's busy time over the step's span (first start to last end
    on any rank); the mean over ranks, then the median over steps after the first (which also sets up)."""
    fractions = []
    for s in range(1, len(per_rank_steps[0])) or [0]:
        ranks = [steps[s] for steps in per_rank_steps]
        start = min(iv[3] for r in ranks for iv in r)
        span = max(iv[4] for r in ranks for iv in r) - start
        fractions.append(statistics.mean(1 - sum(iv[4] - iv[3] for iv in r) / span for r in ranks))
    return {"measured": statistics.median(fractions), "per_step": fractions}


def draw_gantt(schedules: dict[str, dict]):
    """One panel per schedule: a row per rank, a bar per forward (F) / backward (B) chunk of the last step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        len(schedules), 1, figsize=(10, 1.2 + 1.1 * len(schedules) * 1.4), squeeze=False
    )
    colors = {"F": "tab:blue", "B": "tab:orange"}
    for ax, (name, sched) in zip(axes[:, 0], schedules.items(), strict=True):
        last = [steps[-1] for steps in sched["intervals"]]
        start = min(iv[3] for r in last for iv in r)
        for rank, intervals in enumerate(last):
            for kind, stage, mb, t0, t1 in intervals:
                light = stage >= len(last)  # an interleaved rank's second stage: lighter shade
                ax.barh(
                    rank,
                    (t1 - t0) * 1e3,
                    left=(t0 - start) * 1e3,
                    color=colors[kind],
                    alpha=0.55 if light else 0.95,
                    edgecolor="black",
                    linewidth=0.4,
                )
                ax.text(
                    (t0 + t1 - 2 * start) / 2 * 1e3,
                    rank,
                    f"{kind}{mb}",
                    ha="center",
                    va="center",
                    fontsize=6,
                )
        ax.set_yticks(range(len(last)), [f"rank {r}" for r in range(len(last))])
        ax.invert_yaxis()
        ax.set_title(
            f"{name}: idle {sched['bubble']['measured']:.0%} measured, "
            f"{sched['bubble_theory']:.0%} in theory",
            fontsize=9,
        )
    axes[-1, 0].set_xlabel(
        "ms since the step began (last step; F = forward, B = backward, number = micro-batch)"
    )
    fig.tight_layout()
    return fig
