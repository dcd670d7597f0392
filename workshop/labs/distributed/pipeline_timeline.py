"""What each pipeline rank did when: its forward and backward chunks, timed.

A pipeline schedule runs a stage's work through `stage.forward_one_chunk(i, ...)` and
`stage.backward_one_chunk(i, ...)`, one call per micro-batch i. PipelineTimeline.watch wraps those two methods
of a stage so each call is recorded as (kind, stage, micro-batch, start, end), in seconds since this rank's step
began. Steps begin right after a barrier, so the ranks' clocks line up to well under a millisecond.
On a GPU every timestamp synchronizes first (the work, not its launch, is timed); what one timestamp costs
is the timer's resolution, measured here and used by the lab as the margin of its idle-time check.
Each step also sums the CPU seconds its chunks took (the process's, every thread's): the work itself, which a
loaded machine does not stretch as it stretches wall time.
"""

from __future__ import annotations

import statistics
import time

import torch

from workshop.labs.distributed.measurements import Interval


class PipelineTimeline:
    def __init__(self, device: torch.device):
        self.device = device
        self.steps: list[list[Interval]] = []
        self.cpu_s: list[float] = []  # per step: CPU seconds inside its chunks
        self.t0 = 0.0

    def begin_step(self) -> None:
        self.steps.append([])
        self.cpu_s.append(0.0)
        self.t0 = time.perf_counter()

    def _now(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)  # time the GPU's work, not the launch
        return time.perf_counter() - self.t0

    def resolution(self, samples: int = 101) -> float:
        """Seconds one timestamp takes (median of back-to-back pairs): the smallest interval it can resolve."""
        stamps = [self._now() for _ in range(samples)]
        return statistics.median(b - a for a, b in zip(stamps, stamps[1:], strict=False))

    def watch(self, stage) -> None:
        for kind, method in (("F", "forward_one_chunk"), ("B", "backward_one_chunk")):
            original = getattr(stage, method)

            def timed(chunk, *args, _original=original, _kind=kind, _stage=stage.stage_index, **kw):
                start, cpu = self._now(), time.process_time()
                out = _original(chunk, *args, **kw)
                self.steps[-1].append((_kind, _stage, chunk, start, self._now()))
                self.cpu_s[-1] += time.process_time() - cpu
                return out

            # the schedule calls stage.<method>: the instance attribute wins
            setattr(stage, method, timed)
